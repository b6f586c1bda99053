//! Discovering tables through the RSDT/XSDT with a caller-supplied [`PhysRead`]: the
//! kernel reads physical memory, tests read fixtures.

use alloc::vec::Vec;

use super::bytes::{u32_at, u64_at};
use super::error::{AcpiError, Table};
use super::rsdp::{RSDP_V1_LEN, RSDP_V2_LEN, Rsdp, find_rsdp, parse_rsdp};
use super::sdt::{MAX_TABLE_LEN, SDT_HEADER_LEN, SdtHeader, validate_sdt};
use crate::warning::Warning;

/// Error of a [`PhysRead`]: the range is not readable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhysReadError;

/// Read access to physical memory.
pub trait PhysRead {
    /// Returns exactly `len` bytes at physical address `phys`, or an error.
    fn read(&mut self, phys: u64, len: usize) -> Result<Vec<u8>, PhysReadError>;
}

/// A physical-memory image made of `(base address, bytes)` regions — the fixture
/// reader used by tests, also usable by a kernel that copied the tables.
#[derive(Clone, Debug, Default)]
pub struct MemoryImage {
    /// Regions; reads must fall inside one region.
    pub regions: Vec<(u64, Vec<u8>)>,
}

impl PhysRead for MemoryImage {
    fn read(&mut self, phys: u64, len: usize) -> Result<Vec<u8>, PhysReadError> {
        for (base, bytes) in &self.regions {
            if let Some(off) = phys
                .checked_sub(*base)
                .and_then(|o| usize::try_from(o).ok())
                && let Some(s) = bytes.get(off..off.checked_add(len).ok_or(PhysReadError)?)
            {
                return Ok(s.to_vec());
            }
        }
        Err(PhysReadError)
    }
}

/// Tables found through the root table.
#[derive(Clone, Debug, Default)]
pub struct AcpiTables {
    /// The RSDP.
    pub rsdp: Option<Rsdp>,
    /// `(physical address, signature, table bytes)` in root-table order.
    pub tables: Vec<(u64, [u8; 4], Vec<u8>)>,
}

impl AcpiTables {
    /// First table with this signature (e.g. `*b"APIC"` for the MADT).
    pub fn find(&self, sig: [u8; 4]) -> Option<&[u8]> {
        self.tables
            .iter()
            .find(|(_, s, _)| *s == sig)
            .map(|(_, _, b)| b.as_slice())
    }
}

fn read(r: &mut impl PhysRead, table: Table, phys: u64, len: usize) -> Result<Vec<u8>, AcpiError> {
    match r.read(phys, len) {
        Ok(v) if v.len() == len => Ok(v),
        _ => Err(AcpiError::Read { table, phys, len }),
    }
}

/// Reads one whole table at `phys`: header first, then `length` bytes (at most
/// [`MAX_TABLE_LEN`]).
pub fn read_table(r: &mut impl PhysRead, table: Table, phys: u64) -> Result<Vec<u8>, AcpiError> {
    let head = read(r, table, phys, SDT_HEADER_LEN)?;
    let h = SdtHeader::parse(&head, table)?;
    let len = h.length as usize;
    if !(SDT_HEADER_LEN..=MAX_TABLE_LEN).contains(&len) {
        return Err(AcpiError::BadLength {
            table,
            length: u64::from(h.length),
            min: SDT_HEADER_LEN,
            available: MAX_TABLE_LEN,
        });
    }
    read(r, table, phys, len)
}

/// Scans the BIOS area 0xE0000-0xFFFFF for the RSDP and returns its address.
pub fn scan_bios_area(r: &mut impl PhysRead) -> Result<u64, AcpiError> {
    let (start, len) = (0xE0000u64, 0x20000usize);
    let region = read(r, Table::Rsdp, start, len)?;
    find_rsdp(&region, start).map(|(a, _)| a)
}

/// Reads the RSDP at `rsdp_phys`, then the XSDT (revision >= 2 with a non-zero
/// address) or the RSDT, then every table it lists. A listed table that cannot be
/// read or has a bad header/checksum is skipped with a [`Warning`] (like Linux, which
/// warns and goes on); an unusable root table is an error.
pub fn load_tables(
    r: &mut impl PhysRead,
    rsdp_phys: u64,
) -> Result<(AcpiTables, Vec<Warning>), AcpiError> {
    let raw = match read(r, Table::Rsdp, rsdp_phys, RSDP_V2_LEN) {
        Ok(v) => v,
        Err(_) => read(r, Table::Rsdp, rsdp_phys, RSDP_V1_LEN)?,
    };
    let rsdp = parse_rsdp(&raw)?;
    let (root_kind, root_phys, ptr) = match rsdp.xsdt_address {
        Some(x) => (Table::Xsdt, x, 8usize),
        None => (Table::Rsdt, u64::from(rsdp.rsdt_address), 4usize),
    };
    let root = read_table(r, root_kind, root_phys)?;
    let (_, root) = validate_sdt(&root, root_kind)?;
    let body = root.len() - SDT_HEADER_LEN;
    if !body.is_multiple_of(ptr) {
        return Err(AcpiError::RootPointers {
            table: root_kind,
            body,
            pointer: ptr,
        });
    }
    let mut out = AcpiTables {
        rsdp: Some(rsdp),
        tables: Vec::new(),
    };
    let mut warnings = Vec::new();
    for i in 0..body / ptr {
        let off = SDT_HEADER_LEN + i * ptr;
        let phys = if ptr == 8 {
            u64_at(root, off)
        } else {
            u32_at(root, off).map(u64::from)
        };
        let Some(phys) = phys else { break };
        let loaded = read_table(r, Table::Other(*b"????"), phys).and_then(|t| {
            let sig = super::bytes::array_at::<4>(&t, 0).unwrap_or_default();
            let kind = Table::from_signature(sig);
            validate_sdt(&t, kind).map(|(_, v)| (sig, v.to_vec()))
        });
        match loaded {
            Ok((sig, t)) => out.tables.push((phys, sig, t)),
            Err(e) => warnings.push(Warning::TableSkipped { phys, error: e }),
        }
    }
    Ok((out, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acpi::madt::build::{lapic, madt};
    use crate::acpi::rsdp::build_rsdp;
    use crate::acpi::sdt::build_table;
    use alloc::format;
    use alloc::vec;

    fn xsdt(ptrs: &[u64]) -> Vec<u8> {
        let body: Vec<u8> = ptrs.iter().flat_map(|p| p.to_le_bytes()).collect();
        build_table(*b"XSDT", 1, &body)
    }

    #[test]
    fn xsdt_walk_skips_bad_tables() {
        let m = madt(&[lapic(0, 0, 1)]);
        let mut bad = build_table(*b"SRAT", 3, &[0; 12]);
        bad[20] ^= 0x10;
        let mut img = MemoryImage::default();
        img.regions.push((0x1000, build_rsdp(2, 0, 0x2000)));
        img.regions
            .push((0x2000, xsdt(&[0x3000, 0x4000, 0x9999_0000])));
        img.regions.push((0x3000, m.clone()));
        img.regions.push((0x4000, bad));
        let (t, w) = load_tables(&mut img, 0x1000).unwrap();
        assert_eq!(t.rsdp.as_ref().and_then(|r| r.xsdt_address), Some(0x2000));
        assert_eq!(t.find(*b"APIC"), Some(m.as_slice()));
        assert_eq!(t.find(*b"SRAT"), None);
        assert_eq!(w.len(), 2);
        assert_eq!(
            format!("{}", w[0]),
            "ACPI: table at 0x4000 skipped: SRAT: checksum mismatch (sum 0x10, expected 0)"
        );
        assert!(matches!(
            w[1],
            Warning::TableSkipped {
                phys: 0x9999_0000,
                error: AcpiError::Read { .. }
            }
        ));
    }

    #[test]
    fn rsdt_errors() {
        // RSDT body of 6 bytes: not a whole number of 4-byte pointers.
        let mut img = MemoryImage::default();
        img.regions.push((0x1000, build_rsdp(0, 0x2000, 0)));
        img.regions
            .push((0x2000, build_table(*b"RSDT", 1, &[0; 6])));
        let e = load_tables(&mut img, 0x1000).unwrap_err();
        assert_eq!(
            format!("{e}"),
            "RSDT: entry area of 6 bytes is not a multiple of the 4-byte pointer size"
        );
        // Root table with a wrong signature.
        img.regions[1] = (0x2000, build_table(*b"FACP", 1, &[]));
        assert!(matches!(
            load_tables(&mut img, 0x1000),
            Err(AcpiError::BadSignature {
                table: Table::Rsdt,
                ..
            })
        ));
        // No RSDP at all.
        assert!(matches!(
            load_tables(&mut img, 0x5000),
            Err(AcpiError::Read {
                table: Table::Rsdp,
                ..
            })
        ));
        // A huge length field is refused before reading.
        let mut huge = build_table(*b"RSDT", 1, &[]);
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        img.regions[1] = (0x2000, huge);
        assert!(matches!(
            load_tables(&mut img, 0x1000),
            Err(AcpiError::BadLength { .. })
        ));
        // BIOS-area scan.
        let mut bios = vec![0u8; 0x20000];
        bios[0x100..0x114].copy_from_slice(&build_rsdp(0, 0x2000, 0));
        img.regions.push((0xE0000, bios));
        assert_eq!(scan_bios_area(&mut img), Ok(0xE0100));
    }
}
