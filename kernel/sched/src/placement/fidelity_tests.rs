//! Placement decisions checked against Linux's own rule (issue 10): each
//! expected value is derived by hand from the Linux function named in the
//! test, not from this crate's code.

use super::idlest::find_idlest_group;
use crate::config::PickPolicy;
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
