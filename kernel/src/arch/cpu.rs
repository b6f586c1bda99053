//! Small CPU helpers: identity from CPUID, halting, control registers.

use core::arch::x86_64::{__cpuid, __cpuid_count};

/// Initial APIC id of the executing CPU (x2APIC id from leaf 0xB when present,
/// else the 8-bit id from leaf 1). Works before per-CPU data exists.
pub fn apic_id() -> u32 {
    let max_leaf = __cpuid(0).eax;
    if max_leaf >= 0xB {
        let r = __cpuid_count(0xB, 0);
        if r.ebx != 0 {
            return r.edx;
        }
    }
    __cpuid(1).ebx >> 24
}

/// Stops this CPU for good: interrupts off, `hlt` in a loop (NMIs resume it).
pub fn halt_forever() -> ! {
    loop {
        x86_64::instructions::interrupts::disable();
        x86_64::instructions::hlt();
    }
}

/// Page-fault linear address (CR2).
pub fn cr2() -> u64 {
    x86_64::registers::control::Cr2::read_raw()
}
