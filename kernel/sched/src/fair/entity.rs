//! Entity enqueue/dequeue/pick bookkeeping shared by CFS and EEVDF.
//!
//! Mirrors `update_curr()`, `update_load_avg()` (with DO_ATTACH/DO_DETACH),
//! `enqueue_entity()`, `dequeue_entity()`, `set_next_entity()`,
//! `put_prev_entity()` and `clear_buddies()`; the steps in which CFS and
//! EEVDF differ are the run's [`PickDiscipline`] (`cfg.pick`, see
//! [`super::pick`]).

use super::cfs_rq::CfsRq;
use super::pick::PickDiscipline;
use crate::config::SchedConfig;
use crate::features::Feat;
use crate::pelt;
use crate::task::{TaskId, Tasks};
use crate::weight::calc_delta_fair;

/// `ENQUEUE_*` flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnqueueFlags {
    /// ENQUEUE_WAKEUP: the task was sleeping.
    pub wakeup: bool,
    /// ENQUEUE_INITIAL: first enqueue after fork.
    pub initial: bool,
    /// ENQUEUE_MIGRATED: arrived from another CPU.
    pub migrated: bool,
}

/// `DEQUEUE_*` flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DequeueFlags {
    /// DEQUEUE_SLEEP: the task blocks (or exits).
    pub sleep: bool,
    /// The task is being migrated by the balancer (DO_DETACH).
    pub migrate: bool,
    /// DEQUEUE_SPECIAL: a sleep that may not be delayed (Linux's special
    /// task states: stopped, traced, parked, frozen and dead; here the
    /// exit path).
    pub special: bool,
}

/// PELT attach/detach action for [`update_load_avg`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeltAction {
    /// Plain update.
    None,
    /// DO_ATTACH: attach if the entity is detached (`last_update_time == 0`).
    Attach,
    /// DO_DETACH: synchronous detach (load-balance migration).
    Detach,
}

/// `update_curr()`: charge the running entity. Returns true when the pick's
/// [`PickDiscipline::update_deadline`] (EEVDF's `update_deadline()`)
/// requests a reschedule, and then also sets [`CfsRq::resched`]: Linux
/// 6.6+ calls `resched_curr` from `update_curr` itself (6.6-6.11 inside
/// `update_deadline`), so a deadline that a wakeup, block or migration
/// passes first reschedules as one the tick passes does.
pub fn update_curr(cfs: &mut CfsRq, tasks: &mut impl Tasks, cfg: &SchedConfig, now: u64) -> bool {
    let Some(c) = cfs.curr else { return false };
    let nr_running = cfs.nr_running;
    let se = &mut tasks[c].se;
    if now <= se.exec_start {
        return false;
    }
    let delta = now - se.exec_start;
    se.exec_start = now;
    se.sum_exec_runtime += delta;
    se.vruntime += calc_delta_fair(delta, &se.load);
    let deadline = cfg.pick.update_deadline(cfg, nr_running, se);
    cfs.update_min_vruntime(cfg.pick, tasks);
    // Linux's order: update_deadline, update_min_vruntime, then (with
    // others queued) `resched || did_preempt_short`.
    let resched = deadline || (nr_running > 1 && cfg.pick.did_preempt_short(cfs, tasks, cfg, c));
    if resched {
        clear_buddies(cfs, c);
        cfs.resched = true;
    }
    resched
}

/// `update_load_avg(cfs_rq, se, flags)`: entity, then queue, then
/// attach/detach.
pub fn update_load_avg(
    cfs: &mut CfsRq,
    tasks: &mut impl Tasks,
    id: TaskId,
    now: u64,
    action: PeltAction,
) {
    update_load_avg_se(cfs, tasks, id, now, action, true);
}

/// [`update_load_avg`]; `decay_se = false` leaves the entity's own
/// averages as they are (seed 002's NEW_TASK_NO_DECAY at a first enqueue).
fn update_load_avg_se(
    cfs: &mut CfsRq,
    tasks: &mut impl Tasks,
    id: TaskId,
    now: u64,
    action: PeltAction,
    decay_se: bool,
) {
    let running = cfs.curr == Some(id);
    let se = &mut tasks[id].se;
    let w = se.load.weight;
    if decay_se && se.avg.last_update_time != 0 {
        let runnable = se.on_rq && !se.sched_delayed;
        pelt::update_task_load_avg(&mut se.avg, now, w, se.on_rq, runnable, running);
    }
    let nr_runnable = u64::from(cfs.nr_runnable());
    pelt::update_cfs_rq_load_avg(
        &mut cfs.avg,
        &mut cfs.removed,
        now,
        cfs.load.weight,
        nr_runnable,
        cfs.curr.is_some(),
        cfs.pelt_resync,
    );
    match action {
        PeltAction::Attach if se.avg.last_update_time == 0 => {
            pelt::attach_entity_load_avg(&mut cfs.avg, &mut se.avg, w, false);
        }
        PeltAction::Detach => {
            pelt::detach_entity_load_avg(&mut cfs.avg, &se.avg, w, cfs.pelt_resync);
            se.avg.last_update_time = 0;
        }
        _ => {}
    }
}

/// `update_cfs_rq_load_avg` alone (blocked-load decay, tick on idle).
pub fn update_rq_load_avg(cfs: &mut CfsRq, now: u64) {
    let nr_runnable = u64::from(cfs.nr_runnable());
    pelt::update_cfs_rq_load_avg(
        &mut cfs.avg,
        &mut cfs.removed,
        now,
        cfs.load.weight,
        nr_runnable,
        cfs.curr.is_some(),
        cfs.pelt_resync,
    );
}

/// `clear_buddies()`.
pub fn clear_buddies(cfs: &mut CfsRq, id: TaskId) {
    if cfs.next == Some(id) {
        cfs.next = None;
    }
    if cfs.last == Some(id) {
        cfs.last = None;
    }
    if cfs.skip == Some(id) {
        cfs.skip = None;
    }
}

/// `enqueue_entity()` (CFS: v5.11 renormalisation order; EEVDF: 6.15):
/// renormalise a relative arrival ([`PickDiscipline::enqueue_relative`]),
/// `update_curr`, PELT with attach, [`PickDiscipline::place_entity`],
/// accounting, tree insertion.
pub fn enqueue_entity(
    cfs: &mut CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    id: TaskId,
    flags: EnqueueFlags,
    now: u64,
) {
    // CFS keeps vruntime relative to min_vruntime while a task is off a
    // queue for a fork or migration (Linux's `renorm`): curr is renormalised
    // before update_curr, anything else after, so it is placed at the
    // current moment rather than in the past.
    let renorm = cfg.pick.enqueue_relative(flags);
    let is_curr = cfs.curr == Some(id);
    if renorm && is_curr {
        renormalise(cfs, tasks, id);
    }
    update_curr(cfs, tasks, cfg, now);
    if renorm && !is_curr {
        renormalise(cfs, tasks, id);
    }
    // Seed 002 (Fleming, "sched/fair: Do not decay new task load on first
    // enqueue", Sep 2016): v4.8's enqueue_entity_load_avg decayed an
    // attached entity to `now` before adding it to the runnable load; for a
    // task's first enqueue after fork the patch skips that decay, so the
    // task arrives with its full initial load (load_avg = weight). With
    // FORK_CLOCK_UPDATE (mainline) a new task is attached here, at `now`,
    // and there is nothing to decay either way.
    let decay_se = !(flags.initial && cfg.features.has(Feat::NewTaskNoDecay));
    update_load_avg_se(cfs, tasks, id, now, PeltAction::Attach, decay_se);
    cfg.pick.place_entity(cfs, tasks, cfg, id, flags);
    // One lookup for the remaining steps (the task directory is an atomic,
    // so repeated lookups are not merged by the compiler).
    let t = &mut tasks[id];
    pelt::runnable_load_enqueue(&mut cfs.avg, &t.se.avg, t.se.load.weight, true);
    cfs.account_enqueue_task(t);
    // account_entity_enqueue: `list_add` at the head of `cfs_tasks`.
    cfs.cfs_tasks_move_to_head(&mut t.se);
    t.se.on_rq = true;
    if cfs.curr != Some(id) {
        cfs.tree_insert_se(cfg.pick, &mut t.se, id);
    }
}

/// `dequeue_entity()`: `update_curr`, PELT (detach for a migration),
/// [`PickDiscipline::update_entity_lag`], buddies, tree removal,
/// accounting, [`PickDiscipline::dequeue_detach`] (CFS: vruntime relative
/// to min_vruntime as in v5.11; EEVDF: relative deadline), then
/// `update_min_vruntime`.
pub fn dequeue_entity(
    cfs: &mut CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    id: TaskId,
    flags: DequeueFlags,
    now: u64,
) {
    update_curr(cfs, tasks, cfg, now);
    let action = if flags.migrate {
        PeltAction::Detach
    } else {
        PeltAction::None
    };
    update_load_avg(cfs, tasks, id, now, action);
    {
        let se = &tasks[id].se;
        pelt::runnable_load_enqueue(&mut cfs.avg, &se.avg, se.load.weight, false);
    }
    cfg.pick.update_entity_lag(cfs, tasks, cfg, id);
    clear_buddies(cfs, id);
    let t = &mut tasks[id];
    if cfs.curr != Some(id) {
        cfs.tree_remove_se(cfg.pick, &t.se, id);
    }
    t.se.on_rq = false;
    cfs.account_dequeue_task(t);
    // After update_curr (which may have moved min_vruntime if `id` held it
    // back), before update_min_vruntime discounts `id`.
    cfg.pick.dequeue_detach(cfs, &mut t.se, flags);
    cfs.update_min_vruntime(cfg.pick, tasks);
}

/// `dequeue_entity(DEQUEUE_SLEEP)`'s delayed-dequeue branch (Linux 6.12,
/// DELAY_DEQUEUE): after `update_curr` and `clear_buddies`, where the pick
/// leaves sleepers queued ([`PickDiscipline::delays_sleepers`]: EEVDF with
/// the switch), an entity that is not eligible (`entity_eligible`) gets its
/// PELT update (still runnable up to now) and is marked `sched_delayed`
/// (`set_delayed`), staying queued. Otherwise, having done only the two
/// shared first steps, it says whether the task is to leave; the caller then
/// dequeues it (whose `update_curr` finds nothing more to charge).
pub fn try_delay_dequeue(
    cfs: &mut CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    id: TaskId,
    now: u64,
) -> SleepDequeue {
    update_curr(cfs, tasks, cfg, now);
    clear_buddies(cfs, id);
    if !cfg.pick.delays_sleepers(cfg) {
        return SleepDequeue::Dequeued;
    }
    let vruntime = tasks[id].se.vruntime;
    if cfs.vruntime_eligible(tasks, vruntime) {
        // Linux's rule leaves an eligible sleeper alone. One alone on its
        // queue is always eligible (V is its own vruntime); those that
        // shared it are what the delay rate is made of.
        return if cfs.nr_running > 1 {
            SleepDequeue::EligibleShared {
                lag: block_lag(cfs, tasks, vruntime),
            }
        } else {
            SleepDequeue::Dequeued
        };
    }
    let lag = block_lag(cfs, tasks, vruntime);
    update_load_avg(cfs, tasks, id, now, PeltAction::None);
    tasks[id].se.sched_delayed = true;
    cfs.nr_delayed += 1;
    SleepDequeue::Delayed { lag }
}

/// The sleeper's lag at its block, `V - v_i` in virtual ns (Linux's
/// `avg_vruntime() - se->vruntime`, unclamped: `entity_lag`'s limit is
/// for the `vlag` it keeps, not for what is measured here). Its sign is
/// exactly the eligibility test's verdict: `avg_vruntime` rounds the mean
/// down, and for an integer key `floor(S / L) >= key` holds just when
/// `S >= key * L`.
fn block_lag(cfs: &CfsRq, tasks: &impl Tasks, vruntime: u64) -> i64 {
    cfs.avg_vruntime(tasks).wrapping_sub(vruntime) as i64
}

/// What [`try_delay_dequeue`] did with a sleeping task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SleepDequeue {
    /// Left queued, `sched_delayed` (not eligible): `lag` < 0.
    Delayed {
        /// `V - v_i` at the block, virtual ns.
        lag: i64,
    },
    /// To be dequeued: eligible, though another entity (queued, running or
    /// delayed) shared its queue, so a delay was possible.
    EligibleShared {
        /// `V - v_i` at the block, virtual ns (>= 0).
        lag: i64,
    },
    /// To be dequeued: the pick never delays, or the task was alone.
    Dequeued,
}

/// `dequeue_entities(DEQUEUE_SLEEP | DEQUEUE_DELAYED)` of a delayed entity
/// the pick chose (or of a delayed task that exited, `task_dead_fair`):
/// the full [`dequeue_entity`] as for a sleep, then
/// `finish_delayed_dequeue_entity` (`clear_delayed`; DELAY_ZERO clips a
/// positive lag to 0).
pub fn finish_delayed_dequeue(
    cfs: &mut CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    id: TaskId,
    now: u64,
) {
    let flags = DequeueFlags {
        sleep: true,
        ..DequeueFlags::default()
    };
    dequeue_entity(cfs, tasks, cfg, id, flags, now);
    let se = &mut tasks[id].se;
    se.sched_delayed = false;
    if cfg.features.has(Feat::DelayZero) && se.vlag > 0 {
        se.vlag = 0;
    }
}

/// `requeue_delayed_entity()` (a wakeup found the task still queued,
/// `ttwu_runnable` with ENQUEUE_DELAYED; no `update_curr`, as in Linux):
/// with DELAY_ZERO an entity whose lag has become positive is re-placed
/// with lag 0 (at V, a fresh deadline), then the PELT update (not runnable
/// up to now) and `clear_delayed`. Returns whether it was re-placed.
pub fn requeue_delayed_entity(
    cfs: &mut CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    id: TaskId,
    now: u64,
) -> bool {
    let mut replaced = false;
    if cfg.features.has(Feat::DelayZero) {
        cfg.pick.update_entity_lag(cfs, tasks, cfg, id);
        if tasks[id].se.vlag > 0 {
            let in_tree = cfs.curr != Some(id);
            cfs.nr_running -= 1;
            if in_tree {
                cfs.tree_remove_se(cfg.pick, &tasks[id].se, id);
            }
            tasks[id].se.vlag = 0;
            cfg.pick
                .place_entity(cfs, tasks, cfg, id, EnqueueFlags::default());
            if in_tree {
                cfs.tree_insert_se(cfg.pick, &mut tasks[id].se, id);
            }
            cfs.nr_running += 1;
            replaced = true;
        }
    }
    update_load_avg(cfs, tasks, id, now, PeltAction::None);
    tasks[id].se.sched_delayed = false;
    cfs.nr_delayed -= 1;
    replaced
}

/// CFS: make a relative vruntime absolute against this queue (the
/// `se->vruntime += cfs_rq->min_vruntime` renorm step of v5.11
/// `enqueue_entity()`).
fn renormalise(cfs: &CfsRq, tasks: &mut impl Tasks, id: TaskId) {
    let se = &mut tasks[id].se;
    se.vruntime = se.vruntime.wrapping_add(cfs.min_vruntime);
}

/// `set_next_entity()`: take the picked entity out of the tree and make it curr.
pub fn set_next_entity(
    cfs: &mut CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    id: TaskId,
    now: u64,
) {
    let se = &tasks[id].se;
    if se.on_rq {
        cfs.tree_remove_se(cfg.pick, se, id);
        update_load_avg(cfs, tasks, id, now, PeltAction::None);
    }
    let se = &mut tasks[id].se;
    // __set_next_task_fair: a queued task picked to run moves to the head of
    // `cfs_tasks` ("our cfs_tasks list becomes MRU one").
    if se.on_rq {
        cfs.cfs_tasks_move_to_head(se);
    }
    cfg.pick.set_next_entity(se);
    se.exec_start = now;
    se.prev_sum_exec_runtime = se.sum_exec_runtime;
    cfs.curr = Some(id);
}

/// `put_prev_entity()`: a still-runnable curr goes back into the tree.
pub fn put_prev_entity(
    cfs: &mut CfsRq,
    tasks: &mut impl Tasks,
    cfg: &SchedConfig,
    id: TaskId,
    now: u64,
) {
    if tasks[id].se.on_rq {
        update_curr(cfs, tasks, cfg, now);
        cfs.tree_insert(cfg.pick, tasks, id);
        update_load_avg(cfs, tasks, id, now, PeltAction::None);
    }
    tasks[id].se.vprot = None;
    cfs.curr = None;
}
