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
//! (UA-like irregular work). Barriers sleep at once (no OMP spin-wait).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use super::args::{Args, compute};
use super::interval::Interval;
use crate::arch::percpu;
use crate::arch::qemu::ExitCode;
use crate::machine::Machine;
use crate::record::{Record, json_array};
use crate::sync::Barrier;
use crate::task::{self, SpawnOptions};
use crate::watchdog;

/// Runs the experiment.
pub fn run(_m: &Machine, a: &mut Args<'_>) -> Result<ExitCode, String> {
    let nr_cpus = percpu::online().count();
    let threads = a.u64("threads", nr_cpus as u64, 1..=4096)? as usize;
    let phases = a.u64("phases", 50, 1..=1_000_000)?;
    let work = a.u64("work", 20_000, 1..=1_000_000_000)?;
    let imbalance = a.u64("imbalance_pct", 0, 0..=1000)?;
    log::info!(
        "nas: {threads} threads, {phases} phases of {work} work units (imbalance {imbalance}%)"
    );
    let barrier = Arc::new(Barrier::new(threads));
    let done = Arc::new(AtomicU64::new(0));
    watchdog::arm(30_000_000_000);
    let interval = Interval::start();
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let (b, d) = (barrier.clone(), done.clone());
            let mine = if i % 2 == 1 {
                work + work * imbalance / 100
            } else {
                work
            };
            task::spawn(
                SpawnOptions {
                    name: alloc::format!("omp{i}"),
                    ..Default::default()
                },
                move || {
                    for _ in 0..phases {
                        core::hint::black_box(compute(mine));
                        d.fetch_add(mine, Ordering::Relaxed);
                        if b.wait() {
                            watchdog::progress();
                        }
                    }
                },
            )
        })
        .collect();
    let forked = interval.sched();
    for h in handles {
        h.join();
    }
    let elapsed = interval.elapsed_ns();
    let sched = interval.sched_json();
    watchdog::disarm();

    let units = done.load(Ordering::Relaxed);
    let expected = phases
        * (0..threads as u64)
            .map(|i| {
                if i % 2 == 1 {
                    work + work * imbalance / 100
                } else {
                    work
                }
            })
            .sum::<u64>();
    // Fork spread: where fork placement put the workers.
    let targets = &forked.fork_targets;
    let topo = &task::sched::core().shared.topo;
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
    Record::new("nas")
        .u64("threads", threads as u64)
        .u64("phases", phases)
        .u64("work", work)
        .u64("imbalance_pct", imbalance)
        .u64("time_ns", elapsed)
        .u64("work_units", units)
        .u64("mops", mops)
        .raw("fork_targets", &spread)
        .raw("fork_targets_per_node", &node_spread)
        .u64("fork_cpus_used", cpus_used as u64)
        .u64("fork_max_on_one_cpu", max_on_cpu)
        .raw("sched", &sched)
        .emit();
    log::info!(
        "nas: Time in seconds = {}.{:03}  Mop/s total = {mops}; forked onto {cpus_used} CPUs (at most {max_on_cpu} on one), per node {per_node:?}",
        elapsed / 1_000_000_000,
        elapsed / 1_000_000 % 1000
    );
    if units != expected {
        return Err(alloc::format!(
            "nas: {units} work units done, expected {expected}"
        ));
    }
    Ok(ExitCode::Success)
}
