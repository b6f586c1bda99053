//! The local APIC in xAPIC (MMIO) or x2APIC (MSR) mode: enable, EOI, IPIs,
//! and the timer (periodic, or TSC-deadline when CPUID offers it).
//!
//! x2APIC is used whenever the CPU has it (real servers with more than 255
//! CPUs need it); QEMU's TCG has none, so xAPIC is what the tests exercise.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use x86_64::registers::model_specific::Msr;

use crate::mm;

/// Vector of the local APIC timer.
pub const TIMER_VECTOR: u8 = 0x20;
/// Vector of the reschedule IPI.
pub const RESCHEDULE_VECTOR: u8 = 0xF0;
/// Vector of the "call function" IPI.
pub const CALL_FUNCTION_VECTOR: u8 = 0xF1;
/// Vector of APIC error interrupts.
pub const ERROR_VECTOR: u8 = 0xFE;
/// Spurious-interrupt vector (no EOI).
pub const SPURIOUS_VECTOR: u8 = 0xFF;

const IA32_APIC_BASE: u32 = 0x1B;
const IA32_TSC_DEADLINE: u32 = 0x6E0;

const REG_ID: u32 = 0x20;
const REG_EOI: u32 = 0xB0;
const REG_SVR: u32 = 0xF0;
const REG_ESR: u32 = 0x280;
const REG_ICR_LOW: u32 = 0x300;
const REG_ICR_HIGH: u32 = 0x310;
const REG_LVT_TIMER: u32 = 0x320;
const REG_LVT_LINT0: u32 = 0x350;
const REG_LVT_LINT1: u32 = 0x360;
const REG_LVT_ERROR: u32 = 0x370;
const REG_TIMER_INIT: u32 = 0x380;
const REG_TIMER_CURRENT: u32 = 0x390;
const REG_TIMER_DIVIDE: u32 = 0x3E0;

const LVT_MASKED: u32 = 1 << 16;
const TIMER_PERIODIC: u32 = 1 << 17;
const TIMER_TSC_DEADLINE: u32 = 2 << 17;
const ICR_DELIVERY_PENDING: u32 = 1 << 12;

static X2APIC: AtomicBool = AtomicBool::new(false);
static XAPIC_BASE: AtomicU64 = AtomicU64::new(0);
static TSC_DEADLINE: AtomicBool = AtomicBool::new(false);

/// Whether the CPU supports x2APIC mode (CPUID.1:ECX[21]).
pub fn has_x2apic() -> bool {
    super::cpu::features().has_x2apic()
}

/// Whether the APIC timer supports TSC-deadline mode (CPUID.1:ECX[24]).
pub fn has_tsc_deadline() -> bool {
    super::cpu::features().has_tsc_deadline()
}

fn read(reg: u32) -> u32 {
    if X2APIC.load(Ordering::Relaxed) {
        // SAFETY: in x2APIC mode every APIC register is MSR 0x800 + reg/16.
        unsafe { Msr::new(0x800 + (reg >> 4)).read() as u32 }
    } else {
        let addr = XAPIC_BASE.load(Ordering::Relaxed) + reg as u64;
        // SAFETY: XAPIC_BASE is the uncached mapping of this CPU's APIC page
        // (mapped by `init_bsp`); `reg` is an architectural register offset.
        unsafe { core::ptr::read_volatile(addr as *const u32) }
    }
}

fn write(reg: u32, value: u32) {
    if X2APIC.load(Ordering::Relaxed) {
        // SAFETY: see `read`.
        unsafe { Msr::new(0x800 + (reg >> 4)).write(value as u64) }
    } else {
        let addr = XAPIC_BASE.load(Ordering::Relaxed) + reg as u64;
        // SAFETY: see `read`.
        unsafe { core::ptr::write_volatile(addr as *mut u32, value) }
    }
}

/// Chooses the mode and maps the xAPIC page; then enables this (boot) CPU's APIC.
pub fn init_bsp(phys_offset: u64) {
    let x2 = has_x2apic();
    X2APIC.store(x2, Ordering::Relaxed);
    TSC_DEADLINE.store(has_tsc_deadline(), Ordering::Relaxed);
    if !x2 {
        // SAFETY: IA32_APIC_BASE exists on every x86_64 CPU.
        let base = unsafe { Msr::new(IA32_APIC_BASE).read() } & 0x000F_FFFF_FFFF_F000;
        XAPIC_BASE.store(mm::mmio::map(base, 4096, phys_offset), Ordering::Relaxed);
    }
    init_this_cpu();
}

/// Enables the executing CPU's APIC in the chosen mode, masks LINT0/1.
pub fn init_this_cpu() {
    let mut msr = Msr::new(IA32_APIC_BASE);
    // SAFETY: setting the global-enable bit (11), and the x2APIC bit (10) only
    // when CPUID advertises x2APIC, is the architectural way to enable the APIC.
    unsafe {
        let v = msr.read() | (1 << 11);
        msr.write(v);
        if X2APIC.load(Ordering::Relaxed) {
            msr.write(v | (1 << 10));
        }
    }
    write(REG_LVT_LINT0, LVT_MASKED);
    write(REG_LVT_LINT1, LVT_MASKED);
    write(REG_LVT_ERROR, ERROR_VECTOR as u32);
    write(REG_ESR, 0);
    write(REG_SVR, 0x100 | SPURIOUS_VECTOR as u32);
    eoi();
}

/// This CPU's APIC id as the APIC itself reports it.
pub fn id() -> u32 {
    let raw = read(REG_ID);
    if X2APIC.load(Ordering::Relaxed) {
        raw
    } else {
        raw >> 24
    }
}

/// Whether x2APIC mode is in use.
pub fn is_x2apic() -> bool {
    X2APIC.load(Ordering::Relaxed)
}

/// Signals end of interrupt.
pub fn eoi() {
    write(REG_EOI, 0);
}

/// Sends an interrupt command to `apic_id`: `low` holds delivery mode, level,
/// trigger and vector (ICR bits 0-19).
pub fn send_icr(apic_id: u32, low: u32) {
    if X2APIC.load(Ordering::Relaxed) {
        // WRMSR to the x2APIC ICR is not serializing: without a fence the IPI
        // can overtake earlier stores (e.g. the need_resched the target is to
        // read), as Linux's weak_wrmsr_fence() notes.
        core::sync::atomic::fence(Ordering::SeqCst);
        // SAFETY: x2APIC ICR is one 64-bit MSR (0x830), destination in bits 32-63.
        unsafe { Msr::new(0x830).write(((apic_id as u64) << 32) | low as u64) }
    } else {
        x86_64::instructions::interrupts::without_interrupts(|| {
            write(REG_ICR_HIGH, apic_id << 24);
            write(REG_ICR_LOW, low);
            while read(REG_ICR_LOW) & ICR_DELIVERY_PENDING != 0 {
                core::hint::spin_loop();
            }
        });
    }
}

/// Sends a fixed-delivery IPI with `vector` to `apic_id`.
pub fn send_ipi(apic_id: u32, vector: u8) {
    send_icr(apic_id, vector as u32);
}

/// Sends a non-maskable interrupt to `apic_id` (delivery mode NMI).
pub fn send_nmi(apic_id: u32) {
    send_icr(apic_id, 0x0000_4400);
}

/// INIT IPI (assert), the first step of starting an AP.
pub fn send_init(apic_id: u32) {
    send_icr(apic_id, 0x0000_4500);
}

/// Start-up IPI: the AP begins in real mode at `page << 12`.
pub fn send_startup(apic_id: u32, page: u8) {
    send_icr(apic_id, 0x0000_4600 | page as u32);
}

/// Timer programming chosen by `timer_calibrate`.
#[derive(Clone, Copy, Debug)]
pub struct TimerSetup {
    /// TSC-deadline mode in use.
    pub tsc_deadline: bool,
    /// Initial count per tick in periodic mode (divide by 16).
    pub periodic_count: u32,
    /// TSC cycles per tick (deadline mode).
    pub tsc_per_tick: u64,
}

/// Measures the APIC timer against the (calibrated) TSC on the boot CPU.
pub fn timer_calibrate(hz: u32) -> TimerSetup {
    let tsc_per_tick = super::time::tsc_hz() / hz as u64;
    if TSC_DEADLINE.load(Ordering::Relaxed) {
        return TimerSetup {
            tsc_deadline: true,
            periodic_count: 0,
            tsc_per_tick,
        };
    }
    write(REG_TIMER_DIVIDE, 0x3); // divide by 16
    write(REG_LVT_TIMER, LVT_MASKED);
    write(REG_TIMER_INIT, u32::MAX);
    let window_ns = 10_000_000;
    super::time::delay_ns(window_ns);
    let elapsed = u32::MAX - read(REG_TIMER_CURRENT);
    write(REG_TIMER_INIT, 0);
    let per_sec = elapsed as u64 * 1_000_000_000 / window_ns;
    let count = (per_sec / hz as u64).clamp(1, u32::MAX as u64) as u32;
    TimerSetup {
        tsc_deadline: false,
        periodic_count: count,
        tsc_per_tick,
    }
}

/// Halts the executing CPU until the TSC reaches `target`, woken by a
/// one-shot APIC timer; interrupts are off on return. Only for QEMU under
/// `-icount`, before the tick is started: there the TSC and the APIC timer at
/// divide-by-1 both count nanoseconds of QEMU's virtual clock, so the count is
/// `target - now` exactly and the wake-up lands a fixed number of
/// instructions after `target`, wherever `now` was. While every CPU halts,
/// QEMU (`sleep=off`) jumps its virtual clock to the deadline: no host time
/// is spent waiting.
pub fn halt_until_tsc(target: u64) {
    loop {
        x86_64::instructions::interrupts::disable();
        let now = super::time::rdtsc();
        if now >= target {
            break;
        }
        write(REG_TIMER_DIVIDE, 0xB); // divide by 1
        write(REG_LVT_TIMER, TIMER_VECTOR as u32); // one-shot
        write(REG_TIMER_INIT, (target - now).min(u32::MAX as u64) as u32);
        x86_64::instructions::interrupts::enable_and_hlt();
    }
    write(REG_LVT_TIMER, LVT_MASKED);
    write(REG_TIMER_INIT, 0);
}

/// Starts this CPU's tick.
pub fn timer_start(setup: &TimerSetup) {
    if setup.tsc_deadline {
        write(REG_LVT_TIMER, TIMER_TSC_DEADLINE | TIMER_VECTOR as u32);
        timer_rearm(setup);
    } else {
        write(REG_TIMER_DIVIDE, 0x3);
        write(REG_LVT_TIMER, TIMER_PERIODIC | TIMER_VECTOR as u32);
        write(REG_TIMER_INIT, setup.periodic_count);
    }
}

/// In TSC-deadline mode, arms the next tick (no-op in periodic mode).
pub fn timer_rearm(setup: &TimerSetup) {
    if setup.tsc_deadline {
        let next = super::time::rdtsc() + setup.tsc_per_tick;
        // SAFETY: IA32_TSC_DEADLINE exists when CPUID.1:ECX[24] is set, which
        // is the only case in which `tsc_deadline` is true.
        unsafe { Msr::new(IA32_TSC_DEADLINE).write(next) }
    }
}
