//! Property tests: random topologies (up to 256 CPUs) and random event
//! sequences with invariant checks after every step, plus simulator-driven
//! fairness, bounded waiting and work conservation.

use crate::CpuId;
use crate::config::{PickPolicy, SchedConfig};
use crate::sched::Scheduler;
use crate::sim::{Behavior, InvariantChecker, Sim};
use crate::task::{TaskId, TaskPolicy, TaskState};
use crate::topo::SchedTopo;
use crate::weight::LoadWeight;
use alloc::vec::Vec;
use proptest::prelude::*;
use topology::SyntheticSpec;

/// A random regular machine of at most 256 CPUs.
fn arb_spec(max_cpus: u32) -> impl Strategy<Value = SyntheticSpec> {
    (1u32..=4, 1u32..=32, 1u32..=2, any::<bool>(), any::<bool>())
        .prop_filter("size", move |(s, c, t, _, _)| s * c * t <= max_cpus)
        .prop_map(|(sockets, cores, threads, numa, split_llc)| SyntheticSpec {
            nodes: if numa { sockets } else { 1 },
            cpus_per_llc: (split_llc && cores % 2 == 0 && cores >= 4)
                .then_some(cores / 2 * threads),
            ..SyntheticSpec::simple(sockets, cores, threads)
        })
}

const SEED_SWITCHES: [&str; 8] = [
    "NO_WA_IDLE_PREV",
    "RUNNABLE_LOAD",
    "NO_IDLEST_BLOCKED",
    "SRIKAR_V3",
    "NO_FORK_CLOCK_UPDATE,NEW_TASK_NO_DECAY",
    "WAKE_WIDE_HEAVY",
    "NO_WA_SYNC",
    "WAKEE_CROSS_CORE",
];

fn features_from(mask: u8) -> alloc::string::String {
    let v: Vec<&str> = SEED_SWITCHES
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, s)| *s)
        .collect();
    v.join(",")
}

#[derive(Clone, Debug)]
enum Op {
    Fork(usize, i8),
    Wake(usize, usize, bool),
    WakeAny(usize, usize),
    Block(usize),
    BlockOnly(usize),
    Yield(usize),
    Exec(usize),
    Exit(usize),
    Tick(usize),
    TickAll,
    Schedule(usize),
    Advance(u32),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (any::<usize>(), -5i8..=5).prop_map(|(c, n)| Op::Fork(c, n)),
        3 => (any::<usize>(), any::<usize>(), any::<bool>()).prop_map(|(t, c, s)| Op::Wake(t, c, s)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(t, c)| Op::WakeAny(t, c)),
        2 => any::<usize>().prop_map(Op::Block),
        1 => any::<usize>().prop_map(Op::BlockOnly),
        1 => any::<usize>().prop_map(Op::Yield),
        1 => any::<usize>().prop_map(Op::Exec),
        1 => any::<usize>().prop_map(Op::Exit),
        2 => any::<usize>().prop_map(Op::Tick),
        2 => Just(Op::TickAll),
        2 => any::<usize>().prop_map(Op::Schedule),
        3 => (1u32..5_000).prop_map(Op::Advance),
    ]
}

/// Serve reschedule requests like IPIs would.
fn serve(s: &mut Scheduler, cpus: impl IntoIterator<Item = CpuId>, now: u64) {
    let mut cpus: Vec<CpuId> = cpus.into_iter().collect();
    while let Some(c) = cpus.pop() {
        let sw = s.schedule(c, now);
        cpus.extend(sw.resched);
        cpus.extend(sw.migrations.iter().map(|m| m.to));
        cpus.sort_unstable();
        cpus.dedup();
    }
}

fn apply(s: &mut Scheduler, op: &Op, now: &mut u64) {
    let n = s.core().nr_cpus();
    let live: Vec<TaskId> = s.core().tasks.iter().map(|t| t.id).collect();
    match *op {
        Op::Fork(c, nice) => {
            let cpu = c % n;
            let parent = s.current(cpu);
            let r = s.wake_up_new_task(parent, cpu, i32::from(nice), TaskPolicy::Normal, *now);
            serve(s, r.resched, *now);
        }
        Op::Wake(t, c, sync) => {
            let sleeping: Vec<TaskId> = live
                .iter()
                .copied()
                .filter(|&p| s.task(p).state == TaskState::Sleeping)
                .collect();
            if !sleeping.is_empty() {
                let p = sleeping[t % sleeping.len()];
                let r = s.wake_up(p, c % n, sync, *now);
                serve(s, r.resched, *now);
            }
        }
        Op::WakeAny(t, c) => {
            // Spurious wakeups of running/queued tasks must be harmless.
            if !live.is_empty() {
                let p = live[t % live.len()];
                let r = s.wake_up(p, c % n, false, *now);
                serve(s, r.resched, *now);
            }
        }
        Op::Block(c) | Op::Exit(c) => {
            let cpu = c % n;
            if s.current(cpu).is_some() {
                if matches!(op, Op::Block(_)) {
                    s.block(cpu, *now);
                } else {
                    s.exit(cpu, *now);
                }
                serve(s, alloc::vec![cpu], *now);
            }
        }
        Op::Yield(c) => {
            let cpu = c % n;
            s.yield_current(cpu, *now);
            serve(s, alloc::vec![cpu], *now);
        }
        Op::Exec(c) => {
            let cpu = c % n;
            if s.sched_exec(cpu, *now).is_some() {
                serve(s, alloc::vec![cpu], *now);
            }
        }
        Op::BlockOnly(c) => {
            // Block without switching yet: the task stays curr until the
            // next schedule(); wakeups, ticks and forks may come first.
            let cpu = c % n;
            if s.current(cpu).is_some() {
                s.block(cpu, *now);
            }
        }
        Op::Tick(c) => {
            let cpu = c % n;
            let r = s.tick(cpu, *now);
            let mut v = r.resched;
            v.extend(r.migrations.iter().map(|m| m.to));
            serve(s, v, *now);
        }
        Op::TickAll => {
            *now += 1_000_000;
            for cpu in 0..n {
                let r = s.tick(cpu, *now);
                let mut v = r.resched;
                v.extend(r.migrations.iter().map(|m| m.to));
                serve(s, v, *now);
            }
        }
        Op::Schedule(c) => {
            let cpu = c % n;
            let sw = s.schedule(cpu, *now);
            serve(s, sw.resched, *now);
        }
        Op::Advance(us) => *now += u64::from(us) * 1000,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, max_shrink_iters: 200, ..ProptestConfig::default() })]

    /// Random event sequences keep every structural invariant: a task is on
    /// at most one runqueue, nr_running/load/avg sums match the entities,
    /// min_vruntime never decreases.
    #[test]
    fn random_sequences_keep_invariants(
        spec in arb_spec(256),
        eevdf in any::<bool>(),
        fmask in any::<u8>(),
        delay in any::<bool>(),
        ops in proptest::collection::vec(arb_op(), 1..80),
    ) {
        let topo = SchedTopo::synthetic(&spec).unwrap();
        let pick = if eevdf { PickPolicy::Eevdf } else { PickPolicy::Cfs };
        let mut features = features_from(fmask);
        if delay {
            features.push_str(",DELAY_DEQUEUE");
        }
        let cfg = SchedConfig::new(topo.nr_cpus, pick).with_features(&features).unwrap();
        let mut s = Scheduler::new(topo, cfg);
        let mut chk = InvariantChecker::default();
        let mut now = 1_000;
        for op in &ops {
            apply(&mut s, op, &mut now);
            if let Err(e) = chk.check(&s.core()) {
                prop_assert!(false, "after {:?}: {}", op, e);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, max_shrink_iters: 20, ..ProptestConfig::default() })]

    /// Two always-running tasks of weights w1, w2 on one CPU get CPU time in
    /// ratio w1:w2 within 1%, under CFS and EEVDF.
    #[test]
    fn weighted_share_within_one_percent(n1 in -8i32..=8, n2 in -8i32..=8, eevdf in any::<bool>()) {
        let pick = if eevdf { PickPolicy::Eevdf } else { PickPolicy::Cfs };
        let mut sim = Sim::new(crate::testutil::up(pick));
        let a = sim.spawn(0, n1, Behavior::CpuBound);
        let b = sim.spawn(0, n2, Behavior::CpuBound);
        sim.run_until(10_000_000_000);
        let want = LoadWeight::from_nice(n1).weight as f64 / LoadWeight::from_nice(n2).weight as f64;
        let got = sim.runtime(a) as f64 / sim.runtime(b) as f64;
        prop_assert!((got / want - 1.0).abs() < 0.01, "{:?} nice {}/{}: {} vs {}", pick, n1, n2, got, want);
    }

    /// No runnable task waits longer than a bound while its CPU runs others:
    /// bound = (ΣW / w + 1) · (sched_latency + 2 ticks), the time the others
    /// may legitimately take before its fair turn. The run lasts at least
    /// twice the largest bound (mixed nice values push it past 1 s), and a
    /// wait still going on at the end counts, so a starved task fails.
    #[test]
    fn runnable_tasks_wait_boundedly(
        spec in arb_spec(8),
        eevdf in any::<bool>(),
        delay in any::<bool>(),
        tasks in proptest::collection::vec((-3i32..=3, 0u8..3, 100u64..3_000, 100u64..20_000), 1..12),
    ) {
        let topo = SchedTopo::synthetic(&spec).unwrap();
        let n = topo.nr_cpus;
        let pick = if eevdf { PickPolicy::Eevdf } else { PickPolicy::Cfs };
        let cfg = SchedConfig::new(n, pick)
            .with_features(if delay { "DELAY_DEQUEUE" } else { "" })
            .unwrap();
        let t = cfg.tunables;
        let mut sim = Sim::new(Scheduler::new(topo, cfg));
        let mut ids = Vec::new();
        for (i, &(nice, kind, run_us, sleep_us)) in tasks.iter().enumerate() {
            let b = match kind {
                0 => Behavior::CpuBound,
                _ => Behavior::Periodic { run_ns: run_us * 1000, sleep_ns: sleep_us * 1000 },
            };
            ids.push((sim.spawn(i % n, nice, b), nice));
        }
        let total_w: u64 = ids.iter().map(|&(_, nice)| LoadWeight::from_nice(nice).weight).sum();
        let bound = |nice: i32| {
            (total_w / LoadWeight::from_nice(nice).weight + 1) * (t.sched_latency_ns + 2 * t.tick_ns)
        };
        let max_bound = ids.iter().map(|&(_, nice)| bound(nice)).max().unwrap_or(0);
        let run_ns = (2 * max_bound).max(1_000_000_000);
        let mut chk = InvariantChecker::default();
        sim.run_until_with(run_ns, &mut |s| chk.check(&s.sched.core())).map_err(TestCaseError::fail)?;
        for &(p, nice) in &ids {
            let task = sim.sched.task(p);
            let ongoing = if task.wait_start != 0 { sim.now.saturating_sub(task.wait_start) } else { 0 };
            let waited = task.stats.wait_max.max(ongoing);
            prop_assert!(waited <= bound(nice), "{:?}: task {:?} nice {} waited {} > {}", pick, p, nice, waited, bound(nice));
        }
    }

    /// Work conservation: with CPU-bound tasks all started on cpu0, the
    /// balancer never goes longer than the settling bound (PELT ramp-up to
    /// "overloaded" plus a few max balance intervals) without moving a task
    /// while a CPU is idle and another overloaded, and the load ends up
    /// spread one task per CPU.
    #[test]
    fn idle_cpus_do_not_stay_idle_next_to_overloaded_ones(
        spec in arb_spec(32),
        eevdf in any::<bool>(),
        extra in 0usize..8,
    ) {
        let topo = SchedTopo::synthetic(&spec).unwrap();
        let n = topo.nr_cpus;
        let max_iv_ms: u64 = (0..n).flat_map(|c| topo.sd(c).iter().map(|d| u64::from(d.max_interval_ms))).max().unwrap_or(1);
        let pick = if eevdf { PickPolicy::Eevdf } else { PickPolicy::Cfs };
        let mut sim = Sim::new(Scheduler::new(topo, SchedConfig::new(n, pick)));
        // All tasks start on cpu0: only balancing can spread them.
        let nr_tasks = (n / 2).max(1) + extra;
        for _ in 0..nr_tasks {
            sim.spawn_on(0, 0, Behavior::CpuBound);
        }
        sim.run_until(1_500_000_000);
        let bound_ns = (150 + 4 * max_iv_ms) * 1_000_000;
        prop_assert!(sim.worst_balance_stall_ns <= bound_ns,
            "{} CPUs, {} tasks: idle next to overloaded for {} ns without a migration (bound {})",
            n, nr_tasks, sim.worst_balance_stall_ns, bound_ns);
        let busy = (0..n).filter(|&c| sim.sched.current(c).is_some()).count();
        prop_assert_eq!(busy, nr_tasks.min(n), "final spread");
    }
}
