//! One shape through the [`Scheduler`](crate::Scheduler) under each pick,
//! checked for what that pick's steps do: fork placement, tick preemption,
//! yield, a balancer migration and a wakeup migration. Expected values come
//! from the Linux rules named in the comments (v5.11 for CFS, 6.6+ for
//! EEVDF), so a step reaching the other discipline, or none, fails here
//! even where the dispatch unit test's probe queue would not show it.
//!
//! The machine: one socket of 4 cores x 2 threads (8 CPUs, so the tunables
//! are scaled by 4: sched_latency 24 ms, base slice 3 ms); ticks every 4 ms
//! (HZ=250). `WAKEE_STACKED` puts a wakee on its waker's CPU, which makes
//! the wakeup a migration.

use crate::config::PickPolicy;
use crate::stats::MigrationReason;
use crate::task::TaskPolicy;
use crate::testutil::{sched, spec};
use crate::weight::{LoadWeight, NICE_0_LOAD, calc_delta};

const MS: u64 = 1_000_000;
const TICK: u64 = 4 * MS;

#[test]
fn each_pick_shows_its_own_steps() {
    for pick in PickPolicy::ALL {
        let s = sched(&spec(1, 4, 2, 1), pick, "WAKEE_STACKED");
        let t = s.shared.cfg.tunables;
        assert_eq!((t.sched_latency_ns, t.base_slice_ns), (24 * MS, 3 * MS));
        let two = LoadWeight::from_weight(2 * NICE_0_LOAD);
        let t0 = 10 * MS;
        let a = s
            .wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, t0)
            .task;
        assert_eq!(s.schedule(0, t0).next, Some(a));

        // Fork onto cpu0 while a runs (1 ms in, so a is charged first).
        let b = s
            .wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, t0 + MS)
            .task;
        let (av, bv, bd) = (
            s.task(a).se.vruntime,
            s.task(b).se.vruntime,
            s.task(b).se.deadline,
        );
        let min0 = s.core().min_vruntime(0);
        match pick {
            // task_fork_fair + place_entity(initial), START_DEBIT: one
            // vslice right of min_vruntime; for 2 queued nice-0 tasks
            // sched_slice = __calc_delta(sched_latency, 1024, load 2048)
            // (just under 12 ms: the load's inverse is 2^32 - 1 over it).
            PickPolicy::Cfs => {
                let slice = calc_delta(t.sched_latency_ns, NICE_0_LOAD, &two);
                assert_eq!(bv - min0, slice, "{pick:?} fork");
            }
            // place_entity: zero lag, so at V (= curr a's vruntime, a being
            // the only entity); PLACE_DEADLINE_INITIAL: half a vslice.
            PickPolicy::Eevdf => {
                assert_eq!(bv, av, "{pick:?} fork");
                assert_eq!(bd - bv, t.base_slice_ns / 2, "{pick:?} fork deadline");
            }
        }
        assert_eq!(s.current(0), Some(a), "{pick:?}: the fork does not preempt");

        // Tick preemption: the first tick that asks for a reschedule.
        let k = (1..20)
            .find(|&k| s.tick(0, t0 + k * TICK).need_resched)
            .expect("a tick preemption");
        let want = match pick {
            // check_preempt_tick: a has run more than its sched_slice
            // (the fork's, just under 12 ms) since it was picked at t0: at
            // the third tick, 12 ms.
            PickPolicy::Cfs => calc_delta(t.sched_latency_ns, NICE_0_LOAD, &two) / TICK + 1,
            // update_deadline: a's first deadline was half a slice (1.5 ms
            // virtual) away; the first tick passes it.
            PickPolicy::Eevdf => 1,
        };
        assert_eq!(k, want, "{pick:?} tick");
        let now = t0 + k * TICK;
        // (CFS keeps a: b was placed one slice right of a at the fork, and
        // a has run 11 ms since.)
        let c = s.schedule(0, now).next.expect("a task runs");

        // Yield.
        let cd = s.task(c).se.deadline;
        s.yield_current(0, now);
        {
            let core = s.core();
            let (skip, d) = (core.rqs[0].cfs.skip, core.tasks[c].se.deadline);
            match pick {
                // yield_task_fair: curr becomes the skip buddy.
                PickPolicy::Cfs => assert_eq!((skip, d), (Some(c), cd), "{pick:?} yield"),
                // yield_task_fair: the deadline moves one request back.
                PickPolicy::Eevdf => {
                    assert_eq!((skip, d), (None, cd + t.base_slice_ns), "{pick:?} yield");
                }
            }
        }
        let r = s.schedule(0, now).next.expect("a task runs");

        // Balancer migration of a new task, still queued on cpu0, to the
        // idle cpu1.
        let e = s
            .wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, now)
            .task;
        assert_eq!(s.current(0), Some(r), "{pick:?}: the fork does not preempt");
        {
            let mut core = s.core();
            let (min0, min1) = (core.min_vruntime(0), core.min_vruntime(1));
            let (ev, ed) = (core.tasks[e].se.vruntime, core.tasks[e].se.deadline);
            core.move_queued_task(e, 1, MigrationReason::Balance, now);
            let se = &core.tasks[e].se;
            match pick {
                // dequeue_entity (no DEQUEUE_SLEEP): vruntime -= min of
                // cpu0; enqueue_entity (no ENQUEUE_WAKEUP): += min of cpu1.
                // No time passed, so neither update_curr moved a minimum.
                PickPolicy::Cfs => {
                    assert_eq!((se.vruntime, se.deadline), (ev - min0 + min1, ed));
                }
                // place_entity on the empty cpu1: at its V (= its
                // min_vruntime), the lag unused (nothing queued there);
                // PLACE_REL_DEADLINE keeps the first deadline's half slice.
                PickPolicy::Eevdf => {
                    assert_eq!(ed - ev, t.base_slice_ns / 2);
                    assert_eq!(se.vruntime, min1, "{pick:?} balance migration");
                    assert_eq!(se.deadline - se.vruntime, ed - ev, "{pick:?} balance");
                    assert!(!se.rel_deadline);
                }
            }
        }

        // Wakeup migration: r blocks on cpu0 and is woken by w, which runs
        // on cpu2 (WAKEE_STACKED: r goes to cpu2).
        let later = now + 2 * MS;
        s.block(0, later);
        s.schedule(0, later);
        let w = s
            .wake_up_new_task_on(None, 2, 0, TaskPolicy::Normal, later)
            .task;
        assert_eq!(s.schedule(2, later).next, Some(w));
        let (min0, min2, rv, rlag, wv) = {
            let core = s.core();
            let r = &core.tasks[r].se;
            (
                core.min_vruntime(0),
                core.min_vruntime(2),
                r.vruntime,
                r.vlag,
                core.tasks[w].se.vruntime,
            )
        };
        assert_eq!(s.wake_up(r, 2, false, later).cpu, 2);
        let se = s.task(r).se;
        match pick {
            // migrate_task_rq_fair: vruntime -= min of cpu0; enqueue
            // (ENQUEUE_MIGRATED): += min of cpu2; place_entity (wakeup):
            // at least min - sched_latency / 2 (GENTLE_FAIR_SLEEPERS).
            PickPolicy::Cfs => {
                let want = (rv - min0 + min2).max(min2 - t.sched_latency_ns / 2);
                assert_eq!(se.vruntime, want, "{pick:?} wakeup migration");
            }
            // place_entity: V of cpu2 (its only entity is curr w) minus
            // the lag saved at the block, scaled by (W + w) / W = 2.
            PickPolicy::Eevdf => {
                assert_eq!(se.vruntime, wv.wrapping_sub((2 * rlag) as u64), "{pick:?}");
                assert_eq!(se.deadline - se.vruntime, t.base_slice_ns, "{pick:?}");
            }
        }
    }
}
