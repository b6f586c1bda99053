//! A discrete-event host driver over the core: tasks that run and sleep,
//! per-CPU ticks, immediate IPIs. Used by the property and scenario tests and
//! (feature `sim`) by the host simulator.
//!
//! Time advances event by event; every core call gets the event time as
//! `now`. A CPU's running task consumes its current burst; when the burst
//! ends the task wakes its partner (if any), then blocks for its sleep time
//! (or exits). Reschedule requests are served at once (an IPI with zero
//! latency). Preempted bursts keep their remaining time.

pub mod invariants;

use crate::CpuId;
use crate::policy::SchedPolicy;
use crate::sched::Scheduler;
use crate::task::{TaskId, TaskPolicy, TaskState};
use alloc::collections::{BinaryHeap, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Reverse;
pub use invariants::InvariantChecker;

#[cfg(test)]
mod tests;

/// What a simulated task does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behavior {
    /// Never blocks.
    CpuBound,
    /// Runs `run_ns` of CPU, then sleeps `sleep_ns`, forever.
    Periodic {
        /// CPU burst.
        run_ns: u64,
        /// Sleep.
        sleep_ns: u64,
    },
    /// Runs `run_ns`, then wakes its partner (WF_SYNC if `sync`) and blocks
    /// until woken (a pipe ping-pong).
    PingPong {
        /// CPU burst per message.
        run_ns: u64,
        /// Use WF_SYNC.
        sync: bool,
    },
    /// Runs `run_ns` then exits.
    Finite {
        /// Total CPU time.
        run_ns: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Tick(CpuId),
    BurstEnd(CpuId, u64),
    Wake(TaskId),
}

#[derive(Clone, Debug)]
struct SimTask {
    behavior: Behavior,
    partner: Option<TaskId>,
    remaining: u64,
}

/// Hooks observed after every event (for invariant checks in tests).
pub type Observer<P> = fn(&Sim<P>) -> Result<(), alloc::string::String>;

/// The simulator.
pub struct Sim<P: SchedPolicy> {
    /// The scheduler under test.
    pub sched: Scheduler<P>,
    /// Current time (ns).
    pub now: u64,
    events: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
    tasks: Vec<Option<SimTask>>,
    generation: Vec<u64>,
    since: Vec<u64>,
    /// Per CPU: start of the current continuous idle period.
    pub idle_since: Vec<Option<u64>>,
    /// Per CPU: start of the current continuous nr_running >= 2 period.
    pub overloaded_since: Vec<Option<u64>>,
    /// Longest time any CPU stayed idle while another CPU stayed overloaded.
    pub worst_idle_while_overloaded_ns: u64,
    /// Longest such period without any balancing migration in between:
    /// how long the balancer made no progress toward work conservation.
    pub worst_balance_stall_ns: u64,
    /// Time of the last balancing (periodic, newidle or active) migration.
    pub last_balance_migration: u64,
    /// Number of events processed.
    pub nr_events: u64,
}

impl<P: SchedPolicy> Sim<P> {
    /// A simulator with every CPU ticking from time 0.
    pub fn new(sched: Scheduler<P>) -> Self {
        let n = sched.core().nr_cpus();
        let mut s = Sim {
            sched,
            now: 0,
            events: BinaryHeap::new(),
            seq: 0,
            tasks: Vec::new(),
            generation: vec![0; n],
            since: vec![0; n],
            idle_since: vec![Some(0); n],
            overloaded_since: vec![None; n],
            worst_idle_while_overloaded_ns: 0,
            worst_balance_stall_ns: 0,
            last_balance_migration: 0,
            nr_events: 0,
        };
        let tick = s.sched.shared.cfg.tunables.tick_ns;
        for cpu in 0..n {
            s.push(tick, Event::Tick(cpu));
        }
        s
    }

    fn push(&mut self, t: u64, e: Event) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, e)));
    }

    fn sim_task(&mut self, p: TaskId) -> &mut SimTask {
        self.tasks[p.0 as usize].as_mut().expect("unknown sim task")
    }

    /// Fork a task from `cpu` (its current task is the parent) now.
    pub fn spawn(&mut self, cpu: CpuId, nice: i32, behavior: Behavior) -> TaskId {
        let parent = self.sched.current(cpu);
        let r = self
            .sched
            .wake_up_new_task(parent, cpu, nice, TaskPolicy::Normal, self.now);
        let i = r.task.0 as usize;
        if self.tasks.len() <= i {
            self.tasks.resize(i + 1, None);
        }
        let remaining = burst(behavior);
        self.tasks[i] = Some(SimTask {
            behavior,
            partner: None,
            remaining,
        });
        self.serve(r.resched);
        r.task
    }

    /// Create a task bound to `cpu` at creation (no fork placement), as a
    /// kernel creating per-CPU workers would; balancing may move it later.
    pub fn spawn_on(&mut self, cpu: CpuId, nice: i32, behavior: Behavior) -> TaskId {
        let r = self
            .sched
            .wake_up_new_task_on(None, cpu, nice, TaskPolicy::Normal, self.now);
        let i = r.task.0 as usize;
        if self.tasks.len() <= i {
            self.tasks.resize(i + 1, None);
        }
        self.tasks[i] = Some(SimTask {
            behavior,
            partner: None,
            remaining: burst(behavior),
        });
        self.serve(r.resched);
        r.task
    }

    /// Pair two PingPong tasks; `a` wakes `b` and vice versa.
    pub fn pair(&mut self, a: TaskId, b: TaskId) {
        self.sim_task(a).partner = Some(b);
        self.sim_task(b).partner = Some(a);
    }

    /// Put a (running or queued) task to sleep at its next burst end and
    /// keep it sleeping: used to start PingPong pairs with one side blocked.
    pub fn block_at_start(&mut self, p: TaskId) {
        self.sim_task(p).remaining = 0;
    }

    fn serve(&mut self, cpus: impl IntoIterator<Item = CpuId>) {
        let mut q: VecDeque<CpuId> = cpus.into_iter().collect();
        while let Some(cpu) = q.pop_front() {
            for c in self.reschedule(cpu) {
                if !q.contains(&c) {
                    q.push_back(c);
                }
            }
        }
    }

    /// Account the running task, call `schedule()`, start the next burst.
    fn reschedule(&mut self, cpu: CpuId) -> Vec<CpuId> {
        let now = self.now;
        if let Some(prev) = self.sched.current(cpu) {
            let ran = now - self.since[cpu];
            if let Some(Some(st)) = self.tasks.get_mut(prev.0 as usize) {
                st.remaining = st.remaining.saturating_sub(ran);
            }
        }
        let sw = self.sched.schedule(cpu, now);
        self.generation[cpu] += 1;
        self.since[cpu] = now;
        if let Some(n) = sw.next {
            let rem = self.tasks[n.0 as usize]
                .as_ref()
                .map_or(u64::MAX / 4, |t| t.remaining);
            let g = self.generation[cpu];
            self.push(now.saturating_add(rem), Event::BurstEnd(cpu, g));
        }
        let mut more = sw.resched.to_vec();
        for m in &sw.migrations {
            more.push(m.to);
            self.last_balance_migration = now;
        }
        more
    }

    fn burst_end(&mut self, cpu: CpuId) {
        let Some(p) = self.sched.current(cpu) else {
            return;
        };
        let now = self.now;
        let (behavior, partner) = {
            let st = self.sim_task(p);
            (st.behavior, st.partner)
        };
        let mut resched = Vec::new();
        // The burst is fully consumed: the next reschedule must not charge it again.
        self.since[cpu] = now;
        match behavior {
            Behavior::CpuBound => {
                self.sim_task(p).remaining = u64::MAX / 4;
            }
            Behavior::Periodic { run_ns, sleep_ns } => {
                self.sim_task(p).remaining = run_ns;
                self.sched.block(cpu, now);
                self.push(now + sleep_ns, Event::Wake(p));
            }
            Behavior::PingPong { run_ns, sync } => {
                self.sim_task(p).remaining = run_ns;
                if let Some(q) = partner
                    && self.sched.task(q).state == TaskState::Sleeping
                {
                    resched.extend(self.sched.wake_up(q, cpu, sync, now).resched);
                }
                self.sched.block(cpu, now);
            }
            Behavior::Finite { .. } => {
                self.sched.exit(cpu, now);
                self.tasks[p.0 as usize] = None;
            }
        }
        resched.push(cpu);
        self.serve(resched);
    }

    fn track_balance(&mut self) {
        let now = self.now;
        let n = self.sched.core().nr_cpus();
        for cpu in 0..n {
            let rq = &self.sched.core().rqs[cpu];
            let idle = rq.curr.is_none();
            let over = rq.nr_running() >= 2;
            self.idle_since[cpu] = if idle {
                Some(self.idle_since[cpu].unwrap_or(now))
            } else {
                None
            };
            self.overloaded_since[cpu] = if over {
                Some(self.overloaded_since[cpu].unwrap_or(now))
            } else {
                None
            };
        }
        let oldest_idle = self.idle_since.iter().flatten().min().copied();
        let oldest_over = self.overloaded_since.iter().flatten().min().copied();
        if let (Some(i), Some(o)) = (oldest_idle, oldest_over) {
            self.worst_idle_while_overloaded_ns =
                self.worst_idle_while_overloaded_ns.max(now - i.max(o));
            let since = i.max(o).max(self.last_balance_migration);
            self.worst_balance_stall_ns = self.worst_balance_stall_ns.max(now - since);
        }
    }

    /// Process one event; false when there is none.
    pub fn step(&mut self) -> bool {
        let Some(Reverse((t, _, e))) = self.events.pop() else {
            return false;
        };
        self.now = t;
        self.nr_events += 1;
        match e {
            Event::Tick(cpu) => {
                let r = self.sched.tick(cpu, t);
                let mut cpus = r.resched;
                if r.need_resched && !cpus.contains(&cpu) {
                    cpus.push(cpu);
                }
                cpus.extend(r.migrations.iter().map(|m| m.to));
                if !r.migrations.is_empty() {
                    self.last_balance_migration = t;
                }
                self.serve(cpus);
                let tick = self.sched.shared.cfg.tunables.tick_ns;
                self.push(t + tick, Event::Tick(cpu));
                if cpu + 1 == self.sched.core().nr_cpus() {
                    self.track_balance();
                }
            }
            Event::BurstEnd(cpu, g) => {
                if g == self.generation[cpu] {
                    self.burst_end(cpu);
                }
            }
            Event::Wake(p) => {
                if self
                    .sched
                    .try_task(p)
                    .is_some_and(|t| t.state == TaskState::Sleeping)
                {
                    let waker_cpu = self.sched.task(p).cpu;
                    let r = self.sched.wake_up(p, waker_cpu, false, t);
                    self.serve(r.resched);
                }
            }
        }
        true
    }

    /// Run until `t_end`, calling `observe` after every event.
    pub fn run_until_with(
        &mut self,
        t_end: u64,
        observe: &mut dyn FnMut(&Sim<P>) -> Result<(), alloc::string::String>,
    ) -> Result<(), alloc::string::String> {
        while self
            .events
            .peek()
            .is_some_and(|Reverse((t, _, _))| *t <= t_end)
        {
            self.step();
            observe(self)?;
        }
        self.now = t_end;
        Ok(())
    }

    /// Run until `t_end`.
    pub fn run_until(&mut self, t_end: u64) {
        while self
            .events
            .peek()
            .is_some_and(|Reverse((t, _, _))| *t <= t_end)
        {
            self.step();
        }
        self.now = t_end;
    }

    /// CPU time received by `p` so far, including its current run.
    pub fn runtime(&self, p: TaskId) -> u64 {
        let t = self.sched.task(p);
        let mut r = t.se.sum_exec_runtime;
        if self.sched.current(t.cpu) == Some(p) {
            r += self.now.saturating_sub(t.se.exec_start);
        }
        r
    }
}

fn burst(b: Behavior) -> u64 {
    match b {
        Behavior::CpuBound => u64::MAX / 4,
        Behavior::Periodic { run_ns, .. }
        | Behavior::PingPong { run_ns, .. }
        | Behavior::Finite { run_ns } => run_ns,
    }
}
