//! The scheduler's shared state ([`Shared`]: per-CPU runqueues behind their
//! own locks, lock-free per-CPU snapshots, per-LLC atomics) and the
//! operation context [`SchedCore`] every policy hook receives: the runqueues
//! the operation holds locked, the tasks homed on them, and the acting CPU's
//! statistics.
//!
//! Locking (Linux's `rq->lock` discipline): each CPU's runqueue and the
//! tasks homed on it are protected by that CPU's lock; an operation locks its
//! own CPU and, to move a task, a second runqueue. Locks are always acquired
//! in ascending CPU order ([`SchedCore::lock_also`] drops and re-takes locks
//! when it must, like `double_lock_balance()`), so two CPUs never deadlock.
//! Other CPUs are read without their lock through the snapshot each lock
//! holder publishes when it unlocks ([`crate::rq::RqSnap`]) — the same racy
//! reads Linux's placement and balancing do. Blocked-load removals for an
//! unlocked runqueue go to its `removed` box (Linux's `cfs_rq->removed`
//! with its own lock) and are applied when that runqueue is next locked.
//! The caller must keep interrupts off while an operation runs.
//!
//! Mirrors `enqueue_task_fair`/`dequeue_task_fair` (no group scheduling),
//! `set_task_cpu` + `migrate_task_rq_fair`, `wakeup_preempt`/`resched_curr`,
//! `detach_task`/`attach_task`, and the load/util/runnable accessors used by
//! placement and balancing (`cpu_load`, `cpu_load_without`, `cpu_util`, ...).

use crate::CpuId;
use crate::config::{PickPolicy, SchedConfig};
use crate::fair::entity::{self, DequeueFlags, EnqueueFlags};
use crate::fair::{cfs, eevdf};
use crate::features::Feat;
use crate::inline_vec::InlineVec;
use crate::padded::Padded;
use crate::pelt::{self, Removed};
use crate::rq::{LlcShared, Rq, RqSnap};
use crate::small::Small;
use crate::stats::{MigrationReason, SchedStats};
use crate::task::{Task, TaskArena, TaskId, TaskState, Tasks};
use crate::topo::SchedTopo;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicBool, AtomicU64};
use spin::mutex::{SpinMutex, SpinMutexGuard};

/// A test-and-set spin lock (ticket locks collapse when vCPUs are
/// overcommitted on the host; see docs/kernel.md).
pub type Lock<T> = SpinMutex<T>;
/// Its guard.
pub type Guard<'a, T> = SpinMutexGuard<'a, T>;

/// Host tests: a lock that stays taken for seconds means a lock-order bug
/// (or two contexts alive at once in one thread); report it instead of
/// spinning forever.
#[cfg(test)]
fn lock_or_report<'a, T>(l: &'a Lock<T>, what: &str) -> Guard<'a, T> {
    let start = std::time::Instant::now();
    loop {
        if let Some(g) = l.try_lock() {
            return g;
        }
        if start.elapsed() > std::time::Duration::from_secs(10) {
            panic!("{what} lock held for 10 s: deadlock, or two scheduler contexts alive at once");
        }
        std::thread::yield_now();
    }
}

#[cfg(not(test))]
fn lock_or_report<'a, T>(l: &'a Lock<T>, _what: &str) -> Guard<'a, T> {
    l.lock()
}

/// A task directory word: CPU in the high half, arena slot in the low.
fn loc(cpu: u32, slot: usize) -> u64 {
    (u64::from(cpu) << 32) | slot as u64
}

/// Directory value of a task id that names no task.
const NO_CPU: u32 = u32::MAX;
/// Directory value of a task being woken (owned by its waker for a moment).
const IN_TRANSIT: u32 = u32::MAX - 1;

/// Tasks a runqueue's arena (and its timeline) holds before it first
/// grows: containers grow only when a runqueue holds more tasks than it
/// ever has, so the hot paths allocate nothing in a steady state.
const ARENA_START: usize = 8;

/// Task id allocator: dense ids, reused after exit.
#[derive(Debug, Default)]
struct IdAlloc {
    next: u32,
    free: Vec<u32>,
}

/// All scheduler state of one machine, shared by every CPU.
#[derive(Debug)]
pub struct Shared {
    /// Run configuration.
    pub cfg: SchedConfig,
    /// Topology facts.
    pub topo: SchedTopo,
    // Per-CPU entries each on their own cache lines (`Padded`): every
    // operation writes its CPU's locks, and packed entries false-share.
    rqs: Vec<Padded<Lock<Rq>>>,
    arenas: Vec<Padded<Lock<TaskArena>>>,
    stats: Vec<Padded<Lock<SchedStats>>>,
    /// Per acting CPU (like `stats`): the task an operation has in transit.
    /// Kept out of [`SchedCore`] so a context stays small to pass around.
    transit: Vec<Padded<Lock<Option<Task>>>>,
    removed: Vec<Padded<Lock<Removed>>>,
    /// Something waits in `removed[cpu]` (skips its lock otherwise).
    removed_pending: Vec<Padded<AtomicBool>>,
    snap: Vec<Padded<RqSnap>>,
    /// Per-LLC shared state, indexed by `sd_llc_id`.
    pub llc: Vec<LlcShared>,
    /// Where every task id lives: `task_cpu(p)` in the high half (`NO_CPU`
    /// for a free id, `IN_TRANSIT` while woken), its slot in that
    /// runqueue's arena in the low half (meaningful under that lock).
    task_loc: Vec<AtomicU64>,
    ids: Lock<IdAlloc>,
}

impl Shared {
    /// Fresh state: every CPU idle, every LLC "all busy" as Linux builds it.
    /// At most `cfg.max_tasks` tasks may be alive at once.
    pub fn new(topo: SchedTopo, cfg: SchedConfig) -> Self {
        let n = topo.nr_cpus;
        let rqs: Vec<Padded<Lock<Rq>>> = (0..n)
            .map(|c| {
                let mins: Vec<u64> = topo
                    .sd(c)
                    .iter()
                    .map(|d| u64::from(d.min_interval_ms))
                    .collect();
                Padded(Lock::new(Rq::new(c, &mins, cfg.tunables.migration_cost_ns)))
            })
            .collect();
        let snap: Vec<Padded<RqSnap>> = (0..n).map(|_| Padded(RqSnap::default())).collect();
        for (c, rq) in rqs.iter().enumerate() {
            snap[c].publish(&rq.lock());
        }
        Shared {
            rqs,
            arenas: (0..n)
                .map(|_| Padded(Lock::new(TaskArena::with_capacity(ARENA_START))))
                .collect(),
            // One slot per CPU, plus one for whole-machine contexts.
            stats: (0..=n)
                .map(|_| Padded(Lock::new(SchedStats::new(n))))
                .collect(),
            transit: (0..=n).map(|_| Padded(Lock::new(None))).collect(),
            removed: (0..n)
                .map(|_| Padded(Lock::new(Removed::default())))
                .collect(),
            removed_pending: (0..n).map(|_| Padded(AtomicBool::new(false))).collect(),
            snap,
            llc: (0..n).map(|c| LlcShared::new(topo.llc_size[c])).collect(),
            task_loc: (0..cfg.max_tasks)
                .map(|_| AtomicU64::new(loc(NO_CPU, 0)))
                .collect(),
            ids: Lock::new(IdAlloc::default()),
            cfg,
            topo,
        }
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.topo.nr_cpus
    }

    /// An operation context acting on `cpu`, holding `cpu`'s runqueue.
    pub fn lock(&self, cpu: CpuId) -> SchedCore<'_> {
        let mut c = self.context(cpu);
        c.lock_also(cpu);
        c
    }

    /// A context acting on `acting_cpu` that holds no runqueue yet
    /// (`acting_cpu == nr_cpus` names the whole-machine statistics slot).
    pub fn context(&self, acting_cpu: CpuId) -> SchedCore<'_> {
        self.context_with(
            lock_or_report(&self.stats[acting_cpu], "statistics"),
            lock_or_report(&self.transit[acting_cpu], "transit"),
        )
    }

    fn context_with<'a>(
        &'a self,
        stats: Guard<'a, SchedStats>,
        transit: Guard<'a, Option<Task>>,
    ) -> SchedCore<'a> {
        SchedCore {
            cfg: &self.cfg,
            topo: &self.topo,
            llc: &self.llc,
            shared: self,
            rqs: RqSet {
                held: Small::default(),
            },
            tasks: TaskSet {
                shared: self,
                held: Small::default(),
                transit,
                loc: &self.task_loc,
            },
            stats,
            resched: CpuList::new(),
        }
    }

    /// `cpu`'s runqueue if it can be had at once (fault reports: a stuck
    /// CPU may hold its lock forever). Statistics go to the whole-machine
    /// slot.
    pub fn try_lock(&self, cpu: CpuId) -> Option<SchedCore<'_>> {
        let stats = self.stats[self.nr_cpus()].try_lock()?;
        let transit = self.transit[self.nr_cpus()].try_lock()?;
        let rq = self.rqs[cpu].try_lock()?;
        let arena = self.arenas[cpu].try_lock()?;
        let mut c = self.context_with(stats, transit);
        c.take_locks(cpu, rq, arena, 0);
        Some(c)
    }

    /// A context holding every runqueue (reports, invariant checks, tests):
    /// waits for each lock in CPU order; its statistics go to a slot of
    /// their own. Do not call [`Self::stats`] while holding it.
    pub fn lock_all(&self) -> SchedCore<'_> {
        let mut c = self.context(self.nr_cpus());
        for cpu in 0..self.nr_cpus() {
            c.lock_also(cpu);
        }
        c
    }

    /// Machine-wide statistics: the per-CPU counters summed.
    pub fn stats(&self) -> SchedStats {
        let mut total = SchedStats::new(self.nr_cpus());
        for s in &self.stats {
            total.accumulate(&lock_or_report(s, "statistics"));
        }
        total
    }

    /// The CPU whose runqueue `p` is homed on, if `p` is alive and not in
    /// transit.
    pub fn task_cpu(&self, p: TaskId) -> Option<CpuId> {
        match (self.task_loc.get(p.0 as usize)?.load(Relaxed) >> 32) as u32 {
            NO_CPU | IN_TRANSIT => None,
            c => Some(c as CpuId),
        }
    }

    /// `task_rq_lock(p)`: a context acting on `acting_cpu` that holds the
    /// runqueue `p` is homed on (retrying while `p` moves or is in
    /// transit). None if `p` is not alive.
    pub fn lock_task(&self, p: TaskId, acting_cpu: CpuId) -> Option<SchedCore<'_>> {
        loop {
            let cpu = match (self.task_loc.get(p.0 as usize)?.load(Relaxed) >> 32) as u32 {
                NO_CPU => return None,
                IN_TRANSIT => {
                    core::hint::spin_loop();
                    continue;
                }
                c => c as CpuId,
            };
            let mut c = self.context(acting_cpu);
            c.lock_also(cpu);
            if self.task_cpu(p) == Some(cpu) {
                return Some(c);
            }
        }
    }

    /// The published snapshot of `cpu`, to read single fields.
    pub fn snap(&self, cpu: CpuId) -> &RqSnap {
        &self.snap[cpu]
    }

    /// Allocate a task id, or None when `cfg.max_tasks` tasks are alive.
    pub(crate) fn alloc_id(&self) -> Option<TaskId> {
        let mut ids = self.ids.lock();
        if let Some(i) = ids.free.pop() {
            return Some(TaskId(i));
        }
        if (ids.next as usize) < self.cfg.max_tasks {
            ids.next += 1;
            return Some(TaskId(ids.next - 1));
        }
        None
    }

    /// Return an id that was allocated but never used.
    pub(crate) fn release_id(&self, p: TaskId) {
        self.ids.lock().free.push(p.0);
    }

    fn free_id(&self, p: TaskId) {
        self.task_loc[p.0 as usize].store(loc(NO_CPU, 0), Relaxed);
        self.ids.lock().free.push(p.0);
    }
}

/// The runqueues an operation holds, sorted by CPU.
pub struct RqSet<'a> {
    held: Small<(CpuId, Guard<'a, Rq>)>,
}

impl RqSet<'_> {
    #[inline]
    fn pos(&self, cpu: CpuId) -> Result<usize, usize> {
        self.held.search_by_key(&cpu, |(c, _)| *c)
    }

    /// Whether `cpu`'s runqueue is held.
    pub fn holds(&self, cpu: CpuId) -> bool {
        self.pos(cpu).is_ok()
    }

    /// The runqueue of `cpu`, if held.
    pub fn get(&self, cpu: CpuId) -> Option<&Rq> {
        let i = self.pos(cpu).ok()?;
        self.held.get(i).map(|(_, g)| &**g)
    }

    /// The held runqueues, by CPU.
    pub fn iter(&self) -> impl Iterator<Item = &Rq> {
        self.held.iter().map(|(_, g)| &**g)
    }
}

impl core::ops::Index<CpuId> for RqSet<'_> {
    type Output = Rq;
    #[inline]
    fn index(&self, cpu: CpuId) -> &Rq {
        match self.pos(cpu) {
            Ok(i) => &self.held.get(i).expect("held").1,
            Err(_) => panic!("runqueue {cpu} used without its lock"),
        }
    }
}

impl core::ops::IndexMut<CpuId> for RqSet<'_> {
    #[inline]
    fn index_mut(&mut self, cpu: CpuId) -> &mut Rq {
        match self.pos(cpu) {
            Ok(i) => &mut self.held.get_mut(i).expect("held").1,
            Err(_) => panic!("runqueue {cpu} used without its lock"),
        }
    }
}

/// The tasks an operation may touch: those homed on its held runqueues,
/// plus the task in transit (being woken or forked) that it owns.
pub struct TaskSet<'a> {
    shared: &'a Shared,
    held: Small<(CpuId, Guard<'a, TaskArena>)>,
    /// At most one task is in transit per operation (the acting CPU's
    /// slot in [`Shared`]).
    transit: Guard<'a, Option<Task>>,
    /// The task directory (`Shared::task_loc`), one pointer closer.
    loc: &'a [AtomicU64],
}

impl TaskSet<'_> {
    /// (index in `held`, slot) of a task homed on a held runqueue.
    #[inline(always)]
    fn locate(&self, id: TaskId) -> Option<(usize, usize)> {
        let v = self.loc.get(id.0 as usize)?.load(Relaxed);
        let (cpu, slot) = ((v >> 32) as usize, v as u32 as usize);
        // One runqueue held: the common case, no search.
        if self.held.len() == 1 {
            return (self.held.get(0)?.0 == cpu).then_some((0, slot));
        }
        let h = self.held.search_by_key(&cpu, |(c, _)| *c).ok()?;
        Some((h, slot))
    }

    fn arena(&mut self, h: usize) -> &mut TaskArena {
        &mut self.held.get_mut(h).expect("held").1
    }

    fn held_index(&self, cpu: CpuId, what: &str) -> usize {
        self.held
            .search_by_key(&cpu, |(c, _)| *c)
            .unwrap_or_else(|_| panic!("{what} runqueue {cpu}, which is not held"))
    }

    /// Add `t` to the held runqueue `cpu`'s arena and point the directory
    /// at it.
    fn home(&mut self, mut t: Task, cpu: CpuId, what: &str) {
        let h = self.held_index(cpu, what);
        let id = t.id;
        t.cpu = cpu;
        let slot = self.arena(h).push(t);
        self.shared.task_loc[id.0 as usize].store(loc(cpu as u32, slot), Relaxed);
    }

    /// Remove a task from its held arena (the directory entry of the task
    /// that fills its slot is fixed up; its own is left to the caller).
    fn unhome(&mut self, id: TaskId) -> Task {
        let (h, slot) = self.locate(id).expect("task not reachable");
        let (t, moved) = self.arena(h).swap_remove(slot);
        assert_eq!(t.id, id, "task directory out of date");
        if let Some(m) = moved {
            let cpu = self.held.get(h).expect("held").0 as u32;
            self.shared.task_loc[m.0 as usize].store(loc(cpu, slot), Relaxed);
        }
        t
    }

    /// The task, if this operation can reach it.
    #[inline(always)]
    pub fn get_mut(&mut self, id: TaskId) -> Option<&mut Task> {
        // The directory first: a task in transit is never homed on a held
        // runqueue, and the common case costs one load.
        if let Some((h, slot)) = self.locate(id) {
            return self.arena(h).at_mut(slot).filter(|t| t.id == id);
        }
        (*self.transit).as_mut().filter(|t| t.id == id)
    }

    /// Tasks homed on the held runqueues and in transit.
    pub fn iter(&self) -> impl Iterator<Item = &Task> {
        self.transit
            .iter()
            .chain(self.held.iter().flat_map(|(_, a)| a.iter()))
    }

    /// Take a task homed on a held runqueue into transit (it leaves its
    /// runqueue's arena; it must not be queued).
    pub fn take(&mut self, id: TaskId) {
        let t = self.unhome(id);
        debug_assert!(!t.se.on_rq, "taking a queued task");
        self.shared.task_loc[id.0 as usize].store(loc(IN_TRANSIT, 0), Relaxed);
        self.push_transit(t);
    }

    /// Start owning a task in transit.
    pub fn push_transit(&mut self, t: Task) {
        assert!(self.transit.is_none(), "two tasks in transit");
        *self.transit = Some(t);
    }

    /// Whether `id` is the task in transit.
    pub fn in_transit(&self, id: TaskId) -> bool {
        self.transit.as_ref().is_some_and(|t| t.id == id)
    }

    /// Home the task in transit on `cpu` (held), which becomes its task_cpu.
    pub fn settle(&mut self, id: TaskId, cpu: CpuId) {
        assert!(self.in_transit(id), "task not in transit");
        let t = self.transit.take().expect("in transit");
        self.home(t, cpu, "settling on");
    }

    /// Move a task between two held runqueues' arenas. The directory goes
    /// straight from the old CPU to the new one, so a concurrent
    /// `task_rq_lock` never finds the task missing.
    pub fn rehome(&mut self, id: TaskId, to: CpuId) {
        let t = self.unhome(id);
        self.home(t, to, "moving to");
    }

    /// Free a dead task homed on a held runqueue and release its id.
    pub fn free(&mut self, id: TaskId) {
        if self.locate(id).is_some() {
            self.unhome(id);
            self.shared.free_id(id);
        }
    }
}

impl Tasks for TaskSet<'_> {
    #[inline(always)]
    fn get(&self, id: TaskId) -> Option<&Task> {
        if let Some((h, slot)) = self.locate(id) {
            return self.held.get(h)?.1.at(slot).filter(|t| t.id == id);
        }
        (*self.transit).as_ref().filter(|t| t.id == id)
    }
}

impl core::ops::Index<TaskId> for TaskSet<'_> {
    type Output = Task;
    // Always inlined: the fair class looks tasks up dozens of times per
    // wakeup (callgrind: a call frame per lookup was a tenth of the path).
    #[inline(always)]
    fn index(&self, id: TaskId) -> &Task {
        Tasks::get(self, id)
            .unwrap_or_else(|| panic!("task {} used without its runqueue lock", id.0))
    }
}

impl core::ops::IndexMut<TaskId> for TaskSet<'_> {
    #[inline(always)]
    fn index_mut(&mut self, id: TaskId) -> &mut Task {
        self.get_mut(id)
            .unwrap_or_else(|| panic!("task {} used without its runqueue lock", id.0))
    }
}

/// CPUs that must reschedule, as an operation returns them (inline: see
/// [`crate::inline_vec`]).
pub type CpuList = InlineVec<CpuId, 4>;

/// Tasks an operation moved (inline up to 4, a batch spills).
pub type Migrations = InlineVec<Migration, 4>;

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

/// Only fills unused inline slots of [`Migrations`].
impl Default for Migration {
    fn default() -> Self {
        Migration {
            task: TaskId(u32::MAX),
            from: 0,
            to: 0,
            reason: MigrationReason::Wakeup,
        }
    }
}

/// One scheduler operation in progress: what it holds and may touch.
pub struct SchedCore<'a> {
    /// Run configuration.
    pub cfg: &'a SchedConfig,
    /// Topology facts.
    pub topo: &'a SchedTopo,
    /// Per-LLC shared state, indexed by `sd_llc_id`.
    pub llc: &'a [LlcShared],
    /// The machine-wide state.
    pub shared: &'a Shared,
    /// Held runqueues (indexing one that is not held panics).
    pub rqs: RqSet<'a>,
    /// Reachable tasks.
    pub tasks: TaskSet<'a>,
    /// The acting CPU's statistics.
    pub stats: Guard<'a, SchedStats>,
    /// CPUs whose need_resched was set since the last drain (IPI targets).
    pub(crate) resched: CpuList,
}

impl Drop for SchedCore<'_> {
    fn drop(&mut self) {
        debug_assert!(
            self.tasks.transit.is_none(),
            "operation ended with a task in transit"
        );
        self.unlock_all();
    }
}

impl<'a> SchedCore<'a> {
    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.topo.nr_cpus
    }

    /// Take `cpu`'s runqueue lock too. Locks are taken in ascending CPU
    /// order: if `cpu` is below a held one and not free right away, every
    /// held lock is released and all are re-taken in order
    /// (`double_lock_balance()`); returns true if that happened, so the
    /// caller knows the held runqueues may have changed meanwhile.
    pub fn lock_also(&mut self, cpu: CpuId) -> bool {
        let Err(at) = self.rqs.pos(cpu) else {
            return false;
        };
        let sh = self.shared;
        if at == self.rqs.held.len() {
            let rq = lock_or_report(&sh.rqs[cpu], "runqueue");
            let arena = lock_or_report(&sh.arenas[cpu], "task arena");
            self.take_locks(cpu, rq, arena, at);
            return false;
        }
        if let Some(rq) = sh.rqs[cpu].try_lock()
            && let Some(ar) = sh.arenas[cpu].try_lock()
        {
            self.take_locks(cpu, rq, ar, at);
            return false;
        }
        let mut cpus: Small<CpuId> = Small::default();
        for (c, _) in self.rqs.held.iter() {
            cpus.insert(cpus.len(), *c);
        }
        cpus.insert(at, cpu);
        self.unlock_all();
        for &c in cpus.iter() {
            let n = self.rqs.held.len();
            let rq = lock_or_report(&sh.rqs[c], "runqueue");
            self.take_locks(c, rq, lock_or_report(&sh.arenas[c], "task arena"), n);
        }
        true
    }

    fn take_locks(
        &mut self,
        cpu: CpuId,
        mut rq: Guard<'a, Rq>,
        arena: Guard<'a, TaskArena>,
        at: usize,
    ) {
        // Apply removals queued while this runqueue was not held.
        let sh = self.shared;
        let pending =
            sh.removed_pending[cpu].load(Relaxed) && sh.removed_pending[cpu].swap(false, Acquire);
        let r = if pending {
            core::mem::take(&mut *lock_or_report(&sh.removed[cpu], "removed"))
        } else {
            Removed::default()
        };
        if r.nr != 0 {
            let m = &mut rq.cfs.removed;
            m.load_avg += r.load_avg;
            m.util_avg += r.util_avg;
            m.runnable_avg += r.runnable_avg;
            m.nr += r.nr;
        }
        self.rqs.held.insert(at, (cpu, rq));
        self.tasks.held.insert(at, (cpu, arena));
    }

    /// Release `cpu`'s runqueue, publishing its snapshot.
    pub fn unlock(&mut self, cpu: CpuId) {
        if let Ok(i) = self.rqs.pos(cpu) {
            let (_, rq) = self.rqs.held.remove(i);
            self.shared.snap[cpu].publish(&rq);
            self.tasks.held.remove(i);
        }
    }

    fn unlock_all(&mut self) {
        while let Some((cpu, rq)) = self.rqs.held.pop() {
            self.shared.snap[cpu].publish(&rq);
            self.tasks.held.pop();
        }
    }

    /// One field of any CPU: live if its runqueue is held, else from its
    /// snapshot (a single atomic load: scans read many CPUs).
    fn read<T>(
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
    pub fn take_resched(&mut self) -> CpuList {
        core::mem::take(&mut self.resched)
    }

    /// `idle_cpu()` / `available_idle_cpu()` (no vCPU preemption here).
    pub fn idle_cpu(&self, cpu: CpuId) -> bool {
        self.read(
            cpu,
            |r| r.is_idle(),
            |s| s.curr_idle.load(Relaxed) && s.nr_running.load(Relaxed) == 0,
        )
    }

    /// `available_idle_cpu() || sched_idle_cpu()`.
    pub fn idle_ish(&self, cpu: CpuId) -> bool {
        self.idle_cpu(cpu) || self.sched_idle_cpu(cpu)
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

    /// `enqueue_task_fair()`: queue `p` on `cpu` (it becomes Runnable).
    pub fn enqueue_task(&mut self, cpu: CpuId, p: TaskId, flags: EnqueueFlags, now: u64) {
        let cfg = self.cfg;
        if self.tasks.in_transit(p) {
            self.tasks.settle(p, cpu);
        }
        debug_assert_eq!(self.shared.task_cpu(p), Some(cpu), "enqueue away from home");
        let rq = &mut self.rqs[cpu];
        entity::enqueue_entity(&mut rq.cfs, &mut self.tasks, cfg, p, flags, now);
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
        entity::dequeue_entity(&mut rq.cfs, &mut self.tasks, cfg, p, flags, now);
    }

    /// `migrate_task_rq_fair()` for a waking task (CFS <= 6.5): its vruntime
    /// becomes relative to the old queue's min_vruntime; `enqueue_entity`
    /// (ENQUEUE_MIGRATED) adds the new queue's after its update_curr.
    fn make_vruntime_relative(&mut self, p: TaskId, from: CpuId) {
        if self.cfg.pick == PickPolicy::Cfs {
            let a = self.min_vruntime(from);
            let se = &mut self.tasks[p].se;
            se.vruntime = se.vruntime.wrapping_sub(a);
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
        self.make_vruntime_relative(p, from);
        self.remove_entity_load_avg(p);
        self.note_migration(p, from, to, reason);
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
            Some(c) => match cfg.pick {
                PickPolicy::Cfs => cfs::check_preempt_wakeup(
                    &mut rq.cfs,
                    &mut self.tasks,
                    cfg,
                    c,
                    p,
                    is_fork,
                    need_resched,
                    now,
                ),
                PickPolicy::Eevdf => eevdf::check_preempt_wakeup(
                    &mut rq.cfs,
                    &mut self.tasks,
                    cfg,
                    c,
                    p,
                    is_fork,
                    need_resched,
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
