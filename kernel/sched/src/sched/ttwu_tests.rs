//! TTWU_QUEUE: the wake-list split of `try_to_wake_up`. Expected values
//! come from Linux 6.12's rules: `ttwu_queue_cond` (queue across LLCs and to
//! an idle CPU of the waker's LLC, never to a busy CPU of it or to the
//! waker's own CPU), `sched_ttwu_pending` (activated once, by the target,
//! `ttwu_do_wakeup`'s avg_idle fold at the target's clock, ENQUEUE_MIGRATED
//! when the CPU changed) and `idle_cpu()` returning false while
//! `rq->ttwu_pending` is set.

use super::{Scheduler, ttwu_queue_cond};
use crate::CpuId;
use crate::config::PickPolicy;
use crate::placement::WakeFlags;
use crate::task::{TaskId, TaskPolicy, TaskState};
use crate::testutil::{check_invariants, run_on, sched, sleeper_on, spec};
use alloc::format;
use alloc::vec::Vec;

const TICK: u64 = 4_000_000;

/// 2 sockets x 4 cores, one LLC per socket: CPUs 0-3 and 4-7.
fn two_llcs(pick: PickPolicy, features: &str) -> Scheduler {
    sched(&spec(2, 4, 1, 1), pick, features)
}

/// A task bound to `cpu` that ran there and now sleeps.
fn bound_sleeper(s: &Scheduler, cpu: CpuId, now: u64) -> TaskId {
    let t = s
        .wake_up_new_task_bound(None, cpu, 0, TaskPolicy::Normal, now)
        .task;
    assert_eq!(s.schedule(cpu, now).next, Some(t));
    s.block(cpu, now + 1000);
    s.schedule(cpu, now + 1000);
    t
}

fn nr_running(s: &Scheduler, cpu: CpuId) -> u32 {
    s.core().rqs[cpu].nr_running()
}

fn listed(s: &Scheduler, cpu: CpuId) -> Vec<(TaskId, bool)> {
    let mut v = Vec::new();
    s.shared.for_each_wake_listed(cpu, |t, m| v.push((t.id, m)));
    v
}

#[test]
fn queue_cond_is_linux_6_12s() {
    let mut s = two_llcs(PickPolicy::Cfs, "");
    let p = sleeper_on(&mut s, 0, 0);
    let q = bound_sleeper(&s, 0, 10_000);
    run_on(&mut s, 1, 20_000);
    run_on(&mut s, 4, 20_000);
    let c = s.core();
    // Other LLC: queue, busy or not.
    assert!(ttwu_queue_cond(&c, p, 4, 0), "busy CPU of another LLC");
    assert!(ttwu_queue_cond(&c, p, 5, 0), "idle CPU of another LLC");
    // Same LLC: only to an idle CPU.
    assert!(ttwu_queue_cond(&c, p, 2, 0), "idle CPU of the waker's LLC");
    assert!(!ttwu_queue_cond(&c, p, 1, 0), "busy CPU of the waker's LLC");
    // Never to the waker's own CPU (idle here: nr_running 0).
    assert!(!ttwu_queue_cond(&c, p, 0, 0), "the waker's CPU");
    // Outside the affinity: q is bound to CPU 0.
    assert!(!ttwu_queue_cond(&c, q, 4, 1), "CPU outside p's affinity");
    assert!(ttwu_queue_cond(&c, q, 0, 4), "bound CPU in another LLC");
}

#[test]
fn queued_wakeup_is_activated_once_by_the_target() {
    for pick in [PickPolicy::Cfs, PickPolicy::Eevdf] {
        let mut s = two_llcs(pick, "");
        let q = bound_sleeper(&s, 4, 0);
        run_on(&mut s, 0, 10_000);
        let before = s.stats().wake;
        let r = s.wake_up_queue(q, 0, WakeFlags::default(), 20_000);
        assert_eq!(r.cpu, 4);
        assert_eq!(r.resched.as_slice(), &[4], "the IPI that delivers the list");
        let w = s.stats().wake;
        assert_eq!(
            w.nr_wakeups - before.nr_wakeups,
            1,
            "accounted on the waker"
        );
        assert_eq!(w.nr_wakeups_remote - before.nr_wakeups_remote, 1);
        assert_eq!(w.ttwu_queued - before.ttwu_queued, 1);
        assert_eq!(s.shared.wake_listed(q), Some(4));
        assert_eq!(s.shared.task_cpu(q), None);
        assert_eq!(listed(&s, 4), [(q, false)]);
        assert!(s.shared.ttwu_pending(4));
        // Not counted on CPU 4 yet, on no runqueue (the balancer walks
        // runqueues: it cannot see it), and CPU 4 is not idle.
        assert_eq!(nr_running(&s, 4), 0);
        assert!(s.core().rq_tasks(4).all(|t| t != q));
        assert!(!s.core().idle_cpu(4), "idle_cpu with ttwu_pending set");
        assert!(!s.core().idle_ish(4));
        assert!(s.core().idle_cpu(5));
        check_invariants(&s);
        // A second wakeup of a wake-listed task is a no-op (TASK_WAKING).
        let again = s.wake_up_queue(q, 0, WakeFlags::default(), 21_000);
        assert!(again.resched.is_empty());
        assert_eq!(s.stats().wake.nr_wakeups, w.nr_wakeups);
        // The target activates it: once.
        let rs = s.sched_ttwu_pending(4, 30_000);
        assert!(rs.contains(&4), "an idle CPU must run the wakee");
        assert_eq!(nr_running(&s, 4), 1);
        assert!(!s.shared.ttwu_pending(4));
        assert!(listed(&s, 4).is_empty());
        assert_eq!(s.shared.task_cpu(q), Some(4));
        assert_eq!(s.task(q).state, TaskState::Runnable);
        check_invariants(&s);
        assert!(s.sched_ttwu_pending(4, 31_000).is_empty());
        assert_eq!(nr_running(&s, 4), 1, "activated twice");
        assert_eq!(s.schedule(4, 32_000).next, Some(q));
        check_invariants(&s);
    }
}

#[test]
fn wakeup_to_a_busy_cpu_of_the_llc_or_with_no_ttwu_queue_is_direct() {
    for features in ["", "NO_TTWU_QUEUE"] {
        let mut s = two_llcs(PickPolicy::Cfs, features);
        let q = bound_sleeper(&s, 1, 0);
        run_on(&mut s, 0, 10_000);
        if features.is_empty() {
            run_on(&mut s, 1, 10_000);
        }
        let r = s.wake_up_queue(q, 0, WakeFlags::default(), 20_000);
        assert_eq!(r.cpu, 1);
        assert_eq!(s.stats().wake.ttwu_queued, 0, "{features}");
        assert!(!s.shared.ttwu_pending(1));
        assert_eq!(s.shared.task_cpu(q), Some(1));
        assert_eq!(s.task(q).state, TaskState::Runnable);
    }
    // Across LLCs without the switch: direct as well.
    let mut s = two_llcs(PickPolicy::Cfs, "NO_TTWU_QUEUE");
    let q = bound_sleeper(&s, 4, 0);
    run_on(&mut s, 0, 10_000);
    s.wake_up_queue(q, 0, WakeFlags::default(), 20_000);
    assert_eq!(s.stats().wake.ttwu_queued, 0);
    assert_eq!(nr_running(&s, 4), 1);
}

#[test]
fn schedule_activates_the_list_before_it_picks() {
    let mut s = two_llcs(PickPolicy::Eevdf, "");
    let q = bound_sleeper(&s, 4, 0);
    run_on(&mut s, 0, 10_000);
    s.wake_up_queue(q, 0, WakeFlags::default(), 20_000);
    // No IPI handled: CPU 4's idle loop sees ttwu_pending and schedules.
    assert_eq!(s.schedule(4, 25_000).next, Some(q));
    assert!(!s.shared.ttwu_pending(4));
    check_invariants(&s);
}

#[test]
fn avg_idle_is_folded_at_the_targets_activation() {
    let mut s = two_llcs(PickPolicy::Cfs, "");
    let q = bound_sleeper(&s, 4, 0);
    run_on(&mut s, 0, 10_000);
    let (stamp, avg, max) = {
        let c = s.core();
        let rq = &c.rqs[4];
        (rq.idle_stamp, rq.avg_idle, 2 * rq.max_idle_balance_cost)
    };
    assert!(stamp != 0, "CPU 4 went idle");
    s.wake_up_queue(q, 0, WakeFlags::default(), 200_000);
    assert_eq!(s.core().rqs[4].idle_stamp, stamp, "the waker folds nothing");
    let t = 700_000;
    s.sched_ttwu_pending(4, t);
    // update_avg(&rq->avg_idle, rq_clock - idle_stamp), capped at 2 *
    // max_idle_balance_cost, at the target's clock when it activates.
    let delta = (t - stamp) as i64;
    let want = ((avg as i64 + (delta - avg as i64) / 8).max(0) as u64).min(max);
    let c = s.core();
    assert_eq!(c.rqs[4].avg_idle, want);
    assert_ne!(want, avg, "the fold must change avg_idle here");
    assert_eq!(c.rqs[4].idle_stamp, 0);
}

/// CPUs 1-3 (the waker's LLC) ran a task for a while, so their
/// min_vruntime is far from 0; `p` (unbound) last ran on CPU 4.
fn migrating_setup(s: &mut Scheduler) -> TaskId {
    let mut now = 0;
    for cpu in 1..4 {
        let t = s
            .wake_up_new_task_bound(None, cpu, 0, TaskPolicy::Normal, now)
            .task;
        s.schedule(cpu, now);
        for _ in 0..20 {
            now += TICK;
            s.tick(cpu, now);
        }
        s.block(cpu, now);
        s.schedule(cpu, now);
        let _ = t;
    }
    let p = sleeper_on(s, 4, now);
    run_on(s, 0, now + 10_000);
    p
}

#[test]
fn migrated_flag_reaches_the_enqueue() {
    // WAKEE_CROSS_CORE (seed 004) forces the wakee onto CPU 1 (the next
    // core of the waker's LLC), so p moves from CPU 4 to CPU 1; CPU 1 is
    // idle, so TTWU_QUEUE queues it there. Activated at once, it must end
    // exactly as the fused path leaves it: with ENQUEUE_MIGRATED, CFS
    // re-expresses its vruntime against CPU 1's min_vruntime.
    let fused = {
        let mut s = two_llcs(PickPolicy::Cfs, "WAKEE_CROSS_CORE");
        let p = migrating_setup(&mut s);
        let t0 = 1_000_000_000;
        let r = s.wake_up_flags(p, 0, WakeFlags::default(), t0);
        assert_eq!(r.cpu, 1);
        (s.task(p), s.stats().wake, s.core().rqs[1].cfs.min_vruntime)
    };
    let mut s = two_llcs(PickPolicy::Cfs, "WAKEE_CROSS_CORE");
    let p = migrating_setup(&mut s);
    let t0 = 1_000_000_000;
    let r = s.wake_up_queue(p, 0, WakeFlags::default(), t0);
    assert_eq!(r.cpu, 1);
    assert_eq!(listed(&s, 1), [(p, true)], "queued with WF_MIGRATED");
    let w = s.stats().wake;
    assert_eq!(w.ttwu_queued, 1);
    assert_eq!(w.nr_wakeups_migrate, 1, "set_task_cpu on the waker");
    check_invariants(&s);
    s.sched_ttwu_pending(1, t0);
    let t = s.task(p);
    let (ft, fw, fmin) = fused;
    assert!(fmin > 0, "CPU 1's min_vruntime must be away from 0");
    assert_eq!(t.cpu, 1);
    assert_eq!(t.se.nr_migrations, 1);
    assert_eq!(
        t.se.vruntime, ft.se.vruntime,
        "vruntime after activation differs from the fused path"
    );
    assert_eq!(format!("{:?}", t.se.avg), format!("{:?}", ft.se.avg));
    assert_eq!(w.since(&fw).ttwu_queued, 1);
    let mut w0 = w;
    w0.ttwu_queued = 0;
    assert_eq!(w0, fw, "the waker's accounting differs from the fused path");
    check_invariants(&s);
}

#[test]
fn wake_list_is_activated_oldest_first() {
    // Linux's flush takes the whole llist (newest first) and reverses it
    // (llist_reverse_order in __flush_smp_call_function_queue), so queued
    // wakeups are activated in the order they were queued.
    let s = two_llcs(PickPolicy::Cfs, "");
    let a = bound_sleeper(&s, 4, 0);
    let b = bound_sleeper(&s, 4, 10_000);
    s.wake_up_queue(a, 0, WakeFlags::default(), 20_000);
    s.wake_up_queue(b, 0, WakeFlags::default(), 21_000);
    assert_eq!(listed(&s, 4), [(a, false), (b, false)]);
    let mut c = s.shared.lock(4);
    assert_eq!(
        c.tasks.unqueue_wake(4).map(|x| x.0),
        Some(a),
        "oldest first"
    );
    assert_eq!(c.tasks.unqueue_wake(4).map(|x| x.0), Some(b));
    assert_eq!(c.tasks.unqueue_wake(4), None);
}
