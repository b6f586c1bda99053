//! The measured phase of a benchmark that runs for a set time (netperf,
//! tbench): noise workers on, the start gate opened once every worker has
//! checked in, an optional unmeasured warmup (dbench's `--warmup`), then
//! `duration_ns` on the environment's clock, then the workers told to stop
//! and joined. One copy for every such shape, so they all measure the same
//! interval the same way on both backends.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::env::Env;
use crate::gate::Gate;
use crate::interval::{Interval, IntervalEnd};
use crate::noise::{Noise, NoiseWorkers};

/// How long a timed run lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phases {
    /// Run, unmeasured, after the gate opens (dbench's warmup: the workers
    /// run as in the measurement; the workload's counts and the interval's
    /// scheduler statistics leave it out, a backend's own whole-run
    /// statistics such as the simulator's `sim_stats` do not).
    pub warmup_ns: u64,
    /// The measured interval after the warmup.
    pub duration_ns: u64,
}

/// Sleeps in steps of at most 10 ms until `deadline` on the env's clock.
async fn sleep_until<E: Env>(env: &E, deadline: u64) {
    loop {
        let now = env.now_ns();
        if now >= deadline {
            return;
        }
        env.sleep((deadline - now).min(10_000_000)).await;
    }
}

/// Runs the phase; `at_warm` is called when the warmup ends, right after
/// the interval starts (with no warmup: before the gate opens, when every
/// count is still zero), where the workload snapshots its own counters. Returns the nanoseconds from the warmup's end to the stop
/// signal, and the interval's end (scheduler statistics from the warmup's
/// end) taken after every worker has joined.
pub async fn run_for<E: Env>(
    env: &E,
    gate: &Gate<E>,
    noise: Noise,
    workers: Vec<E::Join>,
    stop: &AtomicBool,
    phases: Phases,
    at_warm: impl FnOnce(),
) -> (u64, IntervalEnd) {
    let noise = NoiseWorkers::start(env, noise).await;
    gate.wait_ready(env).await;
    let interval = if phases.warmup_ns == 0 {
        // Before the gate opens every count is still zero: the snapshot
        // and the interval's start are the same instant.
        let interval = Interval::start(env);
        at_warm();
        gate.open(env).await;
        interval
    } else {
        let t_open = env.now_ns();
        gate.open(env).await;
        sleep_until(env, t_open + phases.warmup_ns).await;
        // In the kernel the workers run on between the two calls: an
        // operation may finish after the interval's start and before the
        // snapshot (uncounted, microseconds of a run); in the simulator both
        // are the same instant.
        let interval = Interval::start(env);
        at_warm();
        interval
    };
    let t0 = interval.t0();
    if phases.warmup_ns == 0 {
        while env.now_ns() < t0 + phases.duration_ns {
            env.sleep(10_000_000).await;
        }
    } else {
        sleep_until(env, t0 + phases.duration_ns).await;
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed = interval.elapsed_ns(env);
    for w in workers {
        env.join(w).await;
    }
    let end = interval.end(env);
    noise.stop(env).await;
    (elapsed, end)
}
