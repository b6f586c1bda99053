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

/// Whether MONITOR/MWAIT exist (CPUID.1:ECX[3]).
pub fn has_monitor_mwait() -> bool {
    __cpuid(1).ecx & (1 << 3) != 0
}

/// Arms address monitoring on the cache line holding `addr`, then enables
/// interrupts and waits with MWAIT (C1 hint) until a write to that line or
/// an interrupt. `sti`'s one-instruction shadow makes the pair atomic, like
/// `sti; hlt`, so an interrupt already pending ends the wait at once.
pub fn monitor_mwait(addr: *const u8) {
    // SAFETY: MONITOR only reads the address for its cache-line tracking
    // (any mapped address is fine, `addr` comes from a reference); MWAIT
    // with eax=0 (C1) and ecx=0 has no memory effects. The caller checked
    // CPUID for MONITOR/MWAIT support.
    unsafe {
        core::arch::asm!(
            "monitor",
            "xor eax, eax",
            "sti",
            "mwait",
            inout("rax") addr => _,
            in("ecx") 0,
            in("edx") 0,
            options(nostack),
        );
    }
}

/// Whether CPUID says we run under a hypervisor or emulator (CPUID.1:ECX[31]).
pub fn under_hypervisor() -> bool {
    __cpuid(1).ecx & (1 << 31) != 0
}
