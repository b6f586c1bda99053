//! Placement decisions checked against Linux's own rule (issue 10): each
//! expected value is derived by hand from the Linux function named in the
//! test, not from this crate's code.

use super::idlest::find_idlest_group;
use crate::config::PickPolicy;
use crate::task::TaskPolicy;
use crate::testutil::{run_on, sched, set_load, spec};

#[test]
fn exec_of_the_sole_task_stays_on_its_idle_without_it_cpu() {
    // Linux 6.15 update_sg_wakeup_stats() discounts p from its own CPU:
    // nr_running - task_running_on_cpu() = 1 - 1 = 0, and idle_cpu_without()
    // is true (rq->curr == p), so the local group {0} has idle_cpus = 1 like
    // {1}. find_idlest_group(), group_has_spare, non-NUMA:
    // local.idle_cpus (1) >= idlest.idle_cpus (1) -> NULL -> stay on cpu0.
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let mut s = sched(&spec(1, 2, 1, 1), pick, "");
        // Created late enough that PELT has a period behind it
        // (last_update_time != 0, so p is not "new" for the *_without helpers).
        let p = run_on(&mut s, 0, 10_000_000);
        assert_eq!(s.current(0), Some(p));
        assert_ne!(s.core().tasks[p].se.avg.last_update_time, 0);
        assert_eq!(s.sched_exec(0, 12_000_000), None, "{pick:?}");
    }
}

#[test]
fn legacy_idlest_close_runnable_loads_keep_the_minimum_runnable_load() {
    // Linux 4.11-5.4 find_idlest_group(), imbalance_pct 117:
    // imbalance = 1024 * 17 / 100 = 174, imbalance_scale = 100 + 17 / 2 = 108.
    // Groups are single CPUs of capacity 1024, (runnable, load_avg):
    //   cpu0 (300,900) local; cpu1 (100,500); cpu2 (150,200); cpu3 (280,100).
    // cpu1: first remote group -> min_runnable 100, min_avg 500, idlest {1}.
    // cpu2: 100 > 150 + 174? no; 150 < 100 + 174 and 100*500 > 108*200 ->
    //       "runnable loads are close": only min_avg_load = 200, idlest {2}.
    // cpu3: 100 > 280 + 174? no; 280 < 100 + 174? no -> not picked.
    // Final: 100 > 300 + 174? no; 300 < 274? no -> return idlest = {2}.
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "RUNNABLE_LOAD");
    let p = run_on(&mut s, 0, 10);
    for (cpu, run, avg) in [(0, 300, 900), (1, 100, 500), (2, 150, 200), (3, 280, 100)] {
        set_load(&mut s, cpu, avg, run);
    }
    let core = s.core();
    let sd = &core.topo.sd(0)[0];
    assert_eq!(sd.imbalance_pct, 117);
    assert!(sd.groups.iter().all(|g| g.span.weight() == 1));
    assert!((0..4).all(|c| core.capacity_of(c) == 1024));
    let gi = find_idlest_group(&core, sd, p, 0).expect("a remote group");
    assert_eq!(sd.groups[gi].span.first(), Some(2));
}

#[test]
fn a_forked_child_remembers_its_parents_cpu_as_recently_used() {
    // Linux wake_up_new_task(): `p->recent_used_cpu = task_cpu(p)` -- the
    // parent's CPU, which sched_cgroup_fork() gave the child -- before
    // select_task_rq() places it. At the child's first wakeup,
    // select_idle_sibling() returns recent_used_cpu when it is neither prev
    // nor target, shares target's LLC and is idle, before any LLC scan.
    // 8 CPUs in one LLC: the parent forks on CPU 0, the child runs on c and
    // sleeps; CPU 0 and CPU 7 are idle, the others busy; a waker on a busy
    // CPU below 7 wakes the child. Target (waker's CPU or c) and prev (c)
    // are busy, so the recent CPU, 0, wins; the scan (from target + 1)
    // would have found 7 first.
    let mut s = sched(&spec(1, 8, 1, 1), PickPolicy::Cfs, "");
    let parent = run_on(&mut s, 0, 1000);
    let r = s.wake_up_new_task(Some(parent), 0, 0, TaskPolicy::Normal, 2000);
    let (child, c) = (r.task, r.cpu);
    assert!(c != 0 && c != 7, "fork placed the child on {c}");
    assert_eq!(s.core().tasks[child].recent_used_cpu, 0);
    s.schedule(c, 3000);
    assert_eq!(s.current(c), Some(child));
    s.block(c, 4000);
    s.schedule(c, 4000);
    s.block(0, 5000);
    s.schedule(0, 5000);
    for cpu in 1..7 {
        run_on(&mut s, cpu, 6000);
    }
    let w = if c == 1 { 2 } else { 1 };
    let before = s.stats().sis.sis_recent;
    let r = s.wake_up(child, w, false, 7000);
    assert_eq!(r.cpu, 0, "the parent's CPU, recently used");
    assert_eq!(s.stats().sis.sis_recent, before + 1);
}

#[test]
fn wakeups_from_an_idle_cpu_are_recorded_on_its_idle_task() {
    use super::wake::WakeeFields;
    use super::{WakeFlags, select_task_rq_fair};
    use crate::testutil::sleeper_on;
    // Linux select_task_rq_fair() calls record_wakee(p) and wake_wide(p)
    // on `current`, which for a wakeup issued from an idle CPU (a timer
    // expiring in idle) is that CPU's idle task, with wakee fields of its
    // own. One LLC of 4 CPUs (wake_wide's factor 4); CPU 0 idle wakes a
    // and b alternately 20 times within a second: each wakeup flips
    // (last_wakee differs), so the idle task's wakee_flips is 20. A task
    // with 4 flips of its own then goes wide from CPU 0: slave 4 >= factor
    // and master 20 >= 4 * 4. (Without the idle task's flips master would
    // be 4 and slave 0: affine.)
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    let a = sleeper_on(&mut s, 1, 1000);
    let b = sleeper_on(&mut s, 2, 1000);
    let p = sleeper_on(&mut s, 3, 1000);
    assert!(s.core().idle_cpu(0));
    for i in 0..20u64 {
        let t = if i % 2 == 0 { a } else { b };
        select_task_rq_fair(&mut s.core(), t, 1, 0, WakeFlags::TTWU, 10_000 + i);
    }
    assert_eq!(
        s.core().rqs[0].idle_wakee,
        WakeeFields {
            flips: 20,
            decay_ts: 0,
            last: Some(b),
        }
    );
    s.core().tasks[p].wakee_flips = 4;
    let hits = s.stats().wake.wake_wide_hits;
    select_task_rq_fair(&mut s.core(), p, 3, 0, WakeFlags::TTWU, 20_000);
    assert_eq!(s.stats().wake.wake_wide_hits, hits + 1, "p goes wide");
    assert_eq!(s.core().rqs[0].idle_wakee.flips, 21);
}

#[test]
fn exec_placement_first_syncs_the_tasks_averages_to_its_queue() {
    // Linux 6.12 sched_balance_find_dst_cpu(): "if (!(sd_flag &
    // SD_BALANCE_FORK)) sync_entity_load_avg(&p->se)", i.e.
    // __update_load_avg_blocked_se(cfs_rq_last_update_time(cfs_rq), se):
    // p's sums decay with load, runnable and running all 0 from its own
    // last update to its queue's. A's entity was last updated when it was
    // picked (at 1 ms); the fork at 3 ms updates the queue, not A.
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let mut s = sched(&spec(1, 2, 1, 1), pick, "");
        let a = run_on(&mut s, 0, 1_000_000);
        s.wake_up_new_task_on(Some(a), 0, 0, TaskPolicy::Normal, 3_000_000);
        let lut = s.core().rqs[0].cfs.avg.last_update_time;
        let before = s.task(a).se;
        assert!(before.avg.last_update_time < lut, "{pick:?}: a gap to sync");
        let mut want = before.avg;
        crate::pelt::update_task_load_avg(&mut want, lut, before.load.weight, false, false, false);
        assert_ne!(want, before.avg, "{pick:?}: the sync changes something");
        s.sched_exec(0, 3_000_000);
        assert_eq!(s.task(a).se.avg, want, "{pick:?}");
    }
}

#[test]
fn root_group_task_h_load_uses_the_queues_load_of_the_jiffys_first_read() {
    // Linux 6.12 with CONFIG_FAIR_GROUP_SCHED, a task in the root group:
    // task_h_load(p) = p.load_avg * cfs_rq->h_load / (cfs_rq->avg.load_avg
    // + 1), where update_cfs_rq_h_load() sets h_load = avg.load_avg only if
    // last_h_load_update != jiffies. p (load 512) sleeps on cpu1:
    //   queue at 512, first read this jiffy: 512 * 512 / 513 = 511;
    //   queue rises to 1536 in the same jiffy: 512 * 512 / 1537 = 170;
    //   next jiffy, h_load refreshed: 512 * 1536 / 1537 = 511.
    // Without group scheduling task_h_load is p's load_avg, 512 throughout.
    for (features, want) in [("ROOT_H_LOAD", [511, 170, 511]), ("", [512, 512, 512])] {
        let mut s = sched(&spec(1, 2, 1, 1), PickPolicy::Cfs, features);
        let tick = s.core().cfg.tunables.tick_ns;
        let p = crate::testutil::sleeper_on(&mut s, 1, 0);
        let t0 = 10 * tick + tick / 4;
        let mut c = s.core();
        c.tasks[p].se.avg.load_avg = 512;
        c.update_rq_clock(1, t0);
        c.rqs[1].cfs.avg.load_avg = 512;
        let a = c.task_h_load(p);
        c.rqs[1].cfs.avg.load_avg = 1536;
        c.update_rq_clock(1, t0 + tick / 2);
        let b = c.task_h_load(p);
        c.update_rq_clock(1, t0 + tick);
        let d = c.task_h_load(p);
        assert_eq!([a, b, d], want, "{features:?}");
    }
}
