//! Shared helpers for the unit and property tests.

use crate::CpuId;
use crate::config::{PickPolicy, SchedConfig};
use crate::sched::Scheduler;
use crate::task::{TaskId, TaskPolicy};
use crate::topo::SchedTopo;
use topology::SyntheticSpec;

/// `sockets x cores x threads` with `nodes` NUMA nodes (one LLC per socket).
pub fn spec(sockets: u32, cores: u32, threads: u32, nodes: u32) -> SyntheticSpec {
    SyntheticSpec {
        nodes,
        ..SyntheticSpec::simple(sockets, cores, threads)
    }
}

/// A fair scheduler on a synthetic machine with a feature string.
pub fn sched(s: &SyntheticSpec, pick: PickPolicy, features: &str) -> Scheduler {
    let topo = SchedTopo::synthetic(s).expect("topology");
    let cfg = SchedConfig::new(topo.nr_cpus, pick)
        .with_features(features)
        .expect("features");
    Scheduler::new(topo, cfg)
}

/// One CPU.
pub fn up(pick: PickPolicy) -> Scheduler {
    sched(&spec(1, 1, 1, 1), pick, "")
}

/// The 160-CPU machine of the seeds: 4 sockets x 20 cores x 2 threads, 4 nodes.
pub fn big160() -> SyntheticSpec {
    spec(4, 20, 2, 4)
}

/// A running task on `cpu` (bound creation + schedule).
pub fn run_on<P: crate::SchedPolicy>(s: &mut Scheduler<P>, cpu: CpuId, now: u64) -> TaskId {
    let t = s
        .wake_up_new_task_on(None, cpu, 0, TaskPolicy::Normal, now)
        .task;
    s.schedule(cpu, now);
    t
}
/// A task that last ran on `cpu` and now sleeps there.
pub fn sleeper_on<P: crate::SchedPolicy>(s: &mut Scheduler<P>, cpu: CpuId, now: u64) -> TaskId {
    let t = s
        .wake_up_new_task_on(None, cpu, 0, TaskPolicy::Normal, now)
        .task;
    let sw = s.schedule(cpu, now);
    assert_eq!(sw.next, Some(t), "sleeper_on needs an idle cpu{cpu}");
    s.block(cpu, now + 1000);
    s.schedule(cpu, now + 1000);
    t
}
pub fn set_load(s: &mut Scheduler, cpu: CpuId, blocked_incl: u64, runnable: u64) {
    let avg = &mut s.core().rqs[cpu].cfs.avg;
    avg.load_avg = blocked_incl;
    avg.runnable_load_avg = runnable;
}
pub fn two_sockets(features: &str) -> Scheduler {
    sched(&spec(2, 4, 1, 1), PickPolicy::Cfs, features)
}

/// Load conservation at one instant per runqueue: `(Σ cfs_rq.avg.load_avg,
/// Σ se.avg.load_avg)` with every entity first brought, on a copy, to its
/// runqueue's `last_update_time` by `__update_load_avg_se` (queued entities
/// accumulate, sleeping ones decay). A stored entity average is only as
/// recent as its last update, while the queue's sum has moved on; compared
/// unprojected, a queue full of waiting runnable tasks reads higher.
/// Detached entities (`last_update_time == 0`) are counted in the third field.
pub fn load_sums_at_queue_clocks(core: &crate::core::SchedCore<'_>) -> (u64, u64, u64) {
    let n = core.topo.nr_cpus;
    let rq_sum = (0..n).map(|c| core.rqs[c].cfs.avg.load_avg).sum();
    let mut se_sum = 0;
    let mut detached = 0;
    for t in core.tasks.iter() {
        if t.se.avg.last_update_time == 0 {
            detached += 1;
            continue;
        }
        let cfs = &core.rqs[t.cpu].cfs;
        let mut a = t.se.avg;
        let running = cfs.curr == Some(t.id);
        crate::pelt::update_entity_load_avg(
            &mut a,
            cfs.avg.last_update_time,
            t.se.load.weight,
            t.se.on_rq,
            running,
        );
        se_sum += a.load_avg;
    }
    (rq_sum, se_sum, detached)
}

/// Fails the test if the core's structural invariants do not hold.
pub fn check_invariants<P: crate::SchedPolicy>(s: &Scheduler<P>) {
    crate::sim::InvariantChecker::default()
        .check(&s.core())
        .unwrap_or_else(|e| panic!("invariant: {e}"));
}
