//! Safe reads of memory the bootloader handed over: physical memory through
//! its linear window (firmware tables), the ramdisk (boot configuration),
//! and the one deliberate write to an unmapped address (fault tests).

use alloc::vec::Vec;

/// Copies `len` bytes at physical address `phys` out of the bootloader's
/// window of all physical memory, mapped at `offset` and covering physical
/// addresses below `limit`; None if any of them lies outside it.
pub fn read(offset: u64, limit: u64, phys: u64, len: usize) -> Option<Vec<u8>> {
    let end = phys.checked_add(len as u64)?;
    if end > limit {
        return None;
    }
    let mut out = alloc::vec![0u8; len];
    // SAFETY: [phys, end) lies below `limit`, the end of the physical memory
    // the bootloader mapped at `offset`; reading firmware tables has no side
    // effects, and `out` is a fresh buffer of `len` bytes.
    unsafe { core::ptr::copy_nonoverlapping((offset + phys) as *const u8, out.as_mut_ptr(), len) };
    Some(out)
}

/// The ramdisk the bootloader loaded, if any.
pub fn ramdisk(boot_info: &bootloader_api::BootInfo) -> Option<&'static [u8]> {
    let addr = boot_info.ramdisk_addr.into_option()?;
    // SAFETY: the bootloader mapped the ramdisk at `addr` for `ramdisk_len`
    // bytes and never reuses that memory; nothing in the kernel writes it.
    Some(unsafe { core::slice::from_raw_parts(addr as *const u8, boot_info.ramdisk_len as usize) })
}

/// An address the bootloader leaves unmapped: below its mappings (it maps the
/// kernel and physical memory at high addresses).
pub const UNMAPPED: u64 = 0xdead_0000;

/// Writes to [`UNMAPPED`] so that the page-fault handler ends the run (the
/// `test-pagefault` experiment); returns only if the write did not fault.
pub fn write_unmapped(value: u64) {
    // SAFETY: deliberately faulting: nothing is mapped at `UNMAPPED`, so the
    // write raises #PF, whose handler reports and ends the run; no memory is
    // changed.
    unsafe { core::ptr::write_volatile(UNMAPPED as *mut u64, value) };
}
