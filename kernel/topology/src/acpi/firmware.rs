//! [`Firmware`]: the three tables topology needs, taken from loaded [`AcpiTables`]
//! with Linux's tolerance: the MADT is required, an unusable SRAT or SLIT is dropped
//! with a warning (Linux prints "SRAT not used" / "SLIT table looks invalid").

use alloc::vec::Vec;

use super::error::{AcpiError, Table};
use super::madt::{Madt, parse_madt};
use super::slit::{Slit, parse_slit};
use super::srat::{Srat, parse_srat};
use super::tables::AcpiTables;
use crate::warning::Warning;

/// Parsed MADT plus optional SRAT and SLIT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Firmware {
    /// The MADT.
    pub madt: Madt,
    /// The SRAT, if present and valid.
    pub srat: Option<Srat>,
    /// The SLIT, if present and valid.
    pub slit: Option<Slit>,
}

impl Firmware {
    /// Parses the tables found through the RSDT/XSDT.
    pub fn from_tables(t: &AcpiTables) -> Result<(Firmware, Vec<Warning>), AcpiError> {
        let madt = t
            .find(*b"APIC")
            .ok_or(AcpiError::Missing { table: Table::Madt })?;
        let (fw, mut w) = Self::from_bytes(madt, t.find(*b"SRAT"), t.find(*b"SLIT"))?;
        for table in [Table::Madt, Table::Srat, Table::Slit] {
            let mut at = t
                .tables
                .iter()
                .filter(|(_, s, _)| *s == table.signature())
                .map(|(p, _, _)| *p);
            if let Some(used) = at.next() {
                for ignored in at {
                    w.push(Warning::DuplicateTable {
                        table,
                        used,
                        ignored,
                    });
                }
            }
        }
        Ok((fw, w))
    }

    /// Parses raw table bytes (MADT required).
    pub fn from_bytes(
        madt: &[u8],
        srat: Option<&[u8]>,
        slit: Option<&[u8]>,
    ) -> Result<(Firmware, Vec<Warning>), AcpiError> {
        let (madt, mut w) = parse_madt(madt)?;
        let srat = srat.and_then(|b| {
            parse_srat(b)
                .map_err(|e| w.push(Warning::SratIgnored(e)))
                .ok()
        });
        let slit = slit.and_then(|b| {
            parse_slit(b)
                .map_err(|e| w.push(Warning::SlitIgnored(e)))
                .ok()
        });
        Ok((Firmware { madt, srat, slit }, w))
    }
}
