//! The per-runqueue locking under real concurrency: one host thread per CPU
//! drives that CPU (fork, block, wake any sleeper, exit, yield, exec, tick,
//! schedule) against the same [`Scheduler`] at once, as the kernel's CPUs
//! do. Afterwards no task may be lost or duplicated, the counters must
//! balance and every structural invariant must hold. A lock-order bug shows
//! up as a hang (the test harness times out) or a "used without its lock"
//! panic. A second driver follows the kernel's own protocol: a wake-state
//! lock per thread (`pi_lock`), `block_and_schedule` under it, reserved ids
//! started with `start_task` (fork placement or bound), wakeups of any live
//! thread id (including exited ones), on 16 CPUs.

use crate::config::PickPolicy;
use crate::features::Feat;
use crate::placement::WakeFlags;
use crate::sched::{Scheduler, Start};
use crate::sim::InvariantChecker;
use crate::task::{TaskId, TaskPolicy, TaskState, Tasks};
use crate::testutil::{load_sums_at_queue_clocks, sched, spec};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::vec::Vec;

struct Shared {
    s: Scheduler,
    sleepers: Mutex<Vec<TaskId>>,
    clock: AtomicU64,
    forks: AtomicU64,
    exits: AtomicU64,
}

/// xorshift64*.
fn next(x: &mut u64) -> u64 {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn drive_cpu(sh: &Shared, cpu: usize, steps: usize, max_tasks: u64) {
    let s = &sh.s;
    let mut rng = 0x9E37_79B9_7F4A_7C15 ^ (cpu as u64 + 1);
    for _ in 0..steps {
        let now = sh.clock.fetch_add(50_000, Relaxed);
        match next(&mut rng) % 12 {
            0 => {
                // Saturating: another CPU may count the exit of a task whose
                // fork is not counted yet.
                let live = sh
                    .forks
                    .load(Relaxed)
                    .saturating_sub(sh.exits.load(Relaxed));
                if live < max_tasks {
                    let parent = s.current(cpu);
                    let nice = (next(&mut rng) % 11) as i32 - 5;
                    s.wake_up_new_task(parent, cpu, nice, TaskPolicy::Normal, now);
                    sh.forks.fetch_add(1, Relaxed);
                }
            }
            1 | 2 => {
                if s.current(cpu).is_some() {
                    let p = s.block(cpu, now);
                    // Published before the switch: a waker may catch it
                    // still on the CPU (the ttwu_runnable window).
                    sh.sleepers.lock().unwrap().push(p);
                    s.schedule(cpu, now);
                }
            }
            3..=5 => {
                let p = {
                    let mut v = sh.sleepers.lock().unwrap();
                    if v.is_empty() {
                        None
                    } else {
                        let i = (next(&mut rng) as usize) % v.len();
                        Some(v.swap_remove(i))
                    }
                };
                if let Some(p) = p {
                    let sync = next(&mut rng).is_multiple_of(2);
                    s.wake_up(p, cpu, sync, now);
                }
            }
            6 => {
                if s.current(cpu).is_some() && next(&mut rng).is_multiple_of(4) {
                    s.exit(cpu, now);
                    sh.exits.fetch_add(1, Relaxed);
                    s.schedule(cpu, now);
                }
            }
            7 => {
                s.yield_current(cpu, now);
                s.schedule(cpu, now);
            }
            8 => {
                if s.sched_exec(cpu, now).is_some() {
                    s.schedule(cpu, now);
                }
            }
            9 | 10 => {
                if s.tick(cpu, now).need_resched {
                    s.schedule(cpu, now);
                }
            }
            _ => {
                s.schedule(cpu, now);
            }
        }
    }
}

fn run(pick: PickPolicy, features: &str, steps: usize) {
    let sh = Arc::new(Shared {
        s: sched(&spec(2, 2, 2, 2), pick, features),
        sleepers: Mutex::new(Vec::new()),
        clock: AtomicU64::new(1_000_000),
        forks: AtomicU64::new(0),
        exits: AtomicU64::new(0),
    });
    let n = sh.s.shared.nr_cpus();
    let threads: Vec<_> = (0..n)
        .map(|cpu| {
            let sh = Arc::clone(&sh);
            std::thread::spawn(move || drive_cpu(&sh, cpu, steps, 64))
        })
        .collect();
    for t in threads {
        t.join().expect("a CPU thread panicked");
    }
    // Wake every sleeper and let each CPU run once more.
    let now = sh.clock.fetch_add(1_000_000, Relaxed);
    let left: Vec<TaskId> = core::mem::take(&mut *sh.sleepers.lock().unwrap());
    for p in &left {
        sh.s.wake_up(*p, 0, false, now);
    }
    for cpu in 0..n {
        sh.s.schedule(cpu, now);
    }
    let (forks, exits) = (sh.forks.load(Relaxed), sh.exits.load(Relaxed));
    assert!(
        forks > 50 && exits > 10,
        "too little happened: {forks} forks {exits} exits"
    );
    let stats = sh.s.stats();
    assert_eq!(stats.rq.nr_forks, forks);
    assert_eq!(stats.rq.nr_exits, exits);
    for cpu in 0..n {
        sh.s.tick(cpu, now + 1);
    }
    let core = sh.s.core();
    // Load conservation through concurrent wakeups, migrations (removed
    // load queued for an unheld runqueue) and exits: every task is runnable
    // now, and each is brought to its runqueue's clock before the sums are
    // compared (unprojected, the waiting tasks' stored averages lag their
    // queue's and the comparison failed by 10 % in CI). Within 2 %: 100
    // runs each of the conserving configurations stayed within 0.23 %; the
    // deterministic sequential test drifts up to 1.4 %
    // (pelt/conservation_tests.rs).
    //
    // NEW_TASK_NO_DECAY does not conserve load, by its rule: a child attached
    // at the destination's stale clock keeps its own averages undecayed at
    // its first enqueue, while the queue decays its share over the gap, so
    // the tasks' sum can only exceed the queue's (100 concurrent runs: the
    // queue's sum at 0.964-1.001 of the tasks'; 5 % of runs fell below 0.98
    // and failed CI when the check was two-sided). There only the other
    // side is checked.
    let (rq_load, se_load, detached) = load_sums_at_queue_clocks(&core);
    assert_eq!(detached, 0, "a task left detached");
    assert!(se_load > 10_000, "too little load to compare: {se_load}");
    if core.cfg.features.has(Feat::NewTaskNoDecay) {
        assert!(
            rq_load <= se_load + se_load / 50,
            "runqueues' load {rq_load} above the tasks' {se_load}"
        );
    } else {
        assert!(
            rq_load.abs_diff(se_load) * 50 <= se_load,
            "runqueues' load {rq_load} vs the tasks' {se_load}"
        );
    }
    let alive: Vec<TaskId> = core.tasks.iter().map(|t| t.id).collect();
    assert_eq!(
        alive.len() as u64,
        forks - exits,
        "tasks lost or duplicated"
    );
    for p in &alive {
        let t = core.tasks.get(*p).expect("alive");
        assert_ne!(t.state, TaskState::Dead, "{p:?} dead but not freed");
        assert_ne!(
            t.state,
            TaskState::Sleeping,
            "{p:?} still asleep after the final wakeups"
        );
        assert_eq!(
            core.shared.task_cpu(*p),
            Some(t.cpu),
            "directory disagrees for {p:?}"
        );
    }
    InvariantChecker::default()
        .check(&core)
        .unwrap_or_else(|e| panic!("invariant broken after concurrent run: {e}"));
}

#[test]
fn concurrent_cpus_lose_no_task_cfs() {
    run(PickPolicy::Cfs, "", 20_000);
}

#[test]
fn concurrent_cpus_lose_no_task_eevdf_with_seed_switches() {
    run(
        PickPolicy::Eevdf,
        "SRIKAR_V3,NO_FORK_CLOCK_UPDATE,WAKE_WIDE_HEAVY",
        20_000,
    );
}

/// Seed 002's v4.8 fork path with Fleming's undecayed first enqueue: the
/// one configuration whose load is not conserved (see `run`).
#[test]
fn concurrent_cpus_lose_no_task_with_undecayed_forks() {
    run(
        PickPolicy::Eevdf,
        "NO_FORK_CLOCK_UPDATE,NEW_TASK_NO_DECAY",
        20_000,
    );
}

/// The kernel's `Thread::wake` state.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WakeState {
    Runnable,
    Blocked,
    Exited,
}

struct KThread {
    wake: Mutex<(WakeState, bool)>,
}

struct Kernel {
    s: Scheduler,
    /// Wake as the kernel does: `wake_up_queue` (TTWU_QUEUE wake lists),
    /// the targets activating them now and then (their IPI handler) and
    /// at every `schedule`.
    queue: bool,
    threads: Mutex<HashMap<TaskId, Arc<KThread>>>,
    clock: AtomicU64,
    forks: AtomicU64,
    exits: AtomicU64,
}

impl Kernel {
    fn thread(&self, p: TaskId) -> Option<Arc<KThread>> {
        self.threads.lock().unwrap().get(&p).cloned()
    }

    fn spawn(&self, cpu: usize, bound: bool, now: u64) {
        let Some(p) = self.s.reserve_task() else {
            return;
        };
        let t = Arc::new(KThread {
            wake: Mutex::new((WakeState::Runnable, false)),
        });
        self.threads.lock().unwrap().insert(p, t);
        let start = if bound {
            Start::Bound(cpu)
        } else {
            Start::Fork
        };
        let parent = self.s.current(cpu);
        self.s
            .start_task(p, parent, cpu, start, 0, TaskPolicy::Normal, now);
        self.forks.fetch_add(1, Relaxed);
    }

    /// `task::block()`: blocks in the core under the wake lock.
    fn block(&self, cpu: usize, now: u64) {
        let Some(cur) = self.s.current(cpu) else {
            return;
        };
        let t = self.thread(cur).expect("running task has a thread");
        let mut w = t.wake.lock().unwrap();
        if core::mem::take(&mut w.1) {
            return;
        }
        w.0 = WakeState::Blocked;
        self.s.block_and_schedule(cpu, now);
    }

    /// `task::wake()`.
    fn wake(&self, p: TaskId, cpu: usize, sync: bool, now: u64) {
        let Some(t) = self.thread(p) else { return };
        let mut w = t.wake.lock().unwrap();
        match w.0 {
            WakeState::Blocked => {
                w.0 = WakeState::Runnable;
                if self.queue {
                    let f = if sync {
                        WakeFlags::SYNC
                    } else {
                        WakeFlags::default()
                    };
                    self.s.wake_up_queue(p, cpu, f, now);
                } else {
                    self.s.wake_up(p, cpu, sync, now);
                }
            }
            WakeState::Runnable => w.1 = true,
            WakeState::Exited => {}
        }
    }

    /// `task::exit()`.
    fn exit(&self, cpu: usize, now: u64) {
        let Some(cur) = self.s.current(cpu) else {
            return;
        };
        let t = self.thread(cur).expect("running task has a thread");
        t.wake.lock().unwrap().0 = WakeState::Exited;
        let p = self.s.exit(cpu, now);
        assert_eq!(p, cur);
        self.threads.lock().unwrap().remove(&p);
        self.exits.fetch_add(1, Relaxed);
        self.s.schedule(cpu, now);
    }
}

fn drive_kernel_cpu(k: &Kernel, cpu: usize, round: u64, steps: usize, max_live: u64) {
    let mut rng = 0xD1B5_4A32_D192_ED03 ^ (cpu as u64 + 1) ^ (round << 32);
    for _ in 0..steps {
        let now = k.clock.fetch_add(20_000, Relaxed);
        // The reschedule IPI of a queued wakeup, taken at some point.
        if k.queue && next(&mut rng).is_multiple_of(3) {
            k.s.sched_ttwu_pending(cpu, now);
        }
        match next(&mut rng) % 10 {
            0 => {
                if k.forks.load(Relaxed) - k.exits.load(Relaxed) < max_live {
                    k.spawn(cpu, next(&mut rng).is_multiple_of(4), now);
                }
            }
            1..=3 => k.block(cpu, now),
            4..=6 => {
                // Any id, live or not: wakeups of exited or reused ids must be harmless.
                let p = TaskId((next(&mut rng) % (max_live * 2)) as u32);
                k.wake(p, cpu, next(&mut rng).is_multiple_of(2), now);
            }
            7 => {
                if next(&mut rng).is_multiple_of(3) {
                    k.exit(cpu, now);
                }
            }
            8 => {
                if k.s.tick(cpu, now).need_resched {
                    k.s.schedule(cpu, now);
                }
            }
            _ => {
                k.s.schedule(cpu, now);
            }
        }
    }
}

#[test]
fn kernel_protocol_on_16_cpus_loses_no_wakeup() {
    kernel_protocol(false);
}

#[test]
fn kernel_protocol_with_wake_lists_loses_no_wakeup() {
    kernel_protocol(true);
}

fn kernel_protocol(queue: bool) {
    let k = Arc::new(Kernel {
        s: sched(&spec(2, 4, 2, 2), PickPolicy::Eevdf, ""),
        queue,
        threads: Mutex::new(HashMap::new()),
        clock: AtomicU64::new(1_000_000),
        forks: AtomicU64::new(0),
        exits: AtomicU64::new(0),
    });
    let n = k.s.shared.nr_cpus();
    assert_eq!(n, 16);
    // Rounds of 10,000 steps per CPU thread until the wake lists were used
    // enough: how many wakeups find their target on another CPU depends on
    // how the host interleaves the threads (a fast build on a loaded host
    // runs them almost one after another).
    for round in 0..20 {
        let threads: Vec<_> = (0..n)
            .map(|cpu| {
                let k = Arc::clone(&k);
                std::thread::spawn(move || drive_kernel_cpu(&k, cpu, round, 10_000, 96))
            })
            .collect();
        for t in threads {
            t.join().expect("a CPU thread panicked");
        }
        if !queue || k.s.stats().wake.ttwu_queued > 1_000 {
            break;
        }
    }
    // Wake every blocked thread; each CPU then schedules once.
    let now = k.clock.fetch_add(1_000_000, Relaxed);
    let live: Vec<TaskId> = k.threads.lock().unwrap().keys().copied().collect();
    for p in &live {
        k.wake(*p, 0, false, now);
    }
    for cpu in 0..n {
        k.s.schedule(cpu, now);
    }
    let (forks, exits) = (k.forks.load(Relaxed), k.exits.load(Relaxed));
    assert!(
        forks > 100 && exits > 20,
        "too little happened: {forks} forks, {exits} exits"
    );
    let queued = k.s.stats().wake.ttwu_queued;
    if queue {
        assert!(queued > 1_000, "only {queued} wakeups via wake lists");
    } else {
        assert_eq!(queued, 0);
    }
    let core = k.s.core();
    for cpu in 0..n {
        assert_eq!(
            core.shared.wake_list_len(cpu),
            0,
            "cpu{cpu}: wake list left"
        );
        assert!(
            !core.shared.ttwu_pending(cpu),
            "cpu{cpu}: ttwu_pending left"
        );
    }
    let alive: Vec<TaskId> = core.tasks.iter().map(|t| t.id).collect();
    assert_eq!(
        alive.len() as u64,
        forks - exits,
        "tasks lost or duplicated"
    );
    assert_eq!(alive.len(), live.len(), "core and thread table disagree");
    for p in &alive {
        let t = core.tasks.get(*p).expect("alive");
        assert_ne!(t.state, TaskState::Sleeping, "{p:?}: a wakeup was lost");
        assert_ne!(t.state, TaskState::Dead, "{p:?} dead but not freed");
    }
    InvariantChecker::default()
        .check(&core)
        .unwrap_or_else(|e| panic!("invariant broken after the kernel-protocol run: {e}"));
}

/// The wake list's one delicate step in this model, hammered: CPUs 0 and 1
/// drain their lists (`sched_ttwu_pending`, which clears `ttwu_pending`
/// once it finds the list empty) in a loop while a CPU of the other socket
/// pushes wakeups onto them (`__ttwu_queue_wakelist`, which sets the flag).
/// Here a drain is gated on the flag (the kernel's IPI handler and idle
/// loop call `sched_ttwu_pending`, which returns at once when the flag is
/// clear), unlike Linux, whose call-single IPI drains its list whatever
/// the flag says. So a push that lands between a drainer's last pop and
/// its clear must keep the flag set, or the task waits on a list nobody
/// drains. For the push not to hold the target's runqueue lock, the task
/// must sleep elsewhere: each task, once blocked, is re-bound to the other
/// drainer (like `sched_setaffinity` on a sleeping task), so its waker
/// locks only the task's previous CPU. The pusher waits for each wakeup to
/// be activated (no later push may rescue a lost one): a lost flag is a
/// stuck task, reported after 2 s. Checked: with the clear moved after the
/// list lock is dropped and a ~2 µs spin in between, every run fails; with
/// no spin the window is a few instructions and runs pass.
#[test]
fn a_push_racing_the_drain_keeps_ttwu_pending_set() {
    use std::sync::atomic::AtomicBool;
    let s = Arc::new(sched(&spec(2, 4, 1, 2), PickPolicy::Eevdf, ""));
    // The pusher's CPU shares neither drainer's LLC: every wakeup is queued.
    let pusher_cpu = 4;
    assert!(!s.core().topo.share_cache(0, pusher_cpu));
    assert!(!s.core().topo.share_cache(1, pusher_cpu));
    let mut now = 1_000_000;
    let sleepers = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for cpu in [0, 1] {
        for _ in 0..4 {
            let p = s
                .wake_up_new_task_bound(None, cpu, 0, TaskPolicy::Normal, now)
                .task;
            tasks.push(p);
        }
        // Put each to sleep on its CPU, bound to the other drainer.
        for _ in 0..4 {
            now += 1_000;
            s.schedule(cpu, now);
            let (p, _) = s.block_and_schedule(cpu, now);
            s.shared.lock(cpu).tasks[p].bound_cpu = Some(1 - cpu);
            sleepers.lock().unwrap().push(p);
        }
    }
    assert_eq!(sleepers.lock().unwrap().len(), tasks.len());
    let clock = Arc::new(AtomicU64::new(now));
    let stop = Arc::new(AtomicBool::new(false));
    const PUSHES: u64 = 20_000;
    let pusher = {
        let (s, sleepers, clock) = (Arc::clone(&s), Arc::clone(&sleepers), Arc::clone(&clock));
        std::thread::spawn(move || {
            let mut pushed = 0;
            while pushed < PUSHES {
                let Some(p) = sleepers.lock().unwrap().pop() else {
                    std::thread::yield_now();
                    continue;
                };
                let now = clock.fetch_add(100, Relaxed);
                s.wake_up_queue(p, pusher_cpu, WakeFlags::default(), now);
                pushed += 1;
                let start = std::time::Instant::now();
                while s.shared.wake_listed(p).is_some() {
                    assert!(
                        start.elapsed() < std::time::Duration::from_secs(2),
                        "push {pushed}: {p:?} stuck on a wake list, ttwu_pending {} {}",
                        s.shared.ttwu_pending(0),
                        s.shared.ttwu_pending(1)
                    );
                    std::hint::spin_loop();
                }
            }
            pushed
        })
    };
    let drainers: Vec<_> = [0, 1]
        .into_iter()
        .map(|cpu| {
            let (s, sleepers, clock, stop) = (
                Arc::clone(&s),
                Arc::clone(&sleepers),
                Arc::clone(&clock),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    let now = clock.fetch_add(100, Relaxed);
                    s.sched_ttwu_pending(cpu, now);
                    if s.current(cpu).is_none() {
                        s.schedule(cpu, now);
                    }
                    if s.current(cpu).is_some() {
                        let (p, _) = s.block_and_schedule(cpu, now);
                        // Re-bound under this CPU's lock alone: no other
                        // CPU is held up.
                        s.shared.lock(cpu).tasks[p].bound_cpu = Some(1 - cpu);
                        sleepers.lock().unwrap().push(p);
                    }
                }
            })
        })
        .collect();
    let pushed = pusher.join().expect("the pushing CPU panicked");
    stop.store(true, Relaxed);
    for d in drainers {
        d.join().expect("a draining CPU panicked");
    }
    let now = clock.fetch_add(1_000_000, Relaxed);
    for cpu in [0, 1] {
        s.sched_ttwu_pending(cpu, now);
    }
    let queued = s.stats().wake.ttwu_queued;
    let core = s.core();
    for cpu in [0, 1] {
        assert_eq!(core.shared.wake_list_len(cpu), 0, "cpu{cpu}: a wakeup left");
        assert!(
            !core.shared.ttwu_pending(cpu),
            "cpu{cpu}: ttwu_pending left set"
        );
    }
    assert_eq!(queued, pushed, "every push went through a wake list");
    let migrated = core.tasks.iter().map(|t| t.se.nr_migrations).sum::<u64>();
    assert!(
        migrated >= pushed,
        "{migrated} migrations for {pushed} pushes"
    );
    let asleep = sleepers.lock().unwrap().len();
    let awake = core
        .tasks
        .iter()
        .filter(|t| t.state != TaskState::Sleeping)
        .count();
    assert_eq!(
        asleep + awake,
        tasks.len(),
        "a task neither asleep nor woken"
    );
    InvariantChecker::default()
        .check(&core)
        .unwrap_or_else(|e| panic!("invariant broken after the race: {e}"));
}
