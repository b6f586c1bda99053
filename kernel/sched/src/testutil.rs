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
