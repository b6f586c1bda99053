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
//!
//! Split by job: this file holds [`Shared`] and the context types; `sets.rs`
//! the held runqueues and reachable tasks ([`RqSet`], [`TaskSet`]);
//! `locking.rs` taking and releasing locks inside an operation; `read.rs`
//! reads of any CPU (live or snapshot); `ops.rs` what an operation changes
//! (enqueue/dequeue, migration, preemption).

use crate::CpuId;
use crate::config::SchedConfig;
use crate::inline_vec::InlineVec;
use crate::padded::Padded;
use crate::pelt::Removed;
use crate::rq::{LlcShared, Rq, RqSnap};
use crate::small::Small;
use crate::stats::{MigrationReason, SchedStats};
use crate::task::{Task, TaskArena, TaskId};
use crate::topo::SchedTopo;
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use spin::mutex::{SpinMutex, SpinMutexGuard};

mod locking;
mod ops;
mod read;
mod sets;

pub use sets::{RqSet, TaskSet};

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
/// Directory flag of a task on a CPU's wake list (TTWU_QUEUE): the CPU is
/// in the low bits of the high half (CPU ids stay far below 2^31).
const WAKE_LISTED: u32 = 1 << 31;

/// A task on a CPU's wake list (`p->wake_entry`): woken and placed by its
/// waker, not yet queued on a runqueue; activated by the target CPU's
/// `sched_ttwu_pending`.
#[derive(Debug)]
pub(crate) struct WakeEntry {
    pub(crate) task: Box<Task>,
    /// Its CPU changed at this wakeup (`p->sched_remote_wakeup` =
    /// WF_MIGRATED): enqueued with ENQUEUE_MIGRATED.
    pub(crate) migrated: bool,
}

/// Tasks a runqueue's arena (and its timeline) holds before it first
/// grows: containers grow only when a runqueue holds more tasks than it
/// ever has, so the hot paths allocate nothing in a steady state.
const ARENA_START: usize = 8;

/// [`Shared::make_room_for_all_tasks`] makes room in steps of this many
/// tasks (exact sizes, not doubling: the room is per CPU).
pub const ROOM_STEP: usize = 64;

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
    transit: Vec<Padded<Lock<Option<Box<Task>>>>>,
    removed: Vec<Padded<Lock<Removed>>>,
    /// Per target CPU: tasks woken for it by other CPUs, in wakeup order
    /// (Linux's per-CPU `wake_list`; a leaf lock here, taken by wakers
    /// without the target's runqueue and by the target under its own).
    /// `RqSnap::ttwu_pending` says it is not empty.
    wake_list: Vec<Padded<Lock<VecDeque<WakeEntry>>>>,
    /// Something waits in `removed[cpu]` (skips its lock otherwise).
    removed_pending: Vec<Padded<AtomicBool>>,
    snap: Vec<Padded<RqSnap>>,
    /// The root domain's `overloaded` flag (`rd->overloaded`), sticky as in
    /// Linux: set when a CPU's published snapshot goes to more than one
    /// task (`add_nr_running`'s `set_rd_overloaded(rd, 1)`), refreshed only
    /// by a balance pass at the top domain (`update_sd_lb_stats` with no
    /// parent: `set_rd_overloaded(rd, sg_overloaded)`). Newly idle
    /// balancing is skipped while it is clear. Written only when it
    /// changes, so CPUs do not bounce its cache line.
    rd_overloaded: Padded<AtomicBool>,
    /// `jiffies` + 1 as the runqueue clocks have seen it (0: none yet),
    /// kept with ROOT_H_LOAD only, for `update_cfs_rq_h_load`'s
    /// once-per-jiffy refresh.
    jiffies: Padded<AtomicU64>,
    /// `sched_balance_running`: a CPU is walking an SD_SERIALIZE (NUMA)
    /// level of its periodic balance.
    balance_running: Padded<AtomicBool>,
    /// Per-LLC shared state, indexed by `sd_llc_id`.
    pub llc: Vec<LlcShared>,
    /// NOHZ idle-balancing state (NOHZ_IDLE).
    pub nohz: crate::balance::nohz::Nohz,
    /// Where every task id lives: `task_cpu(p)` in the high half (`NO_CPU`
    /// for a free id, `IN_TRANSIT` while woken), its slot in that
    /// runqueue's arena in the low half (meaningful under that lock).
    task_loc: Vec<AtomicU64>,
    ids: Lock<IdAlloc>,
    /// Live tasks every CPU's containers have room for
    /// ([`Shared::make_room_for_all_tasks`]).
    room: AtomicUsize,
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
                let mut rq = Rq::new(c, &mins, cfg.tunables.migration_cost_ns, cfg.rng_seed);
                rq.cfs.pelt_resync = cfg.features.has(crate::features::Feat::PeltResyncSums);
                Padded(Lock::new(rq))
            })
            .collect();
        let snap: Vec<Padded<RqSnap>> = (0..n).map(|_| Padded(RqSnap::default())).collect();
        for (c, rq) in rqs.iter().enumerate() {
            // Fresh runqueues: nothing overloaded.
            let _ = snap[c].publish(&rq.lock());
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
            wake_list: (0..n)
                .map(|_| Padded(Lock::new(VecDeque::with_capacity(ARENA_START))))
                .collect(),
            removed_pending: (0..n).map(|_| Padded(AtomicBool::new(false))).collect(),
            snap,
            rd_overloaded: Padded(AtomicBool::new(false)),
            jiffies: Padded(AtomicU64::new(0)),
            balance_running: Padded(AtomicBool::new(false)),
            llc: (0..n).map(|c| LlcShared::new(topo.llc_size[c])).collect(),
            nohz: crate::balance::nohz::Nohz::new(n),
            task_loc: (0..cfg.max_tasks)
                .map(|_| AtomicU64::new(loc(NO_CPU, 0)))
                .collect(),
            ids: Lock::new(IdAlloc::default()),
            room: AtomicUsize::new(0),
            cfg,
            topo,
        }
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.topo.nr_cpus
    }

    /// An operation context acting on `cpu`, holding `cpu`'s runqueue.
    #[inline(always)]
    pub fn lock(&self, cpu: CpuId) -> SchedCore<'_> {
        // The same locks in the same order as `context(cpu)` then
        // `lock_also(cpu)`, but the context is built with its runqueue
        // already held, in place: no call sees it before it is returned,
        // so it is not copied (a 320-byte memcpy per operation).
        let stats = lock_or_report(&self.stats[cpu], "statistics");
        let transit = lock_or_report(&self.transit[cpu], "transit");
        let mut rq = lock_or_report(&self.rqs[cpu], "runqueue");
        let arena = lock_or_report(&self.arenas[cpu], "task arena");
        self.apply_removed(cpu, &mut rq);
        self.context_held(stats, transit, cpu, rq, arena)
    }

    /// A context acting on `acting_cpu` (its statistics slot) that holds
    /// `cpu`'s runqueue.
    pub(crate) fn lock_on(&self, acting_cpu: CpuId, cpu: CpuId) -> SchedCore<'_> {
        let stats = lock_or_report(&self.stats[acting_cpu], "statistics");
        let transit = lock_or_report(&self.transit[acting_cpu], "transit");
        let mut rq = lock_or_report(&self.rqs[cpu], "runqueue");
        let arena = lock_or_report(&self.arenas[cpu], "task arena");
        self.apply_removed(cpu, &mut rq);
        self.context_held(stats, transit, cpu, rq, arena)
    }

    /// Tasks waiting on `cpu`'s wake list (reports, invariant checks).
    pub fn wake_list_len(&self, cpu: CpuId) -> usize {
        lock_or_report(&self.wake_list[cpu], "wake list").len()
    }

    /// Calls `f(task, migrated)` for each task on `cpu`'s wake list, oldest
    /// first (invariant checks, tests; takes the list's leaf lock).
    pub fn for_each_wake_listed(&self, cpu: CpuId, mut f: impl FnMut(&Task, bool)) {
        for e in lock_or_report(&self.wake_list[cpu], "wake list").iter() {
            f(&e.task, e.migrated);
        }
    }

    /// Apply blocked-load removals queued while `cpu`'s runqueue was not
    /// held (its lock holder, on taking it).
    #[inline]
    pub(super) fn apply_removed(&self, cpu: CpuId, rq: &mut Rq) {
        let pending = self.removed_pending[cpu].load(Relaxed)
            && self.removed_pending[cpu].swap(false, Acquire);
        let r = if pending {
            core::mem::take(&mut *lock_or_report(&self.removed[cpu], "removed"))
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
    }

    /// A context acting on `acting_cpu` that holds no runqueue yet
    /// (`acting_cpu == nr_cpus` names the whole-machine statistics slot).
    #[inline(always)]
    pub fn context(&self, acting_cpu: CpuId) -> SchedCore<'_> {
        self.context_with(
            lock_or_report(&self.stats[acting_cpu], "statistics"),
            lock_or_report(&self.transit[acting_cpu], "transit"),
        )
    }

    /// A context holding one runqueue (`cpu`, its removals applied).
    #[inline(always)]
    fn context_held<'a>(
        &'a self,
        stats: Guard<'a, SchedStats>,
        transit: Guard<'a, Option<Box<Task>>>,
        cpu: CpuId,
        rq: Guard<'a, Rq>,
        arena: Guard<'a, TaskArena>,
    ) -> SchedCore<'a> {
        self.context_of(
            stats,
            transit,
            Small::one((cpu, rq)),
            Small::one((cpu, arena)),
        )
    }

    #[inline(always)]
    fn context_with<'a>(
        &'a self,
        stats: Guard<'a, SchedStats>,
        transit: Guard<'a, Option<Box<Task>>>,
    ) -> SchedCore<'a> {
        self.context_of(stats, transit, Small::default(), Small::default())
    }

    /// A context holding `rqs` and their `arenas` (the same CPUs, in order).
    #[inline(always)]
    fn context_of<'a>(
        &'a self,
        stats: Guard<'a, SchedStats>,
        transit: Guard<'a, Option<Box<Task>>>,
        rqs: Small<(CpuId, Guard<'a, Rq>)>,
        arenas: Small<(CpuId, Guard<'a, TaskArena>)>,
    ) -> SchedCore<'a> {
        SchedCore {
            cfg: &self.cfg,
            topo: &self.topo,
            llc: &self.llc,
            shared: self,
            rqs: RqSet { held: rqs },
            tasks: TaskSet {
                shared: self,
                held: arenas,
                transit,
                loc: &self.task_loc,
            },
            stats,
            resched: CpuList::new(),
            graveyard: None,
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

    /// The CPU whose runqueue `p` is homed on, if `p` is alive, not in
    /// transit and not on a wake list.
    pub fn task_cpu(&self, p: TaskId) -> Option<CpuId> {
        match (self.task_loc.get(p.0 as usize)?.load(Relaxed) >> 32) as u32 {
            NO_CPU | IN_TRANSIT => None,
            c if c & WAKE_LISTED != 0 => None,
            c => Some(c as CpuId),
        }
    }

    /// The CPU whose wake list `p` waits on (TTWU_QUEUE), if it does.
    pub fn wake_listed(&self, p: TaskId) -> Option<CpuId> {
        match (self.task_loc.get(p.0 as usize)?.load(Relaxed) >> 32) as u32 {
            NO_CPU | IN_TRANSIT => None,
            c if c & WAKE_LISTED != 0 => Some((c & !WAKE_LISTED) as CpuId),
            _ => None,
        }
    }

    /// Does `cpu` have woken tasks on its wake list (`rq->ttwu_pending`)?
    /// Lock-free; set by a waker before it sends the IPI.
    #[inline]
    pub fn ttwu_pending(&self, cpu: CpuId) -> bool {
        self.snap[cpu].ttwu_pending()
    }

    /// `task_rq_lock(p)`: a context acting on `acting_cpu` that holds the
    /// runqueue `p` is homed on (retrying while `p` moves or is in
    /// transit). None if `p` is not alive. A task on a wake list is waited
    /// for until its target CPU activates it: callers that may run on that
    /// CPU with its list pending use `Scheduler`'s own `lock_task`, which
    /// activates the list instead.
    #[inline(always)]
    pub fn lock_task(&self, p: TaskId, acting_cpu: CpuId) -> Option<SchedCore<'_>> {
        loop {
            match self.lock_task_or_listed(p, acting_cpu) {
                Ok(c) => return c,
                Err(_) => core::hint::spin_loop(),
            }
        }
    }

    /// [`Self::lock_task`], or `Err(cpu)` at once when `p` waits on `cpu`'s
    /// wake list.
    #[inline(always)]
    pub(crate) fn lock_task_or_listed(
        &self,
        p: TaskId,
        acting_cpu: CpuId,
    ) -> Result<Option<SchedCore<'_>>, CpuId> {
        loop {
            let Some(l) = self.task_loc.get(p.0 as usize) else {
                return Ok(None);
            };
            let cpu = match (l.load(Relaxed) >> 32) as u32 {
                NO_CPU => return Ok(None),
                IN_TRANSIT => {
                    core::hint::spin_loop();
                    continue;
                }
                c if c & WAKE_LISTED != 0 => return Err((c & !WAKE_LISTED) as CpuId),
                c => c as CpuId,
            };
            // As `context(acting_cpu)` then `lock_also(cpu)`, built in
            // place once the task is known to be there (see `lock`).
            let stats = lock_or_report(&self.stats[acting_cpu], "statistics");
            let transit = lock_or_report(&self.transit[acting_cpu], "transit");
            let mut rq = lock_or_report(&self.rqs[cpu], "runqueue");
            let arena = lock_or_report(&self.arenas[cpu], "task arena");
            self.apply_removed(cpu, &mut rq);
            if self.task_cpu(p) == Some(cpu) {
                return Ok(Some(self.context_held(stats, transit, cpu, rq, arena)));
            }
            // It moved meanwhile: let go (publishing, as any unlock) and
            // retry.
            self.publish(cpu, &rq);
        }
    }

    /// Publish `cpu`'s snapshot from `rq` (its lock holder); a CPU that
    /// now holds more than one task sets the root domain's `overloaded`.
    #[inline]
    pub(crate) fn publish(&self, cpu: CpuId, rq: &Rq) {
        if self.snap[cpu].publish(rq) > 0 {
            self.set_rd_overloaded(true);
        }
    }

    /// `jiffies` + 1 as last seen by a runqueue clock update (ROOT_H_LOAD).
    #[inline]
    pub fn jiffies(&self) -> u64 {
        self.jiffies.load(Relaxed)
    }

    /// Advance [`Self::jiffies`] to the jiffy of `now` (never backwards: the
    /// CPUs' clocks are read unordered).
    #[inline]
    pub(crate) fn note_jiffy(&self, now: u64) {
        let j = now / self.cfg.tunables.tick_ns + 1;
        if self.jiffies.load(Relaxed) < j {
            self.jiffies.fetch_max(j, Relaxed);
        }
    }

    /// `atomic_cmpxchg_acquire(&sched_balance_running, 0, 1) == 0`: this
    /// CPU may walk an SD_SERIALIZE level now.
    #[inline]
    pub(crate) fn try_serialize_balance(&self) -> bool {
        self.balance_running
            .compare_exchange(false, true, Acquire, Relaxed)
            .is_ok()
    }

    /// `atomic_set_release(&sched_balance_running, 0)`.
    #[inline]
    pub(crate) fn end_serialized_balance(&self) {
        self.balance_running.store(false, Release);
    }

    /// `get_rd_overloaded(rd)`.
    #[inline]
    pub fn rd_overloaded(&self) -> bool {
        self.rd_overloaded.load(Relaxed)
    }

    /// `set_rd_overloaded(rd, status)`: written only when it changes.
    #[inline]
    pub fn set_rd_overloaded(&self, status: bool) {
        if self.rd_overloaded.load(Relaxed) != status {
            self.rd_overloaded.store(status, Relaxed);
        }
    }

    /// The published snapshot of `cpu`, to read single fields.
    #[inline]
    pub fn snap(&self, cpu: CpuId) -> &RqSnap {
        &self.snap[cpu]
    }

    /// Gives every CPU's task containers (its arena, timeline, wake list
    /// and balancing scratch) and the free-id list room for every live
    /// task, so that no later wakeup, block, switch, balance or exit
    /// allocates, wherever the tasks go (Linux's runqueues are intrusive
    /// and never allocate; ours hold tasks by pointer). For the fork path,
    /// which may allocate: the kernel calls it at every spawn, after
    /// reserving the id; it rounds up to a multiple of [`ROOM_STEP`], so it
    /// allocates only when the live count passes one. Memory: per CPU, room
    /// for the live tasks in each container (~0.1 KB per task per CPU), so a
    /// caller with many CPUs and tasks and no use for the guarantee (the
    /// simulator) does not call it. Takes each CPU's locks in turn: call it
    /// with no scheduler lock held.
    pub fn make_room_for_all_tasks(&self) {
        let live = self.live_tasks();
        if live <= self.room.load(Relaxed) {
            return;
        }
        let n = live.next_multiple_of(ROOM_STEP);
        for c in 0..self.nr_cpus() {
            {
                let mut rq = lock_or_report(&self.rqs[c], "runqueue");
                rq.cfs.timeline.reserve_total(n);
                let len = rq.lru_scratch.len();
                rq.lru_scratch.reserve_exact(n.saturating_sub(len));
            }
            lock_or_report(&self.arenas[c], "arena").reserve_total(n);
            let mut wl = lock_or_report(&self.wake_list[c], "wake list");
            let len = wl.len();
            wl.reserve_exact(n.saturating_sub(len));
        }
        {
            let mut ids = self.ids.lock();
            let len = ids.free.len();
            ids.free.reserve_exact(n.saturating_sub(len));
        }
        self.room.fetch_max(n, Relaxed);
    }

    /// Tasks alive now (ids in use, reserved ones included).
    pub fn live_tasks(&self) -> usize {
        let ids = self.ids.lock();
        ids.next as usize - ids.free.len()
    }

    /// Bytes [`Self::make_room_for_all_tasks`] sets aside per task on each
    /// CPU: the task's pointer in the arena and a wake-list entry, a
    /// timeline node with its free-list slot, a balancing scratch entry.
    /// (The task itself, [`Self::task_bytes`], is allocated once, at fork.)
    pub const fn room_bytes_per_task() -> usize {
        core::mem::size_of::<Box<Task>>()
            + core::mem::size_of::<WakeEntry>()
            + crate::fair::timeline::Timeline::NODE_BYTES
            + core::mem::size_of::<(u64, TaskId)>()
    }

    /// Bytes one task takes once, wherever it is (its boxed [`Task`]).
    pub const fn task_bytes() -> usize {
        core::mem::size_of::<Task>()
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
    /// A dead task's box, freed when the context is dropped, after every
    /// lock it holds (the last field: fields drop in order, after
    /// `Drop::drop` let the runqueues go), so the heap's lock is never
    /// taken under a runqueue lock.
    graveyard: Option<Box<Task>>,
}

impl SchedCore<'_> {
    /// Keep a freed task's box until the context is dropped (its locks
    /// released first). One per operation: a second one is dropped now.
    pub(crate) fn bury(&mut self, t: Option<Box<Task>>) {
        if let Some(t) = t {
            // At most one task exits per `schedule()`; an earlier one
            // would be freed here, under the locks, rather than lost.
            drop(self.graveyard.replace(t));
        }
    }
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
