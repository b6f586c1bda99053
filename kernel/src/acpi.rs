//! ACPI discovery glue: gives the pure `topology` crate read access to
//! physical memory and returns the parsed MADT / SRAT / SLIT.
//!
//! The RSDP address comes from the bootloader (BIOS scan or UEFI config
//! table); when it is missing, the BIOS area is scanned as Linux does.
//!
//! The clock hardware that the TSC calibration can use (ACPI PM timer from
//! the FADT, HPET from its table) is found with the `acpi` crate
//! ([`clock_hardware`]), which reads those two tables correctly; the
//! topology tables stay with `topology::acpi` (docs/topology.md says why).

use alloc::string::String;
use alloc::vec::Vec;

use topology::acpi::{self, Firmware, PhysRead, PhysReadError};

pub use crate::arch::time::{ClockHardware, PmTimer};

/// Reads physical memory through the bootloader's physical-memory window.
struct PhysWindow {
    offset: u64,
    /// First physical address not covered by the window.
    limit: u64,
}

impl PhysRead for PhysWindow {
    fn read(&mut self, phys: u64, len: usize) -> Result<Vec<u8>, PhysReadError> {
        crate::mm::phys::read(self.offset, self.limit, phys, len).ok_or(PhysReadError)
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
    /// Timers the TSC can be calibrated against.
    pub clock: ClockHardware,
}

/// Offset of the base address's address-space id in the HPET table (after
/// the 36-byte header and the 4-byte event timer block id).
const HPET_ADDRESS_SPACE_OFFSET: usize = 40;

/// Finds the PM timer (FADT) and the HPET (HPET table) with the `acpi` crate.
/// A table that is absent or unusable leaves its timer `None` and adds a
/// warning; none of this is fatal, since the PIT is always there.
/// `hpet_table`: the HPET table's bytes as `topology::acpi` loaded them; the
/// crate asserts (panics) on an HPET outside memory space, so that case is
/// ruled out here first.
pub fn clock_hardware(
    rsdp: u64,
    hpet_table: Option<&[u8]>,
    phys_offset: u64,
    phys_limit: u64,
) -> (ClockHardware, Vec<String>) {
    use ::acpi::address::AddressSpace;
    use ::acpi::fadt::Fadt;

    let mut clock = ClockHardware::default();
    let mut warnings = Vec::new();
    let tables = match crate::mm::acpi_window::tables(rsdp, phys_offset, phys_limit) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(alloc::format!("acpi crate: tables: {e:?}"));
            return (clock, warnings);
        }
    };
    match tables.find_table::<Fadt>() {
        Ok(fadt) => match fadt.pm_timer_block() {
            Ok(Some(block))
                if block.address_space == AddressSpace::SystemIo && block.address <= 0xFFFF =>
            {
                // A copy: `flags` is a field of a packed struct.
                let flags = fadt.flags;
                clock.pm_timer = Some(PmTimer {
                    port: block.address as u16,
                    bits: if flags.pm_timer_is_32_bit() { 32 } else { 24 },
                });
            }
            Ok(Some(block)) => warnings.push(alloc::format!(
                "FADT: PM timer at {:#x} in {:?} space, not an I/O port: not used",
                block.address,
                block.address_space
            )),
            Ok(None) => {}
            Err(e) => warnings.push(alloc::format!("FADT: PM timer block: {e:?}")),
        },
        Err(e) => warnings.push(alloc::format!("FADT: {e:?}")),
    }
    match hpet_table.map(|t| t.get(HPET_ADDRESS_SPACE_OFFSET)) {
        None => {}
        Some(Some(0)) => match ::acpi::HpetInfo::new(&tables) {
            Ok(info) if info.base_address != 0 => clock.hpet = Some(info.base_address as u64),
            Ok(_) => warnings.push("HPET table: base address 0: not used".into()),
            Err(e) => warnings.push(alloc::format!("HPET table: {e:?}")),
        },
        Some(space) => warnings.push(alloc::format!(
            "HPET table: registers not in memory space (address space id {space:?}): not used"
        )),
    }
    (clock, warnings)
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
    let (clock, warnings) = clock_hardware(rsdp, tables.find(*b"HPET"), phys_offset, phys_limit);
    for w in &warnings {
        log::warn!("ACPI: {w}");
    }
    Ok(AcpiInfo {
        rsdp,
        firmware,
        tables: names,
        clock,
    })
}
