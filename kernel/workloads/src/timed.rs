//! The measured phase of a benchmark that runs for a set time (netperf,
//! tbench): noise workers on, the start gate opened once every worker has
//! checked in, `duration_ns` on the environment's clock, then the workers
//! told to stop and joined. One copy for every such shape, so they all
//! measure the same interval the same way on both backends.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::env::Env;
use crate::gate::Gate;
use crate::interval::{Interval, IntervalEnd};
use crate::noise::{Noise, NoiseWorkers};

/// Runs the phase; returns the nanoseconds from the gate's opening to the
/// stop signal, and the interval's end taken after every worker has joined.
pub async fn run_for<E: Env>(
    env: &E,
    gate: &Gate<E>,
    noise: Noise,
    workers: Vec<E::Join>,
    stop: &AtomicBool,
    duration_ns: u64,
) -> (u64, IntervalEnd) {
    let noise = NoiseWorkers::start(env, noise).await;
    gate.wait_ready(env).await;
    let interval = Interval::start(env);
    let t0 = interval.t0();
    gate.open(env).await;
    while env.now_ns() < t0 + duration_ns {
        env.sleep(10_000_000).await;
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
