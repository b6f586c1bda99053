//! Seed 002's fork-load switches: FORK_CLOCK_UPDATE (the update_rq_clock
//! in wake_up_new_task that Guittot's "v4.8+patches" carries, Zijlstra's
//! proposal) and NEW_TASK_NO_DECAY (Fleming, "sched/fair: Do not decay new
//! task load on first enqueue"). The find_idlest_group switch of the same
//! thread, IDLEST_BLOCKED, is tested in `seed_tests.rs` and
//! `fidelity_tests.rs`. Expected values are derived by hand from PELT's
//! rules (reference §B) in the comments.

use crate::config::PickPolicy;
use crate::sched::Scheduler;
use crate::task::TaskPolicy;
use crate::testutil::{run_on, sched, spec};

/// 1 ns below a PELT period boundary is never used: all times here are
/// multiples of 1024 ns, so PELT's windows line up with them exactly.
const US: u64 = 1024;
/// 32 PELT periods (1024 * 1024 ns each): load halves (y^32 = 1/2).
const HALF_LIFE: u64 = 32 * 1024 * US;

/// Two CPUs, one LLC. cpu1 last updated its clock and PELT at `stale`
/// (a task ran there and blocked); the parent runs on cpu0 and forks at
/// `stale + HALF_LIFE`. Returns the child's CPU and its `load_avg` right
/// after wake_up_new_task.
fn fork_after_half_life(features: &str) -> (usize, u64) {
    let mut s: Scheduler = sched(&spec(1, 2, 1, 1), PickPolicy::Cfs, features);
    let t0 = 1024 * US;
    let stale = t0 + 10 * US;
    s.wake_up_new_task_on(None, 1, 0, TaskPolicy::Normal, t0);
    s.schedule(1, t0);
    s.block(1, stale);
    s.schedule(1, stale);
    {
        let core = s.core();
        assert_eq!(core.rqs[1].clock, stale);
        assert_eq!(core.rqs[1].cfs.avg.last_update_time, stale);
    }
    let parent = run_on(&mut s, 0, 100 * US);
    let now = stale + HALF_LIFE;
    let r = s.wake_up_new_task(Some(parent), 0, 0, TaskPolicy::Normal, now);
    let load = s.core().tasks[r.task].se.avg.load_avg;
    (r.cpu, load)
}

#[test]
fn seed002_new_task_load_on_first_enqueue() {
    // Fork placement (5.5+ find_idlest_group): {1} has one idle CPU, the
    // local {0} none -> cpu1 in every case.
    //
    // A new task starts with load_avg = weight = 1024
    // (init_entity_runnable_average).
    //
    // FORK_CLOCK_UPDATE (mainline; Zijlstra's update_rq_clock in
    // wake_up_new_task): cpu1's clock moves to `now` before the task is
    // attached, so attach and enqueue happen at `now`: nothing to decay,
    // load_avg = 1024.
    //
    // NO_FORK_CLOCK_UPDATE (v4.8): post_init_entity_util_avg attaches at
    // cpu1's stale clock: load_sum = load_avg * D / 1024 = D, D = the PELT
    // divider (LOAD_AVG_MAX - 1024 + period_contrib, 46718..47741). The
    // enqueue at stale + 32 periods decays the task, not runnable yet
    // (on_rq = 0): periods = (contrib + 32768) / 1024 = 32, contrib and D
    // unchanged, load_sum = decay_load(D, 32) = (D >> 1) * (2^32 - 1) >> 32
    // = floor(D / 2) - 1, load_avg = 1024 * (floor(D / 2) - 1) / D, which
    // floors to 511 for every D in that range (512 - 1024/D or
    // 512 - 1536/D).
    //
    // NEW_TASK_NO_DECAY (Fleming): the first enqueue skips that decay:
    // 1024. Without the stale clock it has nothing to skip: 1024.
    for (f, want) in [
        ("", 1024),
        ("NO_FORK_CLOCK_UPDATE", 511),
        ("NO_FORK_CLOCK_UPDATE,NEW_TASK_NO_DECAY", 1024),
        ("NEW_TASK_NO_DECAY", 1024),
    ] {
        assert_eq!(fork_after_half_life(f), (1, want), "{f}");
    }
}

#[test]
fn seed002_stale_clock_fork_adds_the_decayed_load_to_the_runnable_load() {
    // What find_idlest_group's pre-5.7 keys see next (RUNNABLE_LOAD):
    // enqueue adds the task's load_avg at that moment to cpu1's
    // runnable_load_avg, which was 0 (the earlier task blocked, and a
    // dequeue removes its load). So cpu1's runnable load after the fork is
    // 511 with v4.8's stale clock and 1024 with Fleming's patch.
    for (f, want) in [
        ("RUNNABLE_LOAD,NO_FORK_CLOCK_UPDATE", 511),
        ("RUNNABLE_LOAD,NO_FORK_CLOCK_UPDATE,NEW_TASK_NO_DECAY", 1024),
    ] {
        let mut s: Scheduler = sched(&spec(1, 2, 1, 1), PickPolicy::Cfs, f);
        let t0 = 1024 * US;
        let stale = t0 + 10 * US;
        s.wake_up_new_task_on(None, 1, 0, TaskPolicy::Normal, t0);
        s.schedule(1, t0);
        s.block(1, stale);
        s.schedule(1, stale);
        assert_eq!(s.core().rqs[1].cfs.avg.runnable_load_avg, 0, "{f}");
        let parent = run_on(&mut s, 0, 100 * US);
        let r = s.wake_up_new_task(Some(parent), 0, 0, TaskPolicy::Normal, stale + HALF_LIFE);
        assert_eq!(r.cpu, 1, "{f}");
        assert_eq!(s.core().rqs[1].cfs.avg.runnable_load_avg, want, "{f}");
    }
}
