//! Periodic per-CPU kernel-worker noise, for any benchmark: one worker
//! pinned to every CPU wakes every `kworker_period_us`, runs
//! `kworker_work` compute units and sleeps again, like the kworkers of
//! intel_cpufreq's passive mode that seed 000 points at ("kworkers every
//! 0.004 s on all cores"), which give idle CPUs load and make an idle
//! prev CPU look busy to wake_affine. Off by default.
//!
//! The workers are ordinary pinned threads (`kthread_bind`-like: the
//! balancer never moves them); they are not marked as per-CPU kthreads for
//! select_idle_sibling's kthread shortcut.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::args::Args;
use crate::env::{Env, Space, Spawn};

/// The noise options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Noise {
    /// Period of each CPU's worker (ns); 0 = no noise.
    pub period_ns: u64,
    /// Work units per activation.
    pub work: u64,
}

impl Noise {
    /// Threads the noise workers take on a machine of `nr_cpus` CPUs.
    pub fn threads(&self, nr_cpus: usize) -> usize {
        if self.period_ns > 0 { nr_cpus } else { 0 }
    }

    /// Reads `kworker_period_us` (0 = off) and `kworker_work`.
    pub fn from_args(a: &mut Args<'_>) -> Result<Noise, String> {
        Ok(Noise {
            period_ns: a.u64("kworker_period_us", 0, 0..=10_000_000)? * 1000,
            work: a.u64("kworker_work", 2000, 1..=100_000_000)?,
        })
    }
}

/// Running noise workers.
pub struct NoiseWorkers<E: Env> {
    stop: Arc<AtomicBool>,
    handles: Vec<E::Join>,
}

impl<E: Env> NoiseWorkers<E> {
    /// Starts one worker per CPU (none when the period is 0).
    pub async fn start(env: &E, n: Noise) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        if n.period_ns > 0 {
            for cpu in 0..env.nr_cpus() {
                let (e, st) = (env.clone(), stop.clone());
                let body = async move {
                    loop {
                        e.sleep(n.period_ns).await;
                        if st.load(Ordering::Relaxed) {
                            break;
                        }
                        e.compute(n.work, 0).await;
                    }
                };
                let how = Spawn {
                    name: format!("kworker/{cpu}"),
                    pinned: Some(cpu),
                    space: Space::Kernel,
                    nice: 0,
                };
                handles.push(env.spawn(how, body).await);
            }
        }
        NoiseWorkers { stop, handles }
    }

    /// Stops every worker and waits for it (each ends within one period).
    pub async fn stop(self, env: &E) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles {
            env.join(h).await;
        }
    }
}
