//! The one dispatch point: [`PickPolicy`] (the run's `--pick`) as a
//! [`PickDiscipline`] that forwards every step to its variant's
//! discipline.
//!
//! `dispatch!` holds the only `match` on the pick in the core; each
//! forwarder below is that match around an inlined call of the variant's
//! method, which costs what the per-site `cfg.pick == ..` branches it
//! replaced did. A new pick adds its arm to `dispatch!`.

use super::PickDiscipline;
use super::cfs::Cfs;
use super::eevdf::Eevdf;
use crate::CpuId;
use crate::config::{PickPolicy, SchedConfig};
use crate::core::SchedCore;
use crate::fair::cfs_rq::CfsRq;
use crate::fair::entity::{DequeueFlags, EnqueueFlags};
use crate::task::{SchedEntity, TaskId, Tasks};

/// `dispatch!(pick, |d| expr)`: evaluate `expr` with `d` bound to the
/// discipline of `pick`.
macro_rules! dispatch {
    ($pick:expr, |$d:ident| $body:expr) => {
        match $pick {
            PickPolicy::Cfs => {
                let $d = Cfs;
                $body
            }
            PickPolicy::Eevdf => {
                let $d = Eevdf;
                $body
            }
        }
    };
}

impl PickDiscipline for PickPolicy {
    #[inline]
    fn name(self) -> &'static str {
        dispatch!(self, |d| d.name())
    }

    #[inline(always)]
    fn tree_key(self, se: &SchedEntity) -> u64 {
        dispatch!(self, |d| d.tree_key(se))
    }

    #[inline(always)]
    fn tree_min_vruntime(self, cfs: &CfsRq) -> Option<u64> {
        dispatch!(self, |d| d.tree_min_vruntime(cfs))
    }

    #[inline(always)]
    fn update_deadline(self, cfg: &SchedConfig, nr_running: u32, se: &mut SchedEntity) -> bool {
        dispatch!(self, |d| d.update_deadline(cfg, nr_running, se))
    }

    #[inline(always)]
    fn task_fork(
        self,
        cfs: &mut CfsRq,
        tasks: &mut impl Tasks,
        cfg: &SchedConfig,
        p: TaskId,
        parent_curr: Option<TaskId>,
        now: u64,
    ) {
        dispatch!(self, |d| d.task_fork(cfs, tasks, cfg, p, parent_curr, now))
    }

    #[inline(always)]
    fn migrate_task_rq(self, core: &mut SchedCore<'_>, p: TaskId, from: CpuId) {
        dispatch!(self, |d| d.migrate_task_rq(core, p, from))
    }

    #[inline(always)]
    fn enqueue_relative(self, flags: EnqueueFlags) -> bool {
        dispatch!(self, |d| d.enqueue_relative(flags))
    }

    #[inline(always)]
    fn place_entity(
        self,
        cfs: &CfsRq,
        tasks: &mut impl Tasks,
        cfg: &SchedConfig,
        id: TaskId,
        flags: EnqueueFlags,
    ) {
        dispatch!(self, |d| d.place_entity(cfs, tasks, cfg, id, flags))
    }

    #[inline(always)]
    fn update_entity_lag(self, cfs: &CfsRq, tasks: &mut impl Tasks, cfg: &SchedConfig, id: TaskId) {
        dispatch!(self, |d| d.update_entity_lag(cfs, tasks, cfg, id))
    }

    #[inline(always)]
    fn delays_sleepers(self, cfg: &SchedConfig) -> bool {
        dispatch!(self, |d| d.delays_sleepers(cfg))
    }

    #[inline(always)]
    fn dequeue_detach(self, cfs: &CfsRq, se: &mut SchedEntity, flags: DequeueFlags) {
        dispatch!(self, |d| d.dequeue_detach(cfs, se, flags))
    }

    #[inline(always)]
    fn did_preempt_short(
        self,
        cfs: &CfsRq,
        tasks: &impl Tasks,
        cfg: &SchedConfig,
        curr: TaskId,
    ) -> bool {
        dispatch!(self, |d| d.did_preempt_short(cfs, tasks, cfg, curr))
    }

    #[inline(always)]
    fn set_next_entity(self, se: &mut SchedEntity) {
        dispatch!(self, |d| d.set_next_entity(se))
    }

    #[inline(always)]
    fn pick_next_entity(
        self,
        cfs: &mut CfsRq,
        tasks: &impl Tasks,
        cfg: &SchedConfig,
    ) -> Option<TaskId> {
        dispatch!(self, |d| d.pick_next_entity(cfs, tasks, cfg))
    }

    #[inline(always)]
    fn check_preempt_tick(
        self,
        cfs: &mut CfsRq,
        tasks: &impl Tasks,
        cfg: &SchedConfig,
        curr: TaskId,
    ) -> bool {
        dispatch!(self, |d| d.check_preempt_tick(cfs, tasks, cfg, curr))
    }

    #[inline(always)]
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
    ) -> bool {
        dispatch!(self, |d| d.check_preempt_wakeup(
            cfs,
            tasks,
            cfg,
            curr,
            p,
            is_fork,
            need_resched,
            now
        ))
    }

    #[inline(always)]
    fn yield_task(
        self,
        cfs: &mut CfsRq,
        tasks: &mut impl Tasks,
        cfg: &SchedConfig,
        curr: TaskId,
        now: u64,
    ) {
        dispatch!(self, |d| d.yield_task(cfs, tasks, cfg, curr, now))
    }
}
