//! The measured interval of a benchmark experiment: when it started, the
//! scheduler's statistics and every CPU's switch/migration counters at that
//! moment, so the record can report what happened during the interval only.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::Ordering;

use sched::stats::SchedStats;

use crate::arch::{percpu, time};
use crate::record::json_array;
use crate::task;

/// Counters at the start of a measured interval.
pub struct Interval {
    before: SchedStats,
    /// (cpu, context switches, migrations in) at the start.
    cpus: Vec<(u32, u64, u64)>,
    /// Start time (ns, TSC).
    pub t0: u64,
}

fn counters(cpu: u32) -> (u64, u64) {
    let cs = task::sched::cpu_state(cpu as usize);
    (
        cs.switches.load(Ordering::Relaxed),
        cs.migrations_in.load(Ordering::Relaxed),
    )
}

impl Interval {
    /// Starts the interval now (the clock is read last).
    pub fn start() -> Interval {
        let cpus = percpu::online()
            .map(|p| {
                let (sw, mig) = counters(p.cpu);
                (p.cpu, sw, mig)
            })
            .collect();
        let before = task::sched::stats();
        Interval {
            before,
            cpus,
            t0: time::now_ns(),
        }
    }

    /// Nanoseconds since the start.
    pub fn elapsed_ns(&self) -> u64 {
        time::now_ns() - self.t0
    }

    /// The scheduler's statistics since the start.
    pub fn sched(&self) -> SchedStats {
        task::sched::stats().since(&self.before)
    }

    /// The statistics since the start as JSON (a record's `sched` field).
    pub fn sched_json(&self) -> String {
        let mut s = String::new();
        let _ = self.sched().write_json(&mut s);
        s
    }

    /// Per CPU, context switches and migrations in since the start, as a
    /// JSON array (a record's `per_cpu` field).
    pub fn per_cpu_json(&self) -> String {
        json_array(self.cpus.iter(), |w, &(cpu, sw0, mig0)| {
            let (sw, mig) = counters(cpu);
            write!(
                w,
                "{{\"cpu\":{cpu},\"context_switches\":{},\"migrations_in\":{}}}",
                sw - sw0,
                mig - mig0
            )
        })
    }
}
