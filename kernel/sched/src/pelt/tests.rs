//! PELT checks against values computed independently with f64.

use super::*;

fn y() -> f64 {
    0.5f64.powf(1.0 / 32.0)
}

#[test]
fn yn_inv_table_matches_formula() {
    // Linux's generator (Documentation/scheduler/sched-pelt.c) prints
    // (unsigned long)(((1UL << 32) - 1) * pow(y, n)) with y = 0.5^(1/32):
    // exact equality, not within one.
    for (n, &v) in RUNNABLE_AVG_YN_INV.iter().enumerate() {
        let want = (4294967295.0 * y().powi(n as i32)).floor() as u64;
        assert_eq!(u64::from(v), want, "n={n}: {v:#x} vs {want:#x}");
    }
}

#[test]
fn load_avg_max_is_the_fixed_point() {
    let mut m = 0u64;
    for _ in 0..2000 {
        m = decay_load(m, 1) + 1024;
    }
    // The integer fixed point of m <- floor(m*y) + 1024.
    assert_eq!(m, LOAD_AVG_MAX);
    let f = 1024.0 / (1.0 - y());
    assert!((LOAD_AVG_MAX as f64 - f).abs() / f < 0.01);
}

#[test]
fn decay_half_life_is_32_periods() {
    assert!(((1 << 19) - 1..=1 << 19).contains(&decay_load(1 << 20, 32)));
    assert!(((1 << 18) - 1..=1 << 18).contains(&decay_load(1 << 20, 64)));
    let v = decay_load(1_000_000, 10) as f64;
    assert!((v - 1_000_000.0 * y().powi(10)).abs() < 2.0);
    assert_eq!(decay_load(u64::MAX >> 1, 2017), 0);
}

#[test]
fn three_segments_equal_period_by_period_sum() {
    for &(p, d1, d3) in &[
        (1u64, 1024u64, 0u64),
        (3, 100, 500),
        (40, 7, 1023),
        (200, 1024, 1),
    ] {
        let mut want = d1 as f64 * y().powi(p as i32) + d3 as f64;
        for n in 1..p {
            want += 1024.0 * y().powi(n as i32);
        }
        let got = accumulate_pelt_segments(p, d1, d3) as f64;
        assert!(
            (got - want).abs() / want.max(1.0) < 0.002,
            "p={p}: {got} vs {want}"
        );
    }
}

/// Drive an entity through `(running, duration_ns)` phases with 1 ms steps.
fn drive(sa: &mut SchedAvg, now: &mut u64, phases: &[(bool, u64)]) {
    for &(run, dur) in phases {
        let end = *now + dur;
        while *now < end {
            *now += 1_000_000.min(end - *now);
            update_entity_load_avg(sa, *now, 1024, run, run);
        }
    }
}

/// f64 reference: geometric average over 1024-ns units of a run/sleep
/// pattern, normalized so a always-running signal tends to 1024.
fn reference_util(phases: &[(bool, u64)]) -> f64 {
    let yu = y().powf(1.0 / 1024.0); // decay per 1024-ns unit
    let mut acc = 0.0;
    for &(run, dur) in phases {
        let units = dur / 1024;
        let decay = yu.powf(units as f64);
        acc = acc * decay + if run { 1024.0 * (1.0 - decay) } else { 0.0 };
    }
    acc
}

#[test]
fn always_running_converges_to_max() {
    let mut sa = SchedAvg::default();
    let mut now = 0;
    drive(&mut sa, &mut now, &[(true, 2_000_000_000)]);
    assert!(
        sa.util_avg >= 1000 && sa.util_avg <= 1024,
        "util {}",
        sa.util_avg
    );
    assert!(
        sa.load_avg >= 1000 && sa.load_avg <= 1024,
        "load {}",
        sa.load_avg
    );
    assert!(sa.runnable_avg >= 1000 && sa.runnable_avg <= 1024);
    // The sum sits near the maximum (LOAD_AVG_MAX scaled by y + contrib).
    let max = LOAD_AVG_MAX as f64;
    assert!((sa.load_sum as f64) > 0.97 * max && (sa.load_sum as f64) <= max);
}

#[test]
fn ramp_up_follows_reference() {
    for &ms in &[8u64, 32, 64, 100] {
        let mut sa = SchedAvg::default();
        let mut now = 0;
        let phases = [(true, ms * 1_048_576)];
        drive(&mut sa, &mut now, &phases);
        let want = reference_util(&phases);
        let got = sa.util_avg as f64;
        assert!(
            (got - want).abs() < 0.03 * 1024.0,
            "{ms} periods: {got} vs {want}"
        );
    }
    // 32 periods from zero: half of the maximum.
    let mut sa = SchedAvg::default();
    let mut now = 0;
    drive(&mut sa, &mut now, &[(true, 32 * 1_048_576)]);
    assert!((490..=530).contains(&sa.util_avg), "{}", sa.util_avg);
}

#[test]
fn half_life_of_32ms_when_blocked() {
    let mut sa = SchedAvg::default();
    let mut now = 0;
    drive(&mut sa, &mut now, &[(true, 1_000_000_000)]);
    let full = sa.util_avg as f64;
    drive(&mut sa, &mut now, &[(false, 32 * 1_048_576)]);
    let half = sa.util_avg as f64;
    assert!((half / full - 0.5).abs() < 0.02, "{full} -> {half}");
}

#[test]
fn fifty_percent_duty_cycle_is_about_512() {
    let mut sa = SchedAvg::default();
    let mut now = 0;
    let mut phases = Vec::new();
    for _ in 0..200 {
        phases.push((true, 4 * 1_048_576));
        phases.push((false, 4 * 1_048_576));
    }
    drive(&mut sa, &mut now, &phases);
    let want = reference_util(&phases);
    let got = sa.util_avg as f64;
    assert!((got - want).abs() < 25.0, "{got} vs {want}");
    assert!((440.0..580.0).contains(&got), "{got}");
}

#[test]
fn runqueue_blocked_load_decays_and_removal_applies() {
    let mut rq = SchedAvg::default();
    let mut removed = Removed::default();
    let mut now = 0;
    while now < 500_000_000 {
        now += 1_000_000;
        update_cfs_rq_load_avg(&mut rq, &mut removed, now, 1024, 1, true, false);
    }
    let busy = rq.load_avg;
    assert!(busy > 1000, "{busy}");
    assert!(rq.runnable_load_avg > 1000);
    // The task blocks: its load stays as blocked load and decays.
    for _ in 0..32 {
        now += 1_048_576;
        update_cfs_rq_load_avg(&mut rq, &mut removed, now, 0, 0, false, false);
    }
    assert!((rq.load_avg as f64 / busy as f64 - 0.5).abs() < 0.03);
    removed.load_avg = rq.load_avg;
    removed.util_avg = rq.util_avg;
    removed.runnable_avg = rq.runnable_avg;
    removed.nr = 1;
    now += 1_048_576;
    update_cfs_rq_load_avg(&mut rq, &mut removed, now, 0, 0, false, false);
    assert!(rq.load_avg <= 1 && rq.util_avg <= 1, "{rq:?}");
    assert_eq!(removed, Removed::default());
}

#[test]
fn attach_detach_round_trip() {
    let mut rq = SchedAvg {
        last_update_time: 1 << 20,
        period_contrib: 300,
        ..Default::default()
    };
    let before = rq;
    let mut se = SchedAvg {
        load_avg: 700,
        util_avg: 600,
        runnable_avg: 650,
        ..Default::default()
    };
    attach_entity_load_avg(&mut rq, &mut se, 1024, true);
    assert_eq!(se.last_update_time, 1 << 20);
    assert_eq!(rq.load_avg, 700);
    assert_eq!(rq.util_avg, 600);
    assert_eq!(rq.runnable_load_avg, 700);
    detach_entity_load_avg(&mut rq, &se, 1024, false);
    assert_eq!(rq.load_avg, before.load_avg);
    assert_eq!(rq.util_avg, before.util_avg);
    assert_eq!(rq.runnable_avg, before.runnable_avg);
}

#[test]
fn post_init_gives_512_256_128_on_fork_burst() {
    let mut rq = SchedAvg {
        last_update_time: 1 << 20,
        ..Default::default()
    };
    let mut got = Vec::new();
    for _ in 0..3 {
        let mut se = SchedAvg {
            load_avg: 1024,
            ..Default::default()
        };
        post_init_entity_util_avg(&mut se, &rq, 1024, 1024);
        got.push(se.util_avg);
        attach_entity_load_avg(&mut rq, &mut se, 1024, true);
    }
    assert_eq!(got, vec![512, 256, 128]);
}

/// A queue whose `n` runnable nice-0 tasks are fully loaded, at
/// period_contrib 0 (divider = PELT_MIN_DIVIDER), util 1,024.
fn queue_of(n: u64) -> SchedAvg {
    SchedAvg {
        load_avg: n * 1024,
        load_sum: n * 1024 * PELT_MIN_DIVIDER,
        runnable_avg: n * 1024,
        runnable_sum: n * 1024 * PELT_MIN_DIVIDER,
        util_avg: 1024,
        util_sum: 1024 * PELT_MIN_DIVIDER,
        ..SchedAvg::default()
    }
}

/// One of those tasks (util 10), as an entity's averages.
fn one_task() -> SchedAvg {
    SchedAvg {
        load_avg: 1024,
        load_sum: PELT_MIN_DIVIDER,
        runnable_avg: 1024,
        runnable_sum: 1024 * PELT_MIN_DIVIDER,
        util_avg: 10,
        util_sum: 10 * PELT_MIN_DIVIDER,
        ..SchedAvg::default()
    }
}

/// The same task's removal queued by a wakeup migration.
fn removal_of_one() -> Removed {
    Removed {
        nr: 1,
        load_avg: 1024,
        util_avg: 10,
        runnable_avg: 1024,
    }
}

#[test]
fn removal_floors_wrap_at_32_bits_as_linux_max_t_u32_does() {
    // Linux 6.12 detach_entity_load_avg() / dequeue_load_avg() and the
    // removed-load branch of update_cfs_rq_load_avg() end with
    // `sum = max_t(u32, sum, avg * PELT_MIN_DIVIDER)`: both operands are cut
    // to 32 bits. A queue of 100 runnable nice-0 tasks (load_avg and
    // runnable_avg 102,400, period_contrib 0, so divider = 46,718) losing
    // one: 99 * 1024 * 46,718 = 4,736,083,968 on both sides of the max,
    // which is 4,736,083,968 - 2^32 = 441,116,672 once truncated.
    assert_eq!(PELT_MIN_DIVIDER, 46_718);
    let mut rq = queue_of(100);
    detach_entity_load_avg(&mut rq, &one_task(), 1024, false);
    assert_eq!((rq.load_avg, rq.load_sum), (101_376, 441_116_672));
    assert_eq!((rq.runnable_avg, rq.runnable_sum), (101_376, 441_116_672));
    // util_sum stays far below 2^32 and is exact.
    assert_eq!(rq.util_sum, 1014 * PELT_MIN_DIVIDER);
    // The same task removed asynchronously (a wakeup migration away).
    let mut rq = queue_of(100);
    update_cfs_rq_load_avg(&mut rq, &mut removal_of_one(), 0, 0, 0, false, false);
    assert_eq!((rq.load_avg, rq.load_sum), (101_376, 441_116_672));
    assert_eq!((rq.runnable_avg, rq.runnable_sum), (101_376, 441_116_672));
    // Below 2^32 nothing wraps: 80 tasks losing one.
    let mut rq = queue_of(80);
    detach_entity_load_avg(&mut rq, &one_task(), 1024, false);
    assert_eq!(rq.load_sum, 79 * 1024 * PELT_MIN_DIVIDER);
}

#[test]
fn the_5_14_rule_recomputes_the_sums_from_the_averages() {
    // Linux 5.14-5.16 (PELT_RESYNC_SUMS): after removing a task, each of
    // the queue's sums is its average times the divider (46,718 here):
    // 101,376 * 46,718 = 4,736,083,968 for the 100-task queue losing one,
    // with no 32-bit wrap; util 1,014 * 46,718. The old sums (a little off
    // their averages here) do not matter.
    let mut full = queue_of(100);
    full.load_sum += 5;
    full.runnable_sum += 7;
    full.util_sum += 3;
    let mut rq = full;
    detach_entity_load_avg(&mut rq, &one_task(), 1024, true);
    assert_eq!((rq.load_avg, rq.load_sum), (101_376, 4_736_083_968));
    assert_eq!(rq.runnable_sum, 4_736_083_968);
    assert_eq!(rq.util_sum, 1014 * PELT_MIN_DIVIDER);
    let mut rq = full;
    update_cfs_rq_load_avg(&mut rq, &mut removal_of_one(), 0, 0, 0, false, true);
    assert_eq!((rq.load_avg, rq.load_sum), (101_376, 4_736_083_968));
    assert_eq!(rq.util_sum, 1014 * PELT_MIN_DIVIDER);
}
