//! The policy seam: a sched_ext-like trait whose default methods are the
//! Linux-faithful fair policy.
//!
//! A researcher adds a variant by implementing [`SchedPolicy`] in one file
//! and overriding only the hooks it changes (see docs/policies.md and
//! [`crate::policies::prev_idle`]). Hooks receive the whole [`SchedCore`]
//! and return decisions; they never touch hardware or clocks.

use crate::CpuId;
use crate::balance::{domains, lb};
use crate::core::{Migration, Migrations, SchedCore};
use crate::fair::entity::{self, DequeueFlags, EnqueueFlags};
use crate::fair::pick::PickDiscipline;
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

    /// `ops.dequeue`: take `p` off `cpu`. Returns false when a sleeping
    /// `p` stays queued instead (the fair class's DELAY_DEQUEUE, as Linux
    /// 6.12's `dequeue_task` does).
    fn dequeue(
        &self,
        core: &mut SchedCore,
        cpu: CpuId,
        p: TaskId,
        flags: DequeueFlags,
        now: u64,
    ) -> bool {
        core.dequeue_task(cpu, p, flags, now)
    }

    /// `ops.dispatch` / pick_next: which queued task of `cpu` runs next
    /// (curr has already been put back). A delayed-dequeue task the pick
    /// chooses is dequeued instead and the pick repeats (`pick_task_fair`'s
    /// `again`), so the answer is never a sleeping task.
    fn pick_next(&self, core: &mut SchedCore, cpu: CpuId, now: u64) -> Option<TaskId> {
        let cfg = core.cfg;
        loop {
            let p = cfg
                .pick
                .pick_next_entity(&mut core.rqs[cpu].cfs, &core.tasks, cfg)?;
            if !core.tasks[p].se.sched_delayed {
                return Some(p);
            }
            core.finish_delayed_dequeue(cpu, p, now);
            core.stats.delay.picked += 1;
        }
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
        resched |= cfg
            .pick
            .check_preempt_tick(&mut rq.cfs, &core.tasks, cfg, c);
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

    fn dequeue(
        &self,
        core: &mut SchedCore,
        cpu: CpuId,
        p: TaskId,
        flags: DequeueFlags,
        now: u64,
    ) -> bool {
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

#[cfg(test)]
mod tests {
    //! `DynPolicy` forwards every hook by hand; a hook it forgot would fall
    //! back to the trait's default (the fair policy) and silently ignore the
    //! boxed policy's override. A probe that answers every hook with a value
    //! the defaults never give, called through the box, catches that.
    use super::*;
    use crate::testutil;
    use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

    /// Number of hooks in [`SchedPolicy`]; every one is called below.
    const HOOKS: u32 = 11;

    /// Hooks of [`Probe`] reached (only this test boxes a probe).
    static CALLS: AtomicU32 = AtomicU32::new(0);

    const SENTINEL_CPU: CpuId = 5;

    fn sentinel_migration() -> Migration {
        Migration {
            task: TaskId(4242),
            from: 1,
            to: 2,
            reason: crate::stats::MigrationReason::Active,
        }
    }

    /// Answers every hook with a sentinel and counts the calls.
    struct Probe;

    fn hit() {
        CALLS.fetch_add(1, Relaxed);
    }

    impl SchedPolicy for Probe {
        fn name(&self) -> &'static str {
            hit();
            "probe"
        }
        fn select_cpu(
            &self,
            _: &mut SchedCore,
            _: TaskId,
            _: CpuId,
            _: CpuId,
            _: WakeFlags,
            _: u64,
        ) -> CpuId {
            hit();
            SENTINEL_CPU
        }
        fn enqueue(&self, _: &mut SchedCore, _: CpuId, _: TaskId, _: EnqueueFlags, _: u64) {
            hit();
        }
        fn dequeue(&self, _: &mut SchedCore, _: CpuId, _: TaskId, _: DequeueFlags, _: u64) -> bool {
            hit();
            // The default answers true for anything but a delayed sleep.
            false
        }
        fn pick_next(&self, _: &mut SchedCore, _: CpuId, _: u64) -> Option<TaskId> {
            hit();
            Some(TaskId(4242))
        }
        fn tick(&self, _: &mut SchedCore, _: CpuId, _: u64) -> bool {
            hit();
            true
        }
        fn balance(&self, _: &mut SchedCore, _: CpuId, _: u64) -> Migrations {
            hit();
            core::iter::once(sentinel_migration()).collect()
        }
        fn newidle_balance(&self, _: &mut SchedCore, _: CpuId, _: u64) -> Migrations {
            hit();
            core::iter::repeat_n(sentinel_migration(), 2).collect()
        }
        fn active_balance(
            &self,
            _: &mut SchedCore,
            _: CpuId,
            _: CpuId,
            _: u64,
        ) -> Option<Migration> {
            hit();
            Some(sentinel_migration())
        }
        fn idle_enter(&self, _: &mut SchedCore, _: CpuId, _: u64) {
            hit();
        }
        fn idle_exit(&self, _: &mut SchedCore, _: CpuId, _: u64) {
            hit();
        }
    }

    #[test]
    fn dyn_policy_forwards_every_hook_to_the_boxed_policy() {
        let s = testutil::up(crate::config::PickPolicy::Eevdf);
        let d: DynPolicy = alloc::boxed::Box::new(Probe);
        let mut core = s.shared.lock(0);
        let p = TaskId(0);
        let (ef, df) = (EnqueueFlags::default(), DequeueFlags::default());
        assert_eq!(d.name(), "probe");
        assert_eq!(
            d.select_cpu(&mut core, p, 0, 0, WakeFlags::TTWU, 1),
            SENTINEL_CPU
        );
        d.enqueue(&mut core, 0, p, ef, 1);
        assert!(!d.dequeue(&mut core, 0, p, df, 1));
        assert_eq!(d.pick_next(&mut core, 0, 1), Some(TaskId(4242)));
        assert!(d.tick(&mut core, 0, 1));
        assert_eq!(&*d.balance(&mut core, 0, 1), &[sentinel_migration()]);
        assert_eq!(
            &*d.newidle_balance(&mut core, 0, 1),
            &[sentinel_migration(); 2]
        );
        assert_eq!(
            d.active_balance(&mut core, 0, 0, 1),
            Some(sentinel_migration())
        );
        d.idle_enter(&mut core, 0, 1);
        d.idle_exit(&mut core, 0, 1);
        assert_eq!(
            CALLS.load(Relaxed),
            HOOKS,
            "a hook of DynPolicy did not reach the boxed policy"
        );
    }
}
