//! The watchdog: a run that stops making progress is reported and ended, not
//! left hanging.
//!
//! Two checks, both driven by the timer tick:
//! - heartbeat: every CPU watches the next CPU's last tick time; a CPU that
//!   has not ticked for [`HEARTBEAT_TIMEOUT_NS`] is stuck (e.g. spinning with
//!   interrupts off).
//! - progress: while an experiment has the watchdog armed, it must call
//!   [`progress`] at least every `timeout`; otherwise it is deadlocked or
//!   starved.
//!
//! The report names the CPU, what each CPU runs and its queued threads (when
//! the scheduler lock can be taken), then ends the run with exit status
//! "watchdog".

use alloc::string::String;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::arch::qemu::{self, ExitCode};
use crate::arch::{percpu, time};
use crate::record::Record;

/// A CPU without a tick for this long is reported as stuck.
pub const HEARTBEAT_TIMEOUT_NS: u64 = 5_000_000_000;

static ARMED: AtomicBool = AtomicBool::new(false);
static TIMEOUT_NS: AtomicU64 = AtomicU64::new(0);
static LAST_PROGRESS_NS: AtomicU64 = AtomicU64::new(0);
static FIRED: AtomicBool = AtomicBool::new(false);

/// Starts the progress check: `progress` must be called every `timeout_ns`.
pub fn arm(timeout_ns: u64) {
    LAST_PROGRESS_NS.store(time::now_ns(), Ordering::Relaxed);
    TIMEOUT_NS.store(timeout_ns, Ordering::Relaxed);
    ARMED.store(true, Ordering::Release);
}

/// Stops the progress check.
pub fn disarm() {
    ARMED.store(false, Ordering::Release);
}

/// Records that the experiment moved forward.
pub fn progress() {
    LAST_PROGRESS_NS.store(time::now_ns(), Ordering::Relaxed);
}

/// Tick hook (interrupt context). Once the watchdog fired, every other CPU
/// parks here, so the reporting CPU can take the scheduler lock.
pub fn on_tick() {
    if FIRED.load(Ordering::Acquire) {
        crate::arch::cpu::halt_forever();
    }
    let now = time::now_ns();
    let me = percpu::cpu_index() as usize;
    let online = |c: usize| percpu::get(c).is_some_and(|p| p.online.load(Ordering::Acquire));
    let n = percpu::all().count();
    // Watch the next online CPU in ring order.
    if let Some(next) = (1..n).map(|i| (me + i) % n).find(|&c| online(c)) {
        let p = percpu::get(next).expect("online CPU has a block");
        let last = p.last_tick_ns.load(Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) > HEARTBEAT_TIMEOUT_NS {
            fire(
                &alloc::format!(
                    "CPU {next} has not ticked for {} ms",
                    (now - last) / 1_000_000
                ),
                Some(next),
            );
        }
    }
    if ARMED.load(Ordering::Acquire) {
        let last = LAST_PROGRESS_NS.load(Ordering::Relaxed);
        let limit = TIMEOUT_NS.load(Ordering::Relaxed);
        if now.saturating_sub(last) > limit {
            fire(
                &alloc::format!(
                    "experiment made no progress for {} ms",
                    (now - last) / 1_000_000
                ),
                None,
            );
        }
    }
}

/// Whether the watchdog has fired (NMIs are then requests for a report).
pub fn fired() -> bool {
    FIRED.load(Ordering::Acquire)
}

/// NMI handler on a stuck CPU: prints where it is (RIP and the top of its
/// stack, which xtask symbolises into a likely call chain), then parks.
pub fn nmi_report(frame: &crate::arch::trap::TrapFrame) -> ! {
    let me = percpu::cpu_index();
    let mut stack = String::from("[");
    for i in 0..48u64 {
        let addr = frame.rsp + i * 8;
        // Stop at the end of the page holding rsp: stacks are page-backed heap
        // memory, so this never touches an unmapped page.
        if addr & !0xFFF != frame.rsp & !0xFFF {
            break;
        }
        // SAFETY: `addr` lies in the same page as the interrupted stack
        // pointer, which is mapped (the CPU just pushed the frame below it).
        let word = unsafe { core::ptr::read_volatile(addr as *const u64) };
        let _ = write!(stack, "{}{word}", if i > 0 { "," } else { "" });
    }
    stack.push(']');
    log::error!(
        "CPU {me} was at RIP {:#x} (RSP {:#x}, RFLAGS {:#x})",
        frame.rip,
        frame.rsp,
        frame.rflags
    );
    Record::new("cpu_dump")
        .u64("cpu", me as u64)
        .u64("rip", frame.rip)
        .u64("rsp", frame.rsp)
        .raw("stack", &stack)
        .emit();
    NMI_COUNT.fetch_add(1, Ordering::AcqRel);
    crate::arch::cpu::halt_forever()
}

static NMI_COUNT: AtomicU64 = AtomicU64::new(0);

/// Stops every other CPU with an NMI; each prints where it was. Waits up to
/// two seconds for their answers.
fn nmi_all_others() {
    let me = percpu::cpu_index();
    let mut sent = 0;
    for p in percpu::all().filter(|p| p.cpu != me && p.online.load(Ordering::Acquire)) {
        crate::arch::apic::send_nmi(p.apic_id);
        sent += 1;
    }
    let until = time::now_ns() + 2_000_000_000;
    while NMI_COUNT.load(Ordering::Acquire) < sent && time::now_ns() < until {
        core::hint::spin_loop();
    }
}

fn fire(reason: &str, stuck_cpu: Option<usize>) {
    if FIRED.swap(true, Ordering::SeqCst) {
        return;
    }
    let me = percpu::cpu_index();
    log::error!("WATCHDOG (seen by CPU {me}): {reason}");
    let now = time::now_ns();
    // Give the other CPUs time to park at their next tick.
    time::delay_ns(50_000_000);
    let described = crate::task::sched::try_with(100_000_000, |ks| {
        let mut lines = alloc::vec::Vec::new();
        for p in percpu::all() {
            let c = p.cpu as usize;
            let (curr, queued) = ks.describe_cpu(c);
            let age = now.saturating_sub(p.last_tick_ns.load(Ordering::Relaxed)) / 1_000_000;
            lines.push(alloc::format!(
                "CPU {c}: running {curr}; need_resched {}; last tick {age} ms ago; {} queued: [{}]",
                ks.core.need_resched(c),
                queued.len(),
                queued.join(", ")
            ));
        }
        lines.extend(ks.describe_threads(64));
        lines
    });
    let mut json = String::from("[");
    match &described {
        Some(lines) => {
            for (i, l) in lines.iter().enumerate() {
                log::error!("  {l}");
                let mut esc = String::new();
                let _ = crate::record::escape_into(&mut esc, l);
                let _ = write!(json, "{}\"{esc}\"", if i > 0 { "," } else { "" });
            }
        }
        None => log::error!("  (scheduler lock held for too long: probably by the stuck CPU)"),
    }
    json.push(']');
    let mut rec = Record::new("watchdog")
        .u64("cpu", me as u64)
        .str("reason", reason)
        .raw("cpus", &json);
    if let Some(c) = stuck_cpu {
        rec = rec.u64("stuck_cpu", c as u64);
    }
    rec.emit();
    // Where is every other CPU? Each answers the NMI with its RIP and stack.
    nmi_all_others();
    Record::new("exit")
        .str("status", ExitCode::Watchdog.name())
        .emit();
    qemu::exit(ExitCode::Watchdog)
}
