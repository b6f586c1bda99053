//! `__schedule(SM_IDLE)` (Linux 6.12, `SM_IDLE`): when the idle task calls
//! `schedule_idle()` and `rq->nr_running` is 0, `next = prev` and the pick
//! is skipped, so `sched_balance_newidle` (which stamps `idle_stamp` at its
//! entry and may pull) does not run. Before 6.12 the idle task's
//! reschedule went through `pick_next_task` like any other.

use crate::config::PickPolicy;
use crate::placement::WakeFlags;
use crate::task::TaskPolicy;
use crate::testutil::{run_on, sched, spec};

/// CPU 1's task blocks at 1 ms (newly idle there: nothing to pull, stamp
/// 1 ms); then CPU 0 gets two tasks; at 5 ms CPU 1 is asked to reschedule
/// with nothing queued. Returns (the task CPU 1 picked, its idle_stamp).
fn late_reschedule_of_an_idle_cpu(features: &str) -> (Option<crate::task::TaskId>, u64) {
    let s = sched(&spec(1, 2, 1, 1), PickPolicy::Eevdf, features);
    let mut s = s;
    run_on(&mut s, 1, 0);
    let (_, sw) = s.block_and_schedule(1, 1_000_000);
    assert_eq!(sw.next, None);
    assert_eq!(s.core().rqs[1].idle_stamp, 1_000_000);
    run_on(&mut s, 0, 2_000_000);
    s.wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, 2_000_000);
    assert_eq!(s.core().rqs[0].nr_running(), 2);
    let sw = s.schedule(1, 5_000_000);
    let stamp = s.core().rqs[1].idle_stamp;
    (sw.next, stamp)
}

#[test]
fn an_idle_cpu_rescheduled_with_nothing_queued_does_not_pick() {
    // SM_IDLE: no newly idle balance, so no pull and the 1 ms stamp stays.
    assert_eq!(late_reschedule_of_an_idle_cpu("SM_IDLE"), (None, 1_000_000));
    // Without it (6.11): the pick runs newly idle balance, which stamps
    // idle_stamp at its entry and pulls CPU 0's waiting task (the root
    // domain is overloaded; the new task never ran, so it is not hot), after
    // which the stamp is cleared (`pulled_task`).
    let (next, stamp) = late_reschedule_of_an_idle_cpu("");
    assert!(next.is_some(), "newly idle balance pulled");
    assert_eq!(stamp, 0);
}

#[test]
fn sm_idle_still_picks_what_the_wake_list_brought() {
    // do_idle() flushes the wake list (sched_ttwu_pending) before
    // schedule_idle(), so a queued wakeup makes nr_running 1: a normal pick.
    let mut s = sched(&spec(1, 2, 1, 1), PickPolicy::Eevdf, "SM_IDLE");
    let p = run_on(&mut s, 1, 0);
    s.block_and_schedule(1, 1_000_000);
    // A waker on CPU 0 queues p on CPU 1's wake list (prev idle, other CPU).
    run_on(&mut s, 0, 1_500_000);
    let r = s.wake_up_queue(p, 0, WakeFlags::default(), 2_000_000);
    assert_eq!(r.cpu, 1);
    assert!(s.shared.ttwu_pending(1), "queued on the wake list");
    assert_eq!(s.schedule(1, 2_100_000).next, Some(p));
}

#[test]
fn newly_idle_balance_leaves_a_cpu_with_a_pending_wakeup_alone() {
    // Linux 6.12 sched_balance_newidle(): "if (this_rq->ttwu_pending)
    // return 0;" before idle_stamp is set: a wakeup queued on this CPU's
    // wake list is the work it will run, so it neither stamps nor pulls.
    // (Kernel only: a wakeup queued after schedule() drained the list.)
    let mut s = sched(&spec(1, 2, 1, 1), PickPolicy::Eevdf, "");
    let p = run_on(&mut s, 1, 0);
    s.block_and_schedule(1, 1_000_000);
    assert_eq!(s.core().rqs[1].idle_stamp, 1_000_000);
    run_on(&mut s, 0, 2_000_000);
    s.wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, 2_000_000);
    s.wake_up_queue(p, 0, WakeFlags::default(), 3_000_000);
    assert!(s.shared.ttwu_pending(1));
    let mut c = s.core();
    let moved = crate::balance::domains::newidle_balance(&mut c, 1, 4_000_000);
    assert!(moved.is_empty(), "nothing pulled");
    assert_eq!(c.rqs[1].idle_stamp, 1_000_000, "not stamped again");
}
