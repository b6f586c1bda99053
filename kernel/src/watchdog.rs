//! The watchdog: a run that stops making progress is reported and ended, not
//! left hanging.
//!
//! Two checks, both driven by the timer tick:
//! - heartbeat: every CPU watches the next CPU's last tick time; a CPU that
//!   has not ticked for [`heartbeat_timeout_ns`] is a suspect and gets a
//!   probe NMI at once, then one per [`PROBE_CONFIRM_NS`]. It is stuck (e.g.
//!   spinning with interrupts off) when it answered probes at two moments at
//!   least that far apart without a tick, and took none for
//!   `PROBE_SETTLE_NS` after the last answer, unless another suspect has
//!   answered nothing (a CPU the host does not run may hold the lock it
//!   spins on). A suspect that answers nothing for `UNANSWERED_LIMITS`
//!   heartbeat limits is reported as unresponsive. A vCPU the host merely
//!   descheduled answers when it runs again and then ticks, so a tick gap
//!   alone no longer fires (seen under nested KVM: a bare 5.8 s gap fired on
//!   a CPU inside an ordinary wakeup). Checked once the scheduler runs
//!   (bring-up prints large records with interrupts off).
//! - progress: while an experiment has the watchdog armed, it must call
//!   [`progress`] often. It is stalled when one CPU ran threads for
//!   `timeout` of its own ticks without any progress (a livelock: work
//!   spinning without effect), when every CPU sat idle (nothing running,
//!   nothing queued) for `timeout` without progress (a deadlock: everyone
//!   waits), or, whatever the CPUs did, after ten timeouts without progress
//!   (a livelock that moves between CPUs). Busy time is counted in
//!   tick periods a CPU actually ran, so a vCPU the host starves (a loaded
//!   host, several runs at once) accrues none while descheduled, where a
//!   plain "no progress for `timeout` of TSC time" fired on slow but healthy
//!   runs.
//!
//! The report names the CPU, what each CPU runs and its queued threads (for
//! each CPU whose runqueue lock can be taken; a stuck CPU holding its own is
//! said to), then ends the run with exit status
//! "watchdog".

use alloc::string::String;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::arch::qemu::{self, ExitCode};
use crate::arch::{percpu, time};
use crate::record::{Emit, Record, json_array, json_string};

/// A CPU without a tick for this long is reported as stuck (bare metal).
pub const HEARTBEAT_TIMEOUT_NS: u64 = 5_000_000_000;
/// Extra allowance per CPU under a hypervisor or emulator, whose vCPU threads
/// the host may deschedule (e.g. 192 TCG vCPUs on two host cores).
const HEARTBEAT_PER_VCPU_NS: u64 = 100_000_000;

static HEARTBEAT_ON: AtomicBool = AtomicBool::new(false);
static HEARTBEAT_NS: AtomicU64 = AtomicU64::new(HEARTBEAT_TIMEOUT_NS);

/// Starts the heartbeat check for `nr_cpus` CPUs.
pub fn start_heartbeat(nr_cpus: usize) {
    let hypervisor = crate::arch::cpu::under_hypervisor();
    let extra = if hypervisor {
        HEARTBEAT_PER_VCPU_NS * nr_cpus as u64
    } else {
        0
    };
    HEARTBEAT_NS.store(HEARTBEAT_TIMEOUT_NS + extra, Ordering::Relaxed);
    HEARTBEAT_ON.store(true, Ordering::Release);
}

/// The heartbeat limit in force.
pub fn heartbeat_timeout_ns() -> u64 {
    HEARTBEAT_NS.load(Ordering::Relaxed)
}

/// Least time between two probe answers that confirm a stuck CPU (and
/// between probe NMIs while a suspicion lasts).
pub const PROBE_CONFIRM_NS: u64 = 1_000_000_000;
/// After the second answer, this long (at least two tick periods) without
/// a tick: a CPU that runs with interrupts on takes its pending tick first.
const PROBE_SETTLE_NS: u64 = 100_000_000;
/// A suspect that answers no probe for this many heartbeat limits is
/// reported as unresponsive (not run by the host, or NMIs blocked).
const UNANSWERED_LIMITS: u64 = 3;
const NO_PROBE: u64 = u64::MAX;
/// Per CPU, as a watched CPU: its tick count when the current suspicion
/// began (`NO_PROBE`: none), when it began, when the last probe was sent.
static PROBE_TICKS: [AtomicU64; percpu::MAX_CPUS] =
    [const { AtomicU64::new(NO_PROBE) }; percpu::MAX_CPUS];
static PROBE_BEGAN_NS: [AtomicU64; percpu::MAX_CPUS] =
    [const { AtomicU64::new(0) }; percpu::MAX_CPUS];
static PROBE_SENT_NS: [AtomicU64; percpu::MAX_CPUS] =
    [const { AtomicU64::new(0) }; percpu::MAX_CPUS];
/// Per CPU: probe NMIs sent to it and not yet taken (any suspicion), so a
/// late probe is never mistaken for an unexpected NMI.
static PROBE_PENDING: [AtomicU64; percpu::MAX_CPUS] =
    [const { AtomicU64::new(0) }; percpu::MAX_CPUS];
/// Per CPU: answers in this suspicion (taken with its tick count
/// unchanged), the first and last answer's time, RFLAGS.IF at the last.
static PROBE_ANSWERS: [AtomicU64; percpu::MAX_CPUS] =
    [const { AtomicU64::new(0) }; percpu::MAX_CPUS];
static PROBE_FIRST_NS: [AtomicU64; percpu::MAX_CPUS] =
    [const { AtomicU64::new(0) }; percpu::MAX_CPUS];
static PROBE_LAST_NS: [AtomicU64; percpu::MAX_CPUS] =
    [const { AtomicU64::new(0) }; percpu::MAX_CPUS];
static PROBE_ANSWER_IF: [AtomicBool; percpu::MAX_CPUS] =
    [const { AtomicBool::new(false) }; percpu::MAX_CPUS];
/// The CPU writing the watchdog report (`NO_PROBE`: none): an NMI that
/// reaches it is a late probe, not a request to park.
static REPORTER: AtomicU64 = AtomicU64::new(NO_PROBE);

static ARMED: AtomicBool = AtomicBool::new(false);
static TIMEOUT_NS: AtomicU64 = AtomicU64::new(0);
static LAST_PROGRESS_NS: AtomicU64 = AtomicU64::new(0);
static FIRED: AtomicBool = AtomicBool::new(false);
/// Per CPU: the progress time its busy count refers to, and the time it ran
/// threads since then (at most one tick period per tick).
static SEEN_PROGRESS: [AtomicU64; percpu::MAX_CPUS] =
    [const { AtomicU64::new(0) }; percpu::MAX_CPUS];
static BUSY_NS: [AtomicU64; percpu::MAX_CPUS] = [const { AtomicU64::new(0) }; percpu::MAX_CPUS];
/// No progress for this many timeouts fires whatever the CPUs did (a
/// livelock that moves between CPUs accrues busy time on each only in part).
const HARD_LIMIT_FACTOR: u64 = 10;
/// Per CPU: its previous tick (`now_ns`).
static PREV_TICK_NS: [AtomicU64; percpu::MAX_CPUS] =
    [const { AtomicU64::new(0) }; percpu::MAX_CPUS];

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
/// parks here (outside any runqueue lock), so the reporting CPU can read
/// their runqueues.
pub fn on_tick() {
    if FIRED.load(Ordering::Acquire) {
        crate::arch::cpu::halt_forever();
    }
    let now = time::now_ns();
    let me = percpu::cpu_index() as usize;
    let online = |c: usize| percpu::get(c).is_some_and(|p| p.is_online());
    let n = percpu::all().count();
    // Watch the next online CPU in ring order.
    if !HEARTBEAT_ON.load(Ordering::Acquire) {
        // Not yet: bring-up still prints with interrupts off.
    } else if let Some(next) = (1..n).map(|i| (me + i) % n).find(|&c| online(c)) {
        let p = percpu::get(next).expect("online CPU has a block");
        let last = p.last_tick_ns.load(Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) > heartbeat_timeout_ns() {
            if let Some(verdict) = heartbeat_verdict(next, p, now) {
                // What it ran at that moment (before the report's delay lets
                // it move on): a thread spinning with interrupts off, or idle.
                let running = match crate::task::sched::running_thread_id(next) {
                    Some(id) => alloc::format!("thread {id}"),
                    None => String::from("idle"),
                };
                fire(
                    &alloc::format!(
                        "CPU {next} has not ticked for {} ms (it runs {running}, {} ticks so far; {verdict})",
                        (now - last) / 1_000_000,
                        p.ticks.load(Ordering::Relaxed),
                    ),
                    Some(next),
                );
            }
        } else if PROBE_TICKS[next].load(Ordering::Relaxed) != NO_PROBE {
            PROBE_TICKS[next].store(NO_PROBE, Ordering::Relaxed);
        }
    }
    let prev_tick = PREV_TICK_NS[me].swap(now, Ordering::Relaxed);
    if ARMED.load(Ordering::Acquire) {
        check_progress(me, now, prev_tick);
    }
}

/// Sends `cpu` a probe NMI.
fn send_probe(cpu: usize, p: &percpu::PerCpu, now: u64) {
    PROBE_SENT_NS[cpu].store(now, Ordering::Relaxed);
    PROBE_PENDING[cpu].fetch_add(1, Ordering::AcqRel);
    crate::arch::apic::send_nmi(p.apic_id);
}

/// The heartbeat's confirmation (module docs), run by the watcher while
/// `cpu` (block `p`) has not ticked for the limit: sends probe NMIs (one
/// at once, then one per [`PROBE_CONFIRM_NS`]) and returns the verdict's
/// words when `cpu` is stuck or unresponsive.
fn heartbeat_verdict(cpu: usize, p: &percpu::PerCpu, now: u64) -> Option<String> {
    let ticks = p.ticks.load(Ordering::Relaxed);
    if PROBE_TICKS[cpu].load(Ordering::Acquire) != ticks {
        // A new suspicion (or it ticked since the last one).
        PROBE_ANSWERS[cpu].store(0, Ordering::Relaxed);
        PROBE_BEGAN_NS[cpu].store(now, Ordering::Relaxed);
        PROBE_TICKS[cpu].store(ticks, Ordering::Release);
        send_probe(cpu, p, now);
        return None;
    }
    let answers = PROBE_ANSWERS[cpu].load(Ordering::Acquire);
    let (first, last) = (
        PROBE_FIRST_NS[cpu].load(Ordering::Relaxed),
        PROBE_LAST_NS[cpu].load(Ordering::Relaxed),
    );
    let tick_ns = crate::task::sched::core().shared.cfg.tunables.tick_ns;
    let settle = PROBE_SETTLE_NS.max(2 * tick_ns);
    if answers >= 2 && last.saturating_sub(first) >= PROBE_CONFIRM_NS {
        // It ran at two moments a second apart without ticking. Not stuck
        // yet if another suspect answers nothing: a CPU the host is not
        // running may hold the lock this one spins on (lock-holder
        // preemption); that suspect's own verdict comes first.
        let waits_on_unrun = percpu::online().any(|q| {
            let c = q.cpu as usize;
            c != cpu
                && PROBE_TICKS[c].load(Ordering::Relaxed) != NO_PROBE
                && PROBE_ANSWERS[c].load(Ordering::Relaxed) == 0
        });
        if now.saturating_sub(last) > settle && !waits_on_unrun {
            let on = PROBE_ANSWER_IF[cpu].load(Ordering::Relaxed);
            return Some(alloc::format!(
                "it answered {answers} probe NMIs over {} ms without a tick, interrupts {}",
                (last - first) / 1_000_000,
                if on { "on" } else { "off" }
            ));
        }
    }
    let began = PROBE_BEGAN_NS[cpu].load(Ordering::Relaxed);
    if answers == 0 && now.saturating_sub(began) > UNANSWERED_LIMITS * heartbeat_timeout_ns() {
        return Some(alloc::format!(
            "it answered no probe NMI in {} ms: the host is not running it, or its NMIs are blocked",
            (now - began) / 1_000_000
        ));
    }
    if now.saturating_sub(PROBE_SENT_NS[cpu].load(Ordering::Relaxed)) >= PROBE_CONFIRM_NS {
        send_probe(cpu, p, now);
    }
    None
}

/// NMI handler when the watchdog has not fired, or on the CPU writing its
/// report: true when the NMI was a heartbeat probe (answered, and counted
/// when this CPU has not ticked since its suspicion began); false for an
/// unexpected NMI.
pub fn nmi_probe(frame: &crate::arch::trap::TrapFrame) -> bool {
    let me = percpu::cpu_index() as usize;
    let taken = PROBE_PENDING[me]
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .is_ok();
    if !taken {
        return false;
    }
    let began = PROBE_TICKS[me].load(Ordering::Acquire);
    if began != NO_PROBE && percpu::current().ticks.load(Ordering::Relaxed) == began {
        let now = time::now_ns();
        PROBE_ANSWER_IF[me].store(frame.rflags & (1 << 9) != 0, Ordering::Relaxed);
        if PROBE_ANSWERS[me].load(Ordering::Relaxed) == 0 {
            PROBE_FIRST_NS[me].store(now, Ordering::Relaxed);
        }
        PROBE_LAST_NS[me].store(now, Ordering::Relaxed);
        PROBE_ANSWERS[me].fetch_add(1, Ordering::Release);
    }
    true
}

/// Whether this CPU is writing the watchdog report (its NMIs are late
/// probes: it must not park).
pub fn is_reporter() -> bool {
    REPORTER.load(Ordering::Acquire) == percpu::cpu_index() as u64
}

/// The progress check on CPU `me` at a tick (see the module docs).
fn check_progress(me: usize, now: u64, prev_tick: u64) {
    let last = LAST_PROGRESS_NS.load(Ordering::Relaxed);
    let limit = TIMEOUT_NS.load(Ordering::Relaxed);
    if SEEN_PROGRESS[me].swap(last, Ordering::Relaxed) != last {
        BUSY_NS[me].store(0, Ordering::Relaxed);
    }
    let running = |c: usize| crate::task::sched::running_thread_id(c).is_some();
    // Idle = nothing running and nothing queued (a thread queued on a vCPU
    // the host is not running is not a deadlock).
    let idle =
        |c: usize| !running(c) && crate::task::sched::core().shared.snap(c).nr_running() == 0;
    let since = now.saturating_sub(last);
    if since > HARD_LIMIT_FACTOR * limit {
        // Work bouncing between CPUs accrues busy time on each only in
        // part; past this, no progress is a stall whatever the host did.
        fire(
            &alloc::format!("experiment made no progress for {} ms", since / 1_000_000),
            None,
        );
    } else if running(me) {
        // One tick period at most: a gap is the host not running this vCPU.
        let period = crate::task::sched::core().shared.cfg.tunables.tick_ns;
        let ran = now.saturating_sub(prev_tick.max(last)).min(period);
        let busy = BUSY_NS[me].fetch_add(ran, Ordering::Relaxed) + ran;
        if busy > limit {
            fire(
                &alloc::format!(
                    "experiment made no progress while CPU {me} ran threads for {} ms of its ticks \
                     ({} ms since the last progress)",
                    busy / 1_000_000,
                    now.saturating_sub(last) / 1_000_000
                ),
                None,
            );
        }
    } else if since > limit && percpu::online().all(|p| idle(p.cpu as usize)) {
        fire(
            &alloc::format!(
                "experiment made no progress for {} ms and every CPU is idle (deadlock)",
                now.saturating_sub(last) / 1_000_000
            ),
            None,
        );
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
    for (i, word) in frame.stack_words(48).enumerate() {
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

/// Stops other CPUs with an NMI (the stuck one first, at most 16); each
/// prints where it was. Waits up to two seconds for their answers.
fn nmi_others(first: Option<usize>, first_sent: bool) {
    let me = percpu::cpu_index();
    let mut sent = u64::from(first_sent);
    // The stuck CPU first, then the others; at most 16 dumps, so a big
    // machine's report stays readable and fits before the run ends.
    let others = percpu::all().filter(|p| Some(p.cpu as usize) != first);
    let order = first.and_then(percpu::get).into_iter().chain(others);
    let skip = if first_sent { first } else { None };
    for p in order
        .filter(|p| p.cpu != me && p.is_online() && Some(p.cpu as usize) != skip)
        .take(16)
    {
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
    REPORTER.store(me as u64, Ordering::Release);
    // The stuck CPU first and at once: where it is now, not after the
    // report's delay (by then a CPU that was only starved has moved on).
    let early = stuck_cpu
        .and_then(percpu::get)
        .filter(|p| p.cpu != me && p.is_online());
    if let Some(p) = early {
        crate::arch::apic::send_nmi(p.apic_id);
    }
    log::error!("WATCHDOG (seen by CPU {me}): {reason}");
    let now = time::now_ns();
    // Give the other CPUs time to park at their next tick.
    time::delay_ns(50_000_000);
    let mut lines = crate::task::sched::describe_cpus(now);
    lines.extend(crate::task::sched::describe_threads(64));
    for l in &lines {
        log::error!("  {l}");
    }
    let json = json_array(&lines, |w, l| w.write_str(&json_string(l)));
    let mut rec = Record::new("watchdog")
        .u64("cpu", me as u64)
        .str("reason", reason)
        .raw("cpus", &json);
    if let Some(c) = stuck_cpu {
        rec = rec.u64("stuck_cpu", c as u64);
    }
    rec.emit();
    // Where is every other CPU? Each answers the NMI with its RIP and stack.
    nmi_others(stuck_cpu, early.is_some());
    Record::new("exit")
        .str("status", ExitCode::Watchdog.name())
        .emit();
    qemu::exit(ExitCode::Watchdog)
}
