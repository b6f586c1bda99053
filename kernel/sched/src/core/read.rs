//! Reads of any CPU's runqueue from an operation: live when its lock is
//! held, else from its published snapshot (`cpu_load`, `cpu_util`,
//! `idle_cpu`, ... as placement and balancing use them).

use super::SchedCore;
use crate::CpuId;
use crate::features::Feat;
use crate::rq::{Rq, RqSnap};
use crate::task::TaskId;
use core::sync::atomic::Ordering::Relaxed;

impl SchedCore<'_> {
    /// One field of any CPU: live if its runqueue is held, else from its
    /// snapshot (a single atomic load: scans read many CPUs).
    #[inline]
    pub(super) fn read<T>(
        &self,
        cpu: CpuId,
        live: impl FnOnce(&Rq) -> T,
        snap: impl FnOnce(&RqSnap) -> T,
    ) -> T {
        match self.rqs.get(cpu) {
            Some(rq) => live(rq),
            None => snap(&self.shared.snap[cpu]),
        }
    }

    /// `nr_running` of any CPU (live if held, else snapshot).
    pub fn nr_running(&self, cpu: CpuId) -> u32 {
        self.read(cpu, |r| r.nr_running(), |s| s.nr_running.load(Relaxed))
    }

    /// `sched_idle_cpu()` of any CPU.
    #[inline]
    pub fn sched_idle_cpu(&self, cpu: CpuId) -> bool {
        self.read(
            cpu,
            |r| r.is_sched_idle(),
            |s| {
                let n = s.nr_running.load(Relaxed);
                n > 0 && n == s.nr_idle.load(Relaxed)
            },
        )
    }

    /// `idle_stamp` of any CPU.
    pub fn idle_stamp(&self, cpu: CpuId) -> u64 {
        self.read(cpu, |r| r.idle_stamp, |s| s.idle_stamp.load(Relaxed))
    }

    /// Pre-5.7 `runnable_load_avg` of any CPU.
    pub fn cpu_runnable_load(&self, cpu: CpuId) -> u64 {
        self.read(
            cpu,
            |r| r.cfs.avg.runnable_load_avg,
            |s| s.runnable_load_avg.load(Relaxed),
        )
    }

    /// cfs `min_vruntime` of any CPU.
    pub fn min_vruntime(&self, cpu: CpuId) -> u64 {
        self.read(
            cpu,
            |r| r.cfs.min_vruntime,
            |s| s.min_vruntime.load(Relaxed),
        )
    }

    /// `idle_cpu()` / `available_idle_cpu()` (no vCPU preemption here): no
    /// task running or queued, and (6.x) no wakeup pending on its wake list
    /// (`rq->ttwu_pending`), so placement does not stack wakees on a CPU
    /// that is about to activate some.
    #[inline]
    pub fn idle_cpu(&self, cpu: CpuId) -> bool {
        let s = &self.shared.snap[cpu];
        self.read(
            cpu,
            |r| r.is_idle(),
            |s| s.curr_idle.load(Relaxed) && s.nr_running.load(Relaxed) == 0,
        ) && !s.ttwu_pending.load(Relaxed)
    }

    /// `available_idle_cpu() || sched_idle_cpu()`: one lookup of the held
    /// runqueues for both tests (the LLC scans call this per CPU).
    #[inline]
    pub fn idle_ish(&self, cpu: CpuId) -> bool {
        let s = &self.shared.snap[cpu];
        let pending = s.ttwu_pending.load(Relaxed);
        match self.rqs.get(cpu) {
            Some(r) => (r.is_idle() && !pending) || r.is_sched_idle(),
            None => {
                (s.curr_idle.load(Relaxed) && s.nr_running.load(Relaxed) == 0 && !pending) || {
                    let n = s.nr_running.load(Relaxed);
                    n > 0 && n == s.nr_idle.load(Relaxed)
                }
            }
        }
    }

    /// `cpu_load()`: PELT load incl. blocked load (5.5+); with the
    /// RUNNABLE_LOAD switch the pre-5.7 `runnable_load_avg`.
    pub fn cpu_load(&self, cpu: CpuId) -> u64 {
        if self.cfg.features.has(Feat::RunnableLoad) {
            self.cpu_runnable_load(cpu)
        } else {
            self.cpu_load_avg(cpu)
        }
    }

    /// The blocked-inclusive load regardless of switches.
    pub fn cpu_load_avg(&self, cpu: CpuId) -> u64 {
        self.read(cpu, |r| r.cfs.avg.load_avg, |s| s.load_avg.load(Relaxed))
    }

    fn capacity_orig(&self, cpu: CpuId) -> u64 {
        self.read(
            cpu,
            |r| r.cpu_capacity_orig,
            |s| s.capacity_orig.load(Relaxed),
        )
    }

    fn util_avg(&self, cpu: CpuId) -> u64 {
        self.read(cpu, |r| r.cfs.avg.util_avg, |s| s.util_avg.load(Relaxed))
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
        self.util_avg(cpu).min(self.capacity_orig(cpu))
    }

    /// `cpu_util_without(cpu, p)`.
    pub fn cpu_util_without(&self, cpu: CpuId, p: TaskId) -> u64 {
        let mut u = self.util_avg(cpu);
        if self.counts_on(cpu, p) {
            u = u.saturating_sub(self.tasks[p].se.avg.util_avg);
        }
        u.min(self.capacity_orig(cpu))
    }

    /// `cpu_runnable()`.
    pub fn cpu_runnable(&self, cpu: CpuId) -> u64 {
        self.read(
            cpu,
            |r| r.cfs.avg.runnable_avg,
            |s| s.runnable_avg.load(Relaxed),
        )
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
        self.read(cpu, |r| r.cpu_capacity, |s| s.capacity.load(Relaxed))
    }
}
