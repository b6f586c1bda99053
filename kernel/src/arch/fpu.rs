//! x87/SSE state of the threads that use it: lazy detection, eager save.
//!
//! The kernel is compiled soft-float (`x86_64-unknown-none`), so Rust code,
//! interrupt handlers included, never touches x87/MMX/SSE registers. Only
//! inline assembly does (e.g. compute kernels of experiments). Like Linux, a
//! thread becomes an FPU user on its first FPU/SSE instruction and from then
//! on its registers are saved and restored at every context switch:
//!
//! - **Invariant**: CR0.TS is clear exactly while a CPU runs a thread that
//!   uses the FPU, with that thread's registers live in the CPU. Everywhere
//!   else (idle loop, threads that never used the FPU, a new thread's first
//!   instructions) TS is set, so a first FPU instruction raises #NM.
//! - **#NM (vector 7)** in a thread: [`device_not_available`] marks it as an
//!   FPU user, allocates its 512-byte save area, clears TS, loads a clean
//!   state (`fxrstor` of the default image: FCW 0x37F, MXCSR 0x1F80, all
//!   registers zero) and returns, so the instruction is retried. #NM with no
//!   thread (idle loop, before the scheduler), with interrupts off (interrupt
//!   handlers run with IF = 0), or in a thread already marked, is a fault.
//! - **Switch out** ([`switch_out`], before `switch_context` releases the
//!   old context's `on_cpu`, interrupts off): an FPU thread's registers are
//!   `fxsave`d into its area, then TS is set. The release that follows is a
//!   plain store after `fxsave`'s stores (x86 keeps stores in order), so the
//!   CPU that acquires the thread next sees the saved state.
//! - **Switch in** ([`switch_in`], on the resumed context right after
//!   `switch_context`, interrupts still off): if the thread now running uses
//!   the FPU, it gets `clts` and `fxrstor` of its area.
//!
//! `fxsave`/`fxrstor` cover x87, MMX, xmm0-15 and MXCSR. AVX (ymm/zmm) is not
//! enabled (no XSAVE, CR4.OSXSAVE stays 0): a VEX instruction raises #UD.

use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use x86_64::registers::control::{Cr0, Cr0Flags, Cr4, Cr4Flags};

use super::irq::IrqsOff;
use super::percpu::{self, MAX_CPUS};
use super::trap::TrapFrame;

/// An `fxsave64` image: 512 bytes, 16-byte aligned (Intel SDM Vol. 1, 10.5.1).
#[repr(C, align(16))]
pub struct FxArea([u8; 512]);

impl FxArea {
    /// The state after `fninit` plus MXCSR's reset value: FCW 0x037F (x87
    /// exceptions masked, 64-bit precision), empty x87 stack (abridged tag
    /// word 0), MXCSR 0x1F80 (SSE exceptions masked, round to nearest), every
    /// data register zero.
    fn clean() -> FxArea {
        let mut a = FxArea([0; 512]);
        a.0[0..2].copy_from_slice(&0x037Fu16.to_le_bytes()); // FCW
        a.0[24..28].copy_from_slice(&0x1F80u32.to_le_bytes()); // MXCSR
        a
    }
}

/// A thread's FPU state: whether it uses the FPU, and its save area
/// (allocated on first use).
pub struct FpuState {
    uses: AtomicBool,
    /// Touched only by the CPU that runs the thread (the #NM handler, and
    /// `switch_out`/`switch_in` while the thread's `on_cpu` is held by that
    /// CPU); written once from `None` to `Some`.
    area: UnsafeCell<Option<Box<FxArea>>>,
}

// SAFETY: `area` is accessed only by the CPU that currently owns the thread
// through its `on_cpu` flag (see the field's comment); that ownership passes
// between CPUs with release/acquire ordering in `switch_context`, so no two
// CPUs ever touch the area concurrently. `uses` is atomic.
unsafe impl Sync for FpuState {}

impl FpuState {
    /// A thread that has not used the FPU (yet).
    pub const fn new() -> FpuState {
        FpuState {
            uses: AtomicBool::new(false),
            area: UnsafeCell::new(None),
        }
    }

    /// Whether the thread has executed an FPU/SSE instruction.
    pub fn uses_fpu(&self) -> bool {
        self.uses.load(Ordering::Relaxed)
    }

    /// The save area's address.
    ///
    /// # Safety
    /// The caller runs on the CPU that owns the thread (see [`FpuState`]).
    unsafe fn area_ptr(&self) -> *mut FxArea {
        // SAFETY: the caller owns the thread, so nothing else touches `area`.
        let area = unsafe { &mut *self.area.get() };
        let b = area.as_mut().expect("FPU thread without a save area");
        &mut **b
    }
}

impl Default for FpuState {
    fn default() -> Self {
        FpuState::new()
    }
}

/// Per-CPU counters.
struct Counters {
    saves: AtomicU64,
    restores: AtomicU64,
    first_use: AtomicU64,
}

static COUNTERS: [Counters; MAX_CPUS] = [const {
    Counters {
        saves: AtomicU64::new(0),
        restores: AtomicU64::new(0),
        first_use: AtomicU64::new(0),
    }
}; MAX_CPUS];

/// FPU activity of one CPU since boot.
#[derive(Clone, Copy, Debug, Default)]
pub struct FpuStats {
    /// `fxsave`s at switch-out.
    pub saves: u64,
    /// `fxrstor`s at switch-in.
    pub restores: u64,
    /// #NM first-use traps handled.
    pub first_use_traps: u64,
}

/// Counters of `cpu`.
pub fn stats(cpu: usize) -> FpuStats {
    let c = &COUNTERS[cpu];
    FpuStats {
        saves: c.saves.load(Ordering::Relaxed),
        restores: c.restores.load(Ordering::Relaxed),
        first_use_traps: c.first_use.load(Ordering::Relaxed),
    }
}

fn counters() -> &'static Counters {
    // Thread switches and first-use traps: the block is installed.
    &COUNTERS[percpu::installed_cpu_index() as usize]
}

/// Enables x87/SSE on the executing CPU: CR0.EM = 0, MP = 1, NE = 1 (x87
/// errors as #MF), TS = 1 (no FPU owner yet); CR4.OSFXSR = 1 (fxsave/fxrstor
/// include the SSE state, SSE instructions allowed), OSXMMEXCPT = 1 (unmasked
/// SIMD exceptions raise #XM). Fails if CPUID lacks FPU, FXSR, SSE or SSE2.
pub fn init_this_cpu() -> Result<(), alloc::string::String> {
    let f = super::cpu::features();
    let need = [
        (f.has_fpu(), "FPU"),
        (f.has_fxsave_fxstor(), "FXSR"),
        (f.has_sse(), "SSE"),
        (f.has_sse2(), "SSE2"),
    ];
    let missing: alloc::vec::Vec<&str> = need
        .iter()
        .filter(|(has, _)| !has)
        .map(|&(_, name)| name)
        .collect();
    if !missing.is_empty() {
        return Err(alloc::format!(
            "CPU {} lacks {} (CPUID.1:EDX): saving thread FPU/SSE state needs x87, FXSAVE/FXRSTOR, SSE and SSE2",
            percpu::cpu_index(),
            missing.join(", ")
        ));
    }
    let mut cr0 = Cr0::read();
    cr0.remove(Cr0Flags::EMULATE_COPROCESSOR);
    cr0.insert(Cr0Flags::MONITOR_COPROCESSOR | Cr0Flags::NUMERIC_ERROR | Cr0Flags::TASK_SWITCHED);
    let mut cr4 = Cr4::read();
    cr4.insert(Cr4Flags::OSFXSR | Cr4Flags::OSXMMEXCPT_ENABLE);
    // SAFETY: only FPU-related bits change; CPUID confirmed x87, FXSR and SSE,
    // so these settings are valid. Setting TS makes the next FPU instruction
    // trap (#NM), which `device_not_available` handles; no compiled code of
    // the soft-float kernel executes FPU instructions.
    unsafe {
        Cr0::write(cr0);
        Cr4::write(cr4);
    }
    Ok(())
}

fn ts_is_set() -> bool {
    Cr0::read().contains(Cr0Flags::TASK_SWITCHED)
}

fn set_ts() {
    // SAFETY: setting TS only makes FPU instructions trap with #NM; the
    // caller has saved the live FPU state it needs.
    unsafe { Cr0::update(|f| f.insert(Cr0Flags::TASK_SWITCHED)) };
}

fn clts() {
    // SAFETY: `clts` only clears CR0.TS; callers load the owning thread's
    // state right after, before any FPU instruction of that thread runs.
    unsafe { core::arch::asm!("clts", options(nomem, nostack, preserves_flags)) };
}

/// Called with interrupts off right before `switch_context` leaves the
/// running context (`prev`: its FPU state, None for the idle context): an FPU
/// thread's registers are saved into its area, and TS is set for whatever
/// runs next.
#[inline]
pub fn switch_out(irq: &IrqsOff, prev: Option<&FpuState>) {
    let Some(p) = prev.filter(|p| p.uses_fpu()) else {
        debug_assert!(ts_is_set(), "CR0.TS clear in a context without FPU state");
        return;
    };
    save(irq, p);
}

/// [`switch_out`] of a thread that uses the FPU (out of line: most
/// switches are between threads that do not).
#[inline(never)]
fn save(_irq: &IrqsOff, p: &FpuState) {
    // SAFETY: we run `p`'s thread on this CPU and still hold its `on_cpu`;
    // TS is clear (it uses the FPU and runs), so `fxsave64` does not trap; the
    // area is 512 bytes, 16-byte aligned.
    unsafe {
        let area = p.area_ptr();
        core::arch::asm!("fxsave64 [{}]", in(reg) area, options(nostack, preserves_flags));
    }
    set_ts();
    counters().saves.fetch_add(1, Ordering::Relaxed);
}

/// Called with interrupts off on the resumed context right after
/// `switch_context` (`now`: the FPU state of the thread this CPU runs now,
/// None for the idle context): if it uses the FPU, TS is cleared and its
/// registers restored.
#[inline]
pub fn switch_in(irq: &IrqsOff, now: Option<&FpuState>) {
    let Some(n) = now else {
        return; // the idle context
    };
    if n.uses_fpu() {
        restore(irq, n);
    }
}

/// [`switch_in`] of a thread that uses the FPU.
#[inline(never)]
fn restore(_irq: &IrqsOff, n: &FpuState) {
    clts();
    // SAFETY: this CPU acquired the thread's `on_cpu` in `switch_context`,
    // so the area holds the state its previous CPU saved (or the clean
    // image) and nobody else touches it; TS is clear now.
    unsafe {
        let area = n.area_ptr();
        core::arch::asm!("fxrstor64 [{}]", in(reg) area, options(nostack, preserves_flags));
    }
    counters().restores.fetch_add(1, Ordering::Relaxed);
}

/// First half of the #NM handler (device not available, vector 7): `Ok`
/// if the trap can be a thread's first FPU instruction (TS set, interrupts
/// were on), otherwise the reason for the fault report. The kernel then
/// finds the running thread and calls [`first_use`].
pub fn check_device_not_available(frame: &TrapFrame) -> Result<(), &'static str> {
    const IF: u64 = 1 << 9;
    if !ts_is_set() {
        return Err("#NM with CR0.TS clear (CR0.EM set?)");
    }
    if frame.rflags & IF == 0 {
        return Err(
            "first FPU/SSE instruction with interrupts off (interrupt handler or critical section): not in thread context",
        );
    }
    Ok(())
}

/// Second half of the #NM handler: the running thread (whose state is `fpu`)
/// executed its first FPU instruction. `Ok` when handled (the instruction
/// is retried on return from the trap); otherwise the reason for the fault
/// report.
pub fn first_use(fpu: &FpuState) -> Result<(), &'static str> {
    if fpu.uses_fpu() {
        return Err("#NM in a thread that already uses the FPU (its state was not restored)");
    }
    // Allocate before touching anything (the allocator disables interrupts
    // itself; they are off here already).
    let area = Box::new(FxArea::clean());
    // SAFETY: the thread runs on this CPU (it just executed the faulting
    // instruction) with interrupts off, so nobody else touches its area, and
    // it had none (`uses` is false).
    unsafe { *fpu.area.get() = Some(area) };
    fpu.uses.store(true, Ordering::Relaxed);
    clts();
    // SAFETY: as above, the area is ours; it holds the clean image, which
    // `fxrstor64` accepts (reserved MXCSR bits are zero); TS is clear.
    unsafe {
        let area = fpu.area_ptr();
        core::arch::asm!("fxrstor64 [{}]", in(reg) area, options(nostack, preserves_flags));
    }
    counters().first_use.fetch_add(1, Ordering::Relaxed);
    Ok(())
}
