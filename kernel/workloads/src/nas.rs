//! The shape of the NAS Parallel Benchmarks' OpenMP kernels (BT, LU, SP,
//! UA) that seed 002 (find_idlest_group on NUMA machines) measures: the
//! main thread forks `threads` workers, which run `phases` rounds of
//! compute separated by barriers (an OpenMP parallel region with implicit
//! barriers), then join. One straggler delays every phase, so the run time
//! exposes fork placement that stacks threads on one CPU or one node, and
//! balancing that is slow to fix it.
//!
//! Timed from the first fork to the last join, like a NAS run's wall time
//! (thread creation included: OpenMP creates its team at the first region).
//! The `nas` record gives the time, Mop/s-like throughput
//! (threads x phases x work / time), the fork spread (threads forked onto
//! each CPU and node, the most on one CPU) and the scheduler's decisions.
//! `imbalance_pct` gives every other thread that much more work per phase
//! (UA-like irregular work); `working_set_kib` is each thread's data (its
//! cache footprint in the simulator). `spin_us` is how long a thread that
//! reaches a barrier early polls for the release before it sleeps, as
//! libgomp's `GOMP_SPINCOUNT` busy wait (default 0: sleep at once, like
//! `OMP_WAIT_POLICY=passive`); a spinning thread keeps its CPU busy, and
//! one released while spinning needs no wakeup. With more threads than
//! CPUs the spin is cut to 1/3000 of it, as libgomp throttles its 300,000
//! polls (`OMP_WAIT_POLICY` unset) to 100 (`gomp_throttled_spin_count_var`).
//! `nice` is the team's nice value (`setpriority` on each worker; the main
//! thread and the kworkers stay at 0), so its threads can weigh as little as
//! a daemon next to the kworkers (seed 000, docs/seeds.md).

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::args::Args;
use crate::env::{Env, Spawn};
use crate::interval::Interval;
use crate::json::{Record, json_array};
use crate::noise::{Noise, NoiseWorkers};

/// The team's options.
#[derive(Clone, Debug)]
pub struct Params {
    /// OpenMP threads (default: one per CPU).
    pub threads: usize,
    /// Parallel regions (barrier-separated phases).
    pub phases: u64,
    /// Work units per thread per phase.
    pub work: u64,
    /// Extra work of every odd thread, in percent.
    pub imbalance_pct: u64,
    /// Each thread's data (bytes).
    pub working_set: u64,
    /// Busy wait at a barrier before sleeping (ns).
    pub spin_ns: u64,
    /// The team's nice value (the main thread's and the kworkers' stay 0).
    pub nice: i32,
    /// Per-CPU kworker noise.
    pub noise: Noise,
}

impl Params {
    /// Reads the experiment's arguments.
    pub fn from_args(a: &mut Args<'_>, nr_cpus: usize) -> Result<Params, String> {
        Ok(Params {
            threads: a.u64("threads", nr_cpus as u64, 1..=4096)? as usize,
            phases: a.u64("phases", 50, 1..=1_000_000)?,
            work: a.u64("work", 20_000, 1..=1_000_000_000)?,
            imbalance_pct: a.u64("imbalance_pct", 0, 0..=1000)?,
            working_set: a.u64("working_set_kib", 256, 0..=1 << 20)? * 1024,
            spin_ns: a.u64("spin_us", 0, 0..=10_000_000)? * 1000,
            nice: a.i64("nice", 0, -20..=19)? as i32,
            noise: Noise::from_args(a)?,
        })
    }

    /// The barrier spin the team uses on `nr_cpus` CPUs: libgomp's
    /// throttle when its threads outnumber them (100 of 300,000 polls).
    pub fn spin_ns_on(&self, nr_cpus: usize) -> u64 {
        if self.threads > nr_cpus {
            self.spin_ns * 100 / 300_000
        } else {
            self.spin_ns
        }
    }

    fn work_of(&self, thread: u64) -> u64 {
        if thread % 2 == 1 {
            self.work + self.work * self.imbalance_pct / 100
        } else {
            self.work
        }
    }
}

/// Runs the team and emits its `nas` record.
pub async fn run<E: Env>(env: &E, p: Params) -> Result<(), String> {
    let (threads, phases, work, imbalance) = (p.threads, p.phases, p.work, p.imbalance_pct);
    env.check_threads(threads + p.noise.threads(env.nr_cpus()))
        .map_err(|e| format!("nas: {threads} threads: {e}"))?;
    let spin_us = p.spin_ns / 1000;
    let spin_ns = p.spin_ns_on(env.topo().cpus.len());
    env.log(format_args!(
        "nas: {threads} threads, {phases} phases of {work} work units (imbalance {imbalance}%), barrier spin {spin_ns} ns"
    ));
    let barrier = Arc::new(env.barrier(threads, spin_ns));
    let done = Arc::new(AtomicU64::new(0));
    let noise = NoiseWorkers::start(env, p.noise).await;
    let interval = Interval::start(env);
    let mut handles = Vec::with_capacity(threads);
    for i in 0..threads {
        let (e, b, d) = (env.clone(), barrier.clone(), done.clone());
        let mine = p.work_of(i as u64);
        let ws = p.working_set;
        let body = async move {
            for _ in 0..phases {
                e.compute(mine, ws).await;
                d.fetch_add(mine, Ordering::Relaxed);
                if e.barrier_wait(&b).await {
                    e.progress();
                }
            }
        };
        let how = Spawn {
            nice: p.nice,
            ..Spawn::named(format!("omp{i}"))
        };
        handles.push(env.spawn(how, body).await);
    }
    let forked = interval.sched(env);
    for h in handles {
        env.join(h).await;
    }
    let end = interval.end(env);
    let elapsed = end.elapsed_ns;
    noise.stop(env).await;

    let units = done.load(Ordering::Relaxed);
    let expected = phases * (0..threads as u64).map(|i| p.work_of(i)).sum::<u64>();
    // Fork spread: where fork placement put the workers.
    let targets = &forked.fork_targets;
    let topo = env.topo();
    let nodes = topo
        .cpus
        .iter()
        .map(|c| c.node)
        .max()
        .map_or(1, |n| n as usize + 1);
    let mut per_node = alloc::vec![0u64; nodes];
    for (cpu, &n) in targets.iter().enumerate() {
        per_node[topo.cpus[cpu].node as usize] += n;
    }
    let max_on_cpu = targets.iter().copied().max().unwrap_or(0);
    let cpus_used = targets.iter().filter(|&&n| n > 0).count();
    let spread = json_array(targets.iter(), |w, n| write!(w, "{n}"));
    let node_spread = json_array(per_node.iter(), |w, n| write!(w, "{n}"));
    let mops = units * 1000 / elapsed.max(1); // units per µs = M units/s
    let mut rec = Record::new("nas").u64("threads", threads as u64);
    if p.nice != 0 {
        // Only when set, so the records of runs without it keep their shape.
        rec = rec.raw("nice", &format!("{}", p.nice));
    }
    let rec = rec
        .u64("phases", phases)
        .u64("work", work)
        .u64("imbalance_pct", imbalance)
        .u64("working_set_kib", p.working_set / 1024)
        .u64("spin_us", spin_us)
        .u64("spin_ns_used", spin_ns)
        .u64("kworker_period_us", p.noise.period_ns / 1000)
        .u64("time_ns", elapsed)
        .u64("work_units", units)
        .u64("mops", mops)
        .raw("fork_targets", &spread)
        .raw("fork_targets_per_node", &node_spread)
        .u64("fork_cpus_used", cpus_used as u64)
        .u64("fork_max_on_one_cpu", max_on_cpu)
        .opt_u64("heap_allocs", end.heap_allocs)
        .raw("sched", &end.sched_json());
    env.emit(&rec.finish());
    env.log(format_args!(
        "nas: Time in seconds = {}.{:03}  Mop/s total = {mops}; forked onto {cpus_used} CPUs (at most {max_on_cpu} on one), per node {per_node:?}",
        elapsed / 1_000_000_000,
        elapsed / 1_000_000 % 1000
    ));
    if units != expected {
        return Err(format!("nas: {units} work units done, expected {expected}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(args: &str) -> Params {
        Params::from_args(&mut Args::new("nas", args), 8).expect("params")
    }

    #[test]
    fn spin_is_libgomps_throttled_count_when_threads_outnumber_cpus() {
        // 1.5 ms for 300,000 polls; throttled, 100 of them: 500 ns.
        let p = params("spin_us:1500");
        assert_eq!(p.threads, 8, "one thread per CPU by default");
        assert_eq!(p.spin_ns_on(8), 1_500_000);
        assert_eq!(p.spin_ns_on(16), 1_500_000);
        let over = params("threads:9,spin_us:1500");
        assert_eq!(over.spin_ns_on(8), 500);
        assert_eq!(params("threads:9").spin_ns_on(8), 0);
    }
}
