//! Small CPU helpers: identity and features from CPUID, halting, control
//! registers.
//!
//! CPUID feature bits are read with the `raw-cpuid` crate, which names every
//! bit; the topology leaves are decoded by the project's own
//! `topology::cpuid` (docs/topology.md, "Why the project's own parsers").

use raw_cpuid::CpuId;

/// Initial APIC id of the executing CPU (x2APIC id from leaf 0xB when present,
/// else the 8-bit id from leaf 1). Works before per-CPU data exists.
pub fn apic_id() -> u32 {
    let cpuid = CpuId::new();
    // Only the first level (sub-leaf 0) is read: its EDX is the x2APIC id.
    // A leaf 0xB whose first level has no logical processors is not valid.
    if let Some(level) = cpuid
        .get_extended_topology_info()
        .and_then(|mut levels| levels.next())
        .filter(|l| l.processors() != 0)
    {
        return level.x2apic_id();
    }
    cpuid
        .get_feature_info()
        .map_or(0, |f| f.initial_local_apic_id() as u32)
}

/// CPUID leaf 1 feature bits (every x86_64 CPU has leaf 1).
pub fn features() -> raw_cpuid::FeatureInfo {
    CpuId::new()
        .get_feature_info()
        .expect("CPUID leaf 1 exists on every x86_64 CPU")
}

/// The last-level TLB for 4 KiB pages that CPUID leaf 0x18 (Intel's
/// deterministic address translation parameters) describes: (level,
/// entries = ways x sets) of the highest-level data or unified structure
/// holding 4 KiB entries, the most entries at that level. None without
/// leaf 0x18 (AMD, older Intel parts, emulators that do not report it).
pub fn tlb_4k() -> Option<(u8, u64)> {
    use raw_cpuid::DatType;
    CpuId::new()
        .get_deterministic_address_translation_info()?
        .filter(|d| d.has_4k_entries())
        .filter(|d| {
            matches!(
                d.cache_type(),
                DatType::DataTLB | DatType::UnifiedTLB | DatType::LoadOnly
            )
        })
        .map(|d| (d.cache_level(), u64::from(d.ways()) * u64::from(d.sets())))
        .filter(|&(_, n)| n > 0)
        .max()
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
    features().has_monitor_mwait()
}

/// Arms address monitoring on the cache line holding `addr`, then enables
/// interrupts and waits with MWAIT (C1 hint) until a write to that line or
/// an interrupt. `sti`'s one-instruction shadow makes the pair atomic, like
/// `sti; hlt`, so an interrupt already pending ends the wait at once. It
/// consumes the proof that interrupts were off: they are on afterwards.
pub fn monitor_mwait(_off: super::irq::IrqsOff, addr: *const u8) {
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
    features().has_hypervisor()
}
