//! Per-CPU data reached through the GS base register, plus a registry of all
//! CPUs' blocks for remote access (IPIs, statistics).
//!
//! Each CPU owns one `PerCpu` block (leaked at start-up, never freed). GS base
//! points at it. Fields other CPUs touch are atomics or locks; fault paths use
//! [`cpu_index`], which checks the GS base first and therefore also works
//! before the block is installed.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

use spin::Mutex;
use x86_64::VirtAddr;
use x86_64::registers::model_specific::GsBase;

use topology::cpuid::CpuidLeaves;

use super::ipi::CallRequest;

/// Largest number of logical CPUs the kernel supports.
pub const MAX_CPUS: usize = 1024;

/// Per-CPU block. `this` must stay the first field.
#[repr(C, align(64))]
pub struct PerCpu {
    this: *const PerCpu,
    /// Dense logical CPU number (0 = boot CPU).
    pub cpu: u32,
    /// Local APIC id of this CPU.
    pub apic_id: u32,
    /// Set once the CPU runs kernel code with its own GDT, IDT and APIC.
    pub online: AtomicBool,
    /// Timer interrupts taken.
    pub ticks: AtomicU64,
    /// `now_ns` of the last tick (the watchdog's heartbeat).
    pub last_tick_ns: AtomicU64,
    /// Reschedule IPIs received.
    pub resched_ipis: AtomicU64,
    /// Call-function IPIs received.
    pub call_ipis: AtomicU64,
    /// Functions other CPUs asked this CPU to run (drained by the IPI handler).
    pub calls: Mutex<Vec<CallRequest>>,
    /// This CPU's raw CPUID leaves, read by itself at start-up (for the topology).
    pub cpuid: CpuidLeaves,
}

// SAFETY: `this` is only a self-pointer; all shared mutable state is atomic or
// behind a lock.
unsafe impl Sync for PerCpu {}

static CPUS: [AtomicPtr<PerCpu>; MAX_CPUS] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_CPUS];

/// Installs a fresh per-CPU block for the executing CPU as logical `cpu`.
pub fn install(cpu: u32, apic_id: u32) -> &'static PerCpu {
    assert!(
        (cpu as usize) < MAX_CPUS,
        "CPU {cpu} exceeds MAX_CPUS ({MAX_CPUS})"
    );
    let block = Box::leak(Box::new(PerCpu {
        this: core::ptr::null(),
        cpu,
        apic_id,
        online: AtomicBool::new(false),
        ticks: AtomicU64::new(0),
        last_tick_ns: AtomicU64::new(0),
        resched_ipis: AtomicU64::new(0),
        call_ipis: AtomicU64::new(0),
        calls: Mutex::new(Vec::new()),
        cpuid: topology::cpuid::collect(|leaf, sub| {
            let r = core::arch::x86_64::__cpuid_count(leaf, sub);
            [r.eax, r.ebx, r.ecx, r.edx]
        }),
    }));
    block.this = block as *const PerCpu;
    assert_eq!(
        GsBase::read().as_u64(),
        0,
        "per-CPU block installed twice on CPU {cpu}"
    );
    GsBase::write(VirtAddr::from_ptr(block as *const PerCpu));
    CPUS[cpu as usize].store(block, Ordering::Release);
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

/// The executing CPU's block; panics if called before `install`.
pub fn current() -> &'static PerCpu {
    try_current().expect("per-CPU data used before installation")
}

/// The block of logical CPU `cpu`, if that CPU was started.
pub fn get(cpu: usize) -> Option<&'static PerCpu> {
    let p = CPUS.get(cpu)?.load(Ordering::Acquire);
    // SAFETY: non-null entries point at leaked blocks written by `install`.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// All CPUs that have a block, in logical order.
pub fn all() -> impl Iterator<Item = &'static PerCpu> {
    (0..MAX_CPUS).map_while(get)
}

impl PerCpu {
    /// Whether this CPU has finished start-up and runs kernel code.
    pub fn is_online(&self) -> bool {
        self.online.load(Ordering::Acquire)
    }
}

/// All online CPUs, in logical order.
pub fn online() -> impl Iterator<Item = &'static PerCpu> {
    all().filter(|p| p.is_online())
}

/// Logical number of the executing CPU, whose block must be installed (the
/// scheduler's paths: a thread runs only on a CPU that installed its block
/// first thing, `smp::ap_rust_entry`, `kernel_main`). One GS-relative load,
/// where [`cpu_index`], which also works before installation (fault and log
/// paths), reads the GS base MSR: about 11 instructions under icount, and an
/// `rdmsr` costs tens to over a hundred cycles on hardware. The scheduler's
/// paths read the CPU number about six times per pipe message.
#[inline(always)]
pub fn installed_cpu_index() -> u32 {
    debug_assert!(
        try_current().is_some(),
        "installed_cpu_index before the per-CPU block"
    );
    let cpu: u32;
    // SAFETY: GS base points at this CPU's installed `PerCpu` block (the
    // caller's contract, checked in debug builds), a `repr(C)` struct whose
    // `cpu` field is at the given offset and never written after install.
    // No `pure`: a thread may migrate between two calls, so they must not
    // be merged.
    unsafe {
        core::arch::asm!(
            "mov {cpu:e}, dword ptr gs:[{off}]",
            cpu = out(reg) cpu,
            off = const core::mem::offset_of!(PerCpu, cpu),
            options(nostack, readonly, preserves_flags),
        );
    }
    cpu
}

/// Logical number of the executing CPU; falls back to the APIC id before
/// per-CPU data exists.
pub fn cpu_index() -> u32 {
    match try_current() {
        Some(p) => p.cpu,
        None => super::cpu::apic_id(),
    }
}
