//! NOHZ_IDLE. Expected values come from Linux 6.x's rules in fair.c:
//! `nohz_balance_enter_idle` (in the idle mask, one fewer busy CPU in the
//! LLC, once per stop), `nohz_balance_exit_idle` (at the first busy tick),
//! `nohz_balancer_kick` (a kick when this runqueue holds two tasks, or more
//! than one CPU of the LLC is busy, or stale blocked load; NOHZ_NEXT_KICK
//! while `nohz.needs_update`), `kick_ilb`/`find_new_ilb` (the lowest idle
//! tickless CPU other than the kicker; no second IPI while the flags are
//! pending), `_nohz_idle_balance` (CPUs from the one after the balancer
//! round to itself) and `update_nohz_stats` (blocked load decays only
//! when someone updates it).

use super::Scheduler;
use crate::balance::nohz::{NOHZ_BALANCE_KICK, NOHZ_NEXT_KICK, NOHZ_STATS_KICK};
use crate::config::PickPolicy;
use crate::stats::MigrationReason;
use crate::task::TaskPolicy;
use crate::testutil::{check_invariants, run_on, sched, spec};

/// The default tick (HZ=1000).
const TICK: u64 = 1_000_000;

/// One LLC of 4 CPUs, no SMT.
fn machine(features: &str) -> Scheduler {
    sched(&spec(1, 4, 1, 1), PickPolicy::Cfs, features)
}

fn nr_busy(s: &Scheduler) -> u32 {
    s.shared.llc[s.shared.topo.llc_id[0]].nr_busy_cpus()
}

#[test]
fn a_stopped_tick_counts_the_cpu_idle_until_its_first_busy_tick() {
    let mut s = machine("NOHZ_IDLE");
    let n = &s.shared.nohz;
    assert_eq!(
        nr_busy(&s),
        4,
        "the LLC starts all busy, as Linux builds it"
    );
    assert!(s.nohz_idle_enter(1, 0));
    assert!(n.is_tickless(1));
    assert_eq!((n.nr_cpus(), nr_busy(&s)), (1, 3));
    assert!(n.has_blocked() && n.needs_update());
    // Idle again before any busy tick: no second count.
    assert!(s.nohz_idle_enter(1, 10));
    assert_eq!((n.nr_cpus(), nr_busy(&s)), (1, 3));
    // A task runs there: still tickless until the tick sees it busy.
    run_on(&mut s, 1, 20);
    assert!(s.shared.nohz.is_tickless(1));
    assert_eq!(nr_busy(&s), 3);
    s.tick(1, TICK);
    let n = &s.shared.nohz;
    assert!(!n.is_tickless(1));
    assert_eq!((n.nr_cpus(), nr_busy(&s)), (0, 4));
    assert_eq!(s.stats().nohz.tick_stops, 1);
    check_invariants(&s);
}

#[test]
fn without_nohz_idle_the_tick_never_stops() {
    let s = machine("");
    assert!(!s.nohz_idle_enter(1, 0));
    assert!(!s.shared.nohz.is_tickless(1));
    assert_eq!(nr_busy(&s), 4);
    // The tick-time rule: idle at a tick counts as tickless.
    assert_eq!(s.tick(1, TICK).nohz_kick, None);
    assert_eq!(nr_busy(&s), 3);
    assert_eq!(s.stats().nohz, Default::default());
}

#[test]
fn two_tasks_kick_the_first_idle_tickless_cpu_once() {
    let mut s = machine("NOHZ_IDLE");
    // Late enough that the MC domain's first interval (4 ms) has passed.
    let t0 = 100 * TICK;
    for c in 1..4 {
        assert!(s.nohz_idle_enter(c, t0));
    }
    run_on(&mut s, 0, t0 + 10);
    let queued = s
        .wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, t0 + 20)
        .task;
    let r = s.tick(0, t0 + TICK);
    assert_eq!(
        r.nohz_kick,
        Some(1),
        "lowest idle tickless CPU but the kicker"
    );
    let want = NOHZ_BALANCE_KICK | NOHZ_STATS_KICK | NOHZ_NEXT_KICK;
    assert_eq!(s.shared.nohz.flags(1), want);
    // kick_ilb: nohz.next_balance = jiffies + 1.
    assert_eq!(s.shared.nohz.next_balance(), 102);
    // The flags are still pending on CPU 1: no second IPI.
    assert_eq!(s.tick(0, t0 + 2 * TICK).nohz_kick, None);
    assert_eq!(s.stats().nohz.kicks, 1);
    assert_eq!(s.stats().nohz.balance_kicks, 1);
    // CPU 1 balances for 2, 3 and then itself: CPU 2 pulls the queued task.
    let r = s.nohz_kick(1, t0 + 2 * TICK + 5_000);
    assert_eq!(s.shared.nohz.flags(1), 0);
    let moved: alloc::vec::Vec<_> = r
        .migrations
        .iter()
        .map(|m| (m.task, m.from, m.to))
        .collect();
    assert_eq!(moved, [(queued, 0, 2)]);
    assert_eq!(r.migrations[0].reason, MigrationReason::Balance);
    assert!(r.resched.contains(&2));
    let st = s.stats().nohz;
    assert_eq!(st.ilb_runs, 1);
    assert_eq!(st.ilb_aborted, 0);
    assert_eq!(st.ilb_balances, 3);
    check_invariants(&s);
}

#[test]
fn one_busy_cpu_kicks_only_to_collate_and_update_stats() {
    let mut s = machine("NOHZ_IDLE");
    for c in 1..4 {
        assert!(s.nohz_idle_enter(c, 0));
    }
    run_on(&mut s, 0, 10);
    assert_eq!(nr_busy(&s), 1);
    // needs_update and stale blocked load, but nothing to balance.
    let r = s.tick(0, TICK);
    assert_eq!(r.nohz_kick, Some(1));
    assert_eq!(s.shared.nohz.flags(1), NOHZ_STATS_KICK | NOHZ_NEXT_KICK);
    let r = s.nohz_kick(1, TICK + 5_000);
    assert!(r.migrations.is_empty());
    let n = &s.shared.nohz;
    assert!(!n.needs_update());
    // The idle CPUs never ran anything: no blocked load left anywhere.
    assert!(!n.has_blocked());
    // next_blocked = now + LOAD_AVG_PERIOD (32 jiffies at HZ=1000).
    assert_eq!(n.next_blocked(), 1 + 32);
    assert_eq!(s.tick(0, 2 * TICK).nohz_kick, None);
    assert_eq!(s.stats().nohz.balance_kicks, 0);
    check_invariants(&s);
}

/// A CPU that ran a task for a while, then idles from `t_idle`.
fn loaded_then_idle(features: &str, t_idle: u64) -> Scheduler {
    let mut s = machine(features);
    run_on(&mut s, 1, 0);
    let mut t = TICK;
    while t < t_idle {
        s.tick(1, t);
        t += TICK;
    }
    s.block(1, t_idle);
    s.schedule(1, t_idle);
    s
}

#[test]
fn a_tickless_cpus_blocked_load_decays_only_when_updated() {
    let t_idle = 50 * TICK;
    let mut nohz = loaded_then_idle("NOHZ_IDLE", t_idle);
    let mut ticked = loaded_then_idle("", t_idle);
    assert!(nohz.nohz_idle_enter(1, t_idle));
    let at_idle = nohz.core().rqs[1].cfs.avg.load_avg;
    assert!(at_idle > 0, "the task left blocked load");
    run_on(&mut nohz, 0, t_idle + 10);
    run_on(&mut ticked, 0, t_idle + 10);
    // CPU 1's own ticks stopped: its load stays as it was.
    for k in 1..=8 {
        let t = t_idle + k * TICK;
        ticked.tick(1, t);
        ticked.tick(0, t);
        let r = nohz.tick(0, t);
        if k == 1 {
            // Stale blocked load, the new tickless CPU, and CPUs 0, 2 and 3
            // counted busy (2 and 3 never went idle): a full kick.
            assert_eq!(r.nohz_kick, Some(1));
        }
        assert_eq!(nohz.core().rqs[1].cfs.avg.load_avg, at_idle);
    }
    // The balancer's stats pass at the time CPU 1's own tick would come
    // decays it exactly as that tick does.
    let t = t_idle + 9 * TICK;
    ticked.tick(1, t);
    let r = nohz.nohz_kick(1, t);
    assert!(r.migrations.is_empty());
    let (a, b) = (
        nohz.core().rqs[1].cfs.avg.load_avg,
        ticked.core().rqs[1].cfs.avg.load_avg,
    );
    assert!(a < at_idle);
    assert_eq!(a, b);
    assert_eq!(nohz.stats().nohz.stats_updates, 1);
    check_invariants(&nohz);
}

/// CPUs 1-3 tickless and idle from `t0` = 100 ticks, CPU 0 running two
/// tasks: CPU 0's tick at `t0 + TICK` kicks CPU 1, whose idle balancing
/// pass runs 5 us later. Returns the scheduler, `t0` and the pass's result.
fn kicked_after_a_tick() -> (Scheduler, u64, super::TickResult) {
    let mut s = machine("NOHZ_IDLE");
    let t0 = 100 * TICK;
    for c in 1..4 {
        assert!(s.nohz_idle_enter(c, t0));
    }
    run_on(&mut s, 0, t0 + 10);
    s.wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, t0 + 20);
    assert_eq!(s.tick(0, t0 + TICK).nohz_kick, Some(1));
    let r = s.nohz_kick(1, t0 + TICK + 5_000);
    (s, t0, r)
}

#[test]
fn the_pass_collates_next_balance_and_later_kicks_wait_for_it() {
    let (mut s, t0, r) = kicked_after_a_tick();
    assert_eq!(r.migrations.len(), 1);
    // nohz.next_balance = the earliest next_balance, in jiffies, of the
    // tickless CPUs the pass visited (all three were idle when visited).
    let earliest = (1..4)
        .map(|c| s.core().rqs[c].next_balance.div_ceil(TICK))
        .min()
        .unwrap();
    let nb = s.shared.nohz.next_balance();
    assert_eq!(nb, earliest);
    assert!(nb > t0 / TICK + 2, "next_balance {nb} already due");
    // CPU 0 holds two tasks again; CPU 1 now runs one, CPU 2 has the pulled
    // one: both still tickless (no busy tick yet) but not idle.
    s.wake_up_new_task_on(None, 0, 0, TaskPolicy::Normal, t0 + 2 * TICK);
    run_on(&mut s, 1, t0 + 2 * TICK);
    // Before nohz.next_balance: no balance kick, and nothing else pending.
    assert_eq!(s.tick(0, (nb - 1) * TICK).nohz_kick, None);
    // At it: a balance kick to the lowest tickless CPU that is idle.
    assert_eq!(s.tick(0, nb * TICK).nohz_kick, Some(3));
    assert_eq!(s.stats().nohz.balance_kicks, 2);
    check_invariants(&s);
}

#[test]
fn an_idle_balancers_pass_after_a_tick_is_stamped_with_that_tick() {
    // Linux sched_balance_domains(): "sd->last_balance = jiffies", and a
    // domain is due at time_after_eq(jiffies, last_balance + interval),
    // both in jiffies. The idle load balancer's pass runs on its IPI, 5 us
    // after CPU 0's tick at jiffy t0/TICK + 1: every domain it balanced
    // records that jiffy, and its next_balance is a whole number of ticks
    // later (so _nohz_idle_balance's collation, which rounds up to a jiffy,
    // is not pushed a tick further).
    let (s, t0, _) = kicked_after_a_tick();
    let c = s.core();
    let mut stamped = 0;
    for cpu in 1..4 {
        for st in &c.rqs[cpu].sd {
            if st.last_balance != 0 {
                assert_eq!(st.last_balance, t0 + TICK, "cpu{cpu}");
                stamped += 1;
            }
        }
        assert_eq!(c.rqs[cpu].next_balance % TICK, 0, "cpu{cpu}");
    }
    assert!(stamped > 0, "the pass balanced some domain");
}

#[test]
fn a_newly_idle_cpu_updates_stale_blocked_load_before_it_halts() {
    let t_idle = 50 * TICK;
    let s = loaded_then_idle("NOHZ_IDLE", t_idle);
    assert!(s.nohz_idle_enter(1, t_idle));
    let at_idle = s.core().rqs[1].cfs.avg.load_avg;
    // CPU 0 runs a task that blocks 40 ms later, past next_blocked (0):
    // newly-idle balance finds nothing to pull and asks for the update.
    let mut s = s;
    run_on(&mut s, 0, t_idle + 10);
    let t = t_idle + 40 * TICK;
    s.block(0, t);
    s.schedule(0, t);
    assert_eq!(s.core().rqs[1].cfs.avg.load_avg, at_idle, "not yet");
    assert!(s.nohz_idle_enter(0, t));
    let st = s.stats().nohz;
    assert_eq!((st.newilb_runs, st.stats_updates), (1, 1));
    assert!(s.core().rqs[1].cfs.avg.load_avg < at_idle);
    assert_eq!(s.shared.nohz.flags(0), 0);
    check_invariants(&s);
}
