//! The pick disciplines of the fair class and the one place the core asks
//! which one a run uses.
//!
//! CFS (Linux v5.11 `fair.c`) and EEVDF (v6.6+) share the fair class's
//! machinery — `update_curr`, PELT, `enqueue_entity`/`dequeue_entity`'s
//! accounting, `set_next_entity`/`put_prev_entity`, the timeline and its
//! sums, buddies — and differ in a fixed set of steps. [`PickDiscipline`]
//! has one method per such step; [`cfs::Cfs`] and [`eevdf::Eevdf`]
//! implement it, each method naming the Linux function it mirrors.
//! [`PickPolicy`], the run's choice, implements it too, by forwarding every
//! method to its variant's discipline through one `match` (`dispatch.rs`);
//! the shared code calls `cfg.pick.<step>(..)` and never branches on the
//! pick itself.
//!
//! Adding a third pick: a module here with a zero-sized type implementing
//! [`PickDiscipline`], a [`PickPolicy`] variant with its name in
//! [`PickPolicy::ALL`], and its arm in `dispatch.rs`'s `dispatch!`; the
//! compiler then points at the tests' per-pick expectations
//! (`shape_tests.rs`). Outside this crate only `kernel/bootcfg`'s check of
//! the boot configuration lists the names.
//!
//! Dispatch is static: each forwarder is one compare on the configured
//! pick around an inlined call, what the per-site branches it replaced
//! cost.
//!
//! [`PickPolicy`]: crate::config::PickPolicy
//! [`PickPolicy::ALL`]: crate::config::PickPolicy::ALL

pub mod cfs;
mod dispatch;
pub mod eevdf;

#[cfg(test)]
mod dispatch_tests;
#[cfg(test)]
mod shape_tests;

use super::cfs_rq::CfsRq;
use super::entity::{DequeueFlags, EnqueueFlags};
use crate::CpuId;
use crate::config::SchedConfig;
use crate::core::SchedCore;
use crate::task::{SchedEntity, TaskId, Tasks};

/// The steps in which one fair-class pick algorithm differs from another.
///
/// Implemented by zero-sized types (static dispatch) and by
/// [`PickPolicy`](crate::config::PickPolicy) (forwarding to the run's
/// discipline). The shared code calls these at
/// fixed points of Linux's order; each method says where and which Linux
/// function it stands for. A step a discipline does not have is a no-op
/// that says so.
pub trait PickDiscipline: Copy {
    /// Name in result records and on the command line (`--pick`).
    fn name(self) -> &'static str;

    /// The timeline's sort key of an entity (`entity_before()`, as
    /// `__enqueue_entity()` inserts with it).
    fn tree_key(self, se: &SchedEntity) -> u64;

    /// The smallest vruntime in the timeline, for `update_min_vruntime()`
    /// (curr excluded; `None` when the tree is empty).
    fn tree_min_vruntime(self, cfs: &CfsRq) -> Option<u64>;

    /// `update_curr()`'s pick-specific step, after vruntime was charged:
    /// true requests a reschedule (and `update_curr` then clears curr's
    /// buddies). `nr_running` is the queue's, curr included.
    fn update_deadline(self, cfg: &SchedConfig, nr_running: u32, se: &mut SchedEntity) -> bool;

    /// `update_curr()`'s second reason to reschedule, tested when the
    /// deadline did not ask and others are queued (6.12+
    /// `did_preempt_short()`): curr lost its slice protection and is no
    /// longer eligible.
    fn did_preempt_short(
        self,
        cfs: &CfsRq,
        tasks: &impl Tasks,
        cfg: &SchedConfig,
        curr: TaskId,
    ) -> bool;

    /// `task_fork_fair()` on the parent's queue (at `now`): initialise the
    /// child `p`'s virtual time before fork placement. v5.11's charges the
    /// parent's queue first (`update_curr`); 6.12's does neither.
    /// `parent_curr` is the parent if it is the running task of `cfs`.
    fn task_fork(
        self,
        cfs: &mut CfsRq,
        tasks: &mut impl Tasks,
        cfg: &SchedConfig,
        p: TaskId,
        parent_curr: Option<TaskId>,
        now: u64,
    );

    /// `migrate_task_rq_fair()`'s virtual-time step for a task that is not
    /// queued (wakeup placement chose another CPU): `p` still has `from` as
    /// its CPU.
    fn migrate_task_rq(self, core: &mut SchedCore<'_>, p: TaskId, from: CpuId);

    /// `enqueue_entity()`: whether the entity arrives with a vruntime
    /// relative to `min_vruntime` that the destination queue must make
    /// absolute (the shared code adds its `min_vruntime`: before
    /// `update_curr` for curr, after it otherwise).
    fn enqueue_relative(self, flags: EnqueueFlags) -> bool;

    /// `place_entity()` as `enqueue_entity()` calls it, after the PELT
    /// update and before `account_entity_enqueue()`.
    fn place_entity(
        self,
        cfs: &CfsRq,
        tasks: &mut impl Tasks,
        cfg: &SchedConfig,
        id: TaskId,
        flags: EnqueueFlags,
    );

    /// `dequeue_entity()` before `clear_buddies()` and the tree removal
    /// (`update_entity_lag()`): remember what placement needs later.
    fn update_entity_lag(self, cfs: &CfsRq, tasks: &mut impl Tasks, cfg: &SchedConfig, id: TaskId);

    /// `dequeue_entity(DEQUEUE_SLEEP)`'s DELAY_DEQUEUE switch: may a
    /// blocking entity that is not eligible stay queued (`sched_delayed`)
    /// instead of leaving? (The eligibility test itself is the caller's.)
    fn delays_sleepers(self, cfg: &SchedConfig) -> bool;

    /// `dequeue_entity()` after `account_entity_dequeue()`, before the final
    /// `update_min_vruntime()`: make the entity's virtual times independent
    /// of this queue when it leaves without sleeping (a migration).
    fn dequeue_detach(self, cfs: &CfsRq, se: &mut SchedEntity, flags: DequeueFlags);

    /// `set_next_entity()`'s pick-specific step for the entity becoming curr.
    fn set_next_entity(self, se: &mut SchedEntity);

    /// `pick_next_entity()`: which queued entity runs next (curr already put
    /// back into the tree); clears the winner's buddy marks.
    fn pick_next_entity(
        self,
        cfs: &mut CfsRq,
        tasks: &impl Tasks,
        cfg: &SchedConfig,
    ) -> Option<TaskId>;

    /// `entity_tick()`'s preemption test after `update_curr` and the PELT
    /// update: true = reschedule curr.
    fn check_preempt_tick(
        self,
        cfs: &mut CfsRq,
        tasks: &impl Tasks,
        cfg: &SchedConfig,
        curr: TaskId,
    ) -> bool;

    /// `check_preempt_wakeup()`: should the waking (or new, `is_fork`) `p`
    /// preempt `curr` (`curr != p`)? `need_resched` is curr's flag (buddies
    /// are marked before it is tested).
    #[allow(clippy::too_many_arguments)]
    fn check_preempt_wakeup(
        self,
        cfs: &mut CfsRq,
        tasks: &mut impl Tasks,
        cfg: &SchedConfig,
        curr: TaskId,
        p: TaskId,
        is_fork: bool,
        need_resched: bool,
        now: u64,
    ) -> bool;

    /// `yield_task_fair()` after its shared prefix (a lone task returns,
    /// curr's buddies are cleared): charge curr and make it give way.
    fn yield_task(
        self,
        cfs: &mut CfsRq,
        tasks: &mut impl Tasks,
        cfg: &SchedConfig,
        curr: TaskId,
        now: u64,
    );
}
