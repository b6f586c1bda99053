//! `Scheduler`: the entry points the kernel (or the host simulator) calls.
//!
//! Each call passes the CPU it runs on and the current time, mutates the
//! core under the caller's lock, and returns decisions: which task a CPU
//! runs next, which CPUs need a reschedule IPI, which tasks moved. Mirrors
//! `wake_up_new_task()`, `try_to_wake_up()`, `__schedule()`
//! (`pick_next_task_fair` + `sched_balance_newidle`), `sched_tick()` +
//! `sched_balance_trigger()`, `deactivate_task()` and `do_exit()`.

mod lifecycle;

use crate::CpuId;
use crate::config::SchedConfig;
use crate::core::{Migration, SchedCore};
use crate::fair::entity;
use crate::idle;
use crate::policy::{FairPolicy, SchedPolicy};
use crate::stats::MigrationReason;
use crate::task::{Task, TaskId, TaskState};
use crate::topo::SchedTopo;
use alloc::vec::Vec;

/// Outcome of a wakeup or fork.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeupResult {
    /// The task.
    pub task: TaskId,
    /// Where it was queued.
    pub cpu: CpuId,
    /// CPUs that must reschedule (IPI if remote).
    pub resched: Vec<CpuId>,
}

/// Outcome of `schedule()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switch {
    /// What ran before (None = idle).
    pub prev: Option<TaskId>,
    /// What runs now (None = idle).
    pub next: Option<TaskId>,
    /// Tasks moved (newly-idle pull, active push).
    pub migrations: Vec<Migration>,
    /// Other CPUs that must reschedule.
    pub resched: Vec<CpuId>,
}

/// Outcome of a tick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TickResult {
    /// This CPU must call `schedule()`.
    pub need_resched: bool,
    /// Tasks moved by periodic balancing.
    pub migrations: Vec<Migration>,
    /// CPUs that must reschedule (may include this one).
    pub resched: Vec<CpuId>,
}

/// The scheduler: core state plus a policy.
#[derive(Clone, Debug)]
pub struct Scheduler<P: SchedPolicy = FairPolicy> {
    /// All state (read it for statistics and invariants).
    pub core: SchedCore,
    /// The policy.
    pub policy: P,
}

impl Scheduler<FairPolicy> {
    /// A fair scheduler for `topo`.
    pub fn new(topo: SchedTopo, cfg: SchedConfig) -> Self {
        Self::with_policy(topo, cfg, FairPolicy)
    }
}

impl<P: SchedPolicy> Scheduler<P> {
    /// A scheduler with a custom policy. All CPUs start idle.
    pub fn with_policy(topo: SchedTopo, cfg: SchedConfig, policy: P) -> Self {
        let mut s = Scheduler {
            core: SchedCore::new(topo, cfg),
            policy,
        };
        for cpu in 0..s.core.nr_cpus() {
            s.policy.idle_enter(&mut s.core, cpu, 0);
        }
        s
    }

    /// The task running on `cpu` (None = idle).
    pub fn current(&self, cpu: CpuId) -> Option<TaskId> {
        self.core.rqs[cpu].curr
    }

    /// Does `cpu` need to call `schedule()`?
    pub fn need_resched(&self, cpu: CpuId) -> bool {
        self.core.rqs[cpu].need_resched
    }

    /// The task's data.
    pub fn task(&self, p: TaskId) -> &Task {
        &self.core.tasks[p]
    }

    /// Mark a task as a per-CPU kernel thread (never balanced; its wakeups
    /// may stack on prev, select_idle_sibling step 3).
    pub fn set_percpu_kthread(&mut self, p: TaskId, on: bool) {
        self.core.tasks[p].is_percpu_kthread = on;
    }

    /// `__schedule()` on `cpu`: put prev back if still runnable, run a
    /// pending active-balance push, pick next (newly-idle balance first if
    /// nothing is runnable), and switch.
    pub fn schedule(&mut self, cpu: CpuId, now: u64) -> Switch {
        let now = self.core.update_rq_clock(cpu, now);
        let cfg = self.core.cfg;
        let mut migrations = Vec::new();
        self.core.rqs[cpu].need_resched = false;
        let prev = self.core.rqs[cpu].curr;
        // Slice bookkeeping of prev, kept if prev is picked again (Linux's
        // pick_next_task_fair does no put_prev/set_next for prev == next).
        let prev_slice = prev
            .and_then(|p| self.core.tasks.get(p))
            .map(|t| (t.se.prev_sum_exec_runtime, t.se.vprot));
        if let Some(pv) = prev {
            let core = &mut self.core;
            entity::put_prev_entity(&mut core.rqs[cpu].cfs, &mut core.tasks, &cfg, pv, now);
            match core.tasks[pv].state {
                TaskState::Dead => core.tasks.free(pv),
                TaskState::Running => {
                    core.tasks[pv].state = TaskState::Runnable;
                    core.tasks[pv].wait_start = now.max(1);
                }
                _ => {}
            }
            core.rqs[cpu].curr = None;
        }
        if let Some((p, dest)) = self.core.rqs[cpu].exec_migrate.take()
            && prev == Some(p)
            && self
                .core
                .tasks
                .get(p)
                .is_some_and(|t| t.se.on_rq && t.cpu == cpu)
        {
            // migration_cpu_stop on behalf of sched_exec.
            migrations.push(
                self.core
                    .move_queued_task(p, dest, MigrationReason::Exec, now),
            );
        }
        if let Some(target) = self.core.rqs[cpu].active_balance.take() {
            migrations.extend(self.policy.active_balance(&mut self.core, cpu, target, now));
        }
        let mut next = self.policy.pick_next(&mut self.core, cpu, now);
        if next.is_none() {
            migrations.extend(self.policy.newidle_balance(&mut self.core, cpu, now));
            next = self.policy.pick_next(&mut self.core, cpu, now);
        }
        let core = &mut self.core;
        match next {
            Some(n) => {
                entity::set_next_entity(&mut core.rqs[cpu].cfs, &mut core.tasks, &cfg, n, now);
                let t = &mut core.tasks[n];
                t.state = TaskState::Running;
                if let (true, Some((sum, vprot))) = (Some(n) == prev, prev_slice) {
                    t.se.prev_sum_exec_runtime = sum;
                    t.se.vprot = vprot;
                    t.wait_start = 0;
                    t.stats.pcount -= 1;
                }
                if t.wait_start != 0 {
                    let waited = now.saturating_sub(t.wait_start);
                    t.stats.wait_sum += waited;
                    t.stats.wait_max = t.stats.wait_max.max(waited);
                    t.stats.wait_count += 1;
                    t.wait_start = 0;
                    core.stats.wait_ns.record(waited);
                }
                t.stats.pcount += 1;
                core.rqs[cpu].curr = Some(n);
                core.rqs[cpu].idle_stamp = 0;
            }
            None => {
                core.rqs[cpu].curr = None;
                if core.rqs[cpu].idle_stamp == 0 {
                    core.rqs[cpu].idle_stamp = now.max(1);
                }
            }
        }
        if next != prev {
            core.stats.rq.nr_switches += 1;
        }
        match (prev.is_some(), next.is_some()) {
            (true, false) => {
                core.stats.rq.sched_goidle += 1;
                core.rqs[cpu].idle_since = Some(now);
                self.policy.idle_enter(&mut self.core, cpu, now);
            }
            (false, true) => {
                let rq = &mut core.rqs[cpu];
                if let Some(t) = rq.idle_since.take() {
                    rq.idle_ns += now.saturating_sub(t);
                }
                self.policy.idle_exit(&mut self.core, cpu, now);
            }
            _ => {}
        }
        self.core.resched.retain(|&c| c != cpu);
        self.core.rqs[cpu].need_resched = false;
        Switch {
            prev,
            next,
            migrations,
            resched: self.core.take_resched(),
        }
    }

    /// `sched_tick()` on `cpu`: account curr, tick preemption, busy/idle
    /// accounting, and periodic balancing when due.
    pub fn tick(&mut self, cpu: CpuId, now: u64) -> TickResult {
        let now = self.core.update_rq_clock(cpu, now);
        self.core.stats.rq.nr_ticks += 1;
        let was_idle = self.core.rqs[cpu].curr.is_none();
        if was_idle {
            entity::update_rq_load_avg(&mut self.core.rqs[cpu].cfs, now);
        } else if self.policy.tick(&mut self.core, cpu, now) {
            self.core.stats.rq.tick_preempt += 1;
            self.core.resched_curr(cpu);
        }
        idle::tick_accounting(&mut self.core, cpu);
        let mut migrations = Vec::new();
        if now >= self.core.rqs[cpu].next_balance {
            migrations = self.policy.balance(&mut self.core, cpu, now);
        }
        TickResult {
            need_resched: self.core.rqs[cpu].need_resched,
            migrations,
            resched: self.core.take_resched(),
        }
    }
}
