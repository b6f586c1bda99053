//! The per-runqueue locking under real concurrency: one host thread per CPU
//! drives that CPU (fork, block, wake any sleeper, exit, yield, exec, tick,
//! schedule) against the same [`Scheduler`] at once, as the kernel's CPUs
//! do. Afterwards no task may be lost or duplicated, the counters must
//! balance and every structural invariant must hold. A lock-order bug shows
//! up as a hang (the test harness times out) or a "used without its lock"
//! panic.

use crate::config::PickPolicy;
use crate::sched::Scheduler;
use crate::sim::InvariantChecker;
use crate::task::{TaskId, TaskPolicy, TaskState, Tasks};
use crate::testutil::{sched, spec};
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
                let live = sh.forks.load(Relaxed) - sh.exits.load(Relaxed);
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
    let core = sh.s.core();
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
        "IDLE_CORE_HINT,IDLE_ACCT_ENTRY,WAKE_WIDE_HEAVY",
        20_000,
    );
}
