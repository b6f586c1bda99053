//! Unit tests of the CFS and EEVDF entity logic, plus weighted-fairness
//! checks through the simulator.

use super::pick::cfs;
use super::pick::eevdf;
use crate::config::{PickPolicy, SchedConfig};
use crate::fair::cfs_rq::CfsRq;
use crate::sim::{Behavior, Sim};
use crate::task::{Task, TaskId, TaskPolicy, TaskTable};
use crate::testutil::{sched, spec, up};
use crate::weight::LoadWeight;

fn cfg1(pick: PickPolicy) -> SchedConfig {
    SchedConfig::new(1, pick)
}

fn arena_with(nices: &[i32]) -> (TaskTable, Vec<TaskId>) {
    let mut a = TaskTable::default();
    let ids = nices
        .iter()
        .map(|&n| a.alloc(|id| Task::new(id, n, TaskPolicy::Normal, 0)))
        .collect();
    (a, ids)
}

#[test]
fn sched_period_and_slices() {
    let c = cfg1(PickPolicy::Cfs);
    assert_eq!(cfs::sched_period(&c, 3), 6_000_000);
    assert_eq!(cfs::sched_period(&c, 8), 6_000_000);
    assert_eq!(cfs::sched_period(&c, 9), 9 * 750_000);
    let (mut a, ids) = arena_with(&[0, 0]);
    let mut q = CfsRq::default();
    for &id in &ids {
        a[id].se.on_rq = true;
        q.account_enqueue(&a, id);
    }
    let s = cfs::sched_slice(&q, &a, &c, ids[0]);
    assert!((2_999_000..=3_000_000).contains(&s), "{s}");
    // A not-yet-queued entity is counted as if it were.
    let (mut a2, ids2) = arena_with(&[0, 5]);
    let mut q2 = CfsRq::default();
    a2[ids2[0]].se.on_rq = true;
    q2.account_enqueue(&a2, ids2[0]);
    let s2 = cfs::sched_slice(&q2, &a2, &c, ids2[1]);
    let want = 6_000_000 * 335 / (1024 + 335);
    assert!(s2.abs_diff(want) < 1000, "{s2} vs {want}");
}

#[test]
fn cfs_place_entity_sleeper_credit_and_start_debit() {
    let c = cfg1(PickPolicy::Cfs);
    let (mut a, ids) = arena_with(&[0, 0]);
    let q = CfsRq::default();
    let min = q.min_vruntime;
    // Waking entity far in the past gets min - latency/2.
    a[ids[0]].se.vruntime = 0;
    cfs::place_entity(&q, &mut a, &c, ids[0], false);
    assert_eq!(a[ids[0]].se.vruntime, min - 3_000_000);
    // ... but never moves backwards.
    a[ids[0]].se.vruntime = min + 5;
    cfs::place_entity(&q, &mut a, &c, ids[0], false);
    assert_eq!(a[ids[0]].se.vruntime, min + 5);
    // Fork: one vslice right (6ms on an empty queue, nice 0).
    a[ids[1]].se.vruntime = 0;
    cfs::place_entity(&q, &mut a, &c, ids[1], true);
    // calc_delta's 32-bit inverse rounds 6ms down by a couple of ns, as in Linux.
    assert!(a[ids[1]].se.vruntime.abs_diff(min + 6_000_000) <= 2);
    let no_gentle = c
        .with_features("NO_GENTLE_FAIR_SLEEPERS,NO_START_DEBIT")
        .unwrap();
    a[ids[0]].se.vruntime = 0;
    cfs::place_entity(&q, &mut a, &no_gentle, ids[0], false);
    assert_eq!(a[ids[0]].se.vruntime, min - 6_000_000);
    a[ids[1]].se.vruntime = 0;
    cfs::place_entity(&q, &mut a, &no_gentle, ids[1], true);
    assert_eq!(a[ids[1]].se.vruntime, min);
}

#[test]
fn wakeup_preempt_entity_uses_wakee_granularity() {
    let c = cfg1(PickPolicy::Cfs);
    let nice0 = LoadWeight::from_nice(0);
    assert_eq!(cfs::wakeup_gran(&c, &nice0), 1_000_000);
    assert_eq!(cfs::wakeup_preempt_entity(&c, 100, 200, &nice0), -1);
    assert_eq!(cfs::wakeup_preempt_entity(&c, 1_000_100, 200, &nice0), 0);
    assert_eq!(cfs::wakeup_preempt_entity(&c, 1_000_300, 200, &nice0), 1);
    // A light wakee gets a larger virtual granularity: preempts less.
    let light = LoadWeight::from_nice(10);
    assert_eq!(cfs::wakeup_preempt_entity(&c, 2_000_300, 200, &light), 0);
}

#[test]
fn eevdf_avg_vruntime_and_eligibility() {
    let c = cfg1(PickPolicy::Eevdf);
    let (mut a, ids) = arena_with(&[0, 0]);
    let mut q = CfsRq::default();
    let base = q.min_vruntime;
    a[ids[0]].se.vruntime = base;
    a[ids[1]].se.vruntime = base + 3_000;
    for &id in &ids {
        a[id].se.on_rq = true;
        q.account_enqueue(&a, id);
        q.tree_insert(c.pick, &mut a, id);
    }
    assert_eq!(q.avg_vruntime(&a), base + 1_500);
    assert!(q.vruntime_eligible(&a, base));
    assert!(q.vruntime_eligible(&a, base + 1_500));
    assert!(!q.vruntime_eligible(&a, base + 1_501));
    q.update_min_vruntime(c.pick, &a);
    assert_eq!(q.min_vruntime, base);
}

#[test]
fn eevdf_avg_vruntime_rounds_negative_keys_toward_minus_infinity() {
    // Linux 6.15 avg_vruntime(): keys -3 and 0 (vruntime - min_vruntime),
    // weights 1024 each: avg = -3 * 1024 = -3072, load = 2048; avg < 0 so
    // avg -= load - 1 -> -5119; div_s64(-5119, 2048) = -2 (truncation).
    // V = min_vruntime - 2 = floor(-1.5). Plain truncation would give -1.
    // vruntime_eligible(): avg >= key * load: key -2: -3072 >= -4096 (yes),
    // key -1: -3072 >= -2048 (no).
    let c = cfg1(PickPolicy::Eevdf);
    let (mut a, ids) = arena_with(&[0, 0]);
    let mut q = CfsRq::default();
    let base = q.min_vruntime;
    a[ids[0]].se.vruntime = base - 3;
    a[ids[1]].se.vruntime = base;
    for &id in &ids {
        a[id].se.on_rq = true;
        q.account_enqueue(&a, id);
        q.tree_insert(c.pick, &mut a, id);
    }
    assert_eq!(q.entity_key(a[ids[0]].se.vruntime), -3);
    assert_eq!(q.avg_vruntime(&a), base - 2);
    assert!(q.vruntime_eligible(&a, base - 2));
    assert!(!q.vruntime_eligible(&a, base - 1));
}

#[test]
fn eevdf_pick_is_earliest_eligible_deadline() {
    let c = cfg1(PickPolicy::Eevdf);
    let (mut a, ids) = arena_with(&[0, 0, 0]);
    let mut q = CfsRq::default();
    let b = q.min_vruntime;
    // (vruntime, deadline): A is ineligible with the earliest deadline.
    let vals = [
        (b + 10_000, b + 11_000),
        (b, b + 50_000),
        (b + 2_000, b + 20_000),
    ];
    for (&id, &(v, d)) in ids.iter().zip(vals.iter()) {
        a[id].se.vruntime = v;
        a[id].se.deadline = d;
        a[id].se.on_rq = true;
        q.account_enqueue(&a, id);
        q.tree_insert(c.pick, &mut a, id);
    }
    // V = b + 4000: B and C eligible, C has the earlier deadline.
    assert_eq!(eevdf::pick_eevdf(&q, &a, &c), Some(ids[2]));
}

#[test]
fn eevdf_lag_is_clamped_and_preserved_by_placement() {
    let c = cfg1(PickPolicy::Eevdf);
    let (mut a, ids) = arena_with(&[0, 0]);
    let mut q = CfsRq::default();
    let b = q.min_vruntime;
    a[ids[0]].se.vruntime = b;
    a[ids[0]].se.slice = c.tunables.base_slice_ns;
    a[ids[0]].se.on_rq = true;
    q.account_enqueue(&a, ids[0]);
    q.tree_insert(c.pick, &mut a, ids[0]);
    // An entity far behind V has its lag clamped to max(2*slice, tick).
    a[ids[1]].se.vruntime = b - 100_000_000;
    a[ids[1]].se.slice = c.tunables.base_slice_ns;
    eevdf::update_entity_lag(&q, &mut a, &c, ids[1]);
    assert_eq!(a[ids[1]].se.vlag, 1_500_000);
    // Placing it with that lag: vruntime = V - lag * (W + w) / W.
    a[ids[1]].se.vlag = 500_000;
    eevdf::place_entity(&q, &mut a, &c, ids[1], Default::default());
    assert_eq!(a[ids[1]].se.vruntime, b - 1_000_000);
    assert_eq!(a[ids[1]].se.deadline, b - 1_000_000 + 750_000);
    // After insertion its effective lag is the stored one.
    a[ids[1]].se.on_rq = true;
    q.account_enqueue(&a, ids[1]);
    q.tree_insert(c.pick, &mut a, ids[1]);
    let v = q.avg_vruntime(&a);
    assert_eq!(v - a[ids[1]].se.vruntime, 500_000);
    // A new task starts at V with half a slice.
    let (mut a2, n) = arena_with(&[0]);
    let q2 = CfsRq::default();
    eevdf::place_entity(
        &q2,
        &mut a2,
        &c,
        n[0],
        crate::fair::entity::EnqueueFlags {
            initial: true,
            ..Default::default()
        },
    );
    assert_eq!(a2[n[0]].se.deadline - a2[n[0]].se.vruntime, 375_000);
}

#[test]
fn idle_time_accounts_sleep_periods() {
    let mut sim = Sim::new(up(PickPolicy::Eevdf));
    sim.spawn(
        0,
        0,
        Behavior::Periodic {
            run_ns: 1_000_000,
            sleep_ns: 3_000_000,
        },
    );
    sim.run_until(1_000_000_000);
    let idle = sim.sched.core().rqs[0].idle_time(sim.now) as f64;
    assert!(
        (idle / 1e9 - 0.75).abs() < 0.02,
        "idle fraction {}",
        idle / 1e9
    );
}

fn share_ratio(pick: PickPolicy, n1: i32, n2: i32) -> f64 {
    let mut sim = Sim::new(up(pick));
    let a = sim.spawn(0, n1, Behavior::CpuBound);
    let b = sim.spawn(0, n2, Behavior::CpuBound);
    sim.run_until(20_000_000_000);
    sim.runtime(a) as f64 / sim.runtime(b) as f64
}

#[test]
fn weighted_fair_share_cfs_and_eevdf() {
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        for (n1, n2) in [(0, 0), (0, 5), (-3, 2)] {
            let w1 = f64::from(LoadWeight::from_nice(n1).weight as u32);
            let w2 = f64::from(LoadWeight::from_nice(n2).weight as u32);
            let r = share_ratio(pick, n1, n2);
            assert!(
                (r / (w1 / w2) - 1.0).abs() < 0.01,
                "{pick:?} nice {n1}/{n2}: ratio {r}, want {}",
                w1 / w2
            );
        }
    }
}

#[test]
fn sleeper_preempts_hog_on_wakeup() {
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let mut sim = Sim::new(up(pick));
        let _hog = sim.spawn(0, 0, Behavior::CpuBound);
        let s = sim.spawn(
            0,
            0,
            Behavior::Periodic {
                run_ns: 200_000,
                sleep_ns: 10_000_000,
            },
        );
        sim.run_until(2_000_000_000);
        assert_eq!(
            sim.sched.core().rqs[0].idle_time(sim.now),
            0,
            "{pick:?}: the hog keeps the CPU busy"
        );
        let t = sim.sched.task(s);
        // The periodic task ran ~2% of the CPU and never waited long.
        assert!(
            t.stats.wait_max < 4_000_000,
            "{pick:?}: wait_max {}",
            t.stats.wait_max
        );
        assert!(sim.runtime(s) > 30_000_000, "{pick:?}: {}", sim.runtime(s));
    }
}

#[test]
fn yield_lets_the_other_task_run() {
    // CFS only skips the yielder if the runner-up is within the wakeup
    // granularity: without START_DEBIT the child starts next to the parent.
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let s = sched(&spec(1, 1, 1, 1), pick, "NO_START_DEBIT");
        let a = s.wake_up_new_task(None, 0, 0, TaskPolicy::Normal, 0).task;
        s.schedule(0, 0);
        let b = s
            .wake_up_new_task(Some(a), 0, 0, TaskPolicy::Normal, 10_000)
            .task;
        s.schedule(0, 20_000);
        let first = s.current(0).unwrap();
        s.yield_current(0, 30_000);
        let sw = s.schedule(0, 30_000);
        assert_ne!(sw.next, Some(first), "{pick:?}: yield hands the CPU over");
        assert!(sw.next == Some(a) || sw.next == Some(b));
    }
}

#[test]
fn eevdf_run_to_parity_protects_slice() {
    // Linux 6.15 pick_eevdf(): curr a and queued b are both eligible (equal
    // vruntime = V); b has the earlier deadline. With RUN_TO_PARITY and a's
    // slice protected (protect_slice: set at set_next_entity, until its
    // deadline moves) curr is returned; without the feature, or once the
    // protection is gone, the earliest eligible deadline (b) wins.
    let on = cfg1(PickPolicy::Eevdf);
    let off = on.with_features("NO_RUN_TO_PARITY").unwrap();
    let (mut a, ids) = arena_with(&[0, 0]);
    let (cur, other) = (ids[0], ids[1]);
    let mut q = CfsRq::default();
    let base = q.min_vruntime;
    for (id, deadline) in [(cur, base + 750_000), (other, base + 300_000)] {
        a[id].se.vruntime = base;
        a[id].se.deadline = deadline;
        a[id].se.on_rq = true;
        q.account_enqueue(&a, id);
    }
    q.tree_insert(on.pick, &mut a, other);
    q.curr = Some(cur);
    a[cur].se.vprot = Some(a[cur].se.deadline);
    assert_eq!(eevdf::pick_eevdf(&q, &a, &on), Some(cur));
    assert_eq!(eevdf::pick_eevdf(&q, &a, &off), Some(other));
    a[cur].se.vprot = None;
    assert_eq!(eevdf::pick_eevdf(&q, &a, &on), Some(other));
    // Through the scheduler: set_next_entity protects the picked task.
    let s = sched(&spec(1, 1, 1, 1), PickPolicy::Eevdf, "");
    let t = s.wake_up_new_task(None, 0, 0, TaskPolicy::Normal, 0).task;
    s.schedule(0, 0);
    let se = s.task(t).se;
    assert_eq!(se.vprot, Some(se.deadline));
}
