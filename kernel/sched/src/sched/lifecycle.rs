//! Task lifecycle entry points: fork (`wake_up_new_task`), wakeup
//! (`try_to_wake_up`), block (`deactivate_task(DEQUEUE_SLEEP)`), exit and
//! `sched_yield`.

use super::{Scheduler, WakeupResult};
use crate::CpuId;
use crate::core::{CpuList, SchedCore};
use crate::fair::entity::{self, DequeueFlags, EnqueueFlags};
use crate::fair::pick::PickDiscipline;
use crate::features::Feat;
use crate::pelt;
use crate::placement::WakeFlags;
use crate::policy::SchedPolicy;
use crate::stats::MigrationReason;
use crate::task::{Task, TaskId, TaskPolicy, TaskState};
use alloc::boxed::Box;

/// Where [`Scheduler::start_task`] puts a new task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Fork placement (`select_task_rq` with SD_BALANCE_FORK).
    Fork,
    /// On this CPU, no placement decision; balanced normally later.
    On(CpuId),
    /// On this CPU for its whole life (`kthread_bind`).
    Bound(CpuId),
}

impl<P: SchedPolicy> Scheduler<P> {
    /// `wake_up_new_task()`: create a task forked on `this_cpu` by `parent`
    /// (None = created by the kernel itself), place it, queue it.
    pub fn wake_up_new_task(
        &self,
        parent: Option<TaskId>,
        this_cpu: CpuId,
        nice: i32,
        tpolicy: TaskPolicy,
        now: u64,
    ) -> WakeupResult {
        self.new_task(parent, this_cpu, None, false, nice, tpolicy, now)
    }

    /// `wake_up_new_task()` for a task started on `cpu` without a fork
    /// placement decision; later wakeups and balancing treat it normally.
    pub fn wake_up_new_task_on(
        &self,
        parent: Option<TaskId>,
        cpu: CpuId,
        nice: i32,
        tpolicy: TaskPolicy,
        now: u64,
    ) -> WakeupResult {
        self.new_task(parent, cpu, Some(cpu), false, nice, tpolicy, now)
    }

    /// `wake_up_new_task()` for a task bound to `cpu` for its whole life
    /// (`kthread_bind`, or a one-CPU affinity mask): it starts there, every
    /// wakeup returns there and the balancer never moves it.
    pub fn wake_up_new_task_bound(
        &self,
        parent: Option<TaskId>,
        cpu: CpuId,
        nice: i32,
        tpolicy: TaskPolicy,
        now: u64,
    ) -> WakeupResult {
        self.new_task(parent, cpu, Some(cpu), true, nice, tpolicy, now)
    }

    /// Reserve the id of a task about to be created (so the caller can
    /// publish its own bookkeeping under that id before the task becomes
    /// runnable); None when `cfg.max_tasks` tasks are alive. Pass it to
    /// [`Self::start_task`], or give it back with [`Self::unreserve_task`].
    pub fn reserve_task(&self) -> Option<TaskId> {
        self.shared.alloc_id()
    }

    /// Give back a reserved id that was never started.
    pub fn unreserve_task(&self, p: TaskId) {
        self.shared.release_id(p);
    }

    /// `wake_up_new_task()` for a reserved id: fork placement from
    /// `this_cpu` ([`Start::Fork`]), or start on a given CPU, optionally
    /// bound to it for life.
    #[allow(clippy::too_many_arguments)]
    pub fn start_task(
        &self,
        p: TaskId,
        parent: Option<TaskId>,
        this_cpu: CpuId,
        start: Start,
        nice: i32,
        tpolicy: TaskPolicy,
        now: u64,
    ) -> WakeupResult {
        let (cpu, bind) = match start {
            Start::Fork => (None, false),
            Start::On(c) => (Some(c), false),
            Start::Bound(c) => (Some(c), true),
        };
        self.start(p, parent, this_cpu, cpu, bind, nice, tpolicy, now)
    }

    #[allow(clippy::too_many_arguments)]
    fn new_task(
        &self,
        parent: Option<TaskId>,
        this_cpu: CpuId,
        start: Option<CpuId>,
        bind: bool,
        nice: i32,
        tpolicy: TaskPolicy,
        now: u64,
    ) -> WakeupResult {
        let p = self.reserve_task().unwrap_or_else(|| {
            panic!(
                "more than {} tasks alive (SchedConfig::max_tasks)",
                self.shared.cfg.max_tasks
            )
        });
        self.start(p, parent, this_cpu, start, bind, nice, tpolicy, now)
    }

    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        p: TaskId,
        parent: Option<TaskId>,
        this_cpu: CpuId,
        start: Option<CpuId>,
        bind: bool,
        nice: i32,
        tpolicy: TaskPolicy,
        now: u64,
    ) -> WakeupResult {
        // The task's one allocation, made before any lock is taken.
        let mut task = Box::new(Task::new(p, nice, tpolicy, this_cpu));
        if bind {
            task.bound_cpu = start;
        }
        let mut core = self.shared.lock(this_cpu);
        let now = core.update_rq_clock(this_cpu, now);
        core.tasks.push_transit(task);
        core.stats.rq.nr_forks += 1;
        // init_entity_runnable_average: seen as fully loaded until proven otherwise.
        let w = core.tasks[p].weight();
        core.tasks[p].se.avg.load_avg = w;
        // sched_fork / task_fork_fair on the parent's CPU.
        let cfg = core.cfg;
        {
            let c = &mut core;
            let rq = &mut c.rqs[this_cpu];
            let parent_curr = parent.filter(|&q| rq.curr == Some(q));
            cfg.pick
                .task_fork(&mut rq.cfs, &mut c.tasks, cfg, p, parent_curr, now);
            // dup_task_struct copies the parent's task_struct and sched_fork
            // does not reset the wakee fields: the child starts with the
            // parent's wakee_flips, decay stamp and last_wakee (so threads
            // of a process started from a busy shell start "wide").
            if let Some(q) = parent_curr {
                let (flips, ts, last) = {
                    let t = &c.tasks[q];
                    (t.wakee_flips, t.wakee_flip_decay_ts, t.last_wakee)
                };
                let t = &mut c.tasks[p];
                t.wakee_flips = flips;
                t.wakee_flip_decay_ts = ts;
                t.last_wakee = last;
            }
            // A pick whose task_fork charges the parent (v5.11's update_curr)
            // may have asked for one.
            c.resched_if_update_curr_asked(this_cpu);
        }
        let cpu = match start {
            Some(c) => c,
            None => self
                .policy
                .select_cpu(&mut core, p, this_cpu, this_cpu, WakeFlags::FORK, now),
        };
        if cpu != this_cpu {
            // Never hold two runqueues here: the parent's is released first.
            core.unlock(this_cpu);
            core.lock_also(cpu);
            let d = core.topo.distance(this_cpu, cpu);
            core.stats.migrations.record(MigrationReason::Fork, d);
        }
        // `recent_used_cpu` stays `this_cpu`, as `Task::new` set it: Linux's
        // wake_up_new_task sets it to task_cpu(p), the parent's CPU, before
        // select_task_rq, so the child's first wakeup may go back there.
        core.tasks[p].cpu = cpu;
        core.stats.fork_targets[cpu] += 1;
        // Seed 002: with NO_FORK_CLOCK_UPDATE, v4.8's wake_up_new_task: no
        // update_rq_clock before post_init_entity_util_avg, which (since
        // 7dc603c9028e) updates the queue and attaches the task at the
        // destination's clock as last updated; activate_task's
        // update_rq_clock then moves the clock to now, and the first
        // enqueue decays the task over the gap (unless NEW_TASK_NO_DECAY).
        // Mainline (and Zijlstra's proposal in the thread) updates the clock
        // first: the task is attached at now, by enqueue_entity.
        let stale = core.rqs[cpu].clock;
        let v48 = !cfg.features.has(Feat::ForkClockUpdate) && stale < now;
        // Mainline's post_init_entity_util_avg reads the queue's averages as
        // last updated (wake_up_new_task only updates the rq clock before
        // it); v4.8's brought the queue to the (stale) clock first.
        if v48 {
            entity::update_rq_load_avg(&mut core.rqs[cpu].cfs, stale);
        } else {
            core.update_rq_clock(cpu, now);
        }
        {
            let cap = core.rqs[cpu].cpu_capacity_orig;
            let rq_avg = core.rqs[cpu].cfs.avg;
            pelt::post_init_entity_util_avg(&mut core.tasks[p].se.avg, &rq_avg, w, cap);
        }
        // v4.8's attach_entity_load_avg at the stale clock. (A queue never
        // updated has last_update_time 0, which means "detached": then the
        // enqueue attaches, as in mainline.)
        if v48 && core.rqs[cpu].cfs.avg.last_update_time != 0 {
            let c = &mut core;
            pelt::attach_entity_load_avg(&mut c.rqs[cpu].cfs.avg, &mut c.tasks[p].se.avg, w, false);
        }
        let now_dst = core.update_rq_clock(cpu, now);
        let flags = EnqueueFlags {
            wakeup: false,
            initial: true,
            migrated: false,
        };
        self.policy.enqueue(&mut core, cpu, p, flags, now_dst);
        core.check_preempt_curr(cpu, p, true, now_dst);
        WakeupResult {
            task: p,
            cpu,
            resched: core.take_resched(),
        }
    }

    /// [`Self::wake_up_flags`] with `sync` = WF_SYNC.
    pub fn wake_up(&self, p: TaskId, waker_cpu: CpuId, sync: bool, now: u64) -> WakeupResult {
        let flags = if sync {
            WakeFlags::SYNC
        } else {
            WakeFlags::default()
        };
        self.wake_up_flags(p, waker_cpu, flags, now)
    }

    /// `try_to_wake_up(p, wake_flags)` executed on `waker_cpu` (whose
    /// current task, if any, is the waker), always activating the wakee at
    /// once (TTWU_QUEUE is not consulted: the simulator and most tests use
    /// this form). `wake_flags` are the caller's (WF_SYNC, say); WF_TTWU is
    /// added here. Waking a task that is not sleeping is a no-op (its CPU
    /// is returned, no decisions).
    ///
    /// Locking: `p`'s runqueue to take it (it is then in transit, owned by
    /// this call), the waker's runqueue for the placement decision, then the
    /// target's to queue it; never two at once.
    pub fn wake_up_flags(
        &self,
        p: TaskId,
        waker_cpu: CpuId,
        wake_flags: WakeFlags,
        now: u64,
    ) -> WakeupResult {
        self.try_to_wake_up(p, waker_cpu, wake_flags, now, false)
    }

    /// [`Self::wake_up_flags`] as the kernel calls it: with the TTWU_QUEUE
    /// switch on, a wakeup for which [`ttwu_queue_cond`] holds is not
    /// activated here. The waker places the task, accounts the wakeup and
    /// moves its load off prev (`set_task_cpu`), then puts it on the
    /// target's wake list (`__ttwu_queue_wakelist`) without taking the
    /// target's runqueue lock; the result's `resched` is then just the
    /// target, whose reschedule IPI delivers the list, and the target
    /// activates it with [`Self::sched_ttwu_pending`] (its IPI handler, or
    /// [`Self::schedule`], which activates pending wakeups before it picks).
    pub fn wake_up_queue(
        &self,
        p: TaskId,
        waker_cpu: CpuId,
        wake_flags: WakeFlags,
        now: u64,
    ) -> WakeupResult {
        let queue = self.shared.cfg.features.has(Feat::TtwuQueue);
        self.try_to_wake_up(p, waker_cpu, wake_flags, now, queue)
    }

    fn try_to_wake_up(
        &self,
        p: TaskId,
        waker_cpu: CpuId,
        wake_flags: WakeFlags,
        now: u64,
        queue: bool,
    ) -> WakeupResult {
        let sync = wake_flags.has(WakeFlags::SYNC);
        let mut core = match self.shared.lock_task_or_listed(p, waker_cpu) {
            Ok(Some(c)) => c,
            // Not alive: like a wakeup of an exited task, nothing to do.
            Ok(None) => {
                return WakeupResult {
                    task: p,
                    cpu: waker_cpu,
                    resched: CpuList::new(),
                };
            }
            // Already woken, waiting on a wake list (TASK_WAKING): no-op.
            Err(cpu) => {
                return WakeupResult {
                    task: p,
                    cpu,
                    resched: CpuList::new(),
                };
            }
        };
        let (prev, state) = {
            let t = &core.tasks[p];
            (t.cpu, t.state)
        };
        if state != TaskState::Sleeping {
            // Like try_to_wake_up() on a task that is not blocked: no-op.
            return WakeupResult {
                task: p,
                cpu: prev,
                resched: core.take_resched(),
            };
        }
        if core.rqs[prev].curr == Some(p) {
            return self.wake_up_on_cpu(core, p, prev, waker_cpu, wake_flags, now);
        }
        if core.tasks[p].se.sched_delayed {
            return self.ttwu_runnable(core, p, prev, waker_cpu, wake_flags, now);
        }
        // p stays homed on prev while prev is held; it goes into transit
        // (owned by this wakeup) only when prev's lock is let go.
        if prev != waker_cpu {
            core.tasks.take(p);
            core.unlock(prev);
            core.lock_also(waker_cpu);
        }
        let now = core.update_rq_clock(waker_cpu, now);
        let flags = wake_flags.or(WakeFlags::TTWU);
        // select_task_rq(): only tasks allowed on more than one CPU get a
        // placement decision.
        let cpu = match core.tasks[p].bound_cpu {
            Some(c) => c,
            None => self
                .policy
                .select_cpu(&mut core, p, prev, waker_cpu, flags, now),
        };
        core.stats.wake.nr_wakeups += 1;
        let ts = &mut core.tasks[p].stats;
        ts.nr_wakeups += 1;
        if sync {
            ts.nr_wakeups_sync += 1;
            core.stats.wake.nr_wakeups_sync += 1;
        }
        core.rqs[waker_cpu].ttwu_count += 1;
        let migrated = cpu != prev;
        if cpu == waker_cpu {
            core.rqs[waker_cpu].ttwu_local += 1;
            core.stats.wake.nr_wakeups_local += 1;
        } else {
            core.stats.wake.nr_wakeups_remote += 1;
            if !core.tasks.in_transit(p) {
                core.tasks.take(p);
            }
            if queue && ttwu_queue_cond(&core, p, cpu, waker_cpu) {
                // ttwu_queue_wakelist(): set_task_cpu on the waker, then
                // the wake list; the target activates it.
                if migrated {
                    core.stats.wake.nr_wakeups_migrate += 1;
                    core.tasks[p].stats.nr_wakeups_migrate += 1;
                    core.migrate_sleeping_task(p, cpu, MigrationReason::Wakeup, now);
                }
                core.stats.wake.ttwu_queued += 1;
                core.tasks.queue_wake(p, cpu, migrated);
                let mut resched = core.take_resched();
                if !resched.contains(&cpu) {
                    resched.push(cpu);
                }
                return WakeupResult {
                    task: p,
                    cpu,
                    resched,
                };
            }
            core.unlock(waker_cpu);
            core.lock_also(cpu);
        }
        if migrated {
            core.stats.wake.nr_wakeups_migrate += 1;
            core.tasks[p].stats.nr_wakeups_migrate += 1;
            core.migrate_sleeping_task(p, cpu, MigrationReason::Wakeup, now);
        }
        let now_dst = core.update_rq_clock(cpu, now);
        self.ttwu_do_activate(&mut core, cpu, p, migrated, now_dst);
        WakeupResult {
            task: p,
            cpu,
            resched: core.take_resched(),
        }
    }

    /// `ttwu_do_activate()` on `cpu` (held, clock updated to `now`): fold
    /// the idle period into avg_idle (`ttwu_do_wakeup`), enqueue with
    /// ENQUEUE_WAKEUP (and ENQUEUE_MIGRATED if its CPU changed), then the
    /// wakeup-preemption check.
    fn ttwu_do_activate(
        &self,
        core: &mut SchedCore<'_>,
        cpu: CpuId,
        p: TaskId,
        migrated: bool,
        now: u64,
    ) {
        let rq = &mut core.rqs[cpu];
        if rq.idle_stamp != 0 {
            let delta = now.saturating_sub(rq.idle_stamp);
            let max = 2 * rq.max_idle_balance_cost;
            let avg = rq.avg_idle as i64 + (delta as i64 - rq.avg_idle as i64) / 8;
            rq.avg_idle = (avg.max(0) as u64).min(max);
            rq.idle_stamp = 0;
        }
        let ef = EnqueueFlags {
            wakeup: true,
            initial: false,
            migrated,
        };
        self.policy.enqueue(core, cpu, p, ef, now);
        core.check_preempt_curr(cpu, p, false, now);
    }

    /// `sched_ttwu_pending()` on `cpu` (called by `cpu` itself, from its
    /// reschedule IPI or idle loop): activate every task other CPUs put on
    /// its wake list, oldest first, under `cpu`'s runqueue lock only.
    /// Returns the CPUs to reschedule (`cpu` itself when a wakee preempts
    /// what runs there). Nothing to do costs one atomic load (inline, so
    /// the kernel's idle loop and IPI handler make no call for it).
    #[inline]
    pub fn sched_ttwu_pending(&self, cpu: CpuId, now: u64) -> CpuList {
        if !self.shared.ttwu_pending(cpu) {
            return CpuList::new();
        }
        self.activate_wake_list(cpu, now)
    }

    #[inline(never)]
    fn activate_wake_list(&self, cpu: CpuId, now: u64) -> CpuList {
        let mut core = self.shared.lock(cpu);
        self.ttwu_pending_locked(&mut core, cpu, now);
        core.take_resched()
    }

    /// [`Self::sched_ttwu_pending`] with `cpu` held; returns how many tasks
    /// it activated. `ttwu_pending` is cleared only after the activated
    /// tasks are published in `cpu`'s snapshot, so `idle_cpu()` never sees
    /// the CPU idle in between (Linux clears it after the enqueues for the
    /// same reason).
    pub(crate) fn ttwu_pending_locked(
        &self,
        core: &mut SchedCore<'_>,
        cpu: CpuId,
        now: u64,
    ) -> usize {
        if !self.shared.ttwu_pending(cpu) {
            return 0;
        }
        let now = core.update_rq_clock(cpu, now);
        let mut n = 0;
        loop {
            while let Some((p, migrated)) = core.tasks.unqueue_wake(cpu) {
                self.ttwu_do_activate(core, cpu, p, migrated, now);
                n += 1;
            }
            core.publish(cpu);
            if core.tasks.finish_wake_list(cpu) {
                return n;
            }
        }
    }

    /// `task_rq_lock(p)` for entry points that may run on the CPU whose
    /// wake list `p` waits on: that list is activated first (under its
    /// CPU's lock, at that runqueue's clock), then `p` is locked where it
    /// now is. The activation's reschedule requests stay in the returned
    /// context (the waker's IPI to that CPU is on its way regardless).
    pub(crate) fn lock_task(&self, p: TaskId, acting_cpu: CpuId) -> Option<SchedCore<'_>> {
        let mut resched = CpuList::new();
        loop {
            match self.shared.lock_task_or_listed(p, acting_cpu) {
                Ok(Some(mut c)) => {
                    for &r in resched.iter() {
                        if !c.resched.contains(&r) {
                            c.resched.push(r);
                        }
                    }
                    return Some(c);
                }
                Ok(None) => return None,
                Err(cpu) => {
                    let mut c = self.shared.lock_on(acting_cpu, cpu);
                    let now = c.rqs[cpu].clock;
                    self.ttwu_pending_locked(&mut c, cpu, now);
                    for &r in c.take_resched().iter() {
                        if !resched.contains(&r) {
                            resched.push(r);
                        }
                    }
                }
            }
        }
    }

    /// Wakeup of a task that blocked but has not been switched out yet (still
    /// `curr`, Linux's `p->on_cpu` window): it is re-queued as curr on its
    /// own CPU, like `ttwu_runnable()` (requeued if its dequeue was
    /// delayed).
    fn wake_up_on_cpu(
        &self,
        mut core: SchedCore<'_>,
        p: TaskId,
        cpu: CpuId,
        waker_cpu: CpuId,
        wake_flags: WakeFlags,
        now: u64,
    ) -> WakeupResult {
        if core.tasks[p].se.sched_delayed {
            return self.ttwu_runnable(core, p, cpu, waker_cpu, wake_flags, now);
        }
        let now = core.update_rq_clock(cpu, now);
        core.stats.wake.nr_wakeups += 1;
        core.tasks[p].stats.nr_wakeups += 1;
        let ef = EnqueueFlags {
            wakeup: true,
            initial: false,
            migrated: false,
        };
        self.policy.enqueue(&mut core, cpu, p, ef, now);
        core.tasks[p].state = TaskState::Running;
        WakeupResult {
            task: p,
            cpu,
            resched: core.take_resched(),
        }
    }

    /// `try_to_wake_up()` finding `p` still queued on `cpu` (held) because
    /// its dequeue was delayed (DELAY_DEQUEUE): `ttwu_runnable()`, which
    /// Linux runs before `select_task_rq`, so there is no placement, no
    /// `record_wakee` and no migration: `p` is requeued where it is and
    /// checked for preemption there. The wakeup is counted as `ttwu_stat`
    /// counts one (local when `cpu` is the waker's).
    fn ttwu_runnable(
        &self,
        mut core: SchedCore<'_>,
        p: TaskId,
        cpu: CpuId,
        waker_cpu: CpuId,
        wake_flags: WakeFlags,
        now: u64,
    ) -> WakeupResult {
        let now = core.update_rq_clock(cpu, now);
        core.ttwu_runnable_delayed(cpu, p, now);
        core.stats.wake.nr_wakeups += 1;
        let ts = &mut core.tasks[p].stats;
        ts.nr_wakeups += 1;
        if wake_flags.has(WakeFlags::SYNC) {
            ts.nr_wakeups_sync += 1;
            core.stats.wake.nr_wakeups_sync += 1;
        }
        if cpu == waker_cpu {
            core.rqs[cpu].ttwu_local += 1;
            core.stats.wake.nr_wakeups_local += 1;
        } else {
            core.stats.wake.nr_wakeups_remote += 1;
            // The waker's counter, under the waker's lock (p's first let
            // go, as the other wakeup paths take them in turn).
            core.unlock(cpu);
            core.lock_also(waker_cpu);
        }
        core.rqs[waker_cpu].ttwu_count += 1;
        WakeupResult {
            task: p,
            cpu,
            resched: core.take_resched(),
        }
    }

    /// `sched_yield()` by the current task of `cpu` (`yield_task_fair`,
    /// Linux v5.11 / 6.12.y): nothing if it is the only queued task; else its
    /// buddies are cleared, curr is charged (`update_curr`, skipped for
    /// SCHED_BATCH under CFS as in v5.11), then CFS marks it as the skip
    /// buddy and EEVDF makes an eligible yielder forfeit the rest of its
    /// request (vruntime to its deadline, the next request after it). The caller
    /// then calls [`Self::schedule`] (do_sched_yield always schedules).
    pub fn yield_current(&self, cpu: CpuId, now: u64) {
        let mut core = self.shared.lock(cpu);
        let now = core.update_rq_clock(cpu, now);
        let cfg = core.cfg;
        let c = &mut core;
        let rq = &mut c.rqs[cpu];
        let Some(cur) = rq.curr else { return };
        if !c.tasks[cur].se.on_rq {
            return;
        }
        rq.need_resched = true;
        if rq.cfs.nr_running == 1 {
            return;
        }
        entity::clear_buddies(&mut rq.cfs, cur);
        cfg.pick
            .yield_task(&mut rq.cfs, &mut c.tasks, cfg, cur, now);
    }

    /// `sched_exec()`: the current task of `cpu` is exec'ing (small memory
    /// and cache footprint): run the fork/exec placement with WF_EXEC and, if
    /// it picks another CPU, move the task there at the next `schedule()` of
    /// `cpu` (the stopper-thread move). Returns the destination, if any;
    /// `cpu` then has need_resched set.
    pub fn sched_exec(&self, cpu: CpuId, now: u64) -> Option<CpuId> {
        let mut core = self.shared.lock(cpu);
        let now = core.update_rq_clock(cpu, now);
        let p = core.rqs[cpu].curr?;
        if !core.tasks[p].se.on_rq || core.tasks[p].bound_cpu.is_some() {
            return None;
        }
        let dest = self
            .policy
            .select_cpu(&mut core, p, cpu, cpu, WakeFlags::EXEC, now);
        if dest == cpu {
            return None;
        }
        core.rqs[cpu].exec_migrate = Some((p, dest));
        core.rqs[cpu].need_resched = true;
        Some(dest)
    }

    /// The current task of `cpu` blocks (`deactivate_task(DEQUEUE_SLEEP)`).
    /// The caller then calls [`Self::schedule`].
    pub fn block(&self, cpu: CpuId, now: u64) -> TaskId {
        let mut core = self.shared.lock(cpu);
        self.block_locked(&mut core, cpu, now)
    }

    pub(crate) fn block_locked(&self, core: &mut SchedCore<'_>, cpu: CpuId, now: u64) -> TaskId {
        self.deactivate_curr(core, cpu, false, now)
    }

    /// `deactivate_task(DEQUEUE_SLEEP)` of `cpu`'s current task (with
    /// DEQUEUE_SPECIAL when `special`, as for TASK_DEAD: never delayed).
    fn deactivate_curr(
        &self,
        core: &mut SchedCore<'_>,
        cpu: CpuId,
        special: bool,
        now: u64,
    ) -> TaskId {
        let now = core.update_rq_clock(cpu, now);
        let p = core.rqs[cpu].curr.expect("block on an idle CPU");
        if core.tasks[p].se.sched_delayed {
            // It blocked already and is still curr (this API's window
            // between `block` and `schedule`, which Linux's `__schedule`
            // closes): blocking again changes nothing; exiting finishes the
            // delayed dequeue (DEQUEUE_SPECIAL may not leave it queued).
            if special {
                core.finish_delayed_dequeue(cpu, p, now);
            }
        } else if core.tasks[p].se.on_rq {
            // With DELAY_DEQUEUE the task may stay queued (sched_delayed)
            // until it is picked or woken; it is asleep either way.
            self.policy.dequeue(
                core,
                cpu,
                p,
                DequeueFlags {
                    sleep: true,
                    migrate: false,
                    special,
                },
                now,
            );
        }
        core.tasks[p].state = TaskState::Sleeping;
        core.rqs[cpu].need_resched = true;
        p
    }

    /// The current task of `cpu` exits. Its PELT contribution is removed; the
    /// slot is freed at the next `schedule()`.
    pub fn exit(&self, cpu: CpuId, now: u64) -> TaskId {
        let mut core = self.shared.lock(cpu);
        // Never delayed: TASK_DEAD is a special state, so `try_to_block_task`
        // dequeues it with DEQUEUE_SPECIAL (`task_dead_fair`'s delayed branch
        // is defensive).
        let p = self.deactivate_curr(&mut core, cpu, true, now);
        core.remove_entity_load_avg(p);
        core.tasks[p].se.avg.last_update_time = 0;
        core.tasks[p].state = TaskState::Dead;
        core.stats.rq.nr_exits += 1;
        p
    }
}

/// `ttwu_queue_cond(p, cpu)` (Linux 6.12) for a wakeup issued on
/// `this_cpu`: queue on `cpu`'s wake list rather than activate from here?
/// Every CPU is active (no hotplug). Not if `cpu` is outside `p`'s affinity;
/// yes if the two CPUs share no LLC (the target's runqueue is remote data);
/// not on this CPU; yes if the target runs nothing (`nr_running == 0`: hand
/// the activation to the idle CPU); else no.
pub fn ttwu_queue_cond(core: &SchedCore<'_>, p: TaskId, cpu: CpuId, this_cpu: CpuId) -> bool {
    if core.tasks[p].bound_cpu.is_some_and(|b| b != cpu) {
        return false;
    }
    if !core.topo.share_cache(this_cpu, cpu) {
        return true;
    }
    if cpu == this_cpu {
        return false;
    }
    core.nr_running(cpu) == 0
}
