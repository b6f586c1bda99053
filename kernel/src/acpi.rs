//! ACPI discovery glue: gives the pure `topology` crate read access to
//! physical memory and returns the parsed MADT / SRAT / SLIT.
//!
//! The RSDP address comes from the bootloader (BIOS scan or UEFI config
//! table); when it is missing, the BIOS area is scanned as Linux does.

use alloc::string::String;
use alloc::vec::Vec;

use topology::acpi::{self, Firmware, PhysRead, PhysReadError};

/// Reads physical memory through the bootloader's physical-memory window.
struct PhysWindow {
    offset: u64,
    /// First physical address not covered by the window.
    limit: u64,
}

impl PhysRead for PhysWindow {
    fn read(&mut self, phys: u64, len: usize) -> Result<Vec<u8>, PhysReadError> {
        let end = phys.checked_add(len as u64).ok_or(PhysReadError)?;
        if end > self.limit {
            return Err(PhysReadError);
        }
        let mut out = alloc::vec![0u8; len];
        // SAFETY: [phys, end) lies below `limit`, the end of the physical
        // memory the bootloader mapped at `offset`; reading firmware tables has
        // no side effects.
        unsafe {
            core::ptr::copy_nonoverlapping((self.offset + phys) as *const u8, out.as_mut_ptr(), len)
        };
        Ok(out)
    }
}

/// What ACPI told us.
pub struct AcpiInfo {
    /// Physical address of the RSDP.
    pub rsdp: u64,
    /// MADT, SRAT, SLIT.
    pub firmware: Firmware,
    /// Signatures of every table the root table lists.
    pub tables: Vec<String>,
}

/// Locates and parses the tables. Warnings are logged; errors are returned as
/// a message naming the table and the field.
pub fn probe(rsdp: Option<u64>, phys_offset: u64, phys_limit: u64) -> Result<AcpiInfo, String> {
    let mut mem = PhysWindow {
        offset: phys_offset,
        limit: phys_limit,
    };
    let rsdp = match rsdp {
        Some(a) => a,
        None => acpi::scan_bios_area(&mut mem).map_err(|e| alloc::format!("ACPI: no RSDP: {e}"))?,
    };
    let (tables, warnings) =
        acpi::load_tables(&mut mem, rsdp).map_err(|e| alloc::format!("ACPI: {e}"))?;
    for w in &warnings {
        log::warn!("ACPI: {w}");
    }
    let (firmware, warnings) =
        Firmware::from_tables(&tables).map_err(|e| alloc::format!("ACPI: {e}"))?;
    for w in &warnings {
        log::warn!("ACPI: {w}");
    }
    let names = tables
        .tables
        .iter()
        .map(|(_, sig, _)| String::from_utf8_lossy(sig).into_owned())
        .collect();
    Ok(AcpiInfo {
        rsdp,
        firmware,
        tables: names,
    })
}
