//! The scheduler's hot paths do not touch the heap in a steady state.
//!
//! The kernel calls the core with interrupts off and its heap behind one
//! lock, so an allocation on the wakeup, block, tick or schedule path is both
//! slow and a source of cross-CPU contention (issue 12). This test drives
//! the core the way the kernel does — ping-pong pairs that wake each other
//! with WF_SYNC and block, ticks at HZ=250 with periodic balancing, newly
//! idle balancing, CPUs picking up reschedule requests — on the default
//! 8-CPU machine (2 sockets x 2 cores x 2 threads, 2 nodes), and counts heap
//! allocations and frees made by this thread while inside a scheduler call.
//!
//! Containers that grow with the number of tasks a runqueue has ever held
//! (task arenas, timeline nodes, per-domain statistics) may grow during the
//! warm-up; after it, every call must allocate and free nothing. Result
//! lists spill to the heap past 4 entries (docs/scheduler.md, "Cost of the
//! hot paths"), which this shape does not reach. A last test starts cold,
//! with room made for every task as the kernel does at spawn. The two main tests also
//! check that the measured phase really took the paths they claim to cover
//! (remote wakeups with idle-sibling scans, migrations by wakeup placement
//! and by balancing, ticks that balanced), so they cannot pass by doing
//! nothing.

use sched::config::{PickPolicy, SchedConfig};
use sched::features::FEATURES;
use sched::policies::{POLICIES, by_name};
use sched::stats::{MigrationReason, SchedStats};
use sched::{DynPolicy, SchedTopo, Scheduler, TaskId, TaskPolicy, WakeFlags};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use topology::SyntheticSpec;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// Set from `SCHED_ALLOC_PANIC` before anything is counted (reading the
/// environment allocates).
static PANIC_ON_ALLOC: AtomicBool = AtomicBool::new(false);

/// `System`, counting this thread's allocations and frees while armed.
/// With `SCHED_ALLOC_PANIC=1` the first one prints a backtrace and aborts
/// (unwinding out of an allocator is undefined behaviour).
struct Counting;

fn note() {
    if ARMED.with(|a| a.get()) {
        ALLOCS.with(|c| c.set(c.get() + 1));
        if PANIC_ON_ALLOC.load(Relaxed) {
            // Disarmed first: the report below allocates.
            ARMED.with(|a| a.set(false));
            let bt = std::backtrace::Backtrace::force_capture();
            eprintln!("heap use inside a scheduler call:\n{bt}");
            std::process::abort();
        }
    }
}

// SAFETY: forwards to `System` unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` with counting armed.
fn counted<T>(f: impl FnOnce() -> T) -> T {
    ARMED.with(|a| a.set(true));
    let r = f();
    ARMED.with(|a| a.set(false));
    r
}

fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}

/// The default machine (2 sockets x 2 cores x 2 threads, a node per
/// socket) running the registered policy `policy` with `features` applied
/// on top of the defaults, as the kernel builds it (a [`DynPolicy`]).
fn default_machine(pick: PickPolicy, policy: &str, features: &str) -> Scheduler<DynPolicy> {
    let spec = SyntheticSpec {
        nodes: 2,
        ..SyntheticSpec::simple(2, 2, 2)
    };
    let topo = SchedTopo::synthetic(&spec).expect("8-cpu topology");
    let n = topo.nr_cpus;
    let cfg = SchedConfig::new(n, pick)
        .with_features(features)
        .expect("feature string");
    Scheduler::with_policy(topo, cfg, by_name(policy).expect("registered policy"))
}

/// A tiny kernel: pairs of tasks that pass a message back and forth.
struct Driver {
    s: Scheduler<DynPolicy>,
    partner: Vec<TaskId>,
    /// CPUs asked to reschedule and not yet served.
    pending: Vec<bool>,
    /// Wake as the kernel does (`wake_up_queue`: TTWU_QUEUE wake lists,
    /// activated by the target's `sched_ttwu_pending` as its reschedule
    /// IPI handler does, or by its `schedule`).
    queue: bool,
    now: u64,
    next_tick: u64,
    rng: u64,
}

const TICK_NS: u64 = 4_000_000;

impl Driver {
    fn new(pick: PickPolicy, policy: &str, features: &str, pairs: usize) -> Self {
        let s = default_machine(pick, policy, features);
        let n = s.shared.nr_cpus();
        let mut partner = Vec::new();
        let mut d_tasks = Vec::new();
        for i in 0..pairs * 2 {
            let r = s.wake_up_new_task(None, i % n, 0, TaskPolicy::Normal, 1_000);
            d_tasks.push(r.task);
        }
        for pair in d_tasks.chunks(2) {
            let (a, b) = (pair[0], pair[1]);
            let max = a.0.max(b.0) as usize;
            if partner.len() <= max {
                partner.resize(max + 1, TaskId(u32::MAX));
            }
            partner[a.0 as usize] = b;
            partner[b.0 as usize] = a;
        }
        let mut d = Driver {
            s,
            partner,
            pending: vec![true; n],
            queue: false,
            now: 2_000,
            next_tick: TICK_NS,
            rng: 0x9e37_79b9_7f4a_7c15,
        };
        // Half of every pair sleeps, waiting for its partner's message.
        for cpu in 0..n {
            d.serve(cpu);
        }
        d
    }

    fn rand(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// `schedule()` on a CPU that was asked to.
    fn serve(&mut self, cpu: usize) {
        if self.queue && self.s.shared.ttwu_pending(cpu) {
            let now = self.now;
            let r = counted(|| self.s.sched_ttwu_pending(cpu, now));
            for &c in r.iter() {
                self.pending[c] = true;
            }
        }
        if std::mem::take(&mut self.pending[cpu]) {
            let now = self.now;
            let sw = counted(|| self.s.schedule(cpu, now));
            for &c in sw.resched.iter() {
                self.pending[c] = true;
            }
        }
    }

    /// One step: a CPU's current task wakes its partner (WF_SYNC) and blocks.
    fn step(&mut self) {
        let n = self.s.shared.nr_cpus();
        self.now += 1_000 + self.rand() % 20_000;
        while self.now >= self.next_tick {
            let t = self.next_tick;
            for cpu in 0..n {
                let r = counted(|| self.s.tick(cpu, t));
                if r.need_resched {
                    self.pending[cpu] = true;
                }
                for &c in r.resched.iter() {
                    self.pending[c] = true;
                }
            }
            self.next_tick += TICK_NS;
        }
        let cpu = (self.rand() % n as u64) as usize;
        self.serve(cpu);
        let Some(me) = self.s.current(cpu) else {
            return;
        };
        let other = self.partner[me.0 as usize];
        let now = self.now;
        // Mostly WF_SYNC pipe-style wakeups; every fourth a plain one, and
        // every eighth step the waker keeps running (a producer ahead of
        // its consumer), so tasks spread and the balancer has work.
        let sync = !self.rand().is_multiple_of(4);
        let flags = if sync {
            WakeFlags::SYNC
        } else {
            WakeFlags::default()
        };
        let w = if self.queue {
            counted(|| self.s.wake_up_queue(other, cpu, flags, now))
        } else {
            counted(|| self.s.wake_up_flags(other, cpu, flags, now))
        };
        for &c in w.resched.iter() {
            self.pending[c] = true;
        }
        if self.rand().is_multiple_of(8) {
            return;
        }
        let (_, sw) = counted(|| self.s.block_and_schedule(cpu, now));
        self.pending[cpu] = false;
        for &c in sw.resched.iter() {
            self.pending[c] = true;
        }
        for c in 0..n {
            self.serve(c);
        }
    }
}

/// What the measured phase of a run did.
struct Measured {
    allocs: u64,
    wakeups: u64,
    queued: u64,
    by_wakeup: u64,
    by_balance: u64,
    scans: u64,
    balances: u64,
}

/// Warm up for `warm` steps, then count allocations over `steps` more.
fn measure(pick: PickPolicy, policy: &str, features: &str, warm: usize, steps: usize) -> Measured {
    measure_with(pick, policy, features, warm, steps, false)
}

fn measure_with(
    pick: PickPolicy,
    policy: &str,
    features: &str,
    warm: usize,
    steps: usize,
    queue: bool,
) -> Measured {
    let mut d = Driver::new(pick, policy, features, 6);
    d.queue = queue;
    for _ in 0..warm {
        d.step();
    }
    PANIC_ON_ALLOC.store(std::env::var_os("SCHED_ALLOC_PANIC").is_some(), Relaxed);
    let before: SchedStats = d.s.stats();
    let a0 = allocs();
    for _ in 0..steps {
        d.step();
    }
    let allocs = allocs() - a0;
    let after = d.s.stats();
    let by_wakeup = after.migrations.by_reason(MigrationReason::Wakeup)
        - before.migrations.by_reason(MigrationReason::Wakeup);
    Measured {
        allocs,
        wakeups: after.wake.nr_wakeups - before.wake.nr_wakeups,
        queued: after.wake.ttwu_queued - before.wake.ttwu_queued,
        by_wakeup,
        by_balance: after.migrations.total() - before.migrations.total() - by_wakeup,
        scans: after.sis.sis_domain_search - before.sis.sis_domain_search,
        balances: (after.lb.lb_count + after.lb.newidle_count)
            - (before.lb.lb_count + before.lb.newidle_count),
    }
}

fn hot_paths_allocate_nothing(pick: PickPolicy) {
    let m = measure(pick, "fair", "", 20_000, 50_000);
    eprintln!(
        "{pick:?}: {} wakeups, {} wakeup migrations, {} balancing migrations, {} scans, \
         {} balance calls, {} allocations",
        m.wakeups, m.by_wakeup, m.by_balance, m.scans, m.balances, m.allocs
    );
    assert!(m.wakeups > 10_000, "only {} wakeups", m.wakeups);
    assert!(m.by_wakeup > 100, "only {} wakeup migrations", m.by_wakeup);
    assert!(
        m.by_balance > 10,
        "only {} balancing migrations",
        m.by_balance
    );
    assert!(m.scans > 100, "only {} select_idle_cpu scans", m.scans);
    assert!(m.balances > 100, "only {} load_balance calls", m.balances);
    assert_eq!(
        m.allocs, 0,
        "{} heap allocations in {} wakeups (rerun with SCHED_ALLOC_PANIC=1 RUST_BACKTRACE=1)",
        m.allocs, m.wakeups
    );
}

/// The kernel's wake path: remote wakeups through TTWU_QUEUE wake lists,
/// activated by their target CPUs.
#[test]
fn wake_lists_allocate_nothing() {
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let m = measure_with(pick, "fair", "", 20_000, 50_000, true);
        eprintln!(
            "{pick:?} wake lists: {} wakeups, {} queued, {} allocations",
            m.wakeups, m.queued, m.allocs
        );
        assert!(m.wakeups > 10_000, "only {} wakeups", m.wakeups);
        assert!(m.queued > 1_000, "only {} wakeups via wake lists", m.queued);
        assert_eq!(
            m.allocs, 0,
            "{} heap allocations in {} wakeups (rerun with SCHED_ALLOC_PANIC=1 RUST_BACKTRACE=1)",
            m.allocs, m.wakeups
        );
    }
}

#[test]
fn cfs_wakeup_block_tick_and_schedule_allocate_nothing() {
    hot_paths_allocate_nothing(PickPolicy::Cfs);
}

#[test]
fn eevdf_wakeup_block_tick_and_schedule_allocate_nothing() {
    hot_paths_allocate_nothing(PickPolicy::Eevdf);
}

/// Every registered policy, and every feature switch flipped from its
/// default one at a time (the seeds' heuristics included), under both picks.
#[test]
fn every_policy_and_switch_allocates_nothing() {
    let mut runs: Vec<(&str, String)> = POLICIES.iter().map(|p| (*p, String::new())).collect();
    for f in FEATURES {
        let flip = if f.default {
            format!("NO_{}", f.name)
        } else {
            f.name.to_string()
        };
        if sched::Features::parse(&flip).is_ok() {
            runs.push(("fair", flip));
        }
    }
    let mut bad = Vec::new();
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        for (policy, features) in &runs {
            let m = measure(pick, policy, features, 4_000, 4_000);
            assert!(
                m.wakeups > 500,
                "{pick:?} {policy} {features}: {} wakeups",
                m.wakeups
            );
            if m.allocs != 0 {
                bad.push(format!("{pick:?} {policy} '{features}': {}", m.allocs));
            }
        }
    }
    assert!(bad.is_empty(), "heap allocations on the hot paths: {bad:?}");
}

/// From the first step, with no warm-up: `Shared::make_room_for_all_tasks`
/// (what the kernel calls at every spawn) leaves no container to grow, so
/// even the first time a runqueue, its timeline or its wake list holds more
/// tasks than ever, nothing allocates. Without the call the same run does
/// allocate, so the test shows what the call buys.
#[test]
fn room_for_all_tasks_means_no_first_growth() {
    let cold = |room: bool| {
        let mut d = Driver::new(PickPolicy::Eevdf, "fair", "", 64);
        d.queue = true;
        if room {
            d.s.shared.make_room_for_all_tasks();
        }
        let a0 = allocs();
        let before = d.s.stats();
        for _ in 0..20_000 {
            d.step();
        }
        let after = d.s.stats();
        (
            allocs() - a0,
            after.wake.nr_wakeups - before.wake.nr_wakeups,
        )
    };
    let (without, _) = cold(false);
    let (with, wakeups) = cold(true);
    eprintln!("128 tasks, cold: {without} allocations without room, {with} with");
    assert!(wakeups > 5_000, "only {wakeups} wakeups");
    assert!(without > 0, "the shape never grew a container");
    assert_eq!(with, 0, "{with} allocations with room for every task");
}
