//! SRAT parsing: processor local APIC affinity (type 0), memory affinity (1) and
//! processor x2APIC affinity (2). Other types (GICC, ITS, generic initiators) are
//! skipped. Entries whose enabled flag is clear are kept with `enabled: false` (Linux
//! ignores them).

use alloc::vec::Vec;

use super::bytes::{u8_at, u32_at, u64_at};
use super::error::{AcpiError, Table};
use super::sdt::{SDT_HEADER_LEN, SdtHeader, need_len, validate_sdt, walk_entries};

/// Offset of the first entry (after the 4-byte table revision and 8 reserved bytes).
const ENTRIES: usize = SDT_HEADER_LEN + 12;

/// A processor affinity entry (type 0 or 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SratCpu {
    /// Local APIC id (type 0, 8 bits) or x2APIC id (type 2).
    pub apic_id: u32,
    /// Proximity domain (type 0: low 8 bits plus 24 high bits in bytes 9-11).
    pub proximity_domain: u32,
    /// Flags bit 0.
    pub enabled: bool,
    /// Clock domain.
    pub clock_domain: u32,
    /// From a type 2 entry.
    pub x2apic: bool,
}

/// A memory affinity entry (type 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SratMemory {
    /// Proximity domain.
    pub proximity_domain: u32,
    /// Base physical address.
    pub base: u64,
    /// Length in bytes.
    pub length: u64,
    /// Flags bit 0.
    pub enabled: bool,
    /// Flags bit 1.
    pub hot_pluggable: bool,
    /// Flags bit 2.
    pub non_volatile: bool,
}

/// A parsed SRAT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Srat {
    /// Table header.
    pub header: SdtHeader,
    /// Processor entries in table order.
    pub cpus: Vec<SratCpu>,
    /// Memory entries in table order.
    pub memory: Vec<SratMemory>,
}

impl Srat {
    /// Proximity domain of an enabled processor entry for `apic_id`.
    pub fn domain_of(&self, apic_id: u32) -> Option<u32> {
        self.cpus
            .iter()
            .find(|c| c.enabled && c.apic_id == apic_id)
            .map(|c| c.proximity_domain)
    }
}

/// Name of an SRAT entry type for messages.
pub fn srat_entry_kind(ty: u8) -> &'static str {
    match ty {
        0 => "processor APIC affinity",
        1 => "memory affinity",
        2 => "x2APIC affinity",
        3 => "GICC affinity",
        4 => "GIC ITS affinity",
        5 => "generic initiator affinity",
        _ => "unknown",
    }
}

/// Parses and validates an SRAT.
pub fn parse_srat(bytes: &[u8]) -> Result<Srat, AcpiError> {
    let table = Table::Srat;
    let (header, t) = validate_sdt(bytes, table)?;
    if t.len() < ENTRIES {
        return Err(AcpiError::Truncated {
            table,
            what: "fixed part",
            need: ENTRIES,
            have: t.len(),
        });
    }
    // (entry index, APIC id, x2APIC, domain) of the enabled processor entries.
    let mut seen: Vec<(usize, u32, bool, u32)> = Vec::new();
    let mut s = Srat {
        header,
        cpus: Vec::new(),
        memory: Vec::new(),
    };
    walk_entries(
        t,
        ENTRIES,
        table,
        srat_entry_kind,
        |index, ty, offset, e| {
            let kind = srat_entry_kind(ty);
            let need = |min| need_len(table, index, kind, offset, e, min);
            let b = |o| u8_at(e, o).unwrap_or(0);
            let d = |o| u32_at(e, o).unwrap_or(0);
            match ty {
                0 => {
                    need(16)?;
                    let hi = u32::from(b(9)) | u32::from(b(10)) << 8 | u32::from(b(11)) << 16;
                    s.cpus.push(SratCpu {
                        apic_id: u32::from(b(3)),
                        proximity_domain: u32::from(b(2)) | hi << 8,
                        enabled: d(4) & 1 != 0,
                        clock_domain: d(12),
                        x2apic: false,
                    });
                }
                1 => {
                    need(40)?;
                    let f = d(28);
                    s.memory.push(SratMemory {
                        proximity_domain: d(2),
                        base: u64_at(e, 8).unwrap_or(0),
                        length: u64_at(e, 16).unwrap_or(0),
                        enabled: f & 1 != 0,
                        hot_pluggable: f & 2 != 0,
                        non_volatile: f & 4 != 0,
                    });
                }
                2 => {
                    need(24)?;
                    s.cpus.push(SratCpu {
                        apic_id: d(8),
                        proximity_domain: d(4),
                        enabled: d(12) & 1 != 0,
                        clock_domain: d(16),
                        x2apic: true,
                    });
                }
                _ => {}
            }
            if let Some(c) = s.cpus.last().filter(|c| matches!(ty, 0 | 2) && c.enabled) {
                if let Some(&(first, _, _, first_domain)) = seen
                    .iter()
                    .find(|(_, a, x, _)| *a == c.apic_id && *x == c.x2apic)
                {
                    if first_domain != c.proximity_domain {
                        return Err(AcpiError::SratDuplicateCpu {
                            index,
                            first,
                            apic_id: c.apic_id,
                            domain: c.proximity_domain,
                            first_domain,
                        });
                    }
                    // The same fact twice: harmless, keep the first.
                    s.cpus.pop();
                } else {
                    seen.push((index, c.apic_id, c.x2apic, c.proximity_domain));
                }
            }
            Ok(())
        },
    )?;
    Ok(s)
}

/// Hand-made SRAT entries for tests and fixtures.
pub mod build {
    use alloc::vec::Vec;

    /// Processor local APIC affinity (type 0).
    pub fn cpu(apic_id: u8, domain: u32, enabled: bool) -> Vec<u8> {
        let d = domain.to_le_bytes();
        let mut e = alloc::vec![0u8, 16, d[0], apic_id];
        e.extend_from_slice(&u32::from(enabled).to_le_bytes());
        e.extend_from_slice(&[0, d[1], d[2], d[3]]);
        e.extend_from_slice(&0u32.to_le_bytes());
        e
    }

    /// Processor x2APIC affinity (type 2).
    pub fn x2cpu(apic_id: u32, domain: u32, enabled: bool) -> Vec<u8> {
        let mut e = alloc::vec![2u8, 24, 0, 0];
        e.extend_from_slice(&domain.to_le_bytes());
        e.extend_from_slice(&apic_id.to_le_bytes());
        e.extend_from_slice(&u32::from(enabled).to_le_bytes());
        e.extend_from_slice(&[0; 8]);
        e
    }

    /// Memory affinity (type 1), enabled.
    pub fn memory(domain: u32, base: u64, length: u64) -> Vec<u8> {
        let mut e = alloc::vec![1u8, 40];
        e.extend_from_slice(&domain.to_le_bytes());
        e.extend_from_slice(&[0, 0]);
        e.extend_from_slice(&base.to_le_bytes());
        e.extend_from_slice(&length.to_le_bytes());
        e.extend_from_slice(&[0; 4]);
        e.extend_from_slice(&1u32.to_le_bytes());
        e.extend_from_slice(&[0; 8]);
        e
    }

    /// A whole SRAT.
    pub fn srat(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut body = alloc::vec![1u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        for e in entries {
            body.extend_from_slice(e);
        }
        crate::acpi::sdt::build_table(*b"SRAT", 3, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;
    use alloc::format;

    #[test]
    fn entries() {
        let t = srat(&[
            cpu(0, 0, true),
            cpu(1, 0x0102_0304, true),
            x2cpu(400, 3, true),
            cpu(2, 1, false),
            memory(1, 0x1000_0000, 0x800_0000),
        ]);
        let s = parse_srat(&t).unwrap();
        assert_eq!(s.cpus.len(), 4);
        assert_eq!(s.cpus[1].proximity_domain, 0x0102_0304);
        assert_eq!(s.domain_of(400), Some(3));
        assert_eq!(s.domain_of(2), None);
        assert_eq!(s.memory[0].base, 0x1000_0000);
        assert!(s.memory[0].enabled && !s.memory[0].hot_pluggable);
    }

    #[test]
    fn truncated_x2apic_entry() {
        // Entries: 3 local APIC (16 bytes each) then a 24-byte x2APIC entry cut to 20.
        let mut t = srat(&[
            cpu(0, 0, true),
            cpu(1, 0, true),
            cpu(2, 0, true),
            x2cpu(9, 0, true),
        ]);
        t.truncate(t.len() - 4);
        let len = t.len() as u32;
        t[4..8].copy_from_slice(&len.to_le_bytes());
        crate::acpi::sdt::fix_checksum(&mut t, 9);
        let e = parse_srat(&t).unwrap_err();
        assert_eq!(
            format!("{e}"),
            "SRAT: entry 3 (x2APIC affinity) at offset 0x60 is truncated: length 24 but 20 bytes remain"
        );
    }
}
