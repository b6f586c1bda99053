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

    /// `get_rd_overloaded()`: the root domain's sticky `overloaded` flag
    /// ([`Shared::rd_overloaded`]), or a held runqueue with more than one
    /// task whose snapshot still says at most one: it rose to two since its
    /// last publish, which Linux's `add_nr_running` flags at once and the
    /// unlock's publish flags here. May be true when no CPU holds two tasks
    /// any more, until a top-domain balance pass clears it.
    pub fn any_overloaded(&self) -> bool {
        self.shared.rd_overloaded()
            || self
                .rqs
                .held
                .iter()
                .any(|(c, rq)| rq.nr_running() > 1 && self.shared.snap[*c].nr_running() <= 1)
    }

    /// `nr_running` of any CPU (live if held, else snapshot).
    pub fn nr_running(&self, cpu: CpuId) -> u32 {
        self.read(cpu, |r| r.nr_running(), |s| s.nr_running.load(Relaxed))
    }

    /// Delayed-dequeue tasks among `nr_running` (`cfs_h_nr_delayed()`,
    /// 6.12.y) of any CPU; 0 without DELAY_DEQUEUE.
    pub fn nr_delayed(&self, cpu: CpuId) -> u32 {
        self.read(cpu, |r| r.cfs.nr_delayed, |s| s.nr_delayed.load(Relaxed))
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
    ///
    /// Each field is loaded only when the answer needs it: a busy CPU, what
    /// most of a scan finds, costs its `nr_running` and `nr_idle` (a CPU
    /// with no task cannot be sched-idle; a CPU with tasks is not idle).
    #[inline]
    pub fn idle_ish(&self, cpu: CpuId) -> bool {
        let s = &self.shared.snap[cpu];
        match self.rqs.get(cpu) {
            Some(r) => {
                if r.is_idle() {
                    !s.ttwu_pending.load(Relaxed)
                } else {
                    r.is_sched_idle()
                }
            }
            None => Self::snap_idle_ish(s),
        }
    }

    /// [`Self::idle_ish`] of a CPU whose runqueue is not held, from its
    /// snapshot `s`.
    #[inline]
    pub(crate) fn snap_idle_ish(s: &RqSnap) -> bool {
        let n = s.nr_running.load(Relaxed);
        if n == 0 {
            s.curr_idle.load(Relaxed) && !s.ttwu_pending.load(Relaxed)
        } else {
            n == s.nr_idle.load(Relaxed)
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

    /// `task_h_load()`. Without ROOT_H_LOAD the `!CONFIG_FAIR_GROUP_SCHED`
    /// form: the task's `load_avg`. With it, the group-scheduling form for
    /// a task in the root group: `update_cfs_rq_h_load` refreshes the
    /// queue's `h_load` to its `load_avg` at most once per jiffy, and the
    /// result is `p.load_avg * h_load / (load_avg + 1)`, so even a fresh
    /// `h_load` rounds the task's load down by up to one, and within a
    /// jiffy the queue's load changes scale it.
    pub fn task_h_load(&self, p: TaskId) -> u64 {
        let t = &self.tasks[p];
        let p_load = t.se.avg.load_avg;
        if !self.cfg.features.has(Feat::RootHLoad) {
            return p_load;
        }
        let cpu = t.cpu;
        let load = self.cpu_load_avg(cpu);
        let s = &self.shared.snap[cpu];
        let j = self.shared.jiffies();
        if s.last_h_load_update.load(Relaxed) != j {
            s.h_load.store(load, Relaxed);
            s.last_h_load_update.store(j, Relaxed);
        }
        p_load * s.h_load.load(Relaxed) / (load + 1)
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

    /// `cpu_util_cfs_boost()` (`cpu_util(cpu, NULL, -1, 1)`): the
    /// utilization raised to the runnable average, capped at the CPU's
    /// original capacity. `sched_balance_find_src_rq` ranks `migrate_util`
    /// sources by it, so a queue whose tasks wait (runnable above util)
    /// counts as busier than its running time alone says.
    pub fn cpu_util_cfs_boost(&self, cpu: CpuId) -> u64 {
        self.util_avg(cpu)
            .max(self.cpu_runnable(cpu))
            .min(self.capacity_orig(cpu))
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

    /// The figures a group scan sums for `cpu` (`update_sg_wakeup_stats`
    /// and `update_sg_lb_stats`: `cpu_load`, `util_avg` and
    /// `capacity_orig`, `cpu_runnable`, `nr_running`, `capacity_of`), read
    /// with one lookup of the held runqueues instead of one per figure: live
    /// if held, else from its snapshot, each field as its own accessor reads
    /// it (`util` uncapped: callers apply `min(capacity_orig)`, as
    /// `cpu_util` does). `runnable_load` is the RUNNABLE_LOAD switch
    /// (`cpu_load`'s choice; the balancer passes false, `cpu_load_avg`).
    #[inline]
    pub(crate) fn cpu_figures(&self, cpu: CpuId, runnable_load: bool) -> CpuFigures<'_> {
        match self.rqs.get(cpu) {
            Some(r) => CpuFigures {
                load: if runnable_load {
                    r.cfs.avg.runnable_load_avg
                } else {
                    r.cfs.avg.load_avg
                },
                util: r.cfs.avg.util_avg,
                capacity_orig: r.cpu_capacity_orig,
                runnable: r.cfs.avg.runnable_avg,
                capacity: r.cpu_capacity,
                nr_running: r.nr_running(),
                live: Some(r),
            },
            None => {
                let s = &self.shared.snap[cpu];
                CpuFigures {
                    load: if runnable_load {
                        s.runnable_load_avg.load(Relaxed)
                    } else {
                        s.load_avg.load(Relaxed)
                    },
                    util: s.util_avg.load(Relaxed),
                    capacity_orig: s.capacity_orig.load(Relaxed),
                    runnable: s.runnable_avg.load(Relaxed),
                    capacity: s.capacity.load(Relaxed),
                    nr_running: s.nr_running.load(Relaxed),
                    live: None,
                }
            }
        }
    }
}

/// One CPU's figures for a group scan ([`SchedCore::cpu_figures`]).
pub(crate) struct CpuFigures<'r> {
    /// `cpu_load()`.
    pub load: u64,
    /// The cfs runqueue's `util_avg` (uncapped).
    pub util: u64,
    /// `capacity_orig_of()`.
    pub capacity_orig: u64,
    /// `cpu_runnable()`.
    pub runnable: u64,
    /// `capacity_of()`.
    pub capacity: u64,
    /// `nr_running`.
    pub nr_running: u32,
    /// The runqueue itself when it is held (its live fields), else None.
    pub live: Option<&'r Rq>,
}

#[cfg(test)]
mod tests {
    use super::SchedCore;
    use crate::CpuId;
    use crate::balance::ExcludedCpus;
    use crate::balance::stats::update_sg_lb_stats;
    use crate::config::PickPolicy;
    use crate::placement::idlest::update_sg_wakeup_stats;
    use crate::task::{TaskId, TaskPolicy, Tasks as _};
    use crate::testutil::{sched, spec};
    use topology::CpuMask;

    /// The sums of `update_sg_wakeup_stats`, from the named accessors
    /// (`cpu_load_without`, `cpu_util_without`, `cpu_runnable_without`,
    /// `task_running_on_cpu`, `idle_cpu_without`, `capacity_of`): what the
    /// scan read before it used `cpu_figures`.
    fn wakeup_sums_by_accessor(c: &SchedCore, span: &CpuMask, p: TaskId) -> [u64; 7] {
        let mut s = [0u64; 7];
        for cpu in span.iter() {
            let t = &c.tasks[p];
            let local = t.cpu == cpu && t.se.avg.last_update_time != 0 && t.se.on_rq;
            let nr = c.nr_running(cpu) - u32::from(local);
            let idle = nr == 0
                && match c.rqs.get(cpu) {
                    Some(rq) => rq.curr.is_none_or(|x| x == p) && !c.shared.ttwu_pending(cpu),
                    None => c.idle_cpu(cpu),
                };
            s[0] += c.cpu_load_without(cpu, p);
            s[1] += c.cpu_util_without(cpu, p);
            s[2] += c.cpu_runnable_without(cpu, p);
            s[3] += u64::from(nr);
            s[4] += u64::from(idle);
            s[5] += c.capacity_of(cpu);
            s[6] += 1;
        }
        s
    }

    /// The sums of `update_sg_lb_stats`, from `capacity_of`, `cpu_load_avg`,
    /// `cpu_util`, `cpu_runnable`, `nr_running` and `idle_cpu`.
    fn lb_sums_by_accessor(c: &SchedCore, span: &CpuMask, ex: &ExcludedCpus) -> [u64; 7] {
        let mut s = [0u64; 7];
        for cpu in span.iter() {
            s[5] += c.capacity_of(cpu);
            s[6] += 1;
            if ex.contains(cpu) {
                continue;
            }
            let nr = c.nr_running(cpu);
            s[0] += c.cpu_load_avg(cpu);
            s[1] += c.cpu_util(cpu);
            s[2] += c.cpu_runnable(cpu);
            s[3] += u64::from(nr);
            s[4] += u64::from(nr == 0 && c.idle_cpu(cpu));
        }
        s
    }

    /// A scan's sums in the order of the `*_sums_by_accessor` arrays:
    /// load, util, runnable, nr_running, idle CPUs, capacity, weight.
    fn sums(avgs: [u64; 3], counts: [u32; 3], capacity: u64) -> [u64; 7] {
        let [load, util, runnable] = avgs;
        let [nr, idle, weight] = counts.map(u64::from);
        [load, util, runnable, nr, idle, capacity, weight]
    }

    /// Every group of every domain of `cpu`, both scans against the
    /// accessors, for each task queued on a held runqueue; returns how many
    /// comparisons found a discount (the task's own CPU in the group).
    fn check_group_scans(
        c: &SchedCore,
        cpu: CpuId,
        other: CpuId,
        sleeping: &[TaskId],
        what: &str,
    ) -> usize {
        let mut own = 0;
        let mut ex = ExcludedCpus::default();
        ex.push(other);
        // Queued tasks and blocked ones homed on a held runqueue (a blocked
        // task's load still counts where it last ran; it is not queued).
        let mut tasks: Vec<TaskId> = [cpu, other]
            .iter()
            .filter(|&&h| c.rqs.holds(h))
            .flat_map(|&h| c.rq_tasks(h).collect::<Vec<_>>())
            .collect();
        tasks.extend(sleeping.iter().filter(|&&p| c.tasks.get(p).is_some()));
        for (level, sd) in c.topo.sd(cpu).iter().enumerate() {
            for (gi, g) in sd.groups.iter().enumerate() {
                for &p in &tasks {
                    let w = update_sg_wakeup_stats(c, sd.imbalance_pct, &g.span, p);
                    assert_eq!(
                        sums(
                            [w.group_load, w.group_util, w.group_runnable],
                            [w.sum_nr_running, w.idle_cpus, w.group_weight],
                            w.group_capacity,
                        ),
                        wakeup_sums_by_accessor(c, &g.span, p),
                        "{what}: wakeup scan, level {level} group {gi}, task {p:?}"
                    );
                    own += usize::from(g.span.contains(c.tasks[p].cpu));
                }
                for e in [ExcludedCpus::default(), ex] {
                    let (l, _) = update_sg_lb_stats(c, sd.imbalance_pct, gi, &g.span, &e);
                    assert_eq!(
                        sums(
                            [l.group_load, l.group_util, l.group_runnable],
                            [l.sum_nr_running, l.idle_cpus, l.group_weight],
                            l.group_capacity,
                        ),
                        lb_sums_by_accessor(c, &g.span, &e),
                        "{what}: balance scan, level {level} group {gi}"
                    );
                }
            }
        }
        own
    }

    /// The group scans that read each CPU's figures with one lookup
    /// (`cpu_figures`) sum exactly what the named accessors read, with one
    /// runqueue held and two, for tasks on and off the scanned CPUs, with
    /// and without RUNNABLE_LOAD, while tasks fork, block, wake and move
    /// about a 16-CPU machine.
    #[test]
    fn group_scans_sum_what_the_accessors_read() {
        for features in ["", "RUNNABLE_LOAD"] {
            let s = sched(&spec(2, 4, 2, 2), PickPolicy::Cfs, features);
            let n = s.shared.nr_cpus();
            let mut rng = 0x9E37_79B9_7F4A_7C15u64;
            let mut next = move || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng
            };
            let (mut live, mut sleeping, mut now, mut own) = (0, Vec::new(), 1_000u64, 0);
            for step in 0..600 {
                now += 1_000 + next() % 200_000;
                let cpu = (next() % n as u64) as usize;
                match next() % 5 {
                    0 if live < 40 => {
                        s.wake_up_new_task(None, cpu, 0, TaskPolicy::Normal, now);
                        live += 1;
                    }
                    1 => {
                        let mut c = s.shared.lock(cpu);
                        if c.rqs[cpu].curr.is_some() {
                            sleeping.push(s.block_locked(&mut c, cpu, now));
                            let _ = s.schedule_locked(&mut c, cpu, now);
                        }
                    }
                    2 if !sleeping.is_empty() => {
                        let i = (next() % sleeping.len() as u64) as usize;
                        s.wake_up(sleeping.swap_remove(i), cpu, next() % 2 == 0, now);
                    }
                    _ => {
                        s.schedule(cpu, now);
                        let _ = s.tick(cpu, now);
                    }
                }
                let other = (cpu + 1 + (next() % (n as u64 - 1)) as usize) % n;
                let mut c = s.shared.lock(cpu);
                let what = format!("{features} step {step}, {cpu} held");
                own += check_group_scans(&c, cpu, other, &sleeping, &what);
                c.lock_also(other);
                let what = format!("{features} step {step}, {cpu}+{other} held");
                own += check_group_scans(&c, cpu, other, &sleeping, &what);
            }
            assert!(
                own > 1_000,
                "{features}: too few scans over a task's own CPU: {own}"
            );
        }
    }

    /// `any_overloaded` (the sticky root-domain flag) is never clear while
    /// some CPU holds more than one task, from any context (one runqueue
    /// held, two, all, none), while tasks fork, wake, block and move about
    /// a 16-CPU machine whose ticks balance (and so refresh the flag).
    #[test]
    fn the_overloaded_flag_is_set_whenever_a_cpu_holds_two_tasks() {
        let s = sched(&spec(2, 4, 2, 2), PickPolicy::Cfs, "");
        let n = s.shared.nr_cpus();
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut live = Vec::new();
        let mut sleeping = Vec::new();
        let mut now = 1_000u64;
        let mut checked_true = 0;
        let mut mid_block_differs = 0;
        let (mut stale, mut cleared) = (0, 0);
        for step in 0..4_000 {
            now += 1_000 + next() % 50_000;
            let cpu = (next() % n as u64) as usize;
            match next() % 6 {
                0 if live.len() < 40 => {
                    let r = s.wake_up_new_task(None, cpu, 0, TaskPolicy::Normal, now);
                    live.push(r.task);
                }
                1 | 2 => {
                    // block_and_schedule's two steps, checked in between:
                    // the held runqueue has lost a task its snapshot still
                    // counts.
                    let mut c = s.shared.lock(cpu);
                    if c.rqs[cpu].curr.is_some() {
                        let p = s.block_locked(&mut c, cpu, now);
                        let scan = (0..n).any(|x| c.nr_running(x) > 1);
                        assert!(
                            !scan || c.any_overloaded(),
                            "step {step}, mid-block on {cpu}"
                        );
                        mid_block_differs += usize::from(
                            (c.rqs[cpu].nr_running() > 1) != (s.shared.snap(cpu).nr_running() > 1),
                        );
                        let _ = s.schedule_locked(&mut c, cpu, now);
                        sleeping.push(p);
                    }
                }
                3 if !sleeping.is_empty() => {
                    let i = (next() % sleeping.len() as u64) as usize;
                    let p = sleeping.swap_remove(i);
                    s.wake_up(p, cpu, next() % 2 == 0, now);
                }
                _ => {
                    s.schedule(cpu, now);
                    let _ = s.tick(cpu, now);
                }
            }
            let other = (cpu + 1 + (next() % (n as u64 - 1)) as usize) % n;
            let mut one = s.shared.lock(cpu);
            let scan = (0..n).any(|c| one.nr_running(c) > 1);
            assert!(!scan || one.any_overloaded(), "step {step}, {cpu} held");
            one.lock_also(other);
            let scan = (0..n).any(|c| one.nr_running(c) > 1);
            assert!(
                !scan || one.any_overloaded(),
                "step {step}, {cpu}+{other} held"
            );
            checked_true += usize::from(scan);
            drop(one);
            let none = s.shared.context(cpu);
            let scan = (0..n).any(|c| none.nr_running(c) > 1);
            assert!(!scan || none.any_overloaded(), "step {step}, none held");
            stale += usize::from(!scan && none.any_overloaded());
            cleared += usize::from(!none.any_overloaded());
            drop(none);
            if step % 97 == 0 {
                let all = s.shared.lock_all();
                let scan = (0..n).any(|c| all.nr_running(c) > 1);
                assert!(!scan || all.any_overloaded(), "step {step}, all held");
            }
        }
        assert!(
            checked_true > 100,
            "too few overloaded states: {checked_true}"
        );
        // Sticky: set with no CPU overloaded any more, until a top-domain
        // balance pass clears it (which some do).
        assert!(stale > 20, "too few stale flags: {stale}");
        assert!(cleared > 20, "too few cleared flags: {cleared}");
        assert!(
            mid_block_differs > 20,
            "too few held runqueues whose live state differs from their snapshot: {mid_block_differs}"
        );
    }
}
