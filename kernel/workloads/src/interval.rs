//! The measured interval of a benchmark: the scheduler's counters at its
//! start, so the record reports what happened during the interval only
//! (`sched` and `per_cpu` fields), on either backend.

use alloc::string::String;
use core::fmt::Write;

use sched::stats::SchedStats;

use crate::env::{Env, Snapshot};
use crate::json::json_array;

/// Counters at the start of a measured interval.
pub struct Interval {
    before: Snapshot,
    /// Heap allocations at the start, read after the snapshot (whose own
    /// allocations are not the interval's).
    allocs_before: Option<u64>,
}

impl Interval {
    /// Starts the interval now.
    pub fn start<E: Env>(env: &E) -> Interval {
        let before = env.snapshot();
        Interval {
            before,
            allocs_before: env.heap_allocations(),
        }
    }

    /// Start time (ns, the environment's clock).
    pub fn t0(&self) -> u64 {
        self.before.now_ns
    }

    /// Nanoseconds since the start.
    pub fn elapsed_ns<E: Env>(&self, env: &E) -> u64 {
        env.now_ns().saturating_sub(self.before.now_ns)
    }

    /// The end of the interval: statistics and per-CPU counters since the start.
    pub fn end<E: Env>(&self, env: &E) -> IntervalEnd {
        // Read before the snapshot allocates.
        let allocs = env.heap_allocations();
        let now = env.snapshot();
        let per_cpu = json_array(now.cpus.iter(), |w, c| {
            let b = self.before.cpus.iter().find(|b| b.cpu == c.cpu);
            let (sw0, mig0, mm0) =
                b.map_or((0, 0, 0), |b| (b.switches, b.migrations_in, b.mm_switches));
            write!(
                w,
                "{{\"cpu\":{},\"context_switches\":{},\"migrations_in\":{},\"mm_switches\":{}}}",
                c.cpu,
                c.switches - sw0,
                c.migrations_in - mig0,
                c.mm_switches - mm0
            )
        });
        IntervalEnd {
            elapsed_ns: now.now_ns.saturating_sub(self.before.now_ns),
            stats: now.stats.since(&self.before.stats),
            per_cpu_json: per_cpu,
            heap_allocs: allocs.zip(self.allocs_before).map(|(a, b)| a - b),
        }
    }

    /// The scheduler's statistics since the start.
    pub fn sched<E: Env>(&self, env: &E) -> SchedStats {
        env.snapshot().stats.since(&self.before.stats)
    }
}

/// What happened during an interval.
pub struct IntervalEnd {
    /// Its length (ns).
    pub elapsed_ns: u64,
    /// Scheduler statistics over it.
    pub stats: SchedStats,
    /// Per CPU, context switches, migrations in and address-space switches,
    /// as a JSON array.
    pub per_cpu_json: String,
    /// Heap allocations during it, where the environment counts them
    /// ([`Env::heap_allocations`]).
    pub heap_allocs: Option<u64>,
}

impl IntervalEnd {
    /// The statistics as JSON (a record's `sched` field).
    pub fn sched_json(&self) -> String {
        let mut s = String::new();
        let _ = self.stats.write_json(&mut s);
        s
    }
}
