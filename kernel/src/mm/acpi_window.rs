//! The `acpi` crate's access to physical memory: an [`acpi::AcpiHandler`] over
//! the bootloader's physical-memory window, and the table walk it starts.
//!
//! The kernel uses the crate only for the two tables it reads correctly and
//! that the TSC calibration needs: the FADT (where the ACPI PM timer is and
//! how wide it is) and the HPET table (where the HPET's registers are).
//! MADT, SRAT and SLIT are parsed by the project's own `topology::acpi`,
//! which has already walked and checksummed the same RSDP/RSDT before this
//! runs (docs/topology.md, "Why the project's own parsers").

use core::ptr::NonNull;

use acpi::{AcpiError, AcpiHandler, AcpiTables, PhysicalMapping};

/// Physical memory as the bootloader maps it: physical `p` is at virtual
/// `offset + p` for every `p < limit`. Nothing is mapped or unmapped.
#[derive(Clone, Copy, Debug)]
pub struct PhysWindow {
    offset: u64,
    limit: u64,
}

impl AcpiHandler for PhysWindow {
    unsafe fn map_physical_region<T>(&self, phys: usize, size: usize) -> PhysicalMapping<Self, T> {
        let end = (phys as u64).checked_add(size as u64);
        assert!(
            end.is_some_and(|e| e <= self.limit),
            "ACPI: {size} bytes at {phys:#x} lie outside the physical-memory window (limit {:#x})",
            self.limit
        );
        let virt = NonNull::new((self.offset + phys as u64) as *mut T)
            .expect("the physical-memory window is not at virtual 0");
        // SAFETY: [phys, phys + size) lies below `limit`, so the window maps it
        // at `virt` for the kernel's whole lifetime (the mapping is never
        // removed, hence `unmap_physical_region` does nothing). The caller
        // (the `acpi` crate) guarantees that a `T` is there.
        unsafe { PhysicalMapping::new(phys, virt, size, size, *self) }
    }

    fn unmap_physical_region<T>(_region: &PhysicalMapping<Self, T>) {}
}

/// The `acpi` crate's table set rooted at the RSDP at physical `rsdp`.
pub fn tables(rsdp: u64, offset: u64, limit: u64) -> Result<AcpiTables<PhysWindow>, AcpiError> {
    let window = PhysWindow { offset, limit };
    // SAFETY: `rsdp` is the RSDP that `topology::acpi::load_tables` has
    // already validated (signature, checksums, revision) and walked, and the
    // handler maps only addresses inside the physical-memory window.
    unsafe { AcpiTables::from_rsdp(window, rsdp as usize) }
}
