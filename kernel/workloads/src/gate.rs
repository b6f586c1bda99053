//! The start gate of the benchmarks: hackbench's "ready" pipe and "wake" fd.
//! Every worker checks in and waits; the parent waits for all check-ins,
//! takes its start time, then releases everyone, so thread creation and
//! placement stay outside the timed interval. Two barriers of
//! `workers + 1`: the first is the check-in, the second the release (its
//! last arrival wakes every waiter at once, like the parent's write to the
//! wake fd).

use crate::env::Env;

/// Check-in and release barriers.
pub struct Gate<E: Env> {
    ready: E::Barrier,
    go: E::Barrier,
}

impl<E: Env> Gate<E> {
    /// A gate for `workers` workers and one parent.
    pub fn new(env: &E, workers: usize) -> Self {
        Gate {
            ready: env.barrier(workers + 1, 0),
            go: env.barrier(workers + 1, 0),
        }
    }

    /// A worker checks in and waits for the start.
    pub async fn check_in_and_wait(&self, env: &E) {
        env.barrier_wait(&self.ready).await;
        env.barrier_wait(&self.go).await;
    }

    /// The parent waits until every worker checked in.
    pub async fn wait_ready(&self, env: &E) {
        env.barrier_wait(&self.ready).await;
    }

    /// The parent starts everyone.
    pub async fn open(&self, env: &E) {
        env.barrier_wait(&self.go).await;
    }
}
