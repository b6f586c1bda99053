//! Classic CFS (Linux <= 6.5, written to v5.11): slices, placement, tick and
//! wakeup preemption, buddies, vruntime renormalisation — and [`Cfs`], its
//! [`PickDiscipline`].
//!
//! Mirrors `sched_period()`, `sched_slice()`, `sched_vslice()`,
//! `place_entity()` (GENTLE_FAIR_SLEEPERS, START_DEBIT), `check_preempt_tick()`,
//! `wakeup_gran()`, `wakeup_preempt_entity()`, `check_preempt_wakeup()`,
//! the buddy-aware `pick_next_entity()`, `yield_task_fair()`,
//! `task_fork_fair()` and the relative-vruntime steps of `enqueue_entity()`,
//! `dequeue_entity()` and `migrate_task_rq_fair()`.

use super::PickDiscipline;
use crate::CpuId;
use crate::config::SchedConfig;
use crate::core::SchedCore;
use crate::fair::cfs_rq::CfsRq;
use crate::fair::entity::{DequeueFlags, EnqueueFlags, clear_buddies, update_curr};
use crate::features::Feat;
use crate::task::{SchedEntity, TaskId, TaskPolicy, Tasks};
use crate::weight::{LoadWeight, calc_delta, calc_delta_fair};

/// `__sched_period(nr_running)`.
pub fn sched_period(cfg: &SchedConfig, nr_running: u64) -> u64 {
    let t = &cfg.tunables;
    if nr_running > t.nr_latency {
        nr_running * t.min_granularity_ns
    } else {
        t.sched_latency_ns
    }
}

/// `sched_slice(cfs_rq, se)`: the wall-time share of one period.
pub fn sched_slice(cfs: &CfsRq, tasks: &impl Tasks, cfg: &SchedConfig, id: TaskId) -> u64 {
    let se = &tasks[id].se;
    let nr = u64::from(cfs.nr_running) + u64::from(!se.on_rq);
    let slice = sched_period(cfg, nr);
    let mut load: LoadWeight = cfs.load;
    if !se.on_rq {
        load.add(se.load.weight);
    }
    calc_delta(slice, se.load.weight, &load)
}

/// `sched_vslice()`: the slice in virtual time.
pub fn sched_vslice(cfs: &CfsRq, tasks: &impl Tasks, cfg: &SchedConfig, id: TaskId) -> u64 {
    calc_delta_fair(sched_slice(cfs, tasks, cfg, id), &tasks[id].se.load)
}

/// `place_entity(cfs_rq, se, initial)` (CFS form).
pub fn place_entity(
    cfs: &CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    id: TaskId,
    initial: bool,
) {
    let mut vruntime = cfs.min_vruntime;
    if initial && cfg.features.has(Feat::StartDebit) {
        vruntime += sched_vslice(cfs, tasks, cfg, id);
    }
    if !initial {
        let mut thresh = cfg.tunables.sched_latency_ns;
        if cfg.features.has(Feat::GentleFairSleepers) {
            thresh >>= 1;
        }
        vruntime = vruntime.saturating_sub(thresh);
    }
    let se = &mut tasks[id].se;
    se.vruntime = se.vruntime.max(vruntime);
}

/// `check_preempt_tick()`: should curr be preempted at this tick?
pub fn check_preempt_tick(
    cfs: &mut CfsRq,
    tasks: &impl Tasks,
    cfg: &SchedConfig,
    curr: TaskId,
) -> bool {
    let ideal = sched_slice(cfs, tasks, cfg, curr);
    let se = &tasks[curr].se;
    let delta_exec = se.sum_exec_runtime - se.prev_sum_exec_runtime;
    if delta_exec > ideal {
        clear_buddies(cfs, curr);
        return true;
    }
    if delta_exec < cfg.tunables.min_granularity_ns {
        return false;
    }
    let Some((left_v, _)) = cfs.timeline.first() else {
        return false;
    };
    let delta = se.vruntime as i64 - left_v as i64;
    delta > 0 && delta as u64 > ideal
}

/// `wakeup_gran(se)`: the wakeup granularity in `se`'s virtual time.
pub fn wakeup_gran(cfg: &SchedConfig, se_load: &LoadWeight) -> u64 {
    calc_delta_fair(cfg.tunables.wakeup_granularity_ns, se_load)
}

/// `wakeup_preempt_entity(curr, se)`: -1, 0 or 1.
pub fn wakeup_preempt_entity(
    cfg: &SchedConfig,
    curr_v: u64,
    se_v: u64,
    se_load: &LoadWeight,
) -> i32 {
    let vdiff = curr_v as i64 - se_v as i64;
    if vdiff <= 0 {
        return -1;
    }
    if vdiff as u64 > wakeup_gran(cfg, se_load) {
        return 1;
    }
    0
}

/// `set_next_buddy()` / `set_last_buddy()` (v5.11): a task with the idle
/// policy is never made a buddy. Takes the policy the caller looked up.
pub fn set_buddy(slot: &mut Option<TaskId>, id: TaskId, policy: TaskPolicy) {
    if policy != TaskPolicy::Idle {
        *slot = Some(id);
    }
}

/// `check_preempt_wakeup()` (CFS, v5.11): should the waking `p` preempt
/// `curr`? Linux's order: next-buddy mark (NEXT_BUDDY, scale, not a fork),
/// then return if curr already has `need_resched`, then an idle-policy curr
/// is preempted by a non-idle wakee, non-normal wakees never preempt,
/// `wakeup_preempt_entity`; on preemption curr becomes the last buddy
/// (LAST_BUDDY, scale, curr still queued; refused for idle-policy curr).
#[allow(clippy::too_many_arguments)]
pub fn check_preempt_wakeup(
    cfs: &mut CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    curr: TaskId,
    p: TaskId,
    is_fork: bool,
    need_resched: bool,
    now: u64,
) -> bool {
    if curr == p {
        return false;
    }
    let scale = u64::from(cfs.nr_running) >= cfg.tunables.nr_latency;
    // Each task is looked up once per step: the hook runs on every wakeup.
    let p_policy = tasks[p].policy;
    let mut next_buddy_marked = false;
    if cfg.features.has(Feat::NextBuddy) && scale && !is_fork {
        set_buddy(&mut cfs.next, p, p_policy);
        next_buddy_marked = true;
    }
    if need_resched {
        return false;
    }
    let curr_policy = tasks[curr].policy;
    let idle_curr = curr_policy == TaskPolicy::Idle;
    if !(idle_curr && p_policy != TaskPolicy::Idle) {
        if p_policy != TaskPolicy::Normal || !cfg.features.has(Feat::WakeupPreemption) {
            return false;
        }
        update_curr(cfs, tasks, cfg, now);
        let cv = tasks[curr].se.vruntime;
        let pse = &tasks[p].se;
        if wakeup_preempt_entity(cfg, cv, pse.vruntime, &pse.load) != 1 {
            return false;
        }
        if !next_buddy_marked {
            set_buddy(&mut cfs.next, p, p_policy);
        }
    }
    // preempt:
    if scale && cfg.features.has(Feat::LastBuddy) && tasks[curr].se.on_rq {
        set_buddy(&mut cfs.last, curr, curr_policy);
    }
    true
}

/// `yield_task_fair()` (CFS, v5.11) after the lone-task return and
/// `clear_buddies` (done by `Scheduler::yield_current`): charge curr
/// unless it is SCHED_BATCH, then mark it as the skip buddy
/// (`set_skip_buddy`).
pub fn yield_task(
    cfs: &mut CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    curr: TaskId,
    now: u64,
) {
    if tasks[curr].policy != TaskPolicy::Batch {
        update_curr(cfs, tasks, cfg, now);
    }
    cfs.skip = Some(curr);
}

/// `task_fork_fair()` (v5.11) after its `update_curr`: the child starts at
/// the parent's vruntime if the parent is running here (else at
/// `min_vruntime`), is placed with START_DEBIT (`place_entity(initial)`),
/// and keeps the result relative to this queue's `min_vruntime` until
/// `enqueue_entity` (no ENQUEUE_WAKEUP) adds the chosen queue's after its
/// `update_curr`.
pub fn task_fork(
    cfs: &CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    p: TaskId,
    parent_curr: Option<TaskId>,
) {
    let pv = parent_curr.map_or(cfs.min_vruntime, |q| tasks[q].se.vruntime);
    tasks[p].se.vruntime = pv;
    place_entity(cfs, tasks, cfg, p, true);
    let se = &mut tasks[p].se;
    se.vruntime = se.vruntime.wrapping_sub(cfs.min_vruntime);
}

/// `pick_next_entity()` (CFS v5.11, curr already put back): the leftmost
/// entity; a yielding (skip) leftmost gives way to the runner-up if that is
/// not too far right; then, as in Linux, the last buddy and above it the
/// next buddy override that choice if they are not too far right of the
/// leftmost (`wakeup_preempt_entity(buddy, left) < 1`), also after a skip.
pub fn pick_next_entity(cfs: &mut CfsRq, tasks: &impl Tasks, cfg: &SchedConfig) -> Option<TaskId> {
    let (left_v, left) = cfs.timeline.first()?;
    let left_load = &tasks[left].se.load;
    let mut se = left;
    if cfs.skip == Some(left)
        && let Some((second_v, second)) = cfs.timeline.next_after(left_v, tasks[left].se.tree_seq)
        && wakeup_preempt_entity(cfg, second_v, left_v, left_load) < 1
    {
        se = second;
    }
    let buddy_ok = |b: TaskId| {
        let bse = &tasks[b].se;
        bse.on_rq && wakeup_preempt_entity(cfg, bse.vruntime, left_v, left_load) < 1
    };
    if let Some(n) = cfs.next.filter(|&n| buddy_ok(n)) {
        se = n;
    } else if let Some(l) = cfs.last.filter(|&l| buddy_ok(l)) {
        se = l;
    }
    clear_buddies(cfs, se);
    Some(se)
}

/// Classic CFS (v5.11) as a [`PickDiscipline`]: a vruntime-ordered
/// timeline, slice-based tick preemption, wakeup granularity and buddies,
/// vruntime relative to `min_vruntime` while a task is between queues.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cfs;

impl PickDiscipline for Cfs {
    #[inline]
    fn name(self) -> &'static str {
        "CFS"
    }

    /// v5.11 `entity_before()`: by vruntime.
    #[inline]
    fn tree_key(self, se: &SchedEntity) -> u64 {
        se.vruntime
    }

    /// v5.11 `update_min_vruntime()`: the leftmost entity
    /// (`__pick_first_entity()`), whose key is its vruntime.
    #[inline]
    fn tree_min_vruntime(self, cfs: &CfsRq) -> Option<u64> {
        cfs.timeline.first().map(|(k, _)| k)
    }

    /// v5.11 `update_curr()` has no deadline: never a reschedule.
    #[inline]
    fn update_deadline(self, _: &SchedConfig, _: u32, _: &mut SchedEntity) -> bool {
        false
    }

    /// CFS has no slice protection to lose.
    #[inline]
    fn did_preempt_short(self, _: &CfsRq, _: &impl Tasks, _: &SchedConfig, _: TaskId) -> bool {
        false
    }

    /// v5.11 `task_fork_fair()`: `update_curr`, then [`task_fork`].
    #[inline]
    fn task_fork(
        self,
        cfs: &mut CfsRq,
        tasks: &mut impl Tasks,
        cfg: &SchedConfig,
        p: TaskId,
        parent_curr: Option<TaskId>,
        now: u64,
    ) {
        update_curr(cfs, tasks, cfg, now);
        task_fork(cfs, tasks, cfg, p, parent_curr);
    }

    /// v5.11 `migrate_task_rq_fair()` for a waking task: its vruntime
    /// becomes relative to the old queue's `min_vruntime` (read without that
    /// queue's lock, as Linux reads it); `enqueue_entity` (ENQUEUE_MIGRATED)
    /// adds the new queue's after its `update_curr`.
    #[inline]
    fn migrate_task_rq(self, core: &mut SchedCore<'_>, p: TaskId, from: CpuId) {
        let a = core.min_vruntime(from);
        let se = &mut core.tasks[p].se;
        se.vruntime = se.vruntime.wrapping_sub(a);
    }

    /// v5.11 `enqueue_entity()`'s `renorm`: the entity is relative unless
    /// this is a wakeup on its own CPU (`!ENQUEUE_WAKEUP || ENQUEUE_MIGRATED`).
    #[inline]
    fn enqueue_relative(self, flags: EnqueueFlags) -> bool {
        !flags.wakeup || flags.migrated
    }

    /// v5.11 `enqueue_entity()`: `place_entity(cfs_rq, se, 0)` on
    /// ENQUEUE_WAKEUP only (sleeper credit); forks were placed by
    /// `task_fork_fair`, migrations keep their renormalised vruntime.
    #[inline]
    fn place_entity(
        self,
        cfs: &CfsRq,
        tasks: &mut impl Tasks,
        cfg: &SchedConfig,
        id: TaskId,
        flags: EnqueueFlags,
    ) {
        if flags.wakeup {
            place_entity(cfs, tasks, cfg, id, false);
        }
    }

    /// v5.11 `dequeue_entity()` keeps no lag.
    #[inline]
    fn update_entity_lag(self, _: &CfsRq, _: &mut impl Tasks, _: &SchedConfig, _: TaskId) {}

    /// v5.11 has no delayed dequeue (it came with EEVDF's eligibility,
    /// v6.12): a blocking entity always leaves.
    #[inline]
    fn delays_sleepers(self, _: &SchedConfig) -> bool {
        false
    }

    /// v5.11 `dequeue_entity()`: without DEQUEUE_SLEEP,
    /// `se->vruntime -= cfs_rq->min_vruntime` (after `update_curr`, which
    /// may have moved it if this entity held it back; before
    /// `update_min_vruntime` discounts the entity).
    #[inline]
    fn dequeue_detach(self, cfs: &CfsRq, se: &mut SchedEntity, flags: DequeueFlags) {
        if !flags.sleep {
            se.vruntime = se.vruntime.wrapping_sub(cfs.min_vruntime);
        }
    }

    /// v5.11 `set_next_entity()` has no slice protection.
    #[inline]
    fn set_next_entity(self, _: &mut SchedEntity) {}

    /// v5.11 `pick_next_entity()`: [`pick_next_entity`].
    #[inline]
    fn pick_next_entity(
        self,
        cfs: &mut CfsRq,
        tasks: &impl Tasks,
        cfg: &SchedConfig,
    ) -> Option<TaskId> {
        pick_next_entity(cfs, tasks, cfg)
    }

    /// v5.11 `entity_tick()`: [`check_preempt_tick`] when more than one
    /// entity is queued.
    #[inline]
    fn check_preempt_tick(
        self,
        cfs: &mut CfsRq,
        tasks: &impl Tasks,
        cfg: &SchedConfig,
        curr: TaskId,
    ) -> bool {
        cfs.nr_running > 1 && check_preempt_tick(cfs, tasks, cfg, curr)
    }

    /// v5.11 `check_preempt_wakeup()`: [`check_preempt_wakeup`].
    #[inline]
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
        check_preempt_wakeup(cfs, tasks, cfg, curr, p, is_fork, need_resched, now)
    }

    /// v5.11 `yield_task_fair()`: [`yield_task`].
    #[inline]
    fn yield_task(
        self,
        cfs: &mut CfsRq,
        tasks: &mut impl Tasks,
        cfg: &SchedConfig,
        curr: TaskId,
        now: u64,
    ) {
        yield_task(cfs, tasks, cfg, curr, now);
    }
}
