//! Per-CPU data reached through the GS base register.
//!
//! Each CPU owns one `PerCpu` block (leaked at start-up, never freed). GS base
//! points at it, so `current()` is a single MSR-free `mov` from `gs:[0]`.
//! Fault paths use [`cpu_index`], which checks the GS base first and therefore
//! also works before the block is installed.

use alloc::boxed::Box;
use x86_64::VirtAddr;
use x86_64::registers::model_specific::GsBase;

/// Per-CPU block. `this` must stay the first field (read as `gs:[0]`).
#[repr(C, align(64))]
pub struct PerCpu {
    this: *const PerCpu,
    /// Dense logical CPU number (0 = boot CPU).
    pub cpu: u32,
    /// Local APIC id of this CPU.
    pub apic_id: u32,
}

/// Installs a fresh per-CPU block for the executing CPU.
pub fn install(cpu: u32, apic_id: u32) -> &'static PerCpu {
    let block = Box::leak(Box::new(PerCpu {
        this: core::ptr::null(),
        cpu,
        apic_id,
    }));
    block.this = block as *const PerCpu;
    assert_eq!(
        GsBase::read().as_u64(),
        0,
        "per-CPU block installed twice on CPU {cpu}"
    );
    GsBase::write(VirtAddr::from_ptr(block as *const PerCpu));
    block
}

/// The executing CPU's block, if installed.
pub fn try_current() -> Option<&'static PerCpu> {
    let base = GsBase::read().as_u64();
    if base == 0 {
        return None;
    }
    // SAFETY: a non-zero GS base is only ever set by `install`, to a leaked
    // (hence 'static) `PerCpu` block.
    Some(unsafe { &*(base as *const PerCpu) })
}

/// Logical number of the executing CPU; falls back to the APIC id (marked by the
/// caller as such) before per-CPU data exists.
pub fn cpu_index() -> u32 {
    match try_current() {
        Some(p) => p.cpu,
        None => super::cpu::apic_id(),
    }
}
