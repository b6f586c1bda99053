//! The benchmark shapes of the seed threads, written once.
//!
//! hackbench, schbench, netperf (TCP_RR, UDP_RR and four streams), tbench and the NAS OpenMP
//! team are `async fn`s over the [`Env`] trait: the kernel runs them on real
//! kernel threads (QEMU or bare metal, every operation a real kernel
//! operation), the host simulator runs them as simulated tasks on the same
//! `sched` crate with a per-CPU clock and a cost model. Both parse the same
//! arguments ([`args`]), emit the same records ([`json`]) and check the same
//! books, so a result differs between backends only by what the backend's
//! clock means. See docs/benchmarks.md and docs/simulator.md.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod args;
pub mod env;
pub mod gate;
pub mod hackbench;
pub mod interval;
pub mod json;
pub mod kernel_only;
pub mod nas;
pub mod netperf;
pub mod noise;
pub mod schbench;
pub mod tbench;
pub mod timed;
pub mod topology_record;

use alloc::boxed::Box;
use alloc::string::String;
use core::future::Future;
use core::task::{Context, Poll, Waker};

pub use args::Args;
pub use env::{Closed, CpuCounters, Env, Snapshot, Space, Spawn};

/// The experiments implemented here (the rest of the catalogue is
/// kernel-only: boot, stress, latency, fault tests).
pub const WORKLOADS: &[&str] = &["hackbench", "schbench", "netperf", "tbench", "nas"];

/// A benchmark with its parsed options, ready to run on any [`Env`].
#[derive(Clone, Debug)]
pub enum Workload {
    /// hackbench.
    Hackbench(hackbench::Params),
    /// schbench.
    Schbench(schbench::Params),
    /// netperf.
    Netperf(netperf::Params),
    /// tbench.
    Tbench(tbench::Params),
    /// NAS OpenMP team.
    Nas(nas::Params),
}

impl Workload {
    /// Parses experiment `name`'s arguments on a machine of `nr_cpus` CPUs
    /// (defaults such as one worker per CPU depend on it). None when `name`
    /// is not one of [`WORKLOADS`]; an error names the bad or unknown key,
    /// so a run fails before it starts.
    pub fn parse(name: &str, raw_args: &str, nr_cpus: usize) -> Option<Result<Workload, String>> {
        let mut a = Args::new(name, raw_args);
        let w = match name {
            "hackbench" => hackbench::Params::from_args(&mut a).map(Workload::Hackbench),
            "schbench" => schbench::Params::from_args(&mut a, nr_cpus).map(Workload::Schbench),
            "netperf" => netperf::Params::from_args(&mut a, nr_cpus).map(Workload::Netperf),
            "tbench" => tbench::Params::from_args(&mut a, nr_cpus).map(Workload::Tbench),
            "nas" => nas::Params::from_args(&mut a, nr_cpus).map(Workload::Nas),
            _ => return None,
        };
        Some(w.and_then(|w| a.finish().map(|()| w)))
    }

    /// What the benchmark allocates before it runs, so a host can refuse a run
    /// that cannot fit the guest's memory before booting it (a lower bound:
    /// message copies and per-thread bookkeeping are left out).
    pub fn footprint(&self, nr_cpus: usize) -> Footprint {
        let (threads, buffer_bytes, noise) = match self {
            Workload::Hackbench(p) => (
                p.tasks(),
                (p.groups * p.fds) as u64 * p.channel_bytes() as u64,
                p.noise,
            ),
            Workload::Schbench(p) => (p.messengers * (p.workers + 1), 0, p.noise),
            Workload::Netperf(p) => (
                2 * p.pairs,
                2 * p.pairs as u64 * netperf::SOCKET_BYTES as u64,
                p.noise,
            ),
            Workload::Tbench(p) => (
                2 * p.clients,
                2 * p.clients as u64 * tbench::SOCKET_BYTES as u64,
                p.noise,
            ),
            Workload::Nas(p) => (p.threads, p.threads as u64 * p.working_set, p.noise),
        };
        let noise_threads = if noise.period_ns > 0 { nr_cpus } else { 0 };
        Footprint {
            threads: (threads + noise_threads) as u64,
            buffer_bytes,
        }
    }

    /// Runs the benchmark in `env`; an error says which books did not balance.
    /// Each benchmark's state machine is boxed: it is large in debug builds,
    /// and kernel threads have 64 KiB stacks.
    pub async fn run<E: Env>(self, env: &E) -> Result<(), String> {
        match self {
            Workload::Hackbench(p) => Box::pin(hackbench::run(env, p)).await,
            Workload::Schbench(p) => Box::pin(schbench::run(env, p)).await,
            Workload::Netperf(p) => Box::pin(netperf::run(env, p)).await,
            Workload::Tbench(p) => Box::pin(tbench::run(env, p)).await,
            Workload::Nas(p) => Box::pin(nas::run(env, p)).await,
        }
    }
}

/// Memory a benchmark allocates up front ([`Workload::footprint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Threads it spawns (each with its own stack).
    pub threads: u64,
    /// Bytes of channel buffers and working sets it allocates.
    pub buffer_bytes: u64,
}

/// Runs a future whose every await completes at once (the kernel's
/// environment, where each operation blocks the calling thread until done).
/// Panics if the future ever returns `Pending`: that would be an
/// environment whose operations do not complete synchronously. The future's
/// state lives on the heap: a benchmark's state machine (large in debug
/// builds) would not fit a kernel thread's 64 KiB stack.
pub fn block_on_ready<F: Future>(f: F) -> F::Output {
    let mut f = Box::pin(f);
    let mut cx = Context::from_waker(Waker::noop());
    match f.as_mut().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("block_on_ready: an environment operation did not complete"),
    }
}
