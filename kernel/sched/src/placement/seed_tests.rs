//! Seed-switch scenarios: each switch must change the decision it models
//! (seeds 000-004 in /work/shared/seeds).

use super::wake::{Waker, record_wakee, wake_affine_weight, wake_wide};
use crate::config::PickPolicy;
use crate::sched::Scheduler;
use crate::task::{TaskId, TaskPolicy};
use crate::testutil::{run_on, sched, set_load, sleeper_on, spec, two_sockets};

/// Seed 000 setup: waker on cpu0 (socket 0), wakee's prev = cpu4 (socket 1),
/// idle but carrying blocked load from a recent daemon.
fn seed000(features: &str) -> (Scheduler, TaskId) {
    let mut s = two_sockets(features);
    let p = sleeper_on(&mut s, 4, 1000);
    let _waker = run_on(&mut s, 0, 2000);
    set_load(&mut s, 0, 1024, 1024);
    set_load(&mut s, 4, 2000, 0);
    s.core().tasks[p].se.avg.load_avg = 100;
    (s, p)
}

#[test]
fn seed000_wa_idle_prev_returns_idle_prev() {
    let (s, p) = seed000("WA_IDLE_PREV");
    let r = s.wake_up(p, 0, false, 3000);
    assert_eq!(r.cpu, 4, "idle prev_cpu must win");
    assert_eq!(s.stats().wake.wa_idle_decided, 1);
    let (s, p) = seed000("NO_WA_IDLE_PREV");
    let r = s.wake_up(p, 0, false, 3000);
    assert!(
        r.cpu < 4,
        "without the patch the blocked load of prev pulls the wakee to the waker's socket, got {}",
        r.cpu
    );
    assert_eq!(s.stats().wake.wake_affine_success, 1);
}

/// The seed-000 diagnostic counts the wakeups where the patch's rule
/// (prev_cpu idle -> prev_cpu) and the pre-5.11 chain (the weight test)
/// disagree, with the switch on and off alike; only across LLCs does the
/// wakee's CPU then differ.
#[test]
fn seed000_idle_prev_flips_are_counted_in_both_configurations() {
    // prev cpu4 (other socket), idle with blocked load 2000 > waker's 1024:
    // the weight test pulls to cpu0, the patch keeps cpu4.
    for (features, cpu) in [("WA_IDLE_PREV", 4), ("NO_WA_IDLE_PREV", 0)] {
        let (s, p) = seed000(features);
        let r = s.wake_up(p, 0, false, 3000);
        assert_eq!(r.cpu < 4, cpu < 4, "{features}: got {}", r.cpu);
        let w = s.stats().wake;
        assert_eq!(
            (w.wa_idle_prev_flips, w.wa_idle_prev_flips_cross_llc),
            (1, 1),
            "{features}"
        );
    }
    // prev cpu1 shares the waker's LLC: the rules disagree (flip counted,
    // not cross-LLC) but select_idle_sibling(prev=1, target=0) takes the
    // idle prev either way.
    for features in ["WA_IDLE_PREV", "NO_WA_IDLE_PREV"] {
        let mut s = two_sockets(features);
        let p = sleeper_on(&mut s, 1, 1000);
        let _waker = run_on(&mut s, 0, 2000);
        set_load(&mut s, 0, 1024, 1024);
        set_load(&mut s, 1, 2000, 0);
        s.core().tasks[p].se.avg.load_avg = 100;
        assert_eq!(s.wake_up(p, 0, false, 3000).cpu, 1, "{features}");
        let w = s.stats().wake;
        assert_eq!(
            (w.wa_idle_prev_flips, w.wa_idle_prev_flips_cross_llc),
            (1, 0),
            "{features}"
        );
    }
    // prev cpu4 idle carrying only the wakee's own load: the weight test
    // (prev_eff = 100 - 100 = 0) keeps prev, so both rules give cpu4.
    for features in ["WA_IDLE_PREV", "NO_WA_IDLE_PREV"] {
        let mut s = two_sockets(features);
        let p = sleeper_on(&mut s, 4, 1000);
        let _waker = run_on(&mut s, 0, 2000);
        set_load(&mut s, 0, 1024, 1024);
        set_load(&mut s, 4, 100, 0);
        s.core().tasks[p].se.avg.load_avg = 100;
        assert_eq!(s.wake_up(p, 0, false, 3000).cpu, 4, "{features}");
        assert_eq!(s.stats().wake.wa_idle_prev_flips, 0, "{features}");
    }
}

#[test]
fn seed000_runnable_load_in_wake_affine_weight() {
    // Pre-5.11 wake_affine_idle: the weight test decides.
    let (s, p) = seed000("NO_WA_IDLE_PREV,RUNNABLE_LOAD");
    assert_eq!(
        s.wake_up(p, 0, false, 3000).cpu,
        4,
        "runnable load ignores prev's blocked load"
    );
    let (s, p) = seed000("NO_WA_IDLE_PREV,NO_RUNNABLE_LOAD");
    assert!(s.wake_up(p, 0, false, 3000).cpu < 4);
}

/// Seed 004 setup: waker alone on cpu0, wakee's prev cpu4 is busy.
fn seed004(features: &str) -> (Scheduler, TaskId) {
    let mut s = two_sockets(features);
    let p = sleeper_on(&mut s, 4, 1000);
    let _other = run_on(&mut s, 4, 1500);
    let w = run_on(&mut s, 0, 2000);
    set_load(&mut s, 0, 1024, 1024);
    set_load(&mut s, 4, 1024, 1024);
    s.core().tasks[p].se.avg.load_avg = 100;
    s.core().tasks[w].se.avg.load_avg = 1024;
    (s, p)
}

#[test]
fn seed004_wa_sync_bias() {
    let (s, p) = seed004("WA_SYNC");
    let cpu = s.wake_up(p, 0, true, 3000).cpu;
    assert!(cpu < 4, "sync wakeup pulled next to the waker, got {cpu}");
    let (s, p) = seed004("NO_WA_SYNC");
    let cpu = s.wake_up(p, 0, true, 3000).cpu;
    assert!(
        cpu >= 4,
        "without the sync bias the wakee stays in prev's LLC, got {cpu}"
    );
}

#[test]
fn seed004_forced_placements() {
    let smt = spec(1, 4, 2, 1);
    let cases = [
        ("WAKEE_STACKED", 2usize),
        ("WAKEE_CROSS_SMT", 3),
        ("WAKEE_CROSS_CORE", 4),
    ];
    for (f, want) in cases {
        let mut s = sched(&smt, PickPolicy::Cfs, f);
        let p = sleeper_on(&mut s, 6, 100);
        let _w = run_on(&mut s, 2, 200);
        assert_eq!(s.wake_up(p, 2, true, 300).cpu, want, "{f}");
        assert_eq!(s.stats().wake.wake_forced, 1);
    }
    let mut s = sched(&smt, PickPolicy::Cfs, "WAKEE_UNBOUND");
    let p = sleeper_on(&mut s, 6, 100);
    let _w = run_on(&mut s, 2, 200);
    assert_eq!(s.wake_up(p, 2, true, 300).cpu, 6, "unbound: idle prev");
    assert_eq!(s.stats().wake.wake_forced, 0);
}

#[test]
fn seed003_heavy_waker_lends_flips() {
    for (f, expect_wide) in [("WAKE_WIDE_HEAVY", true), ("NO_WAKE_WIDE_HEAVY", false)] {
        let mut s = sched(&spec(2, 4, 1, 1), PickPolicy::Cfs, f);
        let w = run_on(&mut s, 0, 10);
        let wakees: Vec<TaskId> = (0..40).map(|i| sleeper_on(&mut s, 4 + i % 4, 20)).collect();
        let mut wide = false;
        for round in 0..6 {
            for &p in &wakees {
                record_wakee(&mut s.core(), Waker::Task(w), p, 0, 100 + round);
                wide |= wake_wide(&mut s.core(), p, Waker::Task(w), 0);
            }
        }
        assert_eq!(
            wide,
            expect_wide,
            "{f}: waker flips {}",
            s.core().tasks[w].wakee_flips
        );
        assert_eq!(s.core().tasks[wakees[0]].wakee_flips > 0, expect_wide);
    }
}

#[test]
fn seed003_heavy_waker_spreads_a_wakee_with_few_flips() {
    // Linux's rule with factor = LLC size 16: mainline keeps a wakee with
    // slave < factor flips affine whatever the waker; the patch keeps it
    // affine only while master < (16 >> 1) * 16 = 128.
    for (f, master, wide) in [
        ("NO_WAKE_WIDE_HEAVY", 128, false),
        ("WAKE_WIDE_HEAVY", 128, true),
        ("WAKE_WIDE_HEAVY", 127, false),
    ] {
        let mut s = sched(&spec(1, 16, 1, 1), PickPolicy::Cfs, f);
        let w = run_on(&mut s, 0, 10);
        let p = sleeper_on(&mut s, 5, 20);
        s.core().tasks[w].wakee_flips = master;
        s.core().tasks[p].wakee_flips = 0;
        assert_eq!(
            wake_wide(&mut s.core(), p, Waker::Task(w), 0),
            wide,
            "{f}, master {master}"
        );
    }
}

/// Seed 002 setup: parent on cpu0 of a 4-CPU LLC, other CPUs idle with
/// blocked load left by forked children that slept at once.
fn seed002(features: &str) -> Scheduler {
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, features);
    let _parent = run_on(&mut s, 0, 10);
    set_load(&mut s, 0, 1024, 1024);
    s.core().rqs[0].cfs.avg.util_avg = 1000;
    for (cpu, blocked, util) in [(1, 800, 50), (2, 0, 300), (3, 400, 200)] {
        set_load(&mut s, cpu, blocked, 0);
        s.core().rqs[cpu].cfs.avg.util_avg = util;
    }
    s
}

#[test]
fn seed002_find_idlest_group_keys() {
    let fork = |f: &str| {
        let s = seed002(f);
        let parent = s.current(0);
        s.wake_up_new_task(parent, 0, 0, TaskPolicy::Normal, 100)
            .cpu
    };
    assert_eq!(fork(""), 1, "5.5+: most idle CPUs, then lowest util");
    assert_eq!(
        fork("RUNNABLE_LOAD,IDLEST_BLOCKED"),
        2,
        "4.11: equal runnable load, least blocked load"
    );
    assert_eq!(
        fork("RUNNABLE_LOAD,NO_IDLEST_BLOCKED"),
        1,
        "pre-4.11: first group with the least runnable load"
    );
}

// Seed 001's switches (one per patch of Srikar's v3) are tested in
// `seed001_tests.rs`, seed 002's fork-load switches in `seed002_tests.rs`.

#[test]
fn wake_affine_weight_arithmetic() {
    let (s, p) = seed000("");
    // this = (1024 + 100) * 100 * 1024 ; prev = (2000 - 100) * 108 * 1024
    assert_eq!(wake_affine_weight(&s.core(), 117, p, 0, 4, false), Some(0));
    let mut s = s;
    set_load(&mut s, 4, 1100, 0);
    // prev = 1000 * 108 < 1124 * 100: stay with prev.
    assert_eq!(wake_affine_weight(&s.core(), 117, p, 0, 4, false), None);
    // sync subtracts the waker (load 1024 of cpu0's 1024) and breaks ties.
    let waker = s.core().rqs[0].curr.unwrap();
    s.core().tasks[waker].se.avg.load_avg = 1024;
    assert_eq!(wake_affine_weight(&s.core(), 117, p, 0, 4, true), Some(0));
}
