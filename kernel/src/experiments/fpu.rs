//! `fpu-check`: threads that keep values in x87/SSE registers across
//! preemption, sleeps, yields and migrations, and check them over and over.
//!
//! Arguments: `threads` (default 4 per online CPU, at least 2), of which a
//! quarter (at least one) never touch the FPU and the rest are FPU threads;
//! `duration_ms` (default 1000). No thread is bound: the tick preempts them,
//! and every 50 ms another CPU becomes "sleepy" (threads there only sleep),
//! so idle balancing and wakeup placement keep moving threads between CPUs.
//!
//! An FPU thread first runs a few rounds without the FPU (so it is switched
//! as a non-FPU thread before its first use), then loads a pattern unique to
//! it into xmm0-15, MXCSR (its own rounding mode) and the x87 stack (one
//! double), and until the deadline: burns cycles, yields or sleeps, then
//! reads all of them back and compares. Each mismatch is counted and the
//! pattern reloaded. The `fpu` record reports the checks, the mismatches,
//! the #NM first-use traps (one per FPU thread) and each CPU's fxsave/fxrstor
//! counts; any mismatch, any trap count other than one per FPU thread, or a
//! non-FPU thread marked as an FPU user fails the run.
//!
//! The kernel is soft-float, so the registers are touched only through
//! inline assembly naming them in the text (no xmm operands or clobbers: the
//! target has no SSE feature, and the compiler never uses these registers).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::arch::qemu::ExitCode;
use crate::arch::{fpu, fpu_regs, percpu, time};
use crate::machine::Machine;
use crate::record::{Emit, Record, json_array};
use crate::sync::IrqSpinLock;
use crate::task::{self, SpawnOptions};
use crate::watchdog;
use workloads::args::{Args, Rng};

/// What an FPU thread keeps in its registers.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C)]
struct Image {
    /// xmm0..xmm15, two little-endian words each.
    xmm: [u64; 32],
    mxcsr: u32,
    /// Bits of the double on top of the x87 stack.
    x87: u64,
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Image {
    /// The pattern of FPU thread `i`: distinct per thread and register.
    fn pattern(i: usize) -> Image {
        let mut s = 0x5CED_1AB0_F900_0000 ^ ((i as u64) << 8);
        let mut xmm = [0u64; 32];
        for w in &mut xmm {
            *w = splitmix(&mut s);
        }
        Image {
            xmm,
            // Exceptions masked (0x1F80) with a rounding mode per thread.
            mxcsr: 0x1F80 | ((i as u32 % 4) << 13),
            // A double in [1, 2): exact in the x87's 80-bit format.
            x87: 0x3FF0_0000_0000_0000 | (splitmix(&mut s) & 0x000F_FFFF_FFFF_FFFF),
        }
    }

    /// Loads xmm0-15 and MXCSR, and resets the x87 unit to hold one double.
    fn load(&self) {
        fpu_regs::load(&self.xmm, self.mxcsr, self.x87);
    }

    /// Reads the registers [`load`](Self::load) set.
    fn read() -> Image {
        let mut img = Image {
            xmm: [0; 32],
            mxcsr: 0,
            x87: 0,
        };
        (img.mxcsr, img.x87) = fpu_regs::read(&mut img.xmm);
        img
    }

    /// The first register that differs from `want`, as text.
    fn first_difference(&self, want: &Image) -> String {
        for r in 0..16 {
            let (got, exp) = (&self.xmm[2 * r..2 * r + 2], &want.xmm[2 * r..2 * r + 2]);
            if got != exp {
                return alloc::format!(
                    "xmm{r} = {:016x}{:016x}, expected {:016x}{:016x}",
                    got[1],
                    got[0],
                    exp[1],
                    exp[0]
                );
            }
        }
        if self.mxcsr != want.mxcsr {
            return alloc::format!("MXCSR = {:#x}, expected {:#x}", self.mxcsr, want.mxcsr);
        }
        alloc::format!(
            "x87 st(0) = {:#018x}, expected {:#018x}",
            self.x87,
            want.x87
        )
    }
}

#[derive(Default)]
struct Totals {
    checks: AtomicU64,
    mismatches: AtomicU64,
    /// Checks that found the thread on another CPU than the previous one.
    cpu_changes: AtomicU64,
    plain_rounds: AtomicU64,
    /// Non-FPU threads the kernel marked as FPU users (must stay 0).
    plain_marked: AtomicU64,
    /// FPU threads the kernel did not mark (must stay 0).
    fpu_unmarked: AtomicU64,
}

/// Busy-waits `ns` (the tick may preempt it).
fn burn(ns: u64) {
    let end = time::now_ns() + ns;
    while time::now_ns() < end {
        core::hint::spin_loop();
    }
}

/// How long each CPU in turn is the sleepy one, ns.
const SLEEPY_PERIOD_NS: u64 = 50_000_000;

/// One round of something that lets the scheduler move the thread. Every
/// `SLEEPY_PERIOD_NS` the next CPU becomes "sleepy": threads that find
/// themselves there only sleep, so it goes idle and pulls threads from the
/// busy CPUs (newly-idle balance, wakeup placement). That makes migrations
/// certain rather than left to chance on a balanced machine.
fn activity(rng: &mut Rng, nr_cpus: usize) {
    let sleepy = (time::now_ns() / SLEEPY_PERIOD_NS) as usize % nr_cpus;
    if percpu::cpu_index() as usize == sleepy {
        task::sleep_ns(1_000_000 + rng.below(2_000_000));
        return;
    }
    match rng.below(10) {
        0..=4 => burn(rng.below(3_000_000)),
        5 | 6 => task::yield_now(),
        7 | 8 => task::sleep_ns(1 + rng.below(2_000_000)),
        _ => {
            burn(rng.below(1_000_000));
            task::yield_now();
        }
    }
}

fn uses_fpu() -> bool {
    task::sched::current().is_some_and(|t| t.fpu.uses_fpu())
}

fn fpu_thread(
    i: usize,
    nr_cpus: usize,
    deadline: u64,
    t: &Totals,
    errors: &IrqSpinLock<Vec<String>>,
) {
    let mut rng = Rng::new(1000 + i as u64);
    // Switched a few times as a non-FPU thread before the first use.
    for _ in 0..3 {
        activity(&mut rng, nr_cpus);
    }
    let want = Image::pattern(i);
    want.load();
    let mut cpu = percpu::cpu_index();
    let mut n = 0u64;
    while time::now_ns() < deadline {
        activity(&mut rng, nr_cpus);
        let got = Image::read();
        n += 1;
        t.checks.fetch_add(1, Ordering::Relaxed);
        let now_cpu = percpu::cpu_index();
        if now_cpu != cpu {
            t.cpu_changes.fetch_add(1, Ordering::Relaxed);
            cpu = now_cpu;
        }
        if got != want {
            t.mismatches.fetch_add(1, Ordering::Relaxed);
            let mut e = errors.lock();
            if e.len() < 8 {
                e.push(alloc::format!(
                    "FPU thread {i}, check {n}, on CPU {now_cpu}: {}",
                    got.first_difference(&want)
                ));
            }
            drop(e);
            want.load();
        }
        watchdog::progress();
    }
    if !uses_fpu() {
        t.fpu_unmarked.fetch_add(1, Ordering::Relaxed);
    }
}

fn plain_thread(i: usize, nr_cpus: usize, deadline: u64, t: &Totals) {
    let mut rng = Rng::new(2000 + i as u64);
    while time::now_ns() < deadline {
        activity(&mut rng, nr_cpus);
        t.plain_rounds.fetch_add(1, Ordering::Relaxed);
        watchdog::progress();
    }
    if uses_fpu() {
        t.plain_marked.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs the experiment.
pub fn run(_m: &Machine, args: &mut Args<'_>) -> Result<ExitCode, String> {
    let cpus: Vec<usize> = percpu::online().map(|p| p.cpu as usize).collect();
    let workloads::kernel_only::FpuCheck {
        threads,
        duration_ns,
    } = workloads::kernel_only::FpuCheck::from_args(args, cpus.len())?;
    let nr_cpus = cpus.len();
    let plain = (threads / 4).max(1);
    let fpu_threads = threads - plain;
    log::info!(
        "fpu-check: {fpu_threads} FPU threads and {plain} non-FPU threads on {} CPUs for {} ms",
        cpus.len(),
        duration_ns / 1_000_000
    );
    let before: Vec<fpu::FpuStats> = cpus.iter().map(|&c| fpu::stats(c)).collect();
    let totals = Arc::new(Totals::default());
    let errors = Arc::new(IrqSpinLock::new(Vec::<String>::new()));
    watchdog::arm(30_000_000_000);
    let start = time::now_ns();
    let deadline = start + duration_ns;
    let mut handles = Vec::new();
    for i in 0..threads {
        let (t, e) = (totals.clone(), errors.clone());
        // Interleave the non-FPU threads with the FPU ones.
        let is_plain = i % 4 == 3 || (threads < 4 && i == threads - 1);
        let (name, body): (String, alloc::boxed::Box<dyn FnOnce() + Send>) = if is_plain {
            (
                alloc::format!("plain{i}"),
                alloc::boxed::Box::new(move || plain_thread(i, nr_cpus, deadline, &t)),
            )
        } else {
            (
                alloc::format!("fpu{i}"),
                alloc::boxed::Box::new(move || fpu_thread(i, nr_cpus, deadline, &t, &e)),
            )
        };
        handles.push(task::spawn(
            SpawnOptions {
                name,
                ..Default::default()
            },
            body,
        ));
    }
    for h in handles {
        h.join();
        watchdog::progress();
    }
    let elapsed = time::now_ns() - start;
    watchdog::disarm();

    let v = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let read_deltas = || -> Vec<(usize, fpu::FpuStats)> {
        cpus.iter()
            .zip(&before)
            .map(|(&c, b)| {
                let a = fpu::stats(c);
                let d = fpu::FpuStats {
                    saves: a.saves - b.saves,
                    restores: a.restores - b.restores,
                    first_use_traps: a.first_use_traps - b.first_use_traps,
                };
                (c, d)
            })
            .collect()
    };
    let sum = |ds: &[(usize, fpu::FpuStats)], f: fn(&fpu::FpuStats) -> u64| -> u64 {
        ds.iter().map(|(_, d)| f(d)).sum()
    };
    // `join` returns once a thread has exited, possibly before its CPU has
    // switched away from it, i.e. before its last fxsave: give the counters
    // a moment to settle (a save that never comes is reported below).
    let settle_deadline = time::now_ns() + 1_000_000_000;
    let mut deltas = read_deltas();
    while sum(&deltas, |d| d.saves) != sum(&deltas, |d| d.restores) + fpu_threads as u64
        && time::now_ns() < settle_deadline
    {
        task::sleep_ns(1_000_000);
        deltas = read_deltas();
    }
    let nm_traps = sum(&deltas, |d| d.first_use_traps);
    let saves = sum(&deltas, |d| d.saves);
    let restores = sum(&deltas, |d| d.restores);
    let per_cpu = json_array(&deltas, |w, (c, d)| {
        write!(
            w,
            "{{\"cpu\":{c},\"fxsave\":{},\"fxrstor\":{},\"nm_traps\":{}}}",
            d.saves, d.restores, d.first_use_traps
        )
    });
    let t = &*totals;
    let (checks, mismatches) = (v(&t.checks), v(&t.mismatches));
    let mut problems: Vec<String> = errors.lock().clone();
    if mismatches > 0 {
        problems.insert(
            0,
            alloc::format!("{mismatches} of {checks} checks found a register changed"),
        );
    }
    if checks == 0 {
        problems.push("no check ran".into());
    }
    if nm_traps != fpu_threads as u64 {
        problems.push(alloc::format!(
            "{nm_traps} #NM first-use traps for {fpu_threads} FPU threads"
        ));
    }
    // Each FPU thread's state is saved once more than it is restored: after
    // its first use, switches out and in alternate, and the last switch out
    // is its exit.
    if saves != restores + fpu_threads as u64 {
        problems.push(alloc::format!(
            "{saves} fxsave vs {restores} fxrstor for {fpu_threads} FPU threads (expected one more save per thread)"
        ));
    }
    if v(&t.plain_marked) > 0 || v(&t.fpu_unmarked) > 0 {
        problems.push(alloc::format!(
            "{} non-FPU threads marked as FPU users, {} FPU threads not marked",
            v(&t.plain_marked),
            v(&t.fpu_unmarked)
        ));
    }
    Record::new("fpu")
        .u64("threads", threads as u64)
        .u64("fpu_threads", fpu_threads as u64)
        .u64("plain_threads", plain as u64)
        .u64("checks", checks)
        .u64("mismatches", mismatches)
        .u64("cpu_changes", v(&t.cpu_changes))
        .u64("plain_rounds", v(&t.plain_rounds))
        .u64("plain_marked", v(&t.plain_marked))
        .u64("fpu_unmarked", v(&t.fpu_unmarked))
        .u64("nm_traps", nm_traps)
        .u64("fxsave", saves)
        .u64("fxrstor", restores)
        .raw("per_cpu", &per_cpu)
        .u64("elapsed_ns", elapsed)
        .bool("ok", problems.is_empty())
        .emit();
    log::info!(
        "fpu-check: {checks} checks, {mismatches} mismatches, {nm_traps} first-use traps, {saves} fxsave / {restores} fxrstor, {} CPU changes seen",
        v(&t.cpu_changes)
    );
    if problems.is_empty() {
        Ok(ExitCode::Success)
    } else {
        Err(alloc::format!("fpu-check: {}", problems.join("; ")))
    }
}
