//! MADT ("APIC") parsing: local APIC (type 0) and local x2APIC (9) processors with
//! their enabled / online-capable flags, I/O APICs (1), interrupt source overrides (2),
//! local APIC NMIs (4) and local x2APIC NMIs (0xA), and the local APIC address
//! override (5). Unknown entry types are skipped; known ones shorter than their
//! layout are errors.

use alloc::vec::Vec;

use super::bytes::{u8_at, u16_at, u32_at, u64_at};
use super::error::{AcpiError, Table};
use super::sdt::{SDT_HEADER_LEN, SdtHeader, need_len, validate_sdt, walk_entries};
use crate::warning::Warning;

/// Offset of the first entry (after local APIC address and flags).
const ENTRIES: usize = SDT_HEADER_LEN + 8;

/// Processor flag: enabled.
pub const MADT_ENABLED: u32 = 1;
/// Processor flag: online capable (may be enabled later; ACPI 6.3+).
pub const MADT_ONLINE_CAPABLE: u32 = 2;

/// A processor entry (type 0 or 9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MadtCpu {
    /// Index of the entry in the MADT.
    pub entry: usize,
    /// ACPI processor UID (8-bit for type 0).
    pub uid: u32,
    /// Local APIC / x2APIC id.
    pub apic_id: u32,
    /// Flags bit 0.
    pub enabled: bool,
    /// Flags bit 1.
    pub online_capable: bool,
    /// From a local x2APIC (type 9) entry.
    pub x2apic: bool,
}

/// An I/O APIC (type 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoApic {
    /// I/O APIC id.
    pub id: u8,
    /// MMIO address.
    pub address: u32,
    /// First global system interrupt it handles.
    pub gsi_base: u32,
}

/// An interrupt source override (type 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterruptOverride {
    /// Bus (0 = ISA).
    pub bus: u8,
    /// Bus-relative IRQ.
    pub source: u8,
    /// Global system interrupt.
    pub gsi: u32,
    /// MPS INTI flags (polarity, trigger mode).
    pub flags: u16,
}

/// A local APIC NMI (type 4) or local x2APIC NMI (type 0xA).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LapicNmi {
    /// Processor UID, 0xff / 0xffffffff = all processors.
    pub uid: u32,
    /// MPS INTI flags.
    pub flags: u16,
    /// LINT# input (0 or 1).
    pub lint: u8,
    /// From a type 0xA entry.
    pub x2apic: bool,
}

/// A parsed MADT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Madt {
    /// Table header.
    pub header: SdtHeader,
    /// Local APIC address, after a type 5 override.
    pub local_apic_address: u64,
    /// MADT flags (bit 0 PCAT_COMPAT: dual 8259 present).
    pub flags: u32,
    /// Processors in table order (enabled or not).
    pub cpus: Vec<MadtCpu>,
    /// I/O APICs.
    pub io_apics: Vec<IoApic>,
    /// Interrupt source overrides.
    pub overrides: Vec<InterruptOverride>,
    /// Local (x2)APIC NMI entries.
    pub nmis: Vec<LapicNmi>,
    /// Value of a local APIC address override entry, if any.
    pub lapic_override: Option<u64>,
}

impl Madt {
    /// Enabled processors in MADT order (Linux brings up exactly these at boot;
    /// online-capable ones are hot-plug candidates).
    pub fn enabled_cpus(&self) -> impl Iterator<Item = &MadtCpu> + '_ {
        self.cpus.iter().filter(|c| c.enabled)
    }
}

/// Name of an MADT entry type for messages.
pub fn madt_entry_kind(ty: u8) -> &'static str {
    match ty {
        0 => "local APIC",
        1 => "I/O APIC",
        2 => "interrupt source override",
        3 => "NMI source",
        4 => "local APIC NMI",
        5 => "local APIC address override",
        9 => "local x2APIC",
        0xA => "local x2APIC NMI",
        _ => "unknown",
    }
}

/// Parses and validates a MADT. Local APIC entries with APIC id 0xff are dropped
/// with a warning (Linux `acpi_parse_lapic` ignores them).
pub fn parse_madt(bytes: &[u8]) -> Result<(Madt, Vec<Warning>), AcpiError> {
    let table = Table::Madt;
    let (header, t) = validate_sdt(bytes, table)?;
    let trunc = AcpiError::Truncated {
        table,
        what: "fixed part",
        need: ENTRIES,
        have: t.len(),
    };
    let lapic = u32_at(t, SDT_HEADER_LEN).ok_or(trunc.clone())?;
    let flags = u32_at(t, SDT_HEADER_LEN + 4).ok_or(trunc)?;
    let mut m = Madt {
        header,
        local_apic_address: u64::from(lapic),
        flags,
        cpus: Vec::new(),
        io_apics: Vec::new(),
        overrides: Vec::new(),
        nmis: Vec::new(),
        lapic_override: None,
    };
    let mut warnings = Vec::new();
    walk_entries(
        t,
        ENTRIES,
        table,
        madt_entry_kind,
        |index, ty, offset, e| {
            let kind = madt_entry_kind(ty);
            let need = |min| need_len(table, index, kind, offset, e, min);
            let b = |o| u8_at(e, o).unwrap_or(0);
            let w = |o| u16_at(e, o).unwrap_or(0);
            let d = |o| u32_at(e, o).unwrap_or(0);
            match ty {
                0 => {
                    need(8)?;
                    let f = d(4);
                    if b(3) == 0xff {
                        warnings.push(Warning::MadtInvalidApicId { index });
                    } else {
                        m.cpus.push(MadtCpu {
                            entry: index,
                            uid: u32::from(b(2)),
                            apic_id: u32::from(b(3)),
                            enabled: f & MADT_ENABLED != 0,
                            online_capable: f & MADT_ONLINE_CAPABLE != 0,
                            x2apic: false,
                        });
                    }
                }
                1 => {
                    need(12)?;
                    m.io_apics.push(IoApic {
                        id: b(2),
                        address: d(4),
                        gsi_base: d(8),
                    });
                }
                2 => {
                    need(10)?;
                    m.overrides.push(InterruptOverride {
                        bus: b(2),
                        source: b(3),
                        gsi: d(4),
                        flags: w(8),
                    });
                }
                4 => {
                    need(6)?;
                    m.nmis.push(LapicNmi {
                        uid: u32::from(b(2)),
                        flags: w(3),
                        lint: b(5),
                        x2apic: false,
                    });
                }
                5 => {
                    need(12)?;
                    let a = u64_at(e, 4).unwrap_or(0);
                    m.lapic_override = Some(a);
                    m.local_apic_address = a;
                }
                9 => {
                    need(16)?;
                    let f = d(8);
                    m.cpus.push(MadtCpu {
                        entry: index,
                        uid: d(12),
                        apic_id: d(4),
                        enabled: f & MADT_ENABLED != 0,
                        online_capable: f & MADT_ONLINE_CAPABLE != 0,
                        x2apic: true,
                    });
                }
                0xA => {
                    need(12)?;
                    m.nmis.push(LapicNmi {
                        uid: d(4),
                        flags: w(2),
                        lint: b(8),
                        x2apic: true,
                    });
                }
                _ => {}
            }
            Ok(())
        },
    )?;
    Ok((m, warnings))
}

/// Hand-made MADT entries for tests and fixtures.
pub mod build {
    use alloc::vec::Vec;

    /// Local APIC entry (type 0).
    pub fn lapic(uid: u8, apic_id: u8, flags: u32) -> Vec<u8> {
        let mut e = alloc::vec![0u8, 8, uid, apic_id];
        e.extend_from_slice(&flags.to_le_bytes());
        e
    }

    /// Local x2APIC entry (type 9).
    pub fn x2apic(uid: u32, apic_id: u32, flags: u32) -> Vec<u8> {
        let mut e = alloc::vec![9u8, 16, 0, 0];
        e.extend_from_slice(&apic_id.to_le_bytes());
        e.extend_from_slice(&flags.to_le_bytes());
        e.extend_from_slice(&uid.to_le_bytes());
        e
    }

    /// A whole MADT with local APIC address 0xfee00000, PCAT_COMPAT and `entries`.
    pub fn madt(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&0xfee0_0000u32.to_le_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        for e in entries {
            body.extend_from_slice(e);
        }
        crate::acpi::sdt::build_table(*b"APIC", 3, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;
    use alloc::format;
    use alloc::vec;

    #[test]
    fn all_entry_types() {
        let ioapic = vec![1u8, 12, 2, 0, 0, 0, 0xc0, 0xfe, 0, 0, 0, 0];
        let iso = vec![2u8, 10, 0, 0, 2, 0, 0, 0, 0, 0];
        let nmi = vec![4u8, 6, 0xff, 5, 0, 1];
        let ovr = vec![5u8, 12, 0, 0, 0, 0, 0xe0, 0xfe, 1, 0, 0, 0];
        let x2nmi = vec![0xAu8, 12, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0];
        let unknown = vec![0x7fu8, 3, 0];
        let t = madt(&[
            lapic(0, 0, 1),
            lapic(1, 2, 2),
            lapic(2, 0xff, 1),
            x2apic(7, 300, 1),
            ioapic,
            iso,
            nmi,
            ovr,
            x2nmi,
            unknown,
        ]);
        let (m, w) = parse_madt(&t).unwrap();
        assert_eq!(w, [Warning::MadtInvalidApicId { index: 2 }]);
        assert_eq!(m.cpus.len(), 3);
        assert!(m.cpus[0].enabled && !m.cpus[0].online_capable);
        assert!(!m.cpus[1].enabled && m.cpus[1].online_capable);
        assert_eq!(
            (m.cpus[2].apic_id, m.cpus[2].uid, m.cpus[2].x2apic),
            (300, 7, true)
        );
        assert_eq!(
            m.enabled_cpus().map(|c| c.apic_id).collect::<Vec<_>>(),
            [0, 300]
        );
        assert_eq!(
            m.io_apics,
            [IoApic {
                id: 2,
                address: 0xfec0_0000,
                gsi_base: 0
            }]
        );
        assert_eq!(
            m.overrides,
            [InterruptOverride {
                bus: 0,
                source: 0,
                gsi: 2,
                flags: 0
            }]
        );
        assert_eq!(
            m.nmis[0],
            LapicNmi {
                uid: 0xff,
                flags: 5,
                lint: 1,
                x2apic: false
            }
        );
        assert_eq!(
            m.nmis[1],
            LapicNmi {
                uid: u32::MAX,
                flags: 0,
                lint: 1,
                x2apic: true
            }
        );
        assert_eq!(m.local_apic_address, 0x1_fee0_0000);
        assert_eq!(m.flags, 1);
    }

    #[test]
    fn broken_entries() {
        // Entry length below its type's layout.
        let mut short = lapic(0, 0, 1);
        short[1] = 6;
        short.truncate(6);
        let e = parse_madt(&madt(&[lapic(0, 0, 1), short])).unwrap_err();
        assert_eq!(
            format!("{e}"),
            "MADT: entry 1 (local APIC) at offset 0x34 has length 6, below the minimum 8"
        );
        // Entry running past the table end.
        let mut long = x2apic(0, 1, 1);
        long[1] = 20;
        let e = parse_madt(&madt(&[long])).unwrap_err();
        assert_eq!(
            format!("{e}"),
            "MADT: entry 0 (local x2APIC) at offset 0x2c is truncated: length 20 but 16 bytes remain"
        );
        // Zero length would loop forever.
        let e = parse_madt(&madt(&[vec![0u8, 0]])).unwrap_err();
        assert!(matches!(
            e,
            AcpiError::EntryTooShort {
                length: 0,
                min: 2,
                ..
            }
        ));
        // A lone type byte at the end.
        let e = parse_madt(&madt(&[vec![0u8]])).unwrap_err();
        assert!(matches!(e, AcpiError::EntryTruncated { remain: 1, .. }));
        // Bad checksum.
        let mut t = madt(&[lapic(0, 0, 1)]);
        t[40] = t[40].wrapping_add(0x3c);
        assert_eq!(
            format!("{}", parse_madt(&t).unwrap_err()),
            "MADT: checksum mismatch (sum 0x3c, expected 0)"
        );
    }
}
