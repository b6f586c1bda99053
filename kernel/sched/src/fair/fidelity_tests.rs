//! Entity-level decisions checked against Linux's own rule (issue 10): each
//! expected value is derived by hand from the Linux function named in the
//! test, not from this crate's code.

use super::pick::cfs;
use crate::config::{PickPolicy, SchedConfig};
use crate::fair::cfs_rq::CfsRq;
use crate::stats::MigrationReason;
use crate::task::{Task, TaskId, TaskPolicy, TaskTable};
use crate::testutil::{run_on, sched, spec};

fn cfg1(pick: PickPolicy) -> SchedConfig {
    SchedConfig::new(1, pick)
}

/// Nice-0 normal tasks queued (in the tree) at `min_vruntime + offsets`.
fn queue_at(offsets: &[u64]) -> (CfsRq, TaskTable, Vec<TaskId>) {
    let c = cfg1(PickPolicy::Cfs);
    let mut a = TaskTable::default();
    let mut q = CfsRq::default();
    let ids: Vec<TaskId> = offsets
        .iter()
        .map(|_| a.alloc(|id| Task::new(id, 0, TaskPolicy::Normal, 0)))
        .collect();
    for (&id, &off) in ids.iter().zip(offsets) {
        a[id].se.vruntime = q.min_vruntime + off;
        a[id].se.on_rq = true;
        q.account_enqueue(&a, id);
        q.tree_insert(c.pick, &mut a, id);
    }
    (q, a, ids)
}

#[test]
fn cfs_pick_honours_buddies_after_skipping_the_yielder() {
    // Linux v5.11 pick_next_entity(): left = A (skip buddy). second = B;
    // wakeup_preempt_entity(B, A): vdiff = 0.2 ms <= wakeup_gran(A) = 1 ms
    // (nice 0, one CPU: sysctl 1 ms unscaled) -> 0 < 1 -> se = B. Then the
    // buddies are still checked against left: C at +0.8 ms:
    // wakeup_preempt_entity(C, A) = 0 < 1 -> se = C (as next or last buddy).
    let c = cfg1(PickPolicy::Cfs);
    assert_eq!(c.tunables.wakeup_granularity_ns, 1_000_000);
    for buddy in ["next", "last"] {
        let (mut q, a, ids) = queue_at(&[0, 200_000, 800_000]);
        q.skip = Some(ids[0]);
        match buddy {
            "next" => q.next = Some(ids[2]),
            _ => q.last = Some(ids[2]),
        }
        assert_eq!(
            cfs::pick_next_entity(&mut q, &a, &c),
            Some(ids[2]),
            "{buddy}"
        );
        assert_eq!((q.next, q.last, q.skip), (None, None, Some(ids[0])));
    }
}

/// A UP scheduler with `features` where `p` (of `policy`) sleeps and 8
/// nice-0 tasks of `curr_policy` are queued, one of them running; returns
/// (sched, p, curr).
fn crowded_up(
    pick: PickPolicy,
    features: &str,
    policy: TaskPolicy,
    curr_policy: TaskPolicy,
) -> (crate::Scheduler, TaskId, TaskId) {
    let s = sched(&spec(1, 1, 1, 1), pick, features);
    let p = s.wake_up_new_task(None, 0, 0, policy, 1_000_000).task;
    assert_eq!(s.schedule(0, 1_000_000).next, Some(p));
    s.block(0, 1_100_000);
    s.schedule(0, 1_100_000);
    for _ in 0..8 {
        s.wake_up_new_task(None, 0, 0, curr_policy, 1_200_000);
    }
    let curr = s.schedule(0, 1_200_000).next.expect("a task runs");
    (s, p, curr)
}

#[test]
fn next_buddy_is_marked_before_the_need_resched_test() {
    // Linux v5.11 check_preempt_wakeup() / 6.15 check_preempt_wakeup_fair():
    // set_next_buddy(pse) (NEXT_BUDDY, not WF_FORK; v5.11 also needs
    // nr_running 9 >= sched_nr_latency 8) comes before
    // "if (test_tsk_need_resched(curr)) return;", so a wakee arriving while
    // curr already has need_resched set is still the next buddy.
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let (s, p, _) = crowded_up(pick, "NEXT_BUDDY", TaskPolicy::Normal, TaskPolicy::Normal);
        s.core().rqs[0].need_resched = true;
        s.wake_up(p, 0, false, 2_000_000);
        assert_eq!(s.core().rqs[0].cfs.next, Some(p), "{pick:?}");
    }
}

#[test]
fn sched_idle_wakee_is_never_a_next_buddy() {
    // Linux v5.11 set_next_buddy(): returns at once for a task with
    // task_has_idle_policy(); 6.15: "if (se_is_idle(se)) return;". So a
    // SCHED_IDLE wakee leaves cfs_rq->next unset (NEXT_BUDDY on, scale true).
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let (s, p, _) = crowded_up(pick, "NEXT_BUDDY", TaskPolicy::Idle, TaskPolicy::Normal);
        s.wake_up(p, 0, false, 2_000_000);
        assert_eq!(s.core().rqs[0].cfs.next, None, "{pick:?}");
    }
}

#[test]
fn sched_idle_curr_preempted_by_normal_wakee_is_not_a_last_buddy() {
    // Linux v5.11 check_preempt_wakeup(): an idle-policy curr and a normal
    // wakee -> "goto preempt": resched_curr(), then set_last_buddy(curr)
    // (LAST_BUDDY, scale, curr on_rq), which returns at once for an
    // idle-policy task. Result: preempt, cfs_rq->last stays unset. (The old
    // code got the same result by returning early; this guards the order.)
    let (s, p, _) = crowded_up(PickPolicy::Cfs, "", TaskPolicy::Normal, TaskPolicy::Idle);
    let r = s.wake_up(p, 0, false, 2_000_000);
    assert_eq!(r.resched, vec![0]);
    assert_eq!(s.core().rqs[0].cfs.last, None);
    // Control: a normal curr preempted the same way is the last buddy.
    let (s, p, curr) = crowded_up(PickPolicy::Cfs, "", TaskPolicy::Normal, TaskPolicy::Normal);
    let r = s.wake_up(p, 0, false, 2_000_000);
    assert_eq!(r.resched, vec![0]);
    assert_eq!(s.core().rqs[0].cfs.last, Some(curr));
}

#[test]
fn yield_of_a_lone_task_changes_nothing() {
    // Linux 6.15 / v5.11 yield_task_fair(): "if (rq->nr_running == 1)
    // return;" before update_curr(), clear_buddies() and the deadline push
    // (EEVDF: deadline += calc_delta_fair(slice) = +750,000 ns at nice 0).
    // A lone task's vruntime and deadline are therefore unchanged.
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let s = sched(&spec(1, 1, 1, 1), pick, "");
        let a = s.wake_up_new_task(None, 0, 0, TaskPolicy::Normal, 0).task;
        s.schedule(0, 0);
        let before = s.task(a).se;
        s.yield_current(0, 100_000);
        let after = s.task(a).se;
        assert_eq!(after.deadline, before.deadline, "{pick:?}");
        assert_eq!(after.vruntime, before.vruntime, "{pick:?}");
        assert_eq!(s.core().rqs[0].cfs.skip, None, "{pick:?}");
    }
}

#[test]
fn yield_clears_the_yielders_buddies() {
    // Linux yield_task_fair(): with another task queued it calls
    // clear_buddies(cfs_rq, se): a yielder that is the next (or, CFS, last)
    // buddy stops being one; CFS then sets it as the skip buddy.
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let s = sched(&spec(1, 1, 1, 1), pick, "");
        let a = s.wake_up_new_task(None, 0, 0, TaskPolicy::Normal, 0).task;
        s.schedule(0, 0);
        s.wake_up_new_task(Some(a), 0, 0, TaskPolicy::Normal, 10_000);
        {
            let mut c = s.core();
            c.rqs[0].cfs.next = Some(a);
            c.rqs[0].cfs.last = Some(a);
        }
        s.yield_current(0, 20_000);
        let c = s.core();
        assert_eq!(
            (c.rqs[0].cfs.next, c.rqs[0].cfs.last),
            (None, None),
            "{pick:?}"
        );
        let skip = (pick == PickPolicy::Cfs).then_some(a);
        assert_eq!(c.rqs[0].cfs.skip, skip, "{pick:?}");
    }
}

#[test]
fn cfs_batch_yield_does_not_update_curr() {
    // Linux v5.11 yield_task_fair(): update_curr() only
    // "if (curr->policy != SCHED_BATCH)"; a batch yielder's runtime is
    // charged later (put_prev_entity in schedule()), a normal one's at once.
    for (policy, charged) in [(TaskPolicy::Batch, false), (TaskPolicy::Normal, true)] {
        let s = sched(&spec(1, 1, 1, 1), PickPolicy::Cfs, "");
        let a = s.wake_up_new_task(None, 0, 0, policy, 0).task;
        s.schedule(0, 0);
        s.wake_up_new_task(Some(a), 0, 0, TaskPolicy::Normal, 0);
        let before = s.task(a).se.sum_exec_runtime;
        s.yield_current(0, 500_000);
        let ran = s.task(a).se.sum_exec_runtime - before;
        assert_eq!(ran > 0, charged, "{policy:?}: {ran}");
    }
}

#[test]
fn cfs_balance_migration_renormalises_around_update_curr() {
    // Linux v5.11 detach/attach (dequeue_entity without DEQUEUE_SLEEP, then
    // enqueue_entity without ENQUEUE_WAKEUP):
    //   source: update_curr(); ...; se->vruntime -= cfs_rq->min_vruntime;
    //           update_min_vruntime()      (subtract BEFORE min moves on)
    //   dest:   update_curr(); se->vruntime += cfs_rq->min_vruntime
    //           (add AFTER the destination's curr is charged).
    // All tasks are nice 0, so a 5 ms run adds exactly 5 ms of vruntime.
    const RUN: u64 = 5_000_000;
    let t0 = 1_000_000;
    let mut s = sched(&spec(1, 2, 1, 1), PickPolicy::Cfs, "");
    let a = run_on(&mut s, 0, t0);
    let p = s
        .wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, t0)
        .task;
    let b = run_on(&mut s, 1, t0);
    let mut c = s.core();
    let (a_v, p_v, min0) = (
        c.tasks[a].se.vruntime,
        c.tasks[p].se.vruntime,
        c.min_vruntime(0),
    );
    let (b_v, min1) = (c.tasks[b].se.vruntime, c.min_vruntime(1));
    // Source after update_curr: min_vruntime = max(min0, min(curr, leftmost)).
    let min0_linux = min0.max((a_v + RUN).min(p_v));
    // Destination after update_curr: only curr b is queued.
    let min1_linux = min1.max(b_v + RUN);
    let want = p_v - min0_linux + min1_linux;
    // The scenario must separate the orders: P held cpu0's min back, and
    // cpu1's min moves while b is charged.
    assert!(a_v + RUN > p_v && b_v + RUN > min1);
    c.move_queued_task(p, 1, MigrationReason::Balance, t0 + RUN);
    assert_eq!(c.tasks[p].se.vruntime, want);
}

#[test]
fn a_deadline_a_wakeup_passes_first_reschedules_as_at_a_tick() {
    // Linux 6.6+ `update_curr`: when curr's vruntime reaches its deadline
    // (`update_deadline` returns true) and others are queued, it calls
    // `resched_curr` itself, whoever called it. Here the first
    // `update_curr` after the deadline is the wakee's `enqueue_entity`, with
    // no tick between, and wakeup preemption is off (its own test is never
    // reached): the CPU is rescheduled all the same; a wakeup before the
    // deadline is not.
    for (late, expect) in [(true, true), (false, false)] {
        let mut s = sched(&spec(1, 1, 1, 1), PickPolicy::Eevdf, "NO_WAKEUP_PREEMPTION");
        let w = crate::testutil::sleeper_on(&mut s, 0, 1_000_000);
        let t1 = 2_000_000;
        for _ in 0..2 {
            s.wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, t1);
        }
        let x = s.schedule(0, t1).next.expect("one of the two runs");
        let slice = s.core().cfg.tunables.base_slice_ns;
        let (v, d) = {
            let t = s.task(x);
            (t.se.vruntime, t.se.deadline)
        };
        assert!(d > v && d - v <= slice, "a fresh request: {v} {d}");
        let t2 = if late {
            t1 + 2 * slice
        } else {
            t1 + (d - v) / 2
        };
        let r = s.wake_up(w, 0, false, t2);
        assert_eq!(r.cpu, 0);
        assert_eq!(r.resched.contains(&0), expect, "late {late}");
        assert_eq!(s.core().rqs[0].need_resched, expect);
        if late {
            let t = s.task(x);
            assert!(t.se.deadline > t.se.vruntime, "the request was renewed");
        }
        assert_eq!(s.stats().rq.wakeup_preempt, 0);
    }
}

#[test]
fn a_curr_without_slice_protection_is_rescheduled_once_ineligible() {
    // Linux 6.12 update_curr(): with more than one entity queued,
    // `if (resched || did_preempt_short(cfs_rq, curr))` reschedules, and
    // did_preempt_short() is `curr->vlag != curr->deadline` (the stash of
    // set_next_entity no longer matches: protection cancelled, or curr
    // picked again after a renewal) `&& !entity_eligible(cfs_rq, curr)`.
    // Two new nice-0 tasks on CPU 0 under EEVDF, both placed at V with half
    // the 0.75 ms base slice as first request (PLACE_DEADLINE_INITIAL): A
    // runs 0.2 ms, so A's vruntime is 0.2 ms past B's and V lies halfway: A
    // is not eligible, and its deadline (0.375 ms) is not reached. Protected (as
    // picked), the tick leaves A running (RUN_TO_PARITY); with the stash
    // gone it reschedules; with NO_PREEMPT_SHORT it does not.
    for (features, protected, want) in [
        ("", true, false),
        ("", false, true),
        ("NO_PREEMPT_SHORT", false, false),
    ] {
        let s = sched(&spec(1, 1, 1, 1), PickPolicy::Eevdf, features);
        let a = s
            .wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, 1_000_000)
            .task;
        s.wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, 1_000_000);
        s.schedule(0, 1_000_000);
        assert_eq!(s.current(0), Some(a), "{features}");
        if !protected {
            s.core().tasks[a].se.vprot = None;
        }
        let before = s.stats().rq.tick_preempt;
        let _ = s.tick(0, 1_200_000);
        let c = s.core();
        let se = &c.tasks[a].se;
        assert!(
            !c.rqs[0].cfs.vruntime_eligible(&c.tasks, se.vruntime),
            "A is past V"
        );
        assert!(
            (se.deadline as i64).wrapping_sub(se.vruntime as i64) > 0,
            "A's deadline is ahead"
        );
        drop(c);
        assert_eq!(
            s.stats().rq.tick_preempt,
            before + u64::from(want),
            "{features} protected={protected}"
        );
    }
}

#[test]
fn a_new_tasks_initial_util_reads_the_queue_as_last_updated() {
    // Linux 6.12 wake_up_new_task(): update_rq_clock(rq) and then
    // post_init_entity_util_avg(p), which reads cfs_rq->avg as last updated
    // (no PELT update of the queue first): cap = (1024 - util_avg) / 2,
    // util = util_avg * se_weight / (load_avg + 1), capped; runnable =
    // util. CPU 1's queue was last updated at 1 ms with util_avg 400 and
    // load_avg 1023; a task forked onto it at 100 ms gets cap =
    // (1024 - 400) / 2 = 312 and util = min(400 * 1024 / 1024, 312) = 312.
    // (Decayed over the 99 ms first, the queue would give about 400.)
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let s = sched(&spec(1, 2, 1, 1), pick, "");
        {
            let mut c = s.core();
            let avg = &mut c.rqs[1].cfs.avg;
            avg.util_avg = 400;
            avg.load_avg = 1023;
            avg.last_update_time = 1_000_000;
        }
        let p = s
            .wake_up_new_task_on(None, 1, 0, TaskPolicy::Normal, 100_000_000)
            .task;
        let c = s.core();
        let a = &c.tasks[p].se.avg;
        assert_eq!((a.util_avg, a.runnable_avg), (312, 312), "{pick:?}");
    }
}

#[test]
fn a_sleeper_leaving_an_idle_cpu_is_decayed_to_the_wakeup() {
    use crate::pelt;
    // Linux migrate_task_rq_fair(): remove_entity_load_avg(se) syncs the
    // sleeper to its old queue's last_update_time and queues that
    // contribution for removal; then migrate_se_pelt_lag(se), when the old
    // CPU runs its idle task and the entity is not fully decayed, decays it
    // as blocked to (an estimate of) now, so it does not arrive on its new
    // CPU with the load of a sleep it never paid for. A task runs on CPU 1
    // from 1 ms and blocks at 20 ms; CPU 1 then idles with no tick, its
    // queue last updated at 20 ms; at 60 ms the task moves to CPU 0. It
    // arrives decayed over the 40 ms (blocked: no load, runnable or
    // running); CPU 1's removal takes the values at 20 ms. With CPU 1 busy
    // instead (a second task running there), no extra decay.
    for busy_src in [false, true] {
        let mut s = sched(&spec(1, 2, 1, 1), PickPolicy::Eevdf, "");
        let p = run_on(&mut s, 1, 1_000_000);
        if busy_src {
            s.wake_up_new_task_on(None, 1, 0, TaskPolicy::Normal, 1_000_000);
        }
        s.block(1, 20_000_000);
        s.schedule(1, 20_000_000);
        assert_eq!(s.current(1).is_some(), busy_src);
        let mut c = s.core();
        let synced = {
            let mut a = c.tasks[p].se.avg;
            let lut = c.rqs[1].cfs.avg.last_update_time;
            pelt::update_entity_load_avg(&mut a, lut, c.tasks[p].se.load.weight, false, false);
            a
        };
        assert!(synced.util_avg > 0);
        let want = if busy_src {
            synced
        } else {
            let mut a = synced;
            pelt::update_entity_load_avg(
                &mut a,
                60_000_000,
                c.tasks[p].se.load.weight,
                false,
                false,
            );
            a
        };
        c.migrate_sleeping_task(p, 0, MigrationReason::Wakeup, 60_000_000);
        let got = c.tasks[p].se.avg;
        assert_eq!(
            (got.util_avg, got.load_avg, got.runnable_avg),
            (want.util_avg, want.load_avg, want.runnable_avg),
            "busy source: {busy_src}"
        );
        assert_eq!(got.last_update_time, 0, "marked for attach");
        assert_eq!(c.rqs[1].cfs.removed.util_avg, synced.util_avg);
        if !busy_src {
            assert!(got.util_avg < synced.util_avg / 2, "40 ms of decay");
        }
    }
}

#[test]
fn fork_charges_the_parent_only_under_cfs() {
    // v5.11 task_fork_fair() starts with update_curr(cfs_rq) on the
    // parent's queue; 6.12's is only set_task_max_allowed_capacity(p), so a
    // fork whose child goes to another CPU leaves the parent's accounting
    // (exec_start, sum_exec_runtime, vruntime) as it was. The parent runs
    // on CPU 0 from 1 ms and forks at 2 ms; the child goes to idle CPU 1.
    for (pick, charged) in [(PickPolicy::Cfs, true), (PickPolicy::Eevdf, false)] {
        let mut s = sched(&spec(1, 2, 1, 1), pick, "");
        let parent = run_on(&mut s, 0, 1_000_000);
        let r = s.wake_up_new_task(Some(parent), 0, 0, TaskPolicy::Normal, 2_000_000);
        assert_eq!(r.cpu, 1, "{pick:?}");
        let c = s.core();
        let se = &c.tasks[parent].se;
        let want = if charged {
            (2_000_000, 1_000_000)
        } else {
            (1_000_000, 0)
        };
        assert_eq!((se.exec_start, se.sum_exec_runtime), want, "{pick:?}");
    }
}

#[test]
fn eevdf_yield_forfeits_the_rest_of_an_eligible_request() {
    // Linux 6.12.y (since 6.12.63, "sched/fair: Forfeit vruntime on yield")
    // yield_task_fair(): after update_curr(), an eligible curr sets
    // vruntime = deadline and update_deadline() gives it the next request
    // (deadline = vruntime + calc_delta_fair(base_slice): + base_slice at
    // nice 0), so V moves past it and the other task is picked. Before, the
    // deadline alone moved and an eligible yielder that was the only
    // eligible entity was picked again.
    let s = sched(&spec(1, 1, 1, 1), PickPolicy::Eevdf, "");
    let slice = s.core().cfg.tunables.base_slice_ns;
    let a = s.wake_up_new_task(None, 0, 0, TaskPolicy::Normal, 0).task;
    s.schedule(0, 0);
    let b = s
        .wake_up_new_task(Some(a), 0, 0, TaskPolicy::Normal, 0)
        .task;
    // A runs ahead of B, B then runs ahead of A: A is curr again, behind V.
    let t1 = slice / 2 + slice / 20;
    assert_eq!(s.schedule(0, t1).next, Some(b));
    let t2 = t1 + 3 * slice / 4;
    assert_eq!(s.schedule(0, t2).next, Some(a));
    let t3 = t2 + slice / 20;
    let (va, vb) = (s.task(a).se.vruntime, s.task(b).se.vruntime);
    assert!(vb > va, "B is ahead: {vb} vs {va}");
    let d_before = s.task(a).se.deadline;
    s.yield_current(0, t3);
    let se = s.task(a).se;
    assert_eq!(se.vruntime, d_before, "vruntime jumps to the deadline");
    assert_eq!(se.deadline, d_before + slice, "one more request");
    assert_eq!(s.schedule(0, t3).next, Some(b), "the other task runs");
}

#[test]
fn eevdf_yield_of_an_ineligible_task_keeps_its_vruntime_and_deadline() {
    // Linux 6.12.y yield_task_fair(): "if (entity_eligible(cfs_rq, se))";
    // an ineligible curr keeps its deadline, and its vruntime moves only by
    // what update_curr() charges (slice/4 of runtime at nice 0).
    let s = sched(&spec(1, 1, 1, 1), PickPolicy::Eevdf, "");
    let slice = s.core().cfg.tunables.base_slice_ns;
    let a = s.wake_up_new_task(None, 0, 0, TaskPolicy::Normal, 0).task;
    s.schedule(0, 0);
    s.wake_up_new_task(Some(a), 0, 0, TaskPolicy::Normal, 0);
    let before = s.task(a).se;
    // A ran slice/4 with B queued where A started: A is past V.
    s.yield_current(0, slice / 4);
    let se = s.task(a).se;
    assert_eq!(se.vruntime, before.vruntime + slice / 4);
    assert_eq!(se.deadline, before.deadline);
    let c = s.core();
    assert!(!c.rqs[0].cfs.vruntime_eligible(&c.tasks, se.vruntime));
}
