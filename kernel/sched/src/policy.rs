//! The policy seam: a sched_ext-like trait whose default methods are the
//! Linux-faithful fair policy.
//!
//! A researcher adds a variant by implementing [`SchedPolicy`] in one file
//! and overriding only the hooks it changes (see docs/policies.md and
//! [`crate::policies::prev_idle`]). Hooks receive the whole [`SchedCore`]
//! and return decisions; they never touch hardware or clocks.

use crate::CpuId;
use crate::balance::{domains, lb};
use crate::config::PickPolicy;
use crate::core::{Migration, Migrations, SchedCore};
use crate::fair::cfs;
use crate::fair::entity::{self, DequeueFlags, EnqueueFlags};
use crate::idle;
use crate::placement::{self, WakeFlags};
use crate::task::TaskId;

/// sched_ext-style operations. Every method has the fair (CFS/EEVDF +
/// Linux placement and balancing) behaviour as its default.
pub trait SchedPolicy {
    /// Name reported in result records.
    fn name(&self) -> &'static str {
        "fair"
    }

    /// `select_task_rq` / `ops.select_cpu`: CPU for a waking (WF_TTWU),
    /// forking (WF_FORK) or exec'ing (WF_EXEC) task; `this_cpu` is where the
    /// decision runs (waker/parent CPU).
    fn select_cpu(
        &self,
        core: &mut SchedCore,
        p: TaskId,
        prev_cpu: CpuId,
        this_cpu: CpuId,
        flags: WakeFlags,
        now: u64,
    ) -> CpuId {
        placement::select_task_rq_fair(core, p, prev_cpu, this_cpu, flags, now)
    }

    /// `ops.enqueue`: make `p` runnable on `cpu`.
    fn enqueue(&self, core: &mut SchedCore, cpu: CpuId, p: TaskId, flags: EnqueueFlags, now: u64) {
        core.enqueue_task(cpu, p, flags, now);
    }

    /// `ops.dequeue`: take `p` off `cpu`.
    fn dequeue(&self, core: &mut SchedCore, cpu: CpuId, p: TaskId, flags: DequeueFlags, now: u64) {
        core.dequeue_task(cpu, p, flags, now);
    }

    /// `ops.dispatch` / pick_next: which queued task of `cpu` runs next
    /// (curr has already been put back).
    fn pick_next(&self, core: &mut SchedCore, cpu: CpuId, _now: u64) -> Option<TaskId> {
        let cfg = core.cfg;
        entity::pick_next_entity(&mut core.rqs[cpu].cfs, &core.tasks, cfg)
    }

    /// `ops.tick` / `task_tick_fair`: account curr; true = reschedule.
    fn tick(&self, core: &mut SchedCore, cpu: CpuId, now: u64) -> bool {
        let cfg = core.cfg;
        let rq = &mut core.rqs[cpu];
        let Some(c) = rq.curr else { return false };
        let mut resched = entity::update_curr(&mut rq.cfs, &mut core.tasks, cfg, now);
        entity::update_load_avg(
            &mut rq.cfs,
            &mut core.tasks,
            c,
            now,
            entity::PeltAction::None,
        );
        if cfg.pick == PickPolicy::Cfs && rq.cfs.nr_running > 1 {
            resched |= cfs::check_preempt_tick(&mut rq.cfs, &core.tasks, cfg, c);
        }
        resched
    }

    /// Periodic balancing (`sched_balance_domains`), called when due.
    fn balance(&self, core: &mut SchedCore, cpu: CpuId, now: u64) -> Migrations {
        domains::rebalance_domains(core, cpu, now)
    }

    /// Newly-idle balancing (`sched_balance_newidle`).
    fn newidle_balance(&self, core: &mut SchedCore, cpu: CpuId, now: u64) -> Migrations {
        domains::newidle_balance(core, cpu, now)
    }

    /// Active balance push requested by the balancer, run on the busiest CPU.
    fn active_balance(
        &self,
        core: &mut SchedCore,
        busiest: CpuId,
        target: CpuId,
        now: u64,
    ) -> Option<Migration> {
        lb::active_load_balance_cpu_stop(core, busiest, target, now)
    }

    /// `ops.update_idle(true)`: `cpu` switched to its idle task.
    fn idle_enter(&self, core: &mut SchedCore, cpu: CpuId, _now: u64) {
        idle::idle_enter(core, cpu);
    }

    /// `ops.update_idle(false)`: `cpu` leaves its idle task.
    fn idle_exit(&self, core: &mut SchedCore, cpu: CpuId, _now: u64) {
        idle::idle_exit(core, cpu);
    }
}

/// The Linux-faithful fair policy: every default.
#[derive(Clone, Copy, Debug, Default)]
pub struct FairPolicy;

impl SchedPolicy for FairPolicy {}

/// A policy chosen at run time (by name, see [`crate::policies::by_name`]):
/// every hook forwards to the boxed policy.
pub type DynPolicy = alloc::boxed::Box<dyn SchedPolicy + Send + Sync>;

impl SchedPolicy for DynPolicy {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn select_cpu(
        &self,
        core: &mut SchedCore,
        p: TaskId,
        prev_cpu: CpuId,
        this_cpu: CpuId,
        flags: WakeFlags,
        now: u64,
    ) -> CpuId {
        (**self).select_cpu(core, p, prev_cpu, this_cpu, flags, now)
    }

    fn enqueue(&self, core: &mut SchedCore, cpu: CpuId, p: TaskId, flags: EnqueueFlags, now: u64) {
        (**self).enqueue(core, cpu, p, flags, now)
    }

    fn dequeue(&self, core: &mut SchedCore, cpu: CpuId, p: TaskId, flags: DequeueFlags, now: u64) {
        (**self).dequeue(core, cpu, p, flags, now)
    }

    fn pick_next(&self, core: &mut SchedCore, cpu: CpuId, now: u64) -> Option<TaskId> {
        (**self).pick_next(core, cpu, now)
    }

    fn tick(&self, core: &mut SchedCore, cpu: CpuId, now: u64) -> bool {
        (**self).tick(core, cpu, now)
    }

    fn balance(&self, core: &mut SchedCore, cpu: CpuId, now: u64) -> Migrations {
        (**self).balance(core, cpu, now)
    }

    fn newidle_balance(&self, core: &mut SchedCore, cpu: CpuId, now: u64) -> Migrations {
        (**self).newidle_balance(core, cpu, now)
    }

    fn active_balance(
        &self,
        core: &mut SchedCore,
        busiest: CpuId,
        target: CpuId,
        now: u64,
    ) -> Option<Migration> {
        (**self).active_balance(core, busiest, target, now)
    }

    fn idle_enter(&self, core: &mut SchedCore, cpu: CpuId, now: u64) {
        (**self).idle_enter(core, cpu, now)
    }

    fn idle_exit(&self, core: &mut SchedCore, cpu: CpuId, now: u64) {
        (**self).idle_exit(core, cpu, now)
    }
}
