//! The Root System Description Pointer: "RSD PTR " signature, ACPI 1.0 form (20 bytes,
//! checksum over them, RSDT address) and 2.0+ form (length field, XSDT address and an
//! extended checksum over the whole structure).

use super::bytes::{array_at, checksum, slice, u8_at, u32_at, u64_at};
use super::error::{AcpiError, Table};

/// The RSDP signature.
pub const RSDP_SIGNATURE: [u8; 8] = *b"RSD PTR ";
/// Size of the ACPI 1.0 RSDP.
pub const RSDP_V1_LEN: usize = 20;
/// Size of the ACPI 2.0 RSDP.
pub const RSDP_V2_LEN: usize = 36;

/// A validated RSDP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rsdp {
    /// 0 for ACPI 1.0, 2 for ACPI 2.0 and later.
    pub revision: u8,
    /// OEM id.
    pub oem_id: [u8; 6],
    /// Physical address of the RSDT (32-bit pointers).
    pub rsdt_address: u32,
    /// Physical address of the XSDT (ACPI 2.0+, non-zero).
    pub xsdt_address: Option<u64>,
}

/// Parses and validates an RSDP at the start of `b` (signature, 20-byte checksum and,
/// for revision >= 2, the length field and extended checksum).
pub fn parse_rsdp(b: &[u8]) -> Result<Rsdp, AcpiError> {
    let table = Table::Rsdp;
    let v1 = slice(b, 0, RSDP_V1_LEN).ok_or(AcpiError::Truncated {
        table,
        what: "ACPI 1.0 structure",
        need: RSDP_V1_LEN,
        have: b.len(),
    })?;
    let sig: [u8; 8] = array_at(v1, 0).unwrap_or_default();
    if sig != RSDP_SIGNATURE {
        let found = array_at(v1, 0).unwrap_or_default();
        return Err(AcpiError::BadSignature { table, found });
    }
    let sum = checksum(v1);
    if sum != 0 {
        return Err(AcpiError::Checksum { table, sum });
    }
    let revision = u8_at(v1, 15).unwrap_or(0);
    let oem_id = array_at(v1, 9).unwrap_or_default();
    let rsdt_address = u32_at(v1, 16).unwrap_or(0);
    if revision < 2 {
        return Ok(Rsdp {
            revision,
            oem_id,
            rsdt_address,
            xsdt_address: None,
        });
    }
    let trunc = AcpiError::Truncated {
        table,
        what: "ACPI 2.0 structure",
        need: RSDP_V2_LEN,
        have: b.len(),
    };
    let length = u32_at(b, 20).ok_or(trunc.clone())?;
    let len = length as usize;
    if len < RSDP_V2_LEN {
        return Err(AcpiError::BadLength {
            table,
            length: u64::from(length),
            min: RSDP_V2_LEN,
            available: b.len(),
        });
    }
    let whole = slice(b, 0, len).ok_or(AcpiError::BadLength {
        table,
        length: u64::from(length),
        min: RSDP_V2_LEN,
        available: b.len(),
    })?;
    let sum = checksum(whole);
    if sum != 0 {
        return Err(AcpiError::ExtendedChecksum { sum });
    }
    let xsdt = u64_at(whole, 24).ok_or(trunc)?;
    Ok(Rsdp {
        revision,
        oem_id,
        rsdt_address,
        xsdt_address: (xsdt != 0).then_some(xsdt),
    })
}

/// Scans `region` (physical address `base`) on 16-byte boundaries for the first valid
/// RSDP, as the OS does in the EBDA and 0xE0000-0xFFFFF. Returns its physical address
/// and the parsed RSDP.
pub fn find_rsdp(region: &[u8], base: u64) -> Result<(u64, Rsdp), AcpiError> {
    let mut off = 0usize;
    while off < region.len() {
        if region
            .get(off..)
            .is_some_and(|r| r.starts_with(&RSDP_SIGNATURE))
            && let Some(rest) = region.get(off..)
            && let Ok(r) = parse_rsdp(rest)
        {
            return Ok((base.saturating_add(off as u64), r));
        }
        off = off.saturating_add(16);
    }
    Err(AcpiError::RsdpNotFound {
        start: base,
        end: base.saturating_add(region.len() as u64),
    })
}

/// Builds a valid RSDP (tests and hand-made fixtures): revision 0 gives the 20-byte
/// form, 2 the 36-byte form.
pub fn build_rsdp(revision: u8, rsdt: u32, xsdt: u64) -> alloc::vec::Vec<u8> {
    let mut r = alloc::vec::Vec::new();
    r.extend_from_slice(&RSDP_SIGNATURE);
    r.push(0);
    r.extend_from_slice(b"SCHEDL");
    r.push(revision);
    r.extend_from_slice(&rsdt.to_le_bytes());
    if revision >= 2 {
        r.extend_from_slice(&(RSDP_V2_LEN as u32).to_le_bytes());
        r.extend_from_slice(&xsdt.to_le_bytes());
        r.extend_from_slice(&[0, 0, 0, 0]);
    }
    let s = checksum(r.get(..RSDP_V1_LEN).unwrap_or(&[]));
    if let Some(c) = r.get_mut(8) {
        *c = 0u8.wrapping_sub(s);
    }
    if revision >= 2 {
        let s = checksum(&r);
        if let Some(c) = r.get_mut(32) {
            *c = 0u8.wrapping_sub(s);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::vec;

    #[test]
    fn v1_and_v2() {
        let r = parse_rsdp(&build_rsdp(0, 0x1234, 0)).unwrap();
        assert_eq!(
            (r.revision, r.rsdt_address, r.xsdt_address),
            (0, 0x1234, None)
        );
        let r = parse_rsdp(&build_rsdp(2, 0x1234, 0xABCD_0000_1000)).unwrap();
        assert_eq!(r.xsdt_address, Some(0xABCD_0000_1000));
        let mut bad = build_rsdp(2, 0x1234, 0x5000);
        bad[30] ^= 1;
        assert_eq!(
            format!("{}", parse_rsdp(&bad).unwrap_err()),
            "RSDP: extended checksum mismatch (sum 0x01, expected 0)"
        );
        let mut bad = build_rsdp(0, 0x1234, 0);
        bad[17] = bad[17].wrapping_add(2);
        assert_eq!(
            parse_rsdp(&bad).unwrap_err(),
            AcpiError::Checksum {
                table: Table::Rsdp,
                sum: 2
            }
        );
        assert!(matches!(
            parse_rsdp(&build_rsdp(2, 1, 2)[..30]),
            Err(AcpiError::BadLength { .. })
        ));
    }

    #[test]
    fn scan() {
        let mut region = vec![0u8; 256];
        // A signature with a bad checksum first, then a valid one.
        region[16..24].copy_from_slice(&RSDP_SIGNATURE);
        let good = build_rsdp(0, 0x7fe0000, 0);
        region[64..84].copy_from_slice(&good);
        let (addr, r) = find_rsdp(&region, 0xE0000).unwrap();
        assert_eq!(addr, 0xE0040);
        assert_eq!(r.rsdt_address, 0x7fe0000);
        assert!(find_rsdp(&region[..64], 0xE0000).is_err());
    }
}
