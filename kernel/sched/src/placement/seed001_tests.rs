//! Seed 001: one test per patch of Srikar Dronamraju's "sched/fair:
//! wake_affine improvements" v3 (13 May 2021) that has a switch. Each
//! expected value is derived by hand from the patch's rule on a small
//! machine (the derivation is in the comments), and each test compares the
//! switch on with the switch off, so it fails if the switch does nothing.
//!
//! Machines: `spec(1, 4, 2, 1)` is one LLC of 8 CPUs, cores {0,1} {2,3}
//! {4,5} {6,7}; `spec(2, 2, 2, 1)` is two LLCs {0..3} and {4..7} with the
//! same cores; `spec(2, 4, 1, 1)` is two LLCs {0..3} {4..7} without SMT.

use crate::config::PickPolicy;
use crate::idle;
use crate::rq::IdleCore;
use crate::sched::Scheduler;
use crate::task::{TaskId, TaskPolicy};
use crate::testutil::{run_on, sched, set_load, sleeper_on, spec};

fn hint(s: &Scheduler, llc: usize) -> IdleCore {
    s.shared.llc[llc].idle_core()
}

#[test]
fn machines_are_numbered_as_the_derivations_assume() {
    let s = sched(&spec(1, 4, 2, 1), PickPolicy::Cfs, "");
    let t = &s.shared.topo;
    assert!(t.smt_active);
    assert_eq!(
        (0..8).map(|c| t.core_id(c)).collect::<Vec<_>>(),
        [0, 0, 2, 2, 4, 4, 6, 6]
    );
    let s = sched(&spec(2, 2, 2, 1), PickPolicy::Cfs, "");
    let t = &s.shared.topo;
    assert_eq!(t.llc_size[0], 4);
    assert!(t.share_cache(0, 3) && !t.share_cache(3, 4));
    assert_eq!(t.core_id(7), 6);
}

/// p slept on cpu0; the waker runs on cpu0 (this == prev == target == 0,
/// no wake_affine); cpus 0, 1, 4 and `busy` run a task. recent_used_cpu =
/// 0 = prev, so select_idle_sibling goes on to the LLC.
fn one_llc(features: &str, busy: &[usize]) -> (Scheduler, TaskId) {
    let mut s = sched(&spec(1, 4, 2, 1), PickPolicy::Cfs, features);
    let p = sleeper_on(&mut s, 0, 10);
    for &c in [0, 1, 4].iter().chain(busy) {
        run_on(&mut s, c, 20);
    }
    s.core().tasks[p].recent_used_cpu = 0;
    (s, p)
}

#[test]
fn seed001_v3_2_8_scan_resets_only_the_recorded_core_and_never_clears() {
    // v3 2/8 "sched/fair: Maintain the identity of idle-core":
    // select_idle_sibling reads idle_core; a recorded core (>= 0) means
    // has_idle_core, so no prev-sibling shortcut and select_idle_cpu scans
    // cores from target + 1 = 1: core {0,1} busy, core {2,3} all idle ->
    // returns cpu2. idle_core is reset to -1 only if smt_id(2) = 2 equals
    // the recorded core.
    for (rec, after) in [
        (IdleCore::Core(2), IdleCore::Unknown),
        (IdleCore::Core(6), IdleCore::Core(6)),
    ] {
        let (s, p) = one_llc("IDLE_CORE_ID", &[]);
        s.shared.llc[0].set_idle_core(rec);
        assert_eq!(s.wake_up(p, 0, false, 100).cpu, 2, "{rec:?}");
        assert_eq!(hint(&s, 0), after, "{rec:?}");
    }
    // Mainline with has_idle_cores set finds the same core and leaves the
    // (unused) idle_core alone: the reset is the patch's.
    let (s, p) = one_llc("", &[]);
    s.shared.llc[0].set_idle_core(IdleCore::Core(2));
    s.shared.llc[0].set_has_idle_cores(true);
    assert_eq!(s.wake_up(p, 0, false, 100).cpu, 2);
    assert_eq!(hint(&s, 0), IdleCore::Core(2));

    // No idle core (cpus 2 and 6 busy too): the core scan sees {0,1} busy,
    // {2,3} with idle cpu3 (the first idle CPU: the fallback), {4,5} and
    // {6,7} half busy, so it fails and returns cpu3. Mainline then clears
    // has_idle_cores; 2/8 removed that: the stale record stays.
    let (s, p) = one_llc("IDLE_CORE_ID", &[2, 6]);
    s.shared.llc[0].set_idle_core(IdleCore::Core(6));
    assert_eq!(s.wake_up(p, 0, false, 100).cpu, 3);
    assert_eq!(hint(&s, 0), IdleCore::Core(6));
    assert_eq!(s.stats().sis.has_idle_cores_cleared, 0);
    let (s, p) = one_llc("", &[2, 6]);
    s.shared.llc[0].set_has_idle_cores(true);
    assert_eq!(s.wake_up(p, 0, false, 100).cpu, 3);
    assert!(!s.shared.llc[0].has_idle_cores());
}

#[test]
fn seed001_v3_2_8_idle_entry_records_a_whole_idle_core() {
    // __update_idle_core at idle entry: if no core is recorded and every
    // other sibling is idle, record smt_id(cpu). At start every CPU enters
    // idle in order 0..7: cpu0 finds cpu1 idle and records core 0; later
    // CPUs see a record and stop.
    let s = sched(&spec(1, 4, 2, 1), PickPolicy::Cfs, "IDLE_CORE_ID");
    assert_eq!(hint(&s, 0), IdleCore::Core(0));
    let s = sched(&spec(1, 4, 2, 1), PickPolicy::Cfs, "");
    assert_eq!(hint(&s, 0), IdleCore::Unknown, "mainline keeps a bool");
    assert!(s.shared.llc[0].has_idle_cores());
}

/// Idle-entry/exit bookkeeping under `features`, returning the LLC's
/// idle_core after each step (see the test for the derivation).
fn idle_core_steps(features: &str) -> [IdleCore; 4] {
    let mut s = sched(&spec(1, 4, 2, 1), PickPolicy::Cfs, features);
    // Step 1: record -1, cpu1 busy, then cpu0 runs a task and blocks:
    // cpu0 enters idle with its sibling busy.
    s.shared.llc[0].set_idle_core(IdleCore::Unknown);
    run_on(&mut s, 1, 10);
    run_on(&mut s, 0, 20);
    s.block(0, 30);
    s.schedule(0, 30);
    let a = hint(&s, 0);
    // Step 2: cpu3 leaves idle (core 2).
    run_on(&mut s, 3, 40);
    let b = hint(&s, 0);
    // Step 3: record -2, cpu5 busy, cpu4 runs and blocks (sibling busy).
    s.shared.llc[0].set_idle_core(IdleCore::None);
    run_on(&mut s, 5, 50);
    run_on(&mut s, 4, 60);
    s.block(4, 70);
    s.schedule(4, 70);
    let c = hint(&s, 0);
    // Step 4: record -1, cpu7 busy, cpu6 runs and blocks: now every core
    // has a busy CPU ({0,1}: cpu1, {2,3}: cpu3, {4,5}: cpu5, {6,7}: cpu7).
    s.shared.llc[0].set_idle_core(IdleCore::Unknown);
    run_on(&mut s, 7, 80);
    run_on(&mut s, 6, 90);
    s.block(6, 100);
    s.schedule(6, 100);
    let d = hint(&s, 0);
    [a, b, c, d]
}

#[test]
fn seed001_v3_3_8_idle_core_updated_at_idle_entry_and_exit() {
    // v3 3/8 "sched/fair: Update idle-core more often":
    // 1. cpu0 enters idle, sibling cpu1 busy, record -1 ("unknown") ->
    //    set_next_idle_core(0): cores other than {0,1}, wrapping from 0:
    //    {2,3} all idle -> record 2.
    // 2. cpu3 leaves idle: set_core_busy(3): record 2 == smt_id(3) -> -1.
    // 3. record -2, cpu4 enters idle with cpu5 busy: -2 stays -2 (only -1
    //    triggers the search).
    // 4. record -1, cpu6 enters idle with cpu7 busy, no core fully idle:
    //    set_next_idle_core finds none -> -2.
    assert_eq!(
        idle_core_steps("IDLE_CORE_UPDATE"),
        [
            IdleCore::Core(2),
            IdleCore::Unknown,
            IdleCore::None,
            IdleCore::None
        ]
    );
    // 2/8 alone: no search at idle entry and no set_core_busy; -1 and -2
    // stay as they are (2/8 never writes -2 itself).
    assert_eq!(
        idle_core_steps("IDLE_CORE_ID"),
        [
            IdleCore::Unknown,
            IdleCore::Unknown,
            IdleCore::None,
            IdleCore::Unknown
        ]
    );
    // 2/8 alone keeps a record when its core leaves idle.
    let mut s = sched(&spec(1, 4, 2, 1), PickPolicy::Cfs, "IDLE_CORE_ID");
    s.shared.llc[0].set_idle_core(IdleCore::Core(2));
    run_on(&mut s, 3, 10);
    assert_eq!(hint(&s, 0), IdleCore::Core(2));
    let mut s = sched(&spec(1, 4, 2, 1), PickPolicy::Cfs, "IDLE_CORE_UPDATE");
    s.shared.llc[0].set_idle_core(IdleCore::Core(2));
    run_on(&mut s, 3, 10);
    assert_eq!(hint(&s, 0), IdleCore::Unknown);
}

/// p slept on cpu0, waker on cpu0 (target 0), `busy` run a task.
fn one_llc_busy(features: &str, busy: &[usize]) -> (Scheduler, TaskId) {
    let mut s = sched(&spec(1, 4, 2, 1), PickPolicy::Cfs, features);
    let p = sleeper_on(&mut s, 0, 10);
    for &c in busy {
        run_on(&mut s, c, 20);
    }
    s.core().tasks[p].recent_used_cpu = 0;
    (s, p)
}

#[test]
fn seed001_v3_3_8_unknown_takes_the_sibling_shortcut_and_scans_cores() {
    // 2/8's select_idle_sibling tries prev's SMT siblings when idle_core <
    // 0, i.e. for -1 and -2; 3/8's select_idle_cpu scans cores unless the
    // value is -2.
    // (a) Busy: 0, 4. Record -1. Shortcut: prev 0's sibling cpu1 is idle
    //     -> cpu1. (Mainline with has_idle_cores set skips the shortcut;
    //     its core scan from 1 passes {0,1} (cpu0 busy) and returns cpu2.)
    let (s, p) = one_llc_busy("IDLE_CORE_UPDATE", &[0, 4]);
    s.shared.llc[0].set_idle_core(IdleCore::Unknown);
    assert_eq!(s.wake_up(p, 0, false, 100).cpu, 1);
    assert_eq!(s.stats().sis.sis_smt, 1);
    let (s, p) = one_llc_busy("", &[0, 4]);
    s.shared.llc[0].set_has_idle_cores(true);
    assert_eq!(s.wake_up(p, 0, false, 100).cpu, 2);

    // (b) Busy: 0, 1, 3, 6; idle: 2, 4, 5, 7; the only idle core is {4,5}.
    //     Shortcut: cpu1 busy -> nothing.
    //     3/8 with -1: core scan from 1: {0,1} busy; {2,3} has cpu3 busy
    //     (cpu2 is remembered as fallback); {4,5} all idle -> 4.
    //     2/8 alone, -1 = "none": CPU scan from 1: cpu1 busy, cpu2 idle -> 2.
    //     3/8 with -2: CPU scan -> 2.
    for (f, rec, want) in [
        ("IDLE_CORE_UPDATE", IdleCore::Unknown, 4),
        ("IDLE_CORE_ID", IdleCore::Unknown, 2),
        ("IDLE_CORE_UPDATE", IdleCore::None, 2),
    ] {
        let (s, p) = one_llc_busy(f, &[0, 1, 3, 6]);
        s.shared.llc[0].set_idle_core(rec);
        assert_eq!(s.wake_up(p, 0, false, 100).cpu, want, "{f} {rec:?}");
    }
}

#[test]
fn seed001_v3_3_8_without_smt_scans_the_whole_llc() {
    // Without SMT select_idle_sibling never reads idle_core and passes its
    // initial -1 on; 3/8's "has idle core" is "!= -2", so the scan runs in
    // core mode, which SIS_UTIL does not limit (Linux's select_idle_core
    // is then __select_idle_cpu). 4 CPUs, busy 0, 1, 2, p's prev 0; scan
    // depth nr_idle_scan = 1, so nr = 2 and the CPU scan examines cpu1 only.
    // 3/8: core mode 1, 2, 3 -> cpu3. Mainline and 2/8 alone: cpu1 busy,
    // stop -> target 0.
    for (f, want) in [("IDLE_CORE_UPDATE", 3), ("IDLE_CORE_ID", 0), ("", 0)] {
        let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, f);
        let p = sleeper_on(&mut s, 0, 10);
        for c in [0, 1, 2] {
            run_on(&mut s, c, 20);
        }
        s.core().tasks[p].recent_used_cpu = 0;
        s.shared.llc[0].set_nr_idle_scan(1);
        assert_eq!(s.wake_up(p, 0, false, 100).cpu, want, "{f}");
    }
}

/// Two LLCs with SMT. p slept on cpu4 (prev); the waker runs on cpu0
/// (this), with `waker_tasks` tasks there. Busy: cpu1, cpu4 (prev), cpu5.
/// Idle: core {2,3} and core {6,7}. Loads make wake_affine_weight choose
/// this_cpu: this_eff = (200 + 100) * 100 * 1024 < prev_eff = (3000 - 100)
/// * 108 * 1024 (imbalance_pct 117 -> 108 %).
fn two_llcs(features: &str, waker_tasks: usize) -> (Scheduler, TaskId) {
    let mut s = sched(&spec(2, 2, 2, 1), PickPolicy::Cfs, features);
    let p = sleeper_on(&mut s, 4, 10);
    for _ in 0..waker_tasks {
        run_on(&mut s, 0, 20);
    }
    for c in [1, 4, 5] {
        run_on(&mut s, c, 20);
    }
    set_load(&mut s, 0, 200, 200);
    set_load(&mut s, 4, 3000, 3000);
    s.core().tasks[p].se.avg.load_avg = 100;
    s.core().tasks[p].recent_used_cpu = 4;
    (s, p)
}

#[test]
fn seed001_v3_4_8_wake_affine_idler_llc_claims_the_preferred_llcs_idle_core() {
    // v3 4/8 "sched/fair: Prefer idle CPU to cache affinity". Two tasks on
    // cpu0, so wake_affine_idle's sync rule (waker alone) does not apply;
    // this (0) and prev (4) are busy: wake_affine_idle -> undecided.
    // Records: LLC0 core 2, LLC1 core 6.
    // Not sync: pref = prev 4 (busy), LLC1's record 6 claimed by
    //   compare-and-swap (-> -1) -> 6; select_idle_sibling: 6 idle -> 6.
    // Sync: pref = this 0 (busy), LLC0's record 2 claimed -> 2.
    for (sync, want, llc0, llc1) in [
        (false, 6, IdleCore::Core(2), IdleCore::Unknown),
        (true, 2, IdleCore::Unknown, IdleCore::Core(6)),
    ] {
        let (s, p) = two_llcs("IDLE_CORE_ID,WA_IDLER_LLC", 2);
        s.shared.llc[0].set_idle_core(IdleCore::Core(2));
        s.shared.llc[4].set_idle_core(IdleCore::Core(6));
        assert_eq!(s.wake_up(p, 0, sync, 100).cpu, want, "sync {sync}");
        assert_eq!((hint(&s, 0), hint(&s, 4)), (llc0, llc1), "sync {sync}");
        assert_eq!(s.stats().wake.wa_idler_llc_core, 1);
    }
    // Switch off: wake_affine_weight picks this_cpu (see two_llcs), and
    // the scan of LLC0 (record 2: core scan from 1) returns cpu2.
    let (s, p) = two_llcs("IDLE_CORE_ID", 2);
    s.shared.llc[0].set_idle_core(IdleCore::Core(2));
    s.shared.llc[4].set_idle_core(IdleCore::Core(6));
    assert_eq!(s.wake_up(p, 0, false, 100).cpu, 2);
    assert_eq!(hint(&s, 4), IdleCore::Core(6));
}

#[test]
fn seed001_v3_4_8_wake_affine_idler_llc_prefers_the_less_busy_llc() {
    // No idle-core records (IDLE_CORE_ID off: idle_core stays -1). All of
    // LLC0 busy (cpu2 and cpu3 get tasks too), LLC1: cpu4 and cpu5 busy.
    // A tick's accounting on every CPU (mainline nohz model) makes
    // nr_busy_cpus LLC0 = 4, LLC1 = 2.
    // Not sync: pref = prev 4, try = this 0, both busy, no records;
    // diff = nr_busy(try) * size(pref) - nr_busy(pref) * size(try)
    //      = 4 * 4 - 2 * 4 = 8 > 0 -> pref = 4. select_idle_sibling(4):
    // LLC1's has_idle_cores (set at start) -> core scan from 5: {4,5}
    // busy, {6,7} idle -> 6.
    // Switch off: wake_affine_weight -> this 0; LLC0 has no idle CPU ->
    // target 0.
    for (f, want) in [("WA_IDLER_LLC", 6), ("", 0)] {
        let (mut s, p) = two_llcs(f, 1);
        run_on(&mut s, 2, 30);
        run_on(&mut s, 3, 30);
        {
            let mut core = s.core();
            for c in 0..8 {
                idle::tick_accounting(&mut core, c);
            }
        }
        assert_eq!(s.shared.llc[0].nr_busy_cpus(), 4);
        assert_eq!(s.shared.llc[4].nr_busy_cpus(), 2);
        assert_eq!(s.wake_up(p, 0, false, 100).cpu, want, "{f}");
        assert_eq!(s.stats().wake.wa_idler_llc, u64::from(want == 6), "{f}");
    }
}

#[test]
fn seed001_v3_5_8_idler_llc_decides_wakeups_across_llcs() {
    // v3 5/8 "sched/fair: Use affine_idler_llc for wakeups across LLC".
    // Two LLCs without SMT: {0..3}, {4..7}. p slept on cpu4, which is now
    // idle; the waker runs alone on cpu0; sync wakeup.
    // Mainline and 4/8 alone: wake_affine_idle's sync rule (waker alone on
    // this_cpu) -> this 0; select_idle_sibling(prev 4, target 0): 0 busy,
    // prev in another LLC, recent = prev; scan LLC0 from 1 -> cpu1 idle.
    // 5/8: across LLCs wake_affine_idle is not called;
    // wake_affine_idler_llc: sync -> pref = this 0 (busy, no record), try
    // = prev 4 idle -> 4.
    for (f, want) in [("WA_IDLER_LLC_ACROSS", 4), ("WA_IDLER_LLC", 1), ("", 1)] {
        let mut s = sched(&spec(2, 4, 1, 1), PickPolicy::Cfs, f);
        let p = sleeper_on(&mut s, 4, 10);
        run_on(&mut s, 0, 20);
        s.core().tasks[p].recent_used_cpu = 4;
        assert_eq!(s.wake_up(p, 0, true, 100).cpu, want, "{f}");
    }
}

#[test]
fn seed001_v3_5_8_sync_rule_moves_to_wake_affine_weight() {
    // 5/8 moves "sync and the waker's CPU runs one task -> this_cpu" into
    // wake_affine_weight (as nr_running <= 1), ahead of the load test.
    // Same LLC ({0..3}): p slept on cpu1, now busy; the waker alone on
    // cpu0; loads make the weight test keep prev: this_eff =
    // (3000 - 1024 + 100) * 100 * 1024 >= prev_eff = (200 - 100) * 108 *
    // 1024 + 1. wake_affine_idle (5/8 form): prev busy, this busy -> none.
    // 5/8: wake_affine_weight returns this 0 at once; select_idle_sibling
    // (prev 1, target 0): target busy, prev busy, scan from 1: cpu2 -> 2.
    // Mainline: wake_affine_idle's sync rule -> this 0 -> the same 2.
    // So the CPU is the same; the decider differs: with 5/8 it is the
    // weight test (wa_weight_this), in mainline wake_affine_idle.
    for (f, idle_decided, weight_this) in [("WA_IDLER_LLC_ACROSS", 0, 1), ("", 1, 0)] {
        let mut s = sched(&spec(2, 4, 1, 1), PickPolicy::Cfs, f);
        let p = sleeper_on(&mut s, 1, 10);
        let w = run_on(&mut s, 0, 20);
        run_on(&mut s, 1, 20);
        set_load(&mut s, 0, 3000, 3000);
        set_load(&mut s, 1, 200, 200);
        s.core().tasks[w].se.avg.load_avg = 1024;
        s.core().tasks[p].se.avg.load_avg = 100;
        s.core().tasks[p].recent_used_cpu = 1;
        assert_eq!(s.wake_up(p, 0, true, 100).cpu, 2, "{f}");
        let st = s.stats().wake;
        assert_eq!(
            (st.wa_idle_decided, st.wa_weight_this),
            (idle_decided, weight_this),
            "{f}"
        );
    }
}

#[test]
fn seed001_v3_6_8_busy_accounting_in_the_idle_callbacks() {
    // v3 6/8 "sched/idle: Move busy_cpu accounting to idle callback", one
    // LLC of 4 CPUs. nr_busy_cpus starts at the LLC size (4) and every
    // CPU's is_idle at 1.
    for (f, on) in [("IDLE_BUSY_ACCT", true), ("", false)] {
        let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, f);
        let n = |s: &Scheduler| s.shared.llc[0].nr_busy_cpus();
        // Each CPU picks the idle task once at start: 6/8 decrements at
        // every idle pick -> 4 - 4 = 0; mainline changes nothing -> 4.
        assert_eq!(n(&s), if on { 0 } else { 4 }, "{f}: start");
        // A tick on each idle CPU: mainline set_cpu_sd_state_idle
        // decrements (4 -> 0); 6/8 removed that decrement (0 stays 0).
        for cpu in 0..4 {
            s.tick(cpu, 1_000_000);
        }
        assert_eq!(n(&s), 0, "{f}: idle through a tick");
        // cpu2 leaves idle: put_prev_task_idle increments if is_idle (1)
        // -> 1; mainline waits for the tick -> 0.
        let _t = run_on(&mut s, 2, 1_500_000);
        assert_eq!(n(&s), u32::from(on), "{f}: idle exit");
        // cpu2's busy tick: set_cpu_sd_state_busy. Mainline increments
        // (0 -> 1); 6/8 increments only if is_idle, which put_prev cleared.
        s.tick(2, 2_000_000);
        assert_eq!(n(&s), 1, "{f}: busy tick");
    }
    // The rules one by one (6/8 on), on hand-set state.
    let mut s = sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, "IDLE_BUSY_ACCT");
    let n = |s: &Scheduler| s.shared.llc[0].nr_busy_cpus();
    {
        let mut core = s.core();
        // pick_next_task_idle decrements whatever is_idle says, never
        // below 0: cpu3 (is_idle 1) picks idle again at 0 -> 0.
        idle::idle_enter(&mut core, 3);
    }
    assert_eq!(n(&s), 0);
    {
        // put_prev_task_idle: is_idle 1 -> +1 (unbounded) and is_idle 0;
        // a second put with is_idle 0 adds nothing.
        let mut core = s.core();
        idle::idle_exit(&mut core, 3);
        idle::idle_exit(&mut core, 3);
        assert!(!core.rqs[3].acct_idle);
    }
    assert_eq!(n(&s), 1);
    // set_cpu_sd_state_busy after tickless idle (nohz_idle) on a busy CPU
    // whose is_idle is still 1: +1, bounded by the LLC size (4).
    for c in [0, 1, 2] {
        run_on(&mut s, c, 10);
    }
    assert_eq!(n(&s), 4, "1 + three idle exits");
    {
        let mut core = s.core();
        core.rqs[2].nohz_idle = true;
        core.rqs[2].acct_idle = true;
        idle::tick_accounting(&mut core, 2);
        assert!(!core.rqs[2].acct_idle && !core.rqs[2].nohz_idle);
    }
    assert_eq!(n(&s), 4, "bounded by sd_llc_size");
    {
        // ... while put_prev_task_idle's atomic_inc is not bounded.
        let mut core = s.core();
        core.rqs[3].acct_idle = true;
        idle::idle_exit(&mut core, 3);
    }
    assert_eq!(n(&s), 5);
}

#[test]
fn seed001_v3_8_8_no_scan_when_both_llcs_are_busy() {
    // v3 8/8 "sched/fair: Dont iterate if no idle CPUs". Two LLCs without
    // SMT, {0..3} and {4..7}. Every CPU runs a task; cpu3's is SCHED_IDLE,
    // so cpu3 is idle-ish for the scan but busy for nr_busy_cpus. Nothing
    // ever ticked idle, so nr_busy_cpus = 4 = size in both LLCs.
    // p slept on cpu4 (prev, busy), waker on cpu0, not sync; loads make
    // wake_affine_weight choose this 0 (see two_llcs).
    // wake_affine_idle: nothing idle -> none. wake_affine_idler_llc: pref
    // 4 and try 0 busy, no records, both LLCs full -> none, and with 8/8
    // idle = false. wake_affine_weight -> 0. select_idle_sibling(prev 4,
    // target 0): target busy, prev elsewhere, recent = prev; 8/8: return
    // target 0 without the scan.
    // Without 8/8 the scan of LLC0 from 1 finds cpu3 (sched_idle) -> 3;
    // 8/8 without WA_IDLER_LLC changes nothing (only idler_llc clears idle).
    for (f, want) in [
        ("WA_IDLER_LLC,SIS_SKIP_BUSY_LLCS", 0),
        ("WA_IDLER_LLC", 3),
        ("SIS_SKIP_BUSY_LLCS", 3),
    ] {
        let mut s = sched(&spec(2, 4, 1, 1), PickPolicy::Cfs, f);
        let p = sleeper_on(&mut s, 4, 10);
        for c in [0, 1, 2, 4, 5, 6, 7] {
            run_on(&mut s, c, 20);
        }
        s.wake_up_new_task_on(None, 3, 0, TaskPolicy::Idle, 20);
        s.schedule(3, 20);
        set_load(&mut s, 0, 200, 200);
        set_load(&mut s, 4, 3000, 3000);
        s.core().tasks[p].se.avg.load_avg = 100;
        s.core().tasks[p].recent_used_cpu = 4;
        assert_eq!(s.shared.llc[0].nr_busy_cpus(), 4);
        assert_eq!(s.shared.llc[4].nr_busy_cpus(), 4);
        assert_eq!(s.wake_up(p, 0, false, 100).cpu, want, "{f}");
        assert_eq!(s.stats().sis.sis_idle_skip, u64::from(want == 0), "{f}");
    }
}

#[test]
fn seed001_aliases_name_the_series_and_the_former_switches() {
    use crate::features::{Feat, Features};
    let v3 = Features::parse("SRIKAR_V3").unwrap();
    for f in [
        Feat::IdleCoreId,
        Feat::IdleCoreUpdate,
        Feat::WaIdlerLlc,
        Feat::WaIdlerLlcAcross,
        Feat::IdleBusyAcct,
        Feat::SisSkipBusyLlcs,
    ] {
        assert!(v3.has(f), "{f:?}");
    }
    assert_eq!(
        Features::parse("IDLE_CORE_HINT,IDLE_ACCT_ENTRY").unwrap(),
        Features::parse("IDLE_CORE_ID,IDLE_CORE_UPDATE,IDLE_BUSY_ACCT").unwrap()
    );
    assert_eq!(
        Features::parse("SRIKAR_V3,NO_SRIKAR_V3").unwrap(),
        Features::default()
    );
    let shown = alloc::format!("{v3}");
    assert!(!shown.contains("SRIKAR_V3") && shown.contains("SIS_SKIP_BUSY_LLCS"));
    assert_eq!(Features::parse(&shown).unwrap(), v3);
}
