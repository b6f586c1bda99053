//! `SchedCore`: all scheduler state (tasks, runqueues, LLC shared state,
//! statistics) and the primitive operations every policy builds on.
//!
//! Mirrors `enqueue_task_fair`/`dequeue_task_fair` (no group scheduling),
//! `set_task_cpu` + `migrate_task_rq_fair`, `wakeup_preempt`/`resched_curr`,
//! `detach_task`/`attach_task`, and the load/util/runnable accessors used by
//! placement and balancing (`cpu_load`, `cpu_load_without`, `cpu_util`, ...).
//! The kernel owns the locking: it drives one `SchedCore` (inside a
//! [`crate::Scheduler`]) under its scheduler lock.

use crate::CpuId;
use crate::config::{PickPolicy, SchedConfig};
use crate::fair::entity::{self, DequeueFlags, EnqueueFlags};
use crate::fair::{cfs, eevdf};
use crate::features::Feat;
use crate::pelt;
use crate::rq::{LlcShared, Rq};
use crate::stats::{MigrationReason, SchedStats};
use crate::task::{TaskArena, TaskId, TaskState};
use crate::topo::SchedTopo;
use alloc::vec::Vec;

/// One task move decided by the core (the kernel IPIs `to` if needed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    /// The task.
    pub task: TaskId,
    /// Source CPU.
    pub from: CpuId,
    /// Destination CPU.
    pub to: CpuId,
    /// Why.
    pub reason: MigrationReason,
}

/// All scheduler state of one machine.
#[derive(Clone, Debug)]
pub struct SchedCore {
    /// Run configuration.
    pub cfg: SchedConfig,
    /// Topology facts.
    pub topo: SchedTopo,
    /// Task arena.
    pub tasks: TaskArena,
    /// Per-CPU runqueues.
    pub rqs: Vec<Rq>,
    /// Per-LLC shared state, indexed by `sd_llc_id`.
    pub llc: Vec<LlcShared>,
    /// Statistics.
    pub stats: SchedStats,
    /// CPUs whose need_resched was set since the last drain (IPI targets).
    pub(crate) resched: Vec<CpuId>,
}

impl SchedCore {
    /// Fresh state: every CPU idle, every LLC "all busy" as Linux builds it.
    pub fn new(topo: SchedTopo, cfg: SchedConfig) -> Self {
        let n = topo.nr_cpus;
        let rqs = (0..n)
            .map(|c| {
                let mins: Vec<u64> = topo
                    .sd(c)
                    .iter()
                    .map(|d| u64::from(d.min_interval_ms))
                    .collect();
                Rq::new(c, &mins, cfg.tunables.migration_cost_ns)
            })
            .collect();
        let llc = (0..n).map(|c| LlcShared::new(topo.llc_size[c])).collect();
        SchedCore {
            cfg,
            stats: SchedStats::new(n),
            topo,
            tasks: TaskArena::default(),
            rqs,
            llc,
            resched: Vec::new(),
        }
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.topo.nr_cpus
    }

    /// Advance a CPU's clock (`update_rq_clock`); never goes backwards.
    pub fn update_rq_clock(&mut self, cpu: CpuId, now: u64) -> u64 {
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

    /// Drain the CPUs that need a reschedule.
    pub fn take_resched(&mut self) -> Vec<CpuId> {
        core::mem::take(&mut self.resched)
    }

    /// `idle_cpu()` / `available_idle_cpu()` (no vCPU preemption here).
    pub fn idle_cpu(&self, cpu: CpuId) -> bool {
        self.rqs[cpu].is_idle()
    }

    /// `available_idle_cpu() || sched_idle_cpu()`.
    pub fn idle_ish(&self, cpu: CpuId) -> bool {
        self.rqs[cpu].is_idle() || self.rqs[cpu].is_sched_idle()
    }

    /// `cpu_load()`: PELT load incl. blocked load (5.5+); with the
    /// RUNNABLE_LOAD switch the pre-5.7 `runnable_load_avg`.
    pub fn cpu_load(&self, cpu: CpuId) -> u64 {
        let avg = &self.rqs[cpu].cfs.avg;
        if self.cfg.features.has(Feat::RunnableLoad) {
            avg.runnable_load_avg
        } else {
            avg.load_avg
        }
    }

    /// The blocked-inclusive load regardless of switches.
    pub fn cpu_load_avg(&self, cpu: CpuId) -> u64 {
        self.rqs[cpu].cfs.avg.load_avg
    }

    /// `task_h_load()` (no cgroups: the task's load_avg).
    pub fn task_h_load(&self, p: TaskId) -> u64 {
        self.tasks[p].se.avg.load_avg
    }

    fn counts_on(&self, cpu: CpuId, p: TaskId) -> bool {
        let t = &self.tasks[p];
        t.cpu == cpu && t.se.avg.last_update_time != 0
    }

    /// `cpu_load_without(rq, p)`.
    pub fn cpu_load_without(&self, cpu: CpuId, p: TaskId) -> u64 {
        let l = self.cpu_load(cpu);
        if self.counts_on(cpu, p) {
            l.saturating_sub(self.task_h_load(p))
        } else {
            l
        }
    }

    /// `cpu_util_cfs()`: util capped at capacity_orig.
    pub fn cpu_util(&self, cpu: CpuId) -> u64 {
        let rq = &self.rqs[cpu];
        rq.cfs.avg.util_avg.min(rq.cpu_capacity_orig)
    }

    /// `cpu_util_without(cpu, p)`.
    pub fn cpu_util_without(&self, cpu: CpuId, p: TaskId) -> u64 {
        let rq = &self.rqs[cpu];
        let mut u = rq.cfs.avg.util_avg;
        if self.counts_on(cpu, p) {
            u = u.saturating_sub(self.tasks[p].se.avg.util_avg);
        }
        u.min(rq.cpu_capacity_orig)
    }

    /// `cpu_runnable()`.
    pub fn cpu_runnable(&self, cpu: CpuId) -> u64 {
        self.rqs[cpu].cfs.avg.runnable_avg
    }

    /// `cpu_runnable_without(cpu, p)`.
    pub fn cpu_runnable_without(&self, cpu: CpuId, p: TaskId) -> u64 {
        let r = self.cpu_runnable(cpu);
        if self.counts_on(cpu, p) {
            r.saturating_sub(self.tasks[p].se.avg.runnable_avg)
        } else {
            r
        }
    }

    /// `capacity_of()`.
    pub fn capacity_of(&self, cpu: CpuId) -> u64 {
        self.rqs[cpu].cpu_capacity
    }

    /// `enqueue_task_fair()`: queue `p` on `cpu` (it becomes Runnable).
    pub fn enqueue_task(&mut self, cpu: CpuId, p: TaskId, flags: EnqueueFlags, now: u64) {
        let cfg = self.cfg;
        let rq = &mut self.rqs[cpu];
        entity::enqueue_entity(&mut rq.cfs, &mut self.tasks, &cfg, p, flags, now);
        let t = &mut self.tasks[p];
        t.cpu = cpu;
        if rq.curr != Some(p) {
            t.state = TaskState::Runnable;
            if t.wait_start == 0 {
                t.wait_start = now.max(1);
            }
        }
    }

    /// `dequeue_task_fair()`.
    pub fn dequeue_task(&mut self, cpu: CpuId, p: TaskId, flags: DequeueFlags, now: u64) {
        let cfg = self.cfg;
        let rq = &mut self.rqs[cpu];
        entity::dequeue_entity(&mut rq.cfs, &mut self.tasks, &cfg, p, flags, now);
    }

    /// CFS (<= 6.5) keeps vruntime relative while in transit; re-express it
    /// against the destination's min_vruntime.
    fn renormalize_vruntime(&mut self, p: TaskId, from: CpuId, to: CpuId) {
        if self.cfg.pick == PickPolicy::Cfs {
            let (a, b) = (
                self.rqs[from].cfs.min_vruntime,
                self.rqs[to].cfs.min_vruntime,
            );
            let se = &mut self.tasks[p].se;
            se.vruntime = se.vruntime.wrapping_sub(a).wrapping_add(b);
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
    pub fn migrate_sleeping_task(&mut self, p: TaskId, to: CpuId, reason: MigrationReason) {
        let from = self.tasks[p].cpu;
        if from == to {
            return;
        }
        self.renormalize_vruntime(p, from, to);
        self.remove_entity_load_avg(p);
        self.note_migration(p, from, to, reason);
    }

    /// `remove_entity_load_avg()`: defer removal of `p`'s contribution from
    /// its (old) CPU's queue.
    pub fn remove_entity_load_avg(&mut self, p: TaskId) {
        let cpu = self.tasks[p].cpu;
        let lut = self.rqs[cpu].cfs.avg.last_update_time;
        let t = &mut self.tasks[p];
        if t.se.avg.last_update_time == 0 {
            return;
        }
        let w = t.se.load.weight;
        pelt::update_entity_load_avg(&mut t.se.avg, lut, w, false, false);
        let r = &mut self.rqs[cpu].cfs.removed;
        r.load_avg += t.se.avg.load_avg;
        r.util_avg += t.se.avg.util_avg;
        r.runnable_avg += t.se.avg.runnable_avg;
        r.nr += 1;
        t.se.avg.last_update_time = 0;
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
            },
            now,
        );
        self.renormalize_vruntime(p, from, to);
        self.note_migration(p, from, to, reason);
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
        let preempt = match rq.curr {
            None => true,
            Some(c) if c == p => false,
            Some(_) if rq.need_resched => false,
            Some(c) => match cfg.pick {
                PickPolicy::Cfs => cfs::check_preempt_wakeup(
                    &mut rq.cfs,
                    &mut self.tasks,
                    &cfg,
                    c,
                    p,
                    is_fork,
                    now,
                ),
                PickPolicy::Eevdf => eevdf::check_preempt_wakeup(
                    &mut rq.cfs,
                    &mut self.tasks,
                    &cfg,
                    c,
                    p,
                    is_fork,
                    now,
                ),
            },
        };
        if preempt {
            if self.rqs[cpu].curr.is_some() {
                self.stats.rq.wakeup_preempt += 1;
            }
            self.resched_curr(cpu);
        }
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
