//! What an operation does to runqueues: `update_rq_clock`, `resched_curr`,
//! `enqueue_task_fair`/`dequeue_task_fair`, `set_task_cpu` +
//! `migrate_task_rq_fair`, `detach_task`/`attach_task` and
//! `wakeup_preempt`.

use super::{CpuList, Migration, Migrations, SchedCore, lock_or_report};
use crate::CpuId;
use crate::fair::entity::{self, DequeueFlags, EnqueueFlags};
use crate::fair::pick::PickDiscipline;
use crate::pelt::{self, Removed};
use crate::stats::MigrationReason;
use crate::task::{TaskId, TaskState, Tasks};
use core::sync::atomic::Ordering::{Relaxed, Release};

impl SchedCore<'_> {
    /// Appends a move to `list`, a list built by an operation acting on
    /// `cpu`: the list stays inline up to its `N` moves; the move that
    /// would spill it first takes one of `cpu`'s spares
    /// (`Rq::migr_spares`), so a batch allocates nothing and a list that
    /// never spilled holds no spare (its caller has nothing to give back).
    pub fn push_migration(&mut self, cpu: CpuId, list: &mut Migrations, m: Migration) {
        if list.len() == list.inline_capacity() && list.spare_room() == 0 {
            self.adopt_spare(cpu, list);
        }
        list.push(m);
    }

    /// Appends `from`'s moves to `into` (both built on `cpu`) as
    /// [`Self::push_migration`] does, then gives `from`'s room back.
    pub fn append_migrations(&mut self, cpu: CpuId, into: &mut Migrations, from: Migrations) {
        if from.is_empty() && from.spare_room() == 0 {
            return;
        }
        if into.len() + from.len() > into.inline_capacity() && into.spare_room() == 0 {
            self.adopt_spare(cpu, into);
        }
        into.extend(from.iter().copied());
        self.recycle_migrations(cpu, from);
    }

    /// Moves `list`'s items into a list with one of `cpu`'s spares.
    fn adopt_spare(&mut self, cpu: CpuId, list: &mut Migrations) {
        let spare = self.rqs[cpu].migr_spares.pop().unwrap_or_default();
        let mut bigger = Migrations::with_spare(spare);
        bigger.extend(list.iter().copied());
        *list = bigger;
    }

    /// Gives a move list's room back to `cpu`'s spares once its moves are
    /// read (nothing to give if it never spilled; the spares keep their
    /// number, so this never allocates).
    pub fn recycle_migrations(&mut self, cpu: CpuId, m: Migrations) {
        let spares = &mut self.rqs[cpu].migr_spares;
        if m.spare_room() > 0 && spares.len() < spares.capacity() {
            spares.push(m.into_spare());
        }
    }

    /// Advance a CPU's clock (`update_rq_clock`); never goes backwards.
    #[inline]
    pub fn update_rq_clock(&mut self, cpu: CpuId, now: u64) -> u64 {
        if self.cfg.features.has(crate::features::Feat::RootHLoad) {
            self.shared.note_jiffy(now);
        }
        let rq = &mut self.rqs[cpu];
        rq.clock = rq.clock.max(now);
        rq.clock
    }

    /// `resched_curr()`: set need_resched and remember the CPU for an IPI.
    pub fn resched_curr(&mut self, cpu: CpuId) {
        if !self.rqs[cpu].need_resched {
            self.rqs[cpu].need_resched = true;
            self.resched.push(cpu);
        }
    }

    /// The `resched_curr` an `update_curr` of `cpu`'s queue asked for
    /// ([`crate::fair::CfsRq::resched`]), made once the operation that
    /// called it is done.
    #[inline]
    pub fn resched_if_update_curr_asked(&mut self, cpu: CpuId) {
        if core::mem::take(&mut self.rqs[cpu].cfs.resched) && self.rqs[cpu].curr.is_some() {
            self.resched_curr(cpu);
        }
    }

    /// Drain the CPUs that need a reschedule.
    pub fn take_resched(&mut self) -> CpuList {
        core::mem::take(&mut self.resched)
    }

    /// `enqueue_task_fair()`: queue `p` on `cpu` (it becomes Runnable).
    pub fn enqueue_task(&mut self, cpu: CpuId, p: TaskId, flags: EnqueueFlags, now: u64) {
        let cfg = self.cfg;
        if self.tasks.in_transit(p) {
            self.tasks.settle(p, cpu);
        }
        debug_assert_eq!(self.shared.task_cpu(p), Some(cpu), "enqueue away from home");
        let rq = &mut self.rqs[cpu];
        entity::enqueue_entity(&mut rq.cfs, &mut self.tasks, cfg, p, flags, now);
        self.resched_if_update_curr_asked(cpu);
        let rq = &mut self.rqs[cpu];
        let t = &mut self.tasks[p];
        t.cpu = cpu;
        if rq.curr != Some(p) {
            // A delayed task the balancer moved stays asleep on its new
            // queue; like any queued task it keeps (or gets) its schedstat
            // wait stamp.
            if !t.se.sched_delayed {
                t.state = TaskState::Runnable;
            }
            if t.wait_start == 0 {
                t.wait_start = now.max(1);
            }
        }
    }

    /// `dequeue_task_fair()`: false when a sleeping task stays queued
    /// instead (DELAY_DEQUEUE, [`entity::try_delay_dequeue`]), as Linux
    /// 6.12's `dequeue_task` returns.
    pub fn dequeue_task(&mut self, cpu: CpuId, p: TaskId, flags: DequeueFlags, now: u64) -> bool {
        let cfg = self.cfg;
        let rq = &mut self.rqs[cpu];
        if flags.sleep && !flags.special {
            let verdict = entity::try_delay_dequeue(&mut rq.cfs, &mut self.tasks, cfg, p, now);
            self.resched_if_update_curr_asked(cpu);
            match verdict {
                entity::SleepDequeue::Delayed { lag } => {
                    self.stats.delay.delayed += 1;
                    self.stats.block_lag.record(lag);
                    return false;
                }
                // Only where a delay was possible, so runs without the
                // switch keep their records (and CFS has no lag).
                entity::SleepDequeue::EligibleShared { lag } => {
                    self.stats.delay.eligible_shared += 1;
                    self.stats.block_lag.record(lag);
                }
                entity::SleepDequeue::Dequeued => {}
            }
        }
        if flags.migrate && self.tasks[p].se.sched_delayed {
            // Moved by the balancer (not a sleep): it stays delayed.
            self.stats.delay.migrated += 1;
        }
        let rq = &mut self.rqs[cpu];
        entity::dequeue_entity(&mut rq.cfs, &mut self.tasks, cfg, p, flags, now);
        self.resched_if_update_curr_asked(cpu);
        true
    }

    /// The pick chose `p`, a delayed task of `cpu` (or `p` exited while
    /// delayed): finish its dequeue (`dequeue_entities(DEQUEUE_SLEEP |
    /// DEQUEUE_DELAYED)`); it is then asleep on no queue.
    pub fn finish_delayed_dequeue(&mut self, cpu: CpuId, p: TaskId, now: u64) {
        let cfg = self.cfg;
        let rq = &mut self.rqs[cpu];
        entity::finish_delayed_dequeue(&mut rq.cfs, &mut self.tasks, cfg, p, now);
        // Asleep: no wait is recorded (Linux's schedstat ends one here,
        // counting the delayed sleep as runqueue wait).
        self.tasks[p].wait_start = 0;
    }

    /// `sync_entity_load_avg(&p->se)`: decay `p`'s averages as blocked (no
    /// load, not runnable, not running) up to its queue's last update
    /// (`cfs_rq_last_update_time`), as `sched_balance_find_dst_cpu` does
    /// before an exec or a balancing wakeup's placement. For a running
    /// task this counts the time since its own last update as idle, as in
    /// Linux; a queue not updated since does nothing (time does not run
    /// backwards in `___update_load_sum`).
    pub fn sync_entity_load_avg(&mut self, p: TaskId) {
        let cpu = self.tasks[p].cpu;
        let lut = self.read(
            cpu,
            |r| r.cfs.avg.last_update_time,
            |s| s.last_update_time.load(Relaxed),
        );
        let se = &mut self.tasks[p].se;
        let w = se.load.weight;
        pelt::update_task_load_avg(&mut se.avg, lut, w, false, false, false);
    }

    /// `ttwu_runnable()` of a delayed task of `cpu` (held, clock updated):
    /// requeue it where it is (`requeue_delayed_entity`), make it runnable,
    /// then the preemption check unless it is still `cpu`'s current task.
    pub fn ttwu_runnable_delayed(&mut self, cpu: CpuId, p: TaskId, now: u64) {
        let cfg = self.cfg;
        let rq = &mut self.rqs[cpu];
        if entity::requeue_delayed_entity(&mut rq.cfs, &mut self.tasks, cfg, p, now) {
            self.stats.delay.requeued_replaced += 1;
        }
        self.stats.delay.requeued += 1;
        let t = &mut self.tasks[p];
        // `wait_start` stays as the put-back set it: its schedstat wait began
        // at the put-back. The requeue keeps the task's `cfs_tasks` place
        // (`cfs_tasks_pos`), as Linux does not move it in the list.
        if self.rqs[cpu].curr == Some(p) {
            t.state = TaskState::Running;
        } else {
            t.state = TaskState::Runnable;
            self.check_preempt_curr(cpu, p, false, now);
        }
    }

    /// Record a CPU change (`set_task_cpu` statistics).
    fn note_migration(&mut self, p: TaskId, from: CpuId, to: CpuId, reason: MigrationReason) {
        let d = self.topo.distance(from, to);
        self.stats.migrations.record(reason, d);
        let t = &mut self.tasks[p];
        t.se.nr_migrations += 1;
        t.se.exec_start = 0;
        t.cpu = to;
    }

    /// `set_task_cpu()` + `migrate_task_rq_fair()` for a task that is not
    /// queued (wakeup or fork placement): sync its PELT to the old queue, move
    /// its contribution to `removed`, mark it for attach.
    ///
    /// `now` is the waker's time: `migrate_se_pelt_lag` decays the sleeper
    /// further when its old CPU idles, whose queue may have been last
    /// updated long ago.
    pub fn migrate_sleeping_task(
        &mut self,
        p: TaskId,
        to: CpuId,
        reason: MigrationReason,
        now: u64,
    ) {
        let from = self.tasks[p].cpu;
        if from == to {
            return;
        }
        let pick = self.cfg.pick;
        pick.migrate_task_rq(self, p, from);
        self.remove_entity_load_avg(p);
        self.migrate_se_pelt_lag(p, from, now);
        // "Tell new CPU we are migrated."
        self.tasks[p].se.avg.last_update_time = 0;
        self.note_migration(p, from, to, reason);
    }

    /// `migrate_se_pelt_lag()` (5.18+): after `remove_entity_load_avg`
    /// synced the sleeper to its old queue's `last_update_time`, a source
    /// CPU that runs its idle task may not have updated that queue for a
    /// while (a tickless idle CPU: indefinitely), so Linux estimates the
    /// missed idle time and decays the entity as blocked up to about now;
    /// not for a busy source (its clock is recent), nor for an entity whose
    /// sums are all zero (`load_avg_is_decayed`). PELT time is the runqueue
    /// clock here, so the estimate is the waker's `now`.
    fn migrate_se_pelt_lag(&mut self, p: TaskId, from: CpuId, now: u64) {
        let src_idle = self.read(from, |r| r.runs_idle_task(), |s| s.curr_idle.load(Relaxed));
        let t = &mut self.tasks[p];
        let a = &t.se.avg;
        let decayed = a.load_sum == 0 && a.util_sum == 0 && a.runnable_sum == 0;
        if !src_idle || decayed || a.last_update_time == 0 {
            return;
        }
        let at = now.max(a.last_update_time);
        let w = t.se.load.weight;
        pelt::update_entity_load_avg(&mut t.se.avg, at, w, false, false);
    }

    /// `remove_entity_load_avg()`: defer removal of `p`'s contribution from
    /// its (old) CPU's queue.
    pub fn remove_entity_load_avg(&mut self, p: TaskId) {
        let cpu = self.tasks[p].cpu;
        let lut = self.read(
            cpu,
            |r| r.cfs.avg.last_update_time,
            |s| s.last_update_time.load(Relaxed),
        );
        let t = &mut self.tasks[p];
        if t.se.avg.last_update_time == 0 {
            return;
        }
        let w = t.se.load.weight;
        pelt::update_entity_load_avg(&mut t.se.avg, lut, w, false, false);
        let add = |r: &mut Removed| {
            r.load_avg += t.se.avg.load_avg;
            r.util_avg += t.se.avg.util_avg;
            r.runnable_avg += t.se.avg.runnable_avg;
            r.nr += 1;
        };
        match self.rqs.pos(cpu) {
            Ok(i) => add(&mut self.rqs.held.get_mut(i).expect("held").1.cfs.removed),
            Err(_) => {
                add(&mut lock_or_report(&self.shared.removed[cpu], "removed"));
                self.shared.removed_pending[cpu].store(true, Release);
            }
        }
    }

    /// `detach_task()` + `attach_task()`: move a queued, not running task.
    pub fn move_queued_task(
        &mut self,
        p: TaskId,
        to: CpuId,
        reason: MigrationReason,
        now: u64,
    ) -> Migration {
        let from = self.tasks[p].cpu;
        debug_assert!(self.rqs[from].curr != Some(p), "moving a running task");
        self.dequeue_task(
            from,
            p,
            DequeueFlags {
                sleep: false,
                migrate: true,
                special: false,
            },
            now,
        );
        // CFS: dequeue_entity made vruntime relative, enqueue_entity
        // (ENQUEUE_MIGRATED) makes it absolute against `to`.
        self.note_migration(p, from, to, reason);
        self.tasks.rehome(p, to);
        let now_dst = self.update_rq_clock(to, now);
        self.enqueue_task(
            to,
            p,
            EnqueueFlags {
                wakeup: false,
                initial: false,
                migrated: true,
            },
            now_dst,
        );
        self.check_preempt_curr(to, p, false, now_dst);
        Migration {
            task: p,
            from,
            to,
            reason,
        }
    }

    /// `wakeup_preempt()` / `check_preempt_curr()`: may `p`, just queued on
    /// `cpu`, preempt what runs there? Sets need_resched if so.
    pub fn check_preempt_curr(&mut self, cpu: CpuId, p: TaskId, is_fork: bool, now: u64) -> bool {
        let cfg = self.cfg;
        let rq = &mut self.rqs[cpu];
        let need_resched = rq.need_resched;
        let preempt = match rq.curr {
            None => true,
            Some(c) if c == p => false,
            // The class hook marks buddies first, then checks need_resched.
            Some(c) => cfg.pick.check_preempt_wakeup(
                &mut rq.cfs,
                &mut self.tasks,
                cfg,
                c,
                p,
                is_fork,
                need_resched,
                now,
            ),
        };
        if preempt {
            if self.rqs[cpu].curr.is_some() {
                self.stats.rq.wakeup_preempt += 1;
            }
            self.resched_curr(cpu);
        }
        self.resched_if_update_curr_asked(cpu);
        preempt
    }

    /// Running or queued tasks of `cpu` (curr first, then tree order).
    pub fn rq_tasks(&self, cpu: CpuId) -> impl Iterator<Item = TaskId> + '_ {
        let rq = &self.rqs[cpu];
        rq.curr
            .filter(|&c| self.tasks.get(c).is_some_and(|t| t.se.on_rq))
            .into_iter()
            .chain(rq.cfs.timeline.iter().map(|(_, id, _)| id))
    }
}
