//! DELAY_DEQUEUE / DELAY_ZERO (EEVDF, Linux 6.12) and the lag at a block
//! (`block_lag`). Expected values come
//! from Linux's rules, not from this crate's output:
//! - `dequeue_entity(DEQUEUE_SLEEP)` keeps an entity queued, marked
//!   `sched_delayed`, iff it is not eligible (`entity_eligible`: lag < 0;
//!   for two entities of equal weight, iff its vruntime exceeds the
//!   other's);
//! - `pick_next_entity` dequeues a delayed entity it picks and picks again;
//!   `finish_delayed_dequeue_entity` clips a positive lag to 0 (DELAY_ZERO);
//! - `try_to_wake_up` finds a delayed task still queued and runs
//!   `ttwu_runnable` before `select_task_rq`: no placement, no migration;
//!   `requeue_delayed_entity` re-places an entity whose lag became
//!   positive at lag 0 (vruntime = V, deadline = V + vslice);
//! - `se_runnable()` is false for a delayed entity, which stays `on_rq`:
//!   its load accrues as a queued entity's, its runnable signal decays;
//! - `can_migrate_task` (6.12) has no rule for delayed tasks: the balancer
//!   moves one like any queued task and it stays delayed.

use super::Scheduler;
use crate::CpuId;
use crate::config::PickPolicy;
use crate::task::{TaskId, TaskPolicy, TaskState};
use crate::testutil::{check_invariants, sched, spec};
use crate::weight::calc_delta_fair;

const MS: u64 = 1_000_000;

fn up(features: &str) -> Scheduler {
    sched(&spec(1, 1, 1, 1), PickPolicy::Eevdf, features)
}

/// Two nice-0 tasks forked on `cpu`; the first one picked runs for `ran`
/// ns and blocks. Returns (the blocker, the other).
fn block_after(s: &Scheduler, cpu: CpuId, t0: u64, ran: u64) -> (TaskId, TaskId) {
    let a = s
        .wake_up_new_task_on(None, cpu, 0, TaskPolicy::Normal, t0)
        .task;
    let b = s
        .wake_up_new_task_on(None, cpu, 0, TaskPolicy::Normal, t0)
        .task;
    let first = s.schedule(cpu, t0).next.expect("a task runs");
    let other = if first == a { b } else { a };
    s.block_and_schedule(cpu, t0 + ran);
    (first, other)
}

fn vruntime(s: &Scheduler, p: TaskId) -> u64 {
    s.task(p).se.vruntime
}

#[test]
fn an_ineligible_sleeper_stays_queued_and_an_eligible_one_leaves() {
    // 0.5 ms of running puts the first task's vruntime past the other's
    // (both start near V; the other has not run): lag < 0, so it stays.
    let s = up("DELAY_DEQUEUE");
    let (a, b) = block_after(&s, 0, MS, MS / 2);
    assert!(vruntime(&s, a) > vruntime(&s, b), "the blocker ran ahead");
    let t = s.task(a);
    assert!(t.se.sched_delayed && t.se.on_rq, "delayed, still queued");
    assert_eq!(t.state, TaskState::Sleeping, "asleep all the same");
    {
        let c = s.core();
        let rq = &c.rqs[0];
        assert_eq!((rq.cfs.nr_running, rq.cfs.nr_delayed), (2, 1));
        assert_eq!(rq.cfs.load.weight, 2 * 1024, "its weight stays queued");
        assert_eq!(rq.curr, Some(b), "the other one runs");
    }
    assert_eq!(s.stats().delay.delayed, 1);
    check_invariants(&s);
    // b runs 0.1 ms, less than a's lead, and blocks: eligible, it leaves.
    s.block(0, MS + MS / 2 + MS / 10);
    assert!(vruntime(&s, b) < vruntime(&s, a));
    let tb = s.task(b);
    assert!(!tb.se.on_rq && !tb.se.sched_delayed);
    assert_eq!(s.core().rqs[0].cfs.nr_running, 1, "only the delayed a");
    assert_eq!(s.schedule(0, MS + MS / 2 + MS / 10).next, None);
    assert_eq!(s.stats().delay.picked, 1, "a, picked alone, left too");
    check_invariants(&s);

    // Without the switch, and under CFS with it, the same sleeper leaves.
    for (pick, features) in [(PickPolicy::Eevdf, ""), (PickPolicy::Cfs, "DELAY_DEQUEUE")] {
        let s = sched(&spec(1, 1, 1, 1), pick, features);
        let (a, _) = block_after(&s, 0, MS, MS / 2);
        assert!(!s.task(a).se.on_rq, "{pick:?} {features:?}");
        assert_eq!(s.core().rqs[0].cfs.nr_running, 1);
        assert_eq!(s.stats().delay, Default::default());
    }
}

#[test]
fn the_pick_dequeues_delayed_entities_and_delay_zero_clips_their_lag() {
    for zero in [true, false] {
        let features = if zero {
            "DELAY_DEQUEUE"
        } else {
            "DELAY_DEQUEUE,NO_DELAY_ZERO"
        };
        let s = up(features);
        let (a, b) = block_after(&s, 0, MS, MS / 2);
        assert!(s.task(a).se.sched_delayed);
        // b runs 2 ms, past a, and blocks: b is not eligible either (its
        // vruntime exceeds a's), so it is delayed too.
        s.block(0, MS + MS / 2 + 2 * MS);
        assert!(s.task(b).se.sched_delayed, "{features}");
        let (va, vb) = (vruntime(&s, a), vruntime(&s, b));
        assert!(vb > va);
        // The pick: only a (smaller vruntime) is eligible; it is dequeued
        // with lag V - va = (vb - va) / 2 > 0, then b alone (lag 0).
        let sw = s.schedule(0, MS + MS / 2 + 2 * MS);
        assert_eq!(sw.next, None, "both were delayed: the CPU idles");
        let c = s.core();
        assert_eq!((c.rqs[0].cfs.nr_running, c.rqs[0].cfs.nr_delayed), (0, 0));
        drop(c);
        let (ta, tb) = (s.task(a), s.task(b));
        assert!(!ta.se.on_rq && !ta.se.sched_delayed && !tb.se.on_rq);
        assert_eq!(
            (ta.state, tb.state),
            (TaskState::Sleeping, TaskState::Sleeping)
        );
        let limit = calc_delta_fair(
            (2 * ta.se.slice).max(s.shared.cfg.tunables.tick_ns),
            &ta.se.load,
        );
        let lag = ((vb - va) / 2).min(limit) as i64;
        let want = if zero { 0 } else { lag };
        assert!(lag > 0);
        // V rounds toward -inf (avg_vruntime): allow that one unit.
        assert!(
            (ta.se.vlag - want).abs() <= 1,
            "{features}: vlag {} want {want}",
            ta.se.vlag
        );
        assert_eq!(tb.se.vlag, 0, "alone on the queue: lag 0");
        assert_eq!(s.stats().delay.picked, 2);
        check_invariants(&s);
    }
}

#[test]
fn a_wakeup_requeues_a_delayed_task_where_it_is_without_placement() {
    // 2 CPUs of one LLC. a is delayed on cpu0 behind b; cpu1 is idle and
    // the wakeup comes from cpu1 (an interrupt: nothing runs there). The
    // normal path (wake_affine_idle: this CPU idle and cache-affine, prev
    // busy) would move a to cpu1; ttwu_runnable keeps it on cpu0.
    for delay in [true, false] {
        let s = sched(
            &spec(1, 2, 1, 1),
            PickPolicy::Eevdf,
            if delay { "DELAY_DEQUEUE" } else { "" },
        );
        let (a, b) = block_after(&s, 0, MS, MS / 2);
        assert_eq!(s.task(a).se.sched_delayed, delay);
        let before = s.task(a).stats;
        let remote0 = s.stats().wake.nr_wakeups_remote;
        let (count1, local0) = {
            let c = s.core();
            (c.rqs[1].ttwu_count, c.rqs[0].ttwu_local)
        };
        let r = s.wake_up(a, 1, false, 2 * MS);
        let t = s.task(a);
        if delay {
            assert_eq!((r.cpu, t.cpu), (0, 0), "stays where it is queued");
            assert!(!t.se.sched_delayed && t.se.on_rq);
            assert_eq!(t.state, TaskState::Runnable);
            assert_eq!(t.stats.nr_wakeups, before.nr_wakeups + 1);
            assert_eq!(t.stats.nr_wakeups_migrate, before.nr_wakeups_migrate);
            assert_eq!(
                t.stats.nr_wakeups_affine_attempts, before.nr_wakeups_affine_attempts,
                "no select_task_rq"
            );
            let d = s.stats().delay;
            assert_eq!((d.delayed, d.requeued), (1, 1));
            assert_eq!(s.core().rqs[0].cfs.nr_delayed, 0);
            // ttwu_stat: remote (the waker's CPU is not the task's), counted
            // on the waker's runqueue, nothing local on the task's.
            assert_eq!(s.stats().wake.nr_wakeups_remote, remote0 + 1);
            let c = s.core();
            assert_eq!(c.rqs[1].ttwu_count, count1 + 1);
            assert_eq!(c.rqs[0].ttwu_local, local0);
            drop(c);
        } else {
            assert_eq!((r.cpu, t.cpu), (1, 1), "the normal path moves it");
        }
        assert_eq!(s.current(0), Some(b));
        check_invariants(&s);
    }
}

#[test]
fn a_requeue_with_positive_lag_is_placed_at_v() {
    // a is delayed behind b; a tick 2 ms later charges b past a, so a's lag
    // is positive when the wakeup comes. requeue_delayed_entity (DELAY_ZERO)
    // re-places it with lag 0: with b the only other entity, V = b's
    // vruntime, and the deadline is one nice-0 request (base slice) on.
    let s = up("DELAY_DEQUEUE");
    let (a, b) = block_after(&s, 0, MS, MS / 2);
    s.tick(0, MS + MS / 2 + 2 * MS);
    let (va, vb) = (vruntime(&s, a), vruntime(&s, b));
    assert!(vb > va, "b ran past a");
    let slice = s.shared.cfg.tunables.base_slice_ns;
    s.wake_up(a, 0, false, MS + MS / 2 + 2 * MS);
    let t = s.task(a);
    assert_eq!(t.se.vruntime, vb, "placed at V");
    assert_eq!(t.se.deadline, vb + slice, "a fresh request");
    assert_eq!(t.se.vlag, 0);
    assert_eq!(s.stats().delay.requeued_replaced, 1);
    check_invariants(&s);

    // With NO_DELAY_ZERO it keeps its place.
    let s = up("DELAY_DEQUEUE,NO_DELAY_ZERO");
    let (a, _) = block_after(&s, 0, MS, MS / 2);
    s.tick(0, MS + MS / 2 + 2 * MS);
    let (va, dl) = (vruntime(&s, a), s.task(a).se.deadline);
    s.wake_up(a, 0, false, MS + MS / 2 + 2 * MS);
    assert_eq!((vruntime(&s, a), s.task(a).se.deadline), (va, dl));
    assert_eq!(s.stats().delay.requeued_replaced, 0);
}

#[test]
fn a_delayed_entity_accrues_load_but_not_runnable() {
    // se_runnable() is false for a delayed entity while it stays on_rq:
    // over the time it waits delayed, its load signal accrues as a queued
    // entity's and its runnable signal decays as a sleeper's.
    let s = up("DELAY_DEQUEUE");
    let (a, _) = block_after(&s, 0, MS, MS / 2);
    let before = s.task(a).se.avg;
    let w = s.task(a).se.load.weight;
    let at = MS + MS / 2 + 8 * MS;
    s.tick(0, at);
    s.wake_up(a, 0, false, at);
    let after = s.task(a).se.avg;
    let mut queued = before;
    crate::pelt::update_task_load_avg(&mut queued, at, w, true, true, false);
    let mut asleep = before;
    crate::pelt::update_task_load_avg(&mut asleep, at, w, false, false, false);
    assert_eq!(after.load_sum, queued.load_sum, "load as a queued entity's");
    assert_eq!(
        after.runnable_sum, asleep.runnable_sum,
        "runnable as a sleeper's"
    );
    assert_eq!(after.util_sum, asleep.util_sum, "not running");
    assert!(after.load_sum > asleep.load_sum);
}

#[test]
fn the_balancer_moves_a_delayed_task_and_it_stays_delayed() {
    // 2 CPUs of one LLC: a delayed behind b on cpu0, cpu1 goes newly idle
    // and pulls the one task it may take (b runs). The pulled task is still
    // asleep: cpu1's pick dequeues it and cpu1 stays idle.
    let s = sched(&spec(1, 2, 1, 1), PickPolicy::Eevdf, "DELAY_DEQUEUE");
    // A sleeper that ran on cpu1, so cpu1 has been busy and goes idle.
    let w = s
        .wake_up_new_task_on(None, 1, 0, TaskPolicy::Normal, MS)
        .task;
    assert_eq!(s.schedule(1, MS).next, Some(w));
    let (a, b) = block_after(&s, 0, MS, MS / 2);
    assert!(s.task(a).se.sched_delayed);
    // cpu1's task blocks: cpu1 goes newly idle and balances.
    s.block_and_schedule(1, 2 * MS);
    assert_eq!(s.task(a).cpu, 1, "the balancer took the delayed task");
    let d = s.stats().delay;
    assert_eq!(d.migrated, 1);
    let t = s.task(a);
    assert_eq!(t.state, TaskState::Sleeping, "still asleep on cpu1");
    assert!(s.current(0) == Some(b));
    assert!(
        !t.se.on_rq && !t.se.sched_delayed,
        "cpu1's pick dequeued it"
    );
    assert_eq!(d.picked, 1);
    assert_eq!(s.current(1), None);
    check_invariants(&s);
}

#[test]
fn an_exiting_task_is_never_left_delayed() {
    // The exit path dequeues with DEQUEUE_SPECIAL here (Linux delays it
    // and task_dead_fair dequeues it right after the switch).
    let s = up("DELAY_DEQUEUE");
    let a = s.wake_up_new_task(None, 0, 0, TaskPolicy::Normal, MS).task;
    let b = s.wake_up_new_task(None, 0, 0, TaskPolicy::Normal, MS).task;
    let first = s.schedule(0, MS).next.unwrap();
    s.exit(0, MS + MS / 2);
    let sw = s.schedule(0, MS + MS / 2);
    assert_eq!(sw.next, Some(if first == a { b } else { a }));
    assert!(s.try_task(first).is_none(), "freed");
    assert_eq!(s.core().rqs[0].cfs.nr_running, 1);
    assert_eq!(s.stats().delay, Default::default());
    check_invariants(&s);
}

#[test]
fn a_requeue_keeps_the_balancers_order() {
    // Linux's requeue_delayed_entity does not touch cfs_tasks, the list
    // detach_tasks walks from its oldest end: a delayed task woken after c
    // was queued is still older than c. `lru_tasks` orders by the stamps.
    let s = up("DELAY_DEQUEUE");
    let (a, _) = block_after(&s, 0, MS, MS / 2);
    let put_back = s.task(a).wait_start;
    assert_eq!(put_back, MS + MS / 2, "stamped at its put-back");
    let c = s
        .wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, 2 * MS)
        .task;
    s.wake_up(a, 0, false, 3 * MS);
    let (ta, tc) = (s.task(a), s.task(c));
    assert_eq!(ta.wait_start, put_back, "the requeue keeps its place");
    assert!(ta.wait_start.max(ta.se.exec_start) < tc.wait_start.max(tc.se.exec_start));
    check_invariants(&s);
}

#[test]
fn a_delayed_curr_blocked_again_or_exiting_before_the_switch() {
    // This API lets a caller block the current task and schedule later
    // (Linux's __schedule does both under one lock). A second block of a
    // delayed curr changes nothing; its exit completes the dequeue.
    let s = up("DELAY_DEQUEUE");
    let a = s.wake_up_new_task(None, 0, 0, TaskPolicy::Normal, MS).task;
    let b = s.wake_up_new_task(None, 0, 0, TaskPolicy::Normal, MS).task;
    let first = s.schedule(0, MS).next.unwrap();
    s.block(0, MS + MS / 2);
    assert!(s.task(first).se.sched_delayed, "delayed, still curr");
    s.block(0, MS + MS / 2);
    {
        let c = s.core();
        assert_eq!((c.rqs[0].cfs.nr_running, c.rqs[0].cfs.nr_delayed), (2, 1));
    }
    check_invariants(&s);
    s.exit(0, MS + MS / 2);
    assert!(!s.task(first).se.sched_delayed && !s.task(first).se.on_rq);
    assert_eq!(s.core().rqs[0].cfs.nr_delayed, 0);
    let sw = s.schedule(0, MS + MS / 2);
    assert_eq!(sw.next, Some(if first == a { b } else { a }));
    assert!(s.try_task(first).is_none(), "freed");
    assert_eq!(s.stats().delay.migrated, 0);
    check_invariants(&s);
}

#[test]
fn eligible_sleepers_that_shared_their_queue_are_counted_and_lone_ones_are_not() {
    // Linux's rule: a sleeper alone on its queue is always eligible (V is
    // its own vruntime), so only blocks with another entity queued can be
    // delayed; `eligible_shared` counts those that were not.
    let s = up("DELAY_DEQUEUE");
    let (_, b) = block_after(&s, 0, MS, MS / 2);
    let d = s.stats().delay;
    assert_eq!(
        (d.delayed, d.eligible_shared),
        (1, 0),
        "the blocker ran ahead"
    );
    // b runs less than a's lead and blocks next to the delayed a.
    let t = MS + MS / 2 + MS / 10;
    s.block(0, t);
    assert!(!s.task(b).se.on_rq);
    let d = s.stats().delay;
    assert_eq!((d.delayed, d.eligible_shared), (1, 1));
    assert_eq!(s.schedule(0, t).next, None, "a picked alone and dequeued");
    // A task alone on the queue runs and blocks: eligible, not counted.
    let c = s
        .wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, 2 * MS)
        .task;
    assert_eq!(s.schedule(0, 2 * MS).next, Some(c));
    s.block_and_schedule(0, 3 * MS);
    let d = s.stats().delay;
    assert_eq!((d.delayed, d.eligible_shared, d.picked), (1, 1, 1));
    check_invariants(&s);
}

#[test]
fn the_lag_at_a_shared_block_is_v_minus_the_sleepers_vruntime() {
    // Two nice-0 entities: V is their mean vruntime, rounded down
    // (`avg_vruntime`), so a sleeper's lag V - v is half the other's
    // vruntime minus its own, rounded down. The first blocker ran ahead:
    // negative lag, delayed; the second ran less: lag >= 0, eligible.
    let s = up("DELAY_DEQUEUE");
    let (a, b) = block_after(&s, 0, MS, MS / 2);
    let (va, vb) = (vruntime(&s, a) as i64, vruntime(&s, b) as i64);
    let lag_a = (vb - va).div_euclid(2);
    assert!(lag_a < -(MS as i64) / 8, "ran ahead: {lag_a}");
    let l = s.stats().block_lag;
    assert_eq!((l.delayed.count, l.delayed.sum), (1, lag_a.unsigned_abs()));
    assert_eq!(l.eligible.count, 0);
    s.block(0, MS + MS / 2 + MS / 10);
    let vb = vruntime(&s, b) as i64;
    let lag_b = (va - vb).div_euclid(2);
    assert!(lag_b >= 0, "{lag_b}");
    let l = s.stats().block_lag;
    assert_eq!((l.eligible.count, l.eligible.sum), (1, lag_b as u64));
    assert_eq!(l.delayed.count, 1);
    let d = s.stats().delay;
    assert_eq!(
        (d.delayed, d.eligible_shared),
        (l.delayed.count, l.eligible.count)
    );

    // Without the switch nothing is measured: the record keeps its shape.
    let s = up("");
    block_after(&s, 0, MS, MS / 2);
    assert!(s.stats().block_lag.is_empty());
}
