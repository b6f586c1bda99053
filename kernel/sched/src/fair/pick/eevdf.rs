//! EEVDF (Linux 6.6+): deadlines, lag, lag-preserving placement, eligible
//! earliest-deadline pick, RUN_TO_PARITY and wakeup preemption — and
//! [`Eevdf`], its [`PickDiscipline`].
//!
//! Mirrors `update_deadline()`, `update_entity_lag()`, `place_entity()`
//! (PLACE_LAG, PLACE_DEADLINE_INITIAL, PLACE_REL_DEADLINE), `pick_eevdf()`,
//! `pick_next_entity()` (PICK_BUDDY), `check_preempt_wakeup_fair()` and
//! `yield_task_fair()`.

use super::PickDiscipline;
use crate::CpuId;
use crate::config::SchedConfig;
use crate::core::SchedCore;
use crate::fair::cfs_rq::CfsRq;
use crate::fair::entity::{DequeueFlags, EnqueueFlags, clear_buddies, update_curr};
use crate::features::Feat;
use crate::task::{SchedEntity, TaskId, TaskPolicy, Tasks};
use crate::weight::calc_delta_fair;

/// `update_deadline()`: when curr reaches its deadline, request a new slice.
/// Returns true if a reschedule is needed.
pub fn update_deadline(cfg: &SchedConfig, nr_running: u32, se: &mut SchedEntity) -> bool {
    if (se.vruntime as i64).wrapping_sub(se.deadline as i64) < 0 {
        return false;
    }
    se.slice = cfg.tunables.base_slice_ns;
    se.deadline = se.vruntime + calc_delta_fair(se.slice, &se.load);
    nr_running > 1
}

/// `update_entity_lag()`: vlag = V - v_i, clamped to the slice-based limit.
pub fn update_entity_lag(cfs: &CfsRq, tasks: &mut impl Tasks, cfg: &SchedConfig, id: TaskId) {
    let v = cfs.avg_vruntime(tasks);
    let se = &mut tasks[id].se;
    let vlag = v.wrapping_sub(se.vruntime) as i64;
    let limit = calc_delta_fair((2 * se.slice).max(cfg.tunables.tick_ns), &se.load) as i64;
    se.vlag = vlag.clamp(-limit, limit);
}

/// `place_entity()` (EEVDF form).
pub fn place_entity(
    cfs: &CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    id: TaskId,
    flags: EnqueueFlags,
) {
    let v = cfs.avg_vruntime(tasks);
    let curr_w = match cfs.curr {
        Some(c) if c != id => {
            let cse = &tasks[c].se;
            if cse.on_rq { cse.load.weight } else { 0 }
        }
        _ => 0,
    };
    let se = &mut tasks[id].se;
    se.slice = cfg.tunables.base_slice_ns;
    let mut vslice = calc_delta_fair(se.slice, &se.load);
    let mut lag: i64 = 0;
    if cfg.features.has(Feat::PlaceLag) && cfs.nr_running > 0 && se.vlag != 0 {
        let load = (cfs.avg_load + curr_w).max(1);
        let w = se.load.weight;
        lag = crate::fair::cfs_rq::mul_div_i128(se.vlag, load + w, load);
    }
    se.vruntime = v.wrapping_sub(lag as u64);
    if se.rel_deadline {
        se.deadline = se.deadline.wrapping_add(se.vruntime);
        se.rel_deadline = false;
        return;
    }
    if flags.initial && cfg.features.has(Feat::PlaceDeadlineInitial) {
        vslice /= 2;
    }
    se.deadline = se.vruntime + vslice;
}

fn protected(se: &SchedEntity) -> bool {
    se.vprot == Some(se.deadline)
}

/// `yield_task_fair()` (EEVDF) after the lone-task return and
/// `clear_buddies` (done by `Scheduler::yield_current`): charge curr
/// (`update_curr`); then, if curr is eligible, it forfeits the rest of its
/// request: its vruntime jumps to its deadline and `update_deadline` starts
/// the next request one slice later (upstream "sched/fair: Forfeit
/// vruntime on yield", in 6.12.y since 6.12.63 and so in the rig's
/// 6.12.117). An ineligible curr keeps both (the pick passes it over
/// anyway). Before that change (6.6 to 6.12.62) only the deadline moved
/// one request back, so a yielder that was the only eligible entity was
/// picked again at once. The slice protection ends either way.
pub fn yield_task(
    cfs: &mut CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    curr: TaskId,
    now: u64,
) {
    update_curr(cfs, tasks, cfg, now);
    if cfs.vruntime_eligible(tasks, tasks[curr].se.vruntime) {
        let nr = cfs.nr_running;
        let se = &mut tasks[curr].se;
        se.vruntime = se.deadline;
        update_deadline(cfg, nr, se);
        cfs.update_min_vruntime(Eevdf, tasks);
    }
    tasks[curr].se.vprot = None;
}

/// `pick_eevdf()`: the eligible entity with the earliest virtual deadline,
/// considering curr (which is outside the tree).
pub fn pick_eevdf(cfs: &CfsRq, tasks: &impl Tasks, cfg: &SchedConfig) -> Option<TaskId> {
    let mut curr = cfs.curr.filter(|&c| tasks[c].se.on_rq);
    if cfs.nr_running == 1 {
        return curr.or_else(|| cfs.timeline.first().map(|(_, id)| id));
    }
    if let Some(c) = curr
        && !cfs.vruntime_eligible(tasks, tasks[c].se.vruntime)
    {
        curr = None;
    }
    if let Some(c) = curr
        && cfg.features.has(Feat::RunToParity)
        && protected(&tasks[c].se)
    {
        return Some(c);
    }
    let mut best = cfs
        .timeline
        .first_matching_aux(|v| cfs.vruntime_eligible(tasks, v))
        .map(|(_, id)| id);
    if let Some(c) = curr {
        match best {
            Some(b)
                if (tasks[c].se.deadline as i64).wrapping_sub(tasks[b].se.deadline as i64) >= 0 => {
            }
            _ => best = Some(c),
        }
    }
    // A tree-only fallback keeps the core work-conserving should rounding
    // ever leave no entity eligible (Linux warns in that case).
    best.or_else(|| cfs.timeline.first().map(|(_, id)| id))
}

/// `pick_next_entity()` (EEVDF, curr already put back): an eligible next
/// buddy first (PICK_BUDDY), else `pick_eevdf`.
pub fn pick_next_entity(cfs: &mut CfsRq, tasks: &impl Tasks, cfg: &SchedConfig) -> Option<TaskId> {
    if cfg.features.has(Feat::PickBuddy)
        && let Some(n) = cfs.next
        && tasks[n].se.on_rq
        && cfs.vruntime_eligible(tasks, tasks[n].se.vruntime)
    {
        cfs.next = None;
        return Some(n);
    }
    let se = pick_eevdf(cfs, tasks, cfg);
    if let Some(s) = se {
        clear_buddies(cfs, s);
    }
    se
}

/// `check_preempt_wakeup_fair()` (EEVDF, 6.15): should waking `p` preempt
/// `curr`? Linux's order: next-buddy mark (NEXT_BUDDY, not a fork, never an
/// idle-policy wakee), then return if curr already has `need_resched`, then
/// the idle-policy rules and `pick_eevdf() == p`.
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
    // Each task's policy is looked up once: the hook runs on every wakeup.
    let p_policy = tasks[p].policy;
    let p_idle = p_policy == TaskPolicy::Idle;
    // 6.12: never a delayed wakee (one the balancer just attached).
    if cfg.features.has(Feat::NextBuddy) && !is_fork && !tasks[p].se.sched_delayed {
        super::cfs::set_buddy(&mut cfs.next, p, p_policy);
    }
    if need_resched {
        return false;
    }
    if !cfg.features.has(Feat::WakeupPreemption) {
        return false;
    }
    let c_idle = tasks[curr].policy == TaskPolicy::Idle;
    if c_idle && !p_idle {
        tasks[curr].se.vprot = None;
        return true;
    }
    if c_idle != p_idle || p_policy != TaskPolicy::Normal {
        return false;
    }
    update_curr(cfs, tasks, cfg, now);
    pick_eevdf(cfs, tasks, cfg) == Some(p)
}

/// EEVDF (6.6+; the tree and pick in their 6.8-6.15 form) as a
/// [`PickDiscipline`]: a deadline-ordered timeline with each subtree's
/// minimum vruntime, lag kept across sleep and migration, deadline-driven
/// tick preemption, eligibility-based wakeup preemption.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Eevdf;

impl PickDiscipline for Eevdf {
    #[inline]
    fn name(self) -> &'static str {
        "EEVDF"
    }

    /// 6.8+ `entity_before()`: by virtual deadline (the timeline's aux
    /// value is vruntime, for the subtree minimum).
    #[inline]
    fn tree_key(self, se: &SchedEntity) -> u64 {
        se.deadline
    }

    /// 6.8+ `update_min_vruntime()`: the root's subtree `min_vruntime`
    /// (`__pick_root_entity()`).
    #[inline]
    fn tree_min_vruntime(self, cfs: &CfsRq) -> Option<u64> {
        cfs.timeline.min_aux()
    }

    /// `update_deadline()` from `update_curr()`: [`update_deadline`].
    #[inline]
    fn update_deadline(self, cfg: &SchedConfig, nr_running: u32, se: &mut SchedEntity) -> bool {
        update_deadline(cfg, nr_running, se)
    }

    /// 6.12+ `did_preempt_short()`: with PREEMPT_SHORT, a curr whose
    /// protection is gone (its stash no longer equals its deadline: a
    /// wakeup's `cancel_protect_slice`, or picked again after a renewal,
    /// which does not stash) is rescheduled once it is not eligible. The
    /// other half of PREEMPT_SHORT, `do_preempt_short()`, compares slices
    /// and cannot fire without custom slices.
    #[inline]
    fn did_preempt_short(
        self,
        cfs: &CfsRq,
        tasks: &impl Tasks,
        cfg: &SchedConfig,
        curr: TaskId,
    ) -> bool {
        if !cfg.features.has(Feat::PreemptShort) {
            return false;
        }
        let se = &tasks[curr].se;
        se.vprot != Some(se.deadline) && !cfs.vruntime_eligible(tasks, se.vruntime)
    }

    /// 6.6+ `__sched_fork()`: zero lag and the base request; vruntime and
    /// deadline are set by `place_entity` at the first enqueue
    /// (ENQUEUE_INITIAL). 6.12's `task_fork_fair()` charges nothing: the
    /// parent's queue is not updated at fork (its enqueue does it if the
    /// child lands there).
    #[inline]
    fn task_fork(
        self,
        _: &mut CfsRq,
        tasks: &mut impl Tasks,
        cfg: &SchedConfig,
        p: TaskId,
        _: Option<TaskId>,
        _: u64,
    ) {
        let se = &mut tasks[p].se;
        se.vlag = 0;
        se.slice = cfg.tunables.base_slice_ns;
    }

    /// 6.6+ `migrate_task_rq_fair()` has no vruntime step: vruntime stays
    /// absolute and the lag saved at dequeue carries the position.
    #[inline]
    fn migrate_task_rq(self, _: &mut SchedCore<'_>, _: TaskId, _: CpuId) {}

    /// 6.6+ `enqueue_entity()`: nothing arrives relative (placement
    /// re-expresses the lag against this queue's V).
    #[inline]
    fn enqueue_relative(self, _: EnqueueFlags) -> bool {
        false
    }

    /// 6.6+ `enqueue_entity()`: `place_entity()` on every enqueue:
    /// [`place_entity`].
    #[inline]
    fn place_entity(
        self,
        cfs: &CfsRq,
        tasks: &mut impl Tasks,
        cfg: &SchedConfig,
        id: TaskId,
        flags: EnqueueFlags,
    ) {
        place_entity(cfs, tasks, cfg, id, flags);
    }

    /// 6.6+ `dequeue_entity()`: [`update_entity_lag`].
    #[inline]
    fn update_entity_lag(self, cfs: &CfsRq, tasks: &mut impl Tasks, cfg: &SchedConfig, id: TaskId) {
        update_entity_lag(cfs, tasks, cfg, id);
    }

    /// 6.12+ `dequeue_entity()`: with DELAY_DEQUEUE an entity that is not
    /// eligible (`!entity_eligible()`, curr counted in V) stays queued.
    #[inline]
    fn delays_sleepers(self, cfg: &SchedConfig) -> bool {
        cfg.features.has(Feat::DelayDequeue)
    }

    /// 6.12+ `dequeue_entity()`, PLACE_REL_DEADLINE: without DEQUEUE_SLEEP
    /// the deadline is kept relative to vruntime until `place_entity`.
    #[inline]
    fn dequeue_detach(self, _: &CfsRq, se: &mut SchedEntity, flags: DequeueFlags) {
        if !flags.sleep {
            se.deadline = se.deadline.wrapping_sub(se.vruntime);
            se.rel_deadline = true;
        }
    }

    /// 6.6+ `set_next_entity()` (6.16 `set_protect_slice()`): RUN_TO_PARITY
    /// protection records the deadline the entity was picked with.
    #[inline]
    fn set_next_entity(self, se: &mut SchedEntity) {
        se.vprot = Some(se.deadline);
    }

    /// 6.12+ `pick_next_entity()`: [`pick_next_entity`].
    #[inline]
    fn pick_next_entity(
        self,
        cfs: &mut CfsRq,
        tasks: &impl Tasks,
        cfg: &SchedConfig,
    ) -> Option<TaskId> {
        pick_next_entity(cfs, tasks, cfg)
    }

    /// 6.6+ `entity_tick()` has no `check_preempt_tick`: the tick's
    /// reschedule comes from `update_deadline` in `update_curr`.
    #[inline]
    fn check_preempt_tick(self, _: &mut CfsRq, _: &impl Tasks, _: &SchedConfig, _: TaskId) -> bool {
        false
    }

    /// 6.15 `check_preempt_wakeup_fair()`: [`check_preempt_wakeup`].
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

    /// 6.6-6.16 `yield_task_fair()`: [`yield_task`].
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
