//! Placement unit tests.

use super::sis::{ScanResult, select_idle_cpu, select_idle_sibling};
use super::wake::{Waker, record_wakee, wake_affine_idle, wake_wide};
use super::{WakeFlags, select_task_rq_fair};
use crate::config::PickPolicy;
use crate::policies::prev_idle::PrevIdlePolicy;
use crate::sched::Scheduler;
use crate::task::TaskPolicy;
use crate::testutil::{run_on, sched, set_load, sleeper_on, spec, two_sockets};
use crate::{SchedConfig, SchedPolicy, SchedTopo};
use topology::SyntheticSpec;

#[test]
fn wake_affine_idle_order() {
    let mut s = two_sockets("");
    // Both idle, same LLC: prev.
    assert_eq!(wake_affine_idle(&s.core(), 0, 1, false), Some(1));
    // Idle this_cpu across LLCs is not trusted; prev idle -> prev (Lawall).
    assert_eq!(wake_affine_idle(&s.core(), 0, 4, false), Some(4));
    let _w = run_on(&mut s, 0, 10);
    let _b = run_on(&mut s, 4, 10);
    assert_eq!(
        wake_affine_idle(&s.core(), 0, 4, true),
        Some(0),
        "sync with only the waker running"
    );
    assert_eq!(wake_affine_idle(&s.core(), 0, 4, false), None);
}

#[test]
fn wakee_flips_decay_after_a_second() {
    let mut s = two_sockets("");
    let w = run_on(&mut s, 0, 10);
    let a = sleeper_on(&mut s, 4, 20);
    let b = sleeper_on(&mut s, 5, 20);
    for i in 0..10 {
        record_wakee(
            &mut s.core(),
            Waker::Task(w),
            if i % 2 == 0 { a } else { b },
            0,
            100,
        );
    }
    assert_eq!(s.core().tasks[w].wakee_flips, 10);
    record_wakee(&mut s.core(), Waker::Task(w), a, 0, 2_000_000_000);
    assert_eq!(s.core().tasks[w].wakee_flips, 6, "halved then +1");
    assert!(!wake_wide(&mut s.core(), a, Waker::Task(w), 0));
}

#[test]
fn select_idle_sibling_branches() {
    let smt = spec(1, 4, 2, 1);
    let mut s = sched(&smt, PickPolicy::Cfs, "");
    let p = sleeper_on(&mut s, 0, 10);
    // target idle
    assert_eq!(select_idle_sibling(&mut s.core(), p, 0, 0, 0, None), 0);
    assert_eq!(s.stats().sis.sis_target, 1);
    let _t0 = run_on(&mut s, 0, 20);
    // prev idle, target busy
    assert_eq!(select_idle_sibling(&mut s.core(), p, 5, 0, 0, None), 5);
    assert_eq!(s.stats().sis.sis_prev, 1);
    // recent_used_cpu
    let _t5 = run_on(&mut s, 5, 20);
    s.core().tasks[p].recent_used_cpu = 7;
    assert_eq!(select_idle_sibling(&mut s.core(), p, 5, 0, 0, None), 7);
    assert_eq!(s.stats().sis.sis_recent, 1);
    assert_eq!(
        s.core().tasks[p].recent_used_cpu,
        5,
        "recent_used_cpu := prev"
    );
    // no idle core: prev's SMT sibling
    for c in [2, 3, 6, 7] {
        run_on(&mut s, c, 30);
    }
    s.shared.llc[0].set_has_idle_cores(false);
    assert_eq!(select_idle_sibling(&mut s.core(), p, 0, 0, 0, None), 1);
    assert_eq!(s.stats().sis.sis_smt, 1);
    // only cpu4 idle, reached through the LLC scan
    run_on(&mut s, 1, 40);
    assert_eq!(select_idle_sibling(&mut s.core(), p, 0, 0, 0, None), 4);
    assert_eq!(s.stats().sis.sis_idle_cpu, 1);
    // nothing idle: fallback to target
    run_on(&mut s, 4, 50);
    assert_eq!(select_idle_sibling(&mut s.core(), p, 0, 0, 0, None), 0);
    assert_eq!(s.stats().sis.sis_fallback, 1);
}

#[test]
fn idle_core_scan_clears_flag_when_none_found() {
    let mut s = sched(&spec(1, 2, 2, 1), PickPolicy::Cfs, "");
    run_on(&mut s, 0, 10);
    run_on(&mut s, 2, 10);
    s.shared.llc[0].set_has_idle_cores(true);
    let r = select_idle_cpu(&mut s.core(), true, 0);
    // cpu1 (sibling of busy cpu0) is the first idle-ish CPU met: the fallback.
    assert_eq!(r, ScanResult::IdleCpu(1));
    assert!(!s.shared.llc[0].has_idle_cores());
    assert_eq!(s.stats().sis.has_idle_cores_cleared, 1);
}

#[test]
fn sis_util_limits_the_scan() {
    let mut s = sched(&spec(1, 8, 1, 1), PickPolicy::Cfs, "");
    for c in 0..7 {
        run_on(&mut s, c, 10);
    }
    s.shared.llc[0].set_nr_idle_scan(3);
    assert_eq!(
        select_idle_cpu(&mut s.core(), false, 0),
        ScanResult::None,
        "cpu7 lies beyond the 3-CPU budget"
    );
    s.shared.llc[0].set_nr_idle_scan(0);
    assert_eq!(select_idle_cpu(&mut s.core(), false, 0), ScanResult::None);
    assert_eq!(s.stats().sis.sis_util_skip, 1);
    let mut s2 = sched(&spec(1, 8, 1, 1), PickPolicy::Cfs, "NO_SIS_UTIL");
    for c in 0..7 {
        run_on(&mut s2, c, 10);
    }
    s2.shared.llc[0].set_nr_idle_scan(0);
    assert_eq!(
        select_idle_cpu(&mut s2.core(), false, 0),
        ScanResult::IdleCpu(7)
    );
}

#[test]
fn nr_idle_scan_formula() {
    let s = sched(&spec(1, 8, 1, 1), PickPolicy::Cfs, "");
    // 50% average util: tmp = 512^2 * 117^2 / (10000*1024) = 350 -> y = 674 -> 674*8/1024 = 5
    crate::balance::stats::update_idle_cpu_scan(&mut s.core(), 0, 8, 117, 8 * 512);
    assert_eq!(s.shared.llc[0].nr_idle_scan(), 5);
    // >= 100/117 utilization: scan depth 0.
    crate::balance::stats::update_idle_cpu_scan(&mut s.core(), 0, 8, 117, 8 * 880);
    assert_eq!(s.shared.llc[0].nr_idle_scan(), 0);
    crate::balance::stats::update_idle_cpu_scan(&mut s.core(), 0, 8, 117, 0);
    assert_eq!(s.shared.llc[0].nr_idle_scan(), 8);
}

#[test]
fn wake_wide_needs_llc_sized_fanout() {
    let mut s = two_sockets("");
    let w = run_on(&mut s, 0, 10);
    let p = sleeper_on(&mut s, 4, 20);
    s.core().tasks[w].wakee_flips = 16;
    s.core().tasks[p].wakee_flips = 3;
    assert!(
        !wake_wide(&mut s.core(), p, Waker::Task(w), 0),
        "slave below llc size"
    );
    s.core().tasks[p].wakee_flips = 4;
    assert!(wake_wide(&mut s.core(), p, Waker::Task(w), 0), "16 >= 4*4");
    s.core().tasks[w].wakee_flips = 15;
    assert!(!wake_wide(&mut s.core(), p, Waker::Task(w), 0));
    assert_eq!(s.stats().wake.wake_wide_hits, 1);
}

#[test]
fn fork_copies_the_parents_wakee_fields_so_children_can_go_wide() {
    // Linux: dup_task_struct copies the parent's task_struct and
    // sched_fork resets none of wakee_flips, wakee_flip_decay_ts,
    // last_wakee (the 6.12 rig's hackbench threads start with their
    // process's 52 flips). A child with 52 flips woken by a waker with
    // 300: slave 52 >= llc_size 4 and master 300 >= 52 * 4 = 208 -> wide.
    // A child of a parent with no flips starts at 0: slave 0 < 4 -> affine.
    let mut s = two_sockets("");
    let parent = run_on(&mut s, 0, 10);
    let other = sleeper_on(&mut s, 5, 20);
    {
        let mut c = s.core();
        let t = &mut c.tasks[parent];
        t.wakee_flips = 52;
        t.wakee_flip_decay_ts = 7_000;
        t.last_wakee = Some(other);
    }
    let child = s
        .wake_up_new_task(Some(parent), 0, 0, TaskPolicy::Normal, 30)
        .task;
    let t = s.task(child);
    assert_eq!(
        (t.wakee_flips, t.wakee_flip_decay_ts, t.last_wakee),
        (52, 7_000, Some(other))
    );
    let w = run_on(&mut s, 4, 40);
    s.core().tasks[w].wakee_flips = 300;
    assert!(
        wake_wide(&mut s.core(), child, Waker::Task(w), 4),
        "inherited flips: wide"
    );
    s.core().tasks[parent].wakee_flips = 0;
    let fresh = s
        .wake_up_new_task(Some(parent), 0, 0, TaskPolicy::Normal, 50)
        .task;
    assert_eq!(s.task(fresh).wakee_flips, 0);
    assert!(
        !wake_wide(&mut s.core(), fresh, Waker::Task(w), 4),
        "no flips: affine"
    );
}

#[test]
fn fork_spreads_over_numa_machine_and_wakeups_stay_local() {
    let mut s = sched(&crate::testutil::big160(), PickPolicy::Eevdf, "");
    let parent = run_on(&mut s, 0, 10);
    let mut nodes = [0u32; 4];
    for i in 0..8 {
        let r = s.wake_up_new_task(Some(parent), 0, 0, TaskPolicy::Normal, 100 + i);
        nodes[s.shared.topo.cpus[r.cpu].node as usize] += 1;
        s.schedule(r.cpu, 100 + i);
    }
    assert!(
        nodes.iter().filter(|&&n| n > 0).count() >= 2,
        "forks spread beyond one node: {nodes:?}"
    );
    let n: u64 = s.stats().fork_targets.iter().sum();
    assert_eq!(n, 9);
    // A wakeup from cpu0 of a task whose prev is idle in the same LLC: prev.
    let idle = (1..40)
        .find(|&c| s.core().idle_cpu(c))
        .expect("an idle cpu in node 0");
    let p = sleeper_on(&mut s, idle, 1000);
    let r = select_task_rq_fair(&mut s.core(), p, idle, 0, WakeFlags::TTWU, 2000);
    assert_eq!(r, idle);
}

#[test]
fn prev_idle_policy_through_the_seam() {
    let topo = SchedTopo::synthetic(&SyntheticSpec::simple(2, 4, 1)).unwrap();
    let cfg = SchedConfig::new(topo.nr_cpus, PickPolicy::Cfs);
    let mut s = Scheduler::with_policy(topo, cfg, PrevIdlePolicy::default());
    let p = sleeper_on(&mut s, 5, 10);
    let _w = run_on(&mut s, 0, 20);
    assert_eq!(s.wake_up(p, 0, false, 30).cpu, 5);
    let q = sleeper_on(&mut s, 6, 60);
    let _c = run_on(&mut s, 6, 70);
    assert_eq!(
        s.wake_up(q, 0, false, 80).cpu,
        7,
        "first idle CPU of prev's LLC after prev"
    );
    assert_eq!(
        s.policy.to_prev.load(core::sync::atomic::Ordering::Relaxed),
        1
    );
    assert_eq!(
        s.policy
            .to_llc_idle
            .load(core::sync::atomic::Ordering::Relaxed),
        1
    );
    assert_eq!(s.policy.name(), "prev_idle");
}

#[test]
fn idlest_group_cpu_prefers_sched_idle_then_latest_idle_then_least_loaded() {
    use super::idlest::find_idlest_group_cpu;
    use topology::CpuMask;
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    let all = CpuMask::full(4);
    s.core().rqs[1].idle_stamp = 100;
    s.core().rqs[2].idle_stamp = 300;
    s.core().rqs[3].idle_stamp = 200;
    run_on(&mut s, 0, 10);
    assert_eq!(
        find_idlest_group_cpu(&s.core(), &all, 0),
        2,
        "most recently idled"
    );
    for c in 1..4 {
        run_on(&mut s, c, 20);
    }
    s.core().rqs[0].cfs.avg.load_avg = 500;
    s.core().rqs[1].cfs.avg.load_avg = 100;
    s.core().rqs[2].cfs.avg.load_avg = 700;
    s.core().rqs[3].cfs.avg.load_avg = 100;
    assert_eq!(
        find_idlest_group_cpu(&s.core(), &all, 0),
        1,
        "least loaded, first on ties"
    );
    let mut s2 = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "");
    for c in 0..4 {
        run_on(&mut s2, c, 10);
    }
    let i = s2
        .wake_up_new_task_on(None, 3, 0, TaskPolicy::Idle, 20)
        .task;
    s2.block(3, 30);
    s2.schedule(3, 30);
    assert_eq!(s2.current(3), Some(i));
    assert_eq!(
        find_idlest_group_cpu(&s2.core(), &all, 0),
        3,
        "SCHED_IDLE-only CPU first"
    );
}

#[test]
fn numa_imbalance_allowance() {
    use super::idlest::adjust_numa_imbalance;
    assert_eq!(
        adjust_numa_imbalance(2, 1, 4),
        0,
        "small imbalance, few tasks: stay"
    );
    assert_eq!(adjust_numa_imbalance(3, 1, 4), 3);
    assert_eq!(
        adjust_numa_imbalance(2, 5, 4),
        2,
        "dst busy enough: balance"
    );
}

#[test]
fn bound_task_wakes_on_its_cpu_and_is_never_balanced_away() {
    let mut s = two_sockets("");
    // A task bound to CPU 3 at creation, then blocked.
    let p = s
        .wake_up_new_task_bound(None, 3, 0, TaskPolicy::Normal, 10)
        .task;
    assert_eq!(s.schedule(3, 20).next, Some(p));
    s.block(3, 30);
    s.schedule(3, 30);
    // Woken from CPU 0 with every other CPU idle: still CPU 3.
    let w = run_on(&mut s, 0, 40);
    assert_eq!(
        s.wake_up(p, 0, true, 50).cpu,
        3,
        "bound wakee stays on its CPU"
    );
    let _ = w;
    // Overload CPU 3; CPU 4 idles and balances: p must stay.
    for i in 0..3 {
        s.wake_up_new_task_on(None, 3, 0, TaskPolicy::Normal, 60 + i);
    }
    for t in 0..200u64 {
        let now = 1_000_000 + t * 4_000_000;
        for cpu in 0..8 {
            s.tick(cpu, now);
            if s.need_resched(cpu) {
                s.schedule(cpu, now);
            }
        }
    }
    assert_eq!(s.task(p).cpu, 3, "balancer moved a bound task");
}

/// The weight-test scenario: p slept on cpu4, which is busy; the waker runs
/// on cpu0 with a second task queued (neither idle rule decides); cpu0's
/// load is `this_load`, cpu4's 2000, the waker's 1024, p's 100. Returns p.
fn weight_test_setup(s: &mut Scheduler, this_load: u64) -> crate::task::TaskId {
    let p = sleeper_on(s, 4, 10);
    let w = run_on(s, 0, 20);
    s.wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, 30);
    run_on(s, 4, 40);
    set_load(s, 0, this_load, this_load);
    set_load(s, 4, 2000, 2000);
    s.core().tasks[w].se.avg.load_avg = 1024;
    s.core().tasks[p].se.avg.load_avg = 100;
    p
}

#[test]
fn wake_affine_weight_inputs_are_summed_as_compared() {
    // Two LLCs of 4 CPUs, one node (the level spanning both: imbalance_pct
    // 125, bias 112). p slept on cpu4, which is busy; the waker w runs on
    // cpu0 with a second task queued, so neither idle rule decides (this
    // not idle, nr_running 2, prev busy). wake_affine_weight with sync:
    // this_eff = (3000 - 1024 + 100) * 100 = 207,600 < prev_eff =
    // (2000 - 100) * 112 + 1 = 212,801 -> this_cpu. The sums get the four
    // loads the rule read, and the test counts as a cross-LLC "this".
    let mut s = sched(&spec(2, 4, 1, 1), PickPolicy::Cfs, "");
    let p = weight_test_setup(&mut s, 3000);
    let cpu = s.wake_up(p, 0, true, 100).cpu;
    assert!(cpu < 4, "pulled to the waker's LLC, got {cpu}");
    let st = s.stats().wake;
    assert_eq!(
        (
            st.wa_weight_tests,
            st.wa_weight_tests_this,
            st.wa_weight_this
        ),
        (1, 1, 1)
    );
    assert_eq!(
        (st.wa_weight_tests_cross_llc, st.wa_weight_this_cross_llc),
        (1, 1)
    );
    assert_eq!(
        (
            st.wa_weight_sum_this_load,
            st.wa_weight_sum_current_load,
            st.wa_weight_sum_task_load,
            st.wa_weight_sum_prev_load
        ),
        (3000, 1024, 100, 2000)
    );

    // The waker's own load above its CPU's: wake_affine_weight returns
    // this_cpu before comparing anything, so nothing is summed.
    let mut s = sched(&spec(2, 4, 1, 1), PickPolicy::Cfs, "");
    let p = weight_test_setup(&mut s, 500);
    s.wake_up(p, 0, true, 100);
    let st = s.stats().wake;
    assert_eq!(
        (
            st.wa_weight_this,
            st.wa_weight_tests,
            st.wa_weight_tests_this
        ),
        (1, 0, 0)
    );
}

#[test]
fn imb_pct_117_sets_linux_6_bias_in_the_cross_node_weight_test() {
    // Two nodes of one 4-CPU LLC each; the level spanning both is NUMA.
    // Same loads as above but prev's CPU at 2000: this_eff = (3000 - 1024
    // + 100) * 100 = 207,600. With the default imbalance_pct 125 (bias
    // 112) prev_eff = (2000 - 100) * 112 + 1 = 212,801 > this_eff: pulled
    // to the waker's node. With Linux 6.x's 117 (bias 108) prev_eff =
    // 1900 * 108 + 1 = 205,201 < this_eff: stays on prev's node.
    for (f, pct, pulled) in [("", 125, true), ("IMB_PCT_117", 117, false)] {
        let s = spec(2, 4, 1, 2);
        let topo = topology::Topology::synthetic(&s).expect("topology");
        let cfg = SchedConfig::new(8, PickPolicy::Cfs)
            .with_features(f)
            .expect("features");
        let st = SchedTopo::from_topology_with(&topo, cfg.features);
        let top = st.sd(0).last().expect("domains");
        assert_eq!((top.name, top.imbalance_pct), ("NUMA", pct), "{f}");
        assert_eq!(st.sd(0)[0].imbalance_pct, 117, "{f}: MC keeps 117");
        let mut s = Scheduler::new(st, cfg);
        let p = weight_test_setup(&mut s, 3000);
        let cpu = s.wake_up(p, 0, true, 100).cpu;
        assert_eq!(cpu < 4, pulled, "{f}: woken on cpu{cpu}");
    }
}
