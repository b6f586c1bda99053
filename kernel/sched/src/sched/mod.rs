//! `Scheduler`: the entry points the kernel (or the host simulator) calls.
//!
//! Each call passes the CPU it runs on and the current time, takes the
//! runqueue locks it needs (its own, plus one more to move a task, in CPU
//! order), and returns decisions: which task a CPU
//! runs next, which CPUs need a reschedule IPI, which tasks moved. Mirrors
//! `wake_up_new_task()`, `try_to_wake_up()`, `__schedule()`
//! (`pick_next_task_fair` + `sched_balance_newidle`), `sched_tick()` +
//! `sched_balance_trigger()`, `deactivate_task()` and `do_exit()`.

#[cfg(test)]
mod delay_tests;
mod lifecycle;
mod nohz;
#[cfg(test)]
mod nohz_tests;
#[cfg(test)]
mod sm_idle_tests;
#[cfg(test)]
mod ttwu_tests;

pub use lifecycle::{Start, ttwu_queue_cond};

use crate::CpuId;
use crate::config::SchedConfig;
use crate::core::{CpuList, Migrations, SchedCore, Shared};
use crate::fair::entity;
use crate::features::Feat;
use crate::idle;
use crate::policy::{FairPolicy, SchedPolicy};
use crate::stats::{MigrationReason, SchedStats};
use crate::task::{Task, TaskId, TaskState, Tasks};
use crate::topo::SchedTopo;

/// Outcome of a wakeup or fork.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeupResult {
    /// The task.
    pub task: TaskId,
    /// Where it was queued.
    pub cpu: CpuId,
    /// CPUs that must reschedule (IPI if remote).
    pub resched: CpuList,
}

/// Outcome of `schedule()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switch {
    /// What ran before (None = idle).
    pub prev: Option<TaskId>,
    /// What runs now (None = idle).
    pub next: Option<TaskId>,
    /// Tasks moved (newly-idle pull, active push).
    pub migrations: Migrations,
    /// Other CPUs that must reschedule.
    pub resched: CpuList,
}

/// Outcome of a tick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TickResult {
    /// This CPU must call `schedule()`.
    pub need_resched: bool,
    /// Tasks moved by periodic balancing.
    pub migrations: Migrations,
    /// CPUs that must reschedule (may include this one).
    pub resched: CpuList,
    /// NOHZ_IDLE: send this CPU the idle-load-balancer kick IPI (it then
    /// calls [`Scheduler::nohz_kick`]).
    pub nohz_kick: Option<CpuId>,
}

/// The scheduler: the shared state plus a policy. Every entry point takes
/// `&self` and locks the runqueues it needs (see [`crate::core`]), so all
/// CPUs call it concurrently; the caller keeps interrupts off meanwhile.
pub struct Scheduler<P: SchedPolicy = FairPolicy> {
    /// All state.
    pub shared: Shared,
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
        let s = Scheduler {
            shared: Shared::new(topo, cfg),
            policy,
        };
        for cpu in 0..s.shared.nr_cpus() {
            let mut core = s.shared.lock(cpu);
            s.policy.idle_enter(&mut core, cpu, 0);
        }
        s
    }

    /// Every runqueue locked at once (reports, invariant checks, tests).
    pub fn core(&self) -> SchedCore<'_> {
        self.shared.lock_all()
    }

    /// Machine-wide statistics (per-CPU counters summed).
    pub fn stats(&self) -> SchedStats {
        self.shared.stats()
    }

    /// The task running on `cpu` (None = idle), as last published: exact
    /// when read by `cpu` itself outside an operation.
    #[inline]
    pub fn current(&self, cpu: CpuId) -> Option<TaskId> {
        self.shared.snap(cpu).curr()
    }

    /// Does `cpu` need to call `schedule()`? Lock-free, like testing
    /// TIF_NEED_RESCHED: whoever sets it publishes it before sending the
    /// reschedule IPI.
    #[inline]
    pub fn need_resched(&self, cpu: CpuId) -> bool {
        self.shared.snap(cpu).need_resched()
    }

    /// A copy of the task's data (None if it is not alive).
    pub fn try_task(&self, p: TaskId) -> Option<Task> {
        let core = self.lock_task(p, self.shared.nr_cpus())?;
        core.tasks.get(p).cloned()
    }

    /// A copy of the task's data; panics if it is not alive.
    pub fn task(&self, p: TaskId) -> Task {
        self.try_task(p)
            .unwrap_or_else(|| panic!("task {} is not alive", p.0))
    }

    /// Mark a task as a per-CPU kernel thread (never balanced; its wakeups
    /// may stack on prev, select_idle_sibling step 3).
    pub fn set_percpu_kthread(&self, p: TaskId, on: bool) {
        self.update_task(p, &mut |t| t.is_percpu_kthread = on);
    }

    /// Sets `p`'s `wakee_flips`, with the decay stamp at `now`: the flips a
    /// workload's first thread brings from the process that launched it.
    /// Linux copies `wakee_flips` at fork (see `wake_up_new_task`), so a
    /// benchmark started from a shell inherits the shell's, and its threads
    /// inherit them in turn; the Linux rig's hackbench threads started with 52.
    pub fn set_wakee_flips(&self, p: TaskId, flips: u32, now: u64) {
        self.update_task(p, &mut |t| {
            t.wakee_flips = flips;
            t.wakee_flip_decay_ts = now;
        });
    }

    /// Changes a live task's fields under its runqueue lock. One call site
    /// of `lock_task` for all such setters: in the kernel build a second
    /// one (`set_wakee_flips` calling `Shared::lock_task` directly) cost
    /// about 700 instructions per pipe round trip under `--icount 0` on
    /// paths that never call it, a code-generation effect found by removing
    /// the call (docs/kernel.md, "Wake lists: measured").
    fn update_task(&self, p: TaskId, f: &mut dyn FnMut(&mut crate::task::Task)) {
        if let Some(mut core) = self.lock_task(p, self.shared.nr_cpus()) {
            f(&mut core.tasks[p]);
        }
    }

    /// `__schedule()` on `cpu`: put prev back if still runnable, run a
    /// pending active-balance push, pick next (newly-idle balance first if
    /// nothing is runnable), and switch.
    pub fn schedule(&self, cpu: CpuId, now: u64) -> Switch {
        self.schedule_locked(&mut self.shared.lock(cpu), cpu, now)
    }

    /// The current task of `cpu` blocks and `cpu` schedules, under one
    /// acquisition of its runqueue lock (`__schedule()` doing
    /// `deactivate_task(DEQUEUE_SLEEP)` itself). Returns the task and the
    /// switch.
    pub fn block_and_schedule(&self, cpu: CpuId, now: u64) -> (TaskId, Switch) {
        let mut core = self.shared.lock(cpu);
        let p = self.block_locked(&mut core, cpu, now);
        (p, self.schedule_locked(&mut core, cpu, now))
    }

    /// `__schedule()` with `cpu`'s runqueue already held by `core`.
    pub(crate) fn schedule_locked(&self, core: &mut SchedCore<'_>, cpu: CpuId, now: u64) -> Switch {
        let now = core.update_rq_clock(cpu, now);
        // Wakeups other CPUs queued for this one (TTWU_QUEUE) are activated
        // before the pick, so none waits for the IPI that announced it.
        self.ttwu_pending_locked(core, cpu, now);
        let cfg = core.cfg;
        // 6.12's `__schedule(SM_IDLE)`: the idle task rescheduling with
        // nothing queued (its wake list flushed above, no stopper work
        // pending) keeps running: no pick, so no newly idle balance and no
        // new `idle_stamp`.
        if cfg.features.has(Feat::SmIdle)
            && core.rqs[cpu].curr.is_none()
            && core.rqs[cpu].nr_running() == 0
            && core.rqs[cpu].exec_migrate.is_none()
            && core.rqs[cpu].active_balance.is_none()
        {
            core.resched.retain(|&c| c != cpu);
            let rq = &mut core.rqs[cpu];
            rq.need_resched = false;
            rq.cfs.resched = false;
            return Switch {
                prev: None,
                next: None,
                migrations: Migrations::new(),
                resched: core.take_resched(),
            };
        }
        let mut migrations = Migrations::new();
        core.rqs[cpu].need_resched = false;
        let prev = core.rqs[cpu].curr;
        // Slice bookkeeping of prev, kept if prev is picked again (Linux's
        // pick_next_task_fair does no put_prev/set_next for prev == next).
        // Its `cfs_tasks` place is kept too: only a different task moves to
        // the list's head (`__set_next_task_fair` runs for `prev != p`).
        let prev_slice = prev
            .and_then(|p| core.tasks.get(p))
            .map(|t| (t.se.prev_sum_exec_runtime, t.se.vprot, t.se.cfs_tasks_pos));
        // Whether prev stays runnable here. Only then is "next == prev" the
        // same task continuing: once prev exited its id may be reused by a
        // new task pulled in while a balance pass had this lock dropped.
        let mut prev_requeued = false;
        core.rqs[cpu].switching_out = prev;
        if let Some(pv) = prev {
            let c = &mut *core;
            entity::put_prev_entity(&mut c.rqs[cpu].cfs, &mut c.tasks, cfg, pv, now);
            match c.tasks[pv].state {
                TaskState::Dead => {
                    let dead = c.tasks.free(pv);
                    c.bury(dead);
                }
                TaskState::Running => {
                    c.tasks[pv].state = TaskState::Runnable;
                    c.tasks[pv].wait_start = now.max(1);
                    prev_requeued = true;
                }
                // Blocked but delayed (DELAY_DEQUEUE): back in the tree,
                // stamped like any put-back (`update_stats_wait_start_fair`
                // for an on_rq prev). Its `cfs_tasks` place is unchanged.
                TaskState::Sleeping if c.tasks[pv].se.sched_delayed => {
                    c.tasks[pv].wait_start = now.max(1);
                }
                _ => {}
            }
            c.rqs[cpu].curr = None;
        }
        if let Some((p, dest)) = core.rqs[cpu].exec_migrate.take()
            && prev == Some(p)
        {
            // migration_cpu_stop on behalf of sched_exec.
            core.lock_also(dest);
            if core
                .tasks
                .get(p)
                .is_some_and(|t| t.se.on_rq && t.cpu == cpu)
                && core.rqs[cpu].curr != Some(p)
            {
                let m = core.move_queued_task(p, dest, MigrationReason::Exec, now);
                core.push_migration(cpu, &mut migrations, m);
            }
            core.unlock(dest);
        }
        if let Some(target) = core.rqs[cpu].active_balance.take()
            && let Some(m) = self.policy.active_balance(core, cpu, target, now)
        {
            core.push_migration(cpu, &mut migrations, m);
        }
        // Either push may have moved prev away (Linux's stopper runs after
        // prev switched out): then a pick of its id below is a new pick,
        // of the same task pulled back or of a new task reusing the id of
        // one that exited over there while newidle had this lock dropped
        // (the concurrent test underflowed `pcount` on that). While prev
        // stays queued here, `switching_out` keeps the balancers off it.
        if let Some(p) = prev {
            prev_requeued &= core
                .tasks
                .get(p)
                .is_some_and(|t| t.cpu == cpu && t.se.on_rq);
        }
        let mut next = self.policy.pick_next(core, cpu, now);
        if next.is_none() {
            let moved = self.policy.newidle_balance(core, cpu, now);
            core.append_migrations(cpu, &mut migrations, moved);
            next = self.policy.pick_next(core, cpu, now);
        }
        let c = &mut *core;
        match next {
            Some(n) => {
                entity::set_next_entity(&mut c.rqs[cpu].cfs, &mut c.tasks, cfg, n, now);
                let t = &mut c.tasks[n];
                t.state = TaskState::Running;
                if let (true, Some((sum, vprot, pos))) =
                    (prev_requeued && Some(n) == prev, prev_slice)
                {
                    t.se.prev_sum_exec_runtime = sum;
                    t.se.vprot = vprot;
                    t.se.cfs_tasks_pos = pos;
                    t.wait_start = 0;
                    t.stats.pcount -= 1;
                }
                if t.wait_start != 0 {
                    let waited = now.saturating_sub(t.wait_start);
                    t.stats.wait_sum += waited;
                    t.stats.wait_max = t.stats.wait_max.max(waited);
                    t.stats.wait_count += 1;
                    t.wait_start = 0;
                    c.stats.wait_ns.record(waited);
                }
                t.stats.pcount += 1;
                // `idle_stamp` stays: Linux clears it only where a wakeup
                // folds the idle period into avg_idle (`ttwu_do_activate`)
                // or newidle pulled, so work that came by fork or a
                // balancer push leaves it for the next wakeup to fold.
                c.rqs[cpu].curr = Some(n);
            }
            None => {
                c.rqs[cpu].curr = None;
                // newidle stamped it at this `now`; a policy of its own
                // that does not balance gets the same stamp.
                c.rqs[cpu].idle_stamp = now.max(1);
            }
        }
        if next != prev || (next.is_some() && !prev_requeued) {
            c.stats.rq.nr_switches += 1;
        }
        match (prev.is_some(), next.is_some()) {
            (true, false) => {
                c.stats.rq.sched_goidle += 1;
                c.rqs[cpu].idle_since = Some(now);
                self.policy.idle_enter(core, cpu, now);
            }
            (false, true) => {
                let rq = &mut c.rqs[cpu];
                if let Some(t) = rq.idle_since.take() {
                    rq.idle_ns += now.saturating_sub(t);
                }
                self.policy.idle_exit(core, cpu, now);
            }
            _ => {}
        }
        // Linux clears need_resched after the pick: requests made while
        // switching (prev's `update_curr` at put-back, say) are moot.
        core.resched.retain(|&c| c != cpu);
        core.rqs[cpu].need_resched = false;
        core.rqs[cpu].cfs.resched = false;
        core.rqs[cpu].switching_out = None;
        Switch {
            prev,
            next,
            migrations,
            resched: core.take_resched(),
        }
    }

    /// Gives back the room of a move list an operation on `cpu` returned
    /// (a `Switch`'s or `TickResult`'s `migrations`) once the caller has
    /// read it. Only a list that spilled past its inline moves has any;
    /// then this takes `cpu`'s runqueue lock once. The kernel calls it so
    /// that a balance batch never allocates; a caller that does not just
    /// lets the next batch allocate.
    pub fn recycle_migrations(&self, cpu: CpuId, m: Migrations) {
        if m.spare_room() > 0 {
            self.shared.lock(cpu).recycle_migrations(cpu, m);
        }
    }

    /// `sched_tick()` on `cpu`: account curr, tick preemption, busy/idle
    /// accounting, and periodic balancing when due.
    pub fn tick(&self, cpu: CpuId, now: u64) -> TickResult {
        let mut core = self.shared.lock(cpu);
        let now = core.update_rq_clock(cpu, now);
        core.stats.rq.nr_ticks += 1;
        let was_idle = core.rqs[cpu].curr.is_none();
        if was_idle {
            entity::update_rq_load_avg(&mut core.rqs[cpu].cfs, now);
        } else if self.policy.tick(&mut core, cpu, now) {
            core.stats.rq.tick_preempt += 1;
            core.resched_curr(cpu);
        }
        // The tick's `update_curr` request is in its verdict above.
        core.rqs[cpu].cfs.resched = false;
        // `sched_balance_trigger`: the kick decision (whose
        // `nohz_balance_exit_idle` counts a CPU busy again at its first busy
        // tick), then the softirq's own balance if due.
        let mut nohz_kick = None;
        if !self.nohz_idle() {
            idle::tick_accounting(&mut core, cpu);
        } else if !core.idle_cpu(cpu) {
            nohz_kick = crate::balance::nohz::nohz_balancer_kick(&mut core, cpu, now);
        }
        let mut migrations = Migrations::new();
        if now >= core.rqs[cpu].next_balance {
            migrations = self.policy.balance(&mut core, cpu, now);
        }
        TickResult {
            need_resched: core.rqs[cpu].need_resched,
            migrations,
            resched: core.take_resched(),
            nohz_kick,
        }
    }
}
