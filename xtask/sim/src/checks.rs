//! Invariants checked as the simulation runs (every tick period): the
//! scheduler core's structural invariants (`sched::sim::InvariantChecker`:
//! queued tasks runnable and on their CPU, load sums, min_vruntime
//! monotonic, ...), the engine's view of each CPU's current task against
//! the core's, and work conservation (how long a CPU stayed idle while
//! another had tasks waiting: reported, since Linux is not strictly
//! work-conserving), and each CPU's speed against the SMT rule (its own and
//! its siblings' loads: running, spinning in a `pause` loop, idle). A
//! violation becomes a `sim_violation` record and fails
//! the run; it never panics the simulator.

use sched::sim::InvariantChecker;
use workloads::json::Record;

use crate::engine::Engine;

/// At most this many violation records per run.
const MAX_REPORTED: usize = 100;

pub(crate) struct Checks {
    core: InvariantChecker,
    found: Vec<(u64, String)>,
    pub checks: u64,
    pub violations: u64,
    idle_since: Vec<Option<u64>>,
    waiting_since: Vec<Option<u64>>,
    pub worst_idle_while_overloaded_ns: u64,
}

impl Checks {
    pub fn new(nr: usize) -> Checks {
        Checks {
            core: InvariantChecker::default(),
            found: Vec::new(),
            checks: 0,
            violations: 0,
            idle_since: vec![None; nr],
            waiting_since: vec![None; nr],
            worst_idle_while_overloaded_ns: 0,
        }
    }

    fn violation(&mut self, t: u64, msg: String) {
        self.violations += 1;
        if self.found.len() < MAX_REPORTED {
            self.found.push((t, msg));
        }
    }

    pub fn check(&mut self, e: &Engine) {
        self.checks += 1;
        let now = e.now;
        let core = e.sched.core();
        if let Err(m) = self.core.check(&core) {
            self.violation(now, format!("core: {m}"));
        }
        for (cpu, c) in e.cpus.iter().enumerate() {
            let rq = &core.rqs[cpu];
            if rq.curr != c.curr {
                self.violation(
                    now,
                    format!(
                        "cpu{cpu}: the core runs {:?}, the simulated CPU {:?}",
                        rq.curr, c.curr
                    ),
                );
            }
            let want = e.smt_rate(cpu);
            if c.rate != want {
                self.violation(
                    now,
                    format!(
                        "cpu{cpu}: runs at {} per mille, the SMT rule gives {want}",
                        c.rate
                    ),
                );
            }
            let idle = rq.curr.is_none() && rq.nr_running() == 0;
            // Delayed-dequeue tasks are queued but asleep: not waiting.
            let waiting = rq.cfs.nr_runnable() >= 2;
            self.idle_since[cpu] = if idle {
                Some(self.idle_since[cpu].unwrap_or(now))
            } else {
                None
            };
            self.waiting_since[cpu] = if waiting {
                Some(self.waiting_since[cpu].unwrap_or(now))
            } else {
                None
            };
        }
        let oldest_idle = self.idle_since.iter().flatten().min();
        let oldest_waiting = self.waiting_since.iter().flatten().min();
        if let (Some(&i), Some(&w)) = (oldest_idle, oldest_waiting) {
            self.worst_idle_while_overloaded_ns =
                self.worst_idle_while_overloaded_ns.max(now - i.max(w));
        }
    }

    pub fn violation_records(&self) -> Vec<String> {
        self.found
            .iter()
            .map(|(t, m)| {
                Record::new("sim_violation")
                    .u64("t_ns", *t)
                    .str("message", m)
                    .finish()
            })
            .collect()
    }
}
