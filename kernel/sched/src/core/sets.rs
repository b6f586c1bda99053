//! The runqueues and tasks one operation holds: [`RqSet`] (held runqueue
//! locks, sorted by CPU) and [`TaskSet`] (tasks homed on them, reached
//! through the task directory, plus the one task in transit).

use super::{Guard, IN_TRANSIT, Shared, WAKE_LISTED, WakeEntry, loc, lock_or_report};
use crate::CpuId;
use crate::rq::Rq;
use crate::small::Small;
use crate::task::{Task, TaskArena, TaskId, Tasks};
use alloc::boxed::Box;
use core::sync::atomic::AtomicU64;
use core::sync::atomic::Ordering::{Relaxed, Release};
/// The runqueues an operation holds, sorted by CPU.
pub struct RqSet<'a> {
    pub(super) held: Small<(CpuId, Guard<'a, Rq>)>,
}

impl RqSet<'_> {
    #[inline]
    pub(super) fn pos(&self, cpu: CpuId) -> Result<usize, usize> {
        self.held.search_by_key(&cpu, |(c, _)| *c)
    }

    /// Whether `cpu`'s runqueue is held.
    pub fn holds(&self, cpu: CpuId) -> bool {
        self.pos(cpu).is_ok()
    }

    /// The runqueue of `cpu`, if held.
    #[inline]
    pub fn get(&self, cpu: CpuId) -> Option<&Rq> {
        self.held.find_by_key(&cpu, |(c, _)| *c).map(|(_, g)| &**g)
    }

    /// The held runqueues, by CPU.
    pub fn iter(&self) -> impl Iterator<Item = &Rq> {
        self.held.iter().map(|(_, g)| &**g)
    }

    /// The CPUs of the held runqueues when there are at most two (an
    /// absent one is `CpuId::MAX`), else None: a scan over many CPUs tests
    /// each against these two instead of searching the held list.
    #[inline]
    pub(crate) fn few(&self) -> Option<[CpuId; 2]> {
        if self.held.len() > 2 {
            return None;
        }
        let cpu = |i| self.held.get(i).map_or(CpuId::MAX, |(c, _)| *c);
        Some([cpu(0), cpu(1)])
    }
}

impl core::ops::Index<CpuId> for RqSet<'_> {
    type Output = Rq;
    #[inline]
    fn index(&self, cpu: CpuId) -> &Rq {
        match self.held.find_by_key(&cpu, |(c, _)| *c) {
            Some((_, g)) => g,
            None => panic!("runqueue {cpu} used without its lock"),
        }
    }
}

impl core::ops::IndexMut<CpuId> for RqSet<'_> {
    #[inline]
    fn index_mut(&mut self, cpu: CpuId) -> &mut Rq {
        match self.held.find_by_key_mut(&cpu, |(c, _)| *c) {
            Some((_, g)) => g,
            None => panic!("runqueue {cpu} used without its lock"),
        }
    }
}

/// The tasks an operation may touch: those homed on its held runqueues,
/// plus the task in transit (being woken or forked) that it owns.
pub struct TaskSet<'a> {
    pub(super) shared: &'a Shared,
    pub(super) held: Small<(CpuId, Guard<'a, TaskArena>)>,
    /// At most one task is in transit per operation (the acting CPU's
    /// slot in [`Shared`]).
    pub(super) transit: Guard<'a, Option<Box<Task>>>,
    /// The task directory (`Shared::task_loc`), one pointer closer.
    pub(super) loc: &'a [AtomicU64],
}

impl TaskSet<'_> {
    /// (index in `held`, slot) of a task homed on a held runqueue.
    #[inline(always)]
    fn locate(&self, id: TaskId) -> Option<(usize, usize)> {
        let (cpu, slot) = self.dir(id)?;
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
    fn home(&mut self, mut t: Box<Task>, cpu: CpuId, what: &str) {
        let h = self.held_index(cpu, what);
        let id = t.id;
        t.cpu = cpu;
        let slot = self.arena(h).push(t);
        self.shared.task_loc[id.0 as usize].store(loc(cpu as u32, slot), Relaxed);
    }

    /// Remove a task from its held arena (the directory entry of the task
    /// that fills its slot is fixed up; its own is left to the caller).
    fn unhome(&mut self, id: TaskId) -> Box<Task> {
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
        // runqueue. The common case, a task on the first held runqueue,
        // costs one load, one compare and the slot's bounds check.
        let (cpu, slot) = self.dir(id)?;
        if self.held.first().is_some_and(|(c, _)| *c == cpu) {
            let (_, a) = self.held.first_mut()?;
            return a.at_mut(slot).filter(|t| t.id == id);
        }
        self.get_mut_slow(id, cpu, slot)
    }

    /// [`Self::get_mut`] past the first held runqueue: a second one, or the
    /// task in transit.
    #[inline(never)]
    fn get_mut_slow(&mut self, id: TaskId, cpu: CpuId, slot: usize) -> Option<&mut Task> {
        if let Ok(h) = self.held.search_by_key(&cpu, |(c, _)| *c) {
            return self.arena(h).at_mut(slot).filter(|t| t.id == id);
        }
        self.transit.as_deref_mut().filter(|t| t.id == id)
    }

    /// `Tasks::get` past the first held runqueue.
    #[inline(never)]
    fn get_slow(&self, id: TaskId, cpu: CpuId, slot: usize) -> Option<&Task> {
        if let Ok(h) = self.held.search_by_key(&cpu, |(c, _)| *c) {
            return self.held.get(h)?.1.at(slot).filter(|t| t.id == id);
        }
        self.transit.as_deref().filter(|t| t.id == id)
    }

    /// The directory's (CPU, slot) of `id` (the CPU is meaningless for a
    /// task not homed on a runqueue: no held runqueue has it).
    #[inline(always)]
    fn dir(&self, id: TaskId) -> Option<(CpuId, usize)> {
        let v = self.loc.get(id.0 as usize)?.load(Relaxed);
        Some(((v >> 32) as usize, v as u32 as usize))
    }

    /// Tasks homed on the held runqueues and in transit.
    pub fn iter(&self) -> impl Iterator<Item = &Task> {
        self.transit
            .as_deref()
            .into_iter()
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
    pub fn push_transit(&mut self, t: Box<Task>) {
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

    /// `__ttwu_queue_wakelist()`: hand the task in transit to `cpu`'s wake
    /// list (no runqueue lock needed: the list has its own leaf lock) and
    /// set `cpu`'s `ttwu_pending`. The task is then neither sleeping on a
    /// runqueue nor queued: `cpu` activates it ([`Self::unqueue_wake`]).
    pub fn queue_wake(&mut self, id: TaskId, cpu: CpuId, migrated: bool) {
        assert!(self.in_transit(id), "queueing a task not in transit");
        let mut t = self.transit.take().expect("in transit");
        t.cpu = cpu;
        let sh = self.shared;
        let mut list = lock_or_report(&sh.wake_list[cpu], "wake list");
        list.push_back(WakeEntry { task: t, migrated });
        // Under the list lock, like the push: the target clears the flag
        // under it too, only when it finds the list empty.
        sh.snap[cpu].ttwu_pending.store(true, Release);
        sh.task_loc[id.0 as usize].store(loc(WAKE_LISTED | cpu as u32, 0), Relaxed);
    }

    /// The oldest task on `cpu`'s wake list (FIFO, as Linux flushes its
    /// call-single queue), homed on `cpu` (held) and returned with its
    /// migrated flag; None when the list is empty.
    pub fn unqueue_wake(&mut self, cpu: CpuId) -> Option<(TaskId, bool)> {
        let sh = self.shared;
        let mut list = lock_or_report(&sh.wake_list[cpu], "wake list");
        let e = list.pop_front()?;
        let id = e.task.id;
        // Homed while the list is locked, so the directory goes straight
        // from "on the wake list" to the arena slot.
        self.home(e.task, cpu, "activating on");
        drop(list);
        Some((id, e.migrated))
    }

    /// Clear `cpu`'s `ttwu_pending` if its wake list is empty (true), under
    /// the list lock so that a concurrent push keeps it set (false: more
    /// to activate).
    pub fn finish_wake_list(&self, cpu: CpuId) -> bool {
        let sh = self.shared;
        let list = lock_or_report(&sh.wake_list[cpu], "wake list");
        if list.is_empty() {
            sh.snap[cpu].ttwu_pending.store(false, Relaxed);
            true
        } else {
            false
        }
    }

    /// Move a task between two held runqueues' arenas. The directory goes
    /// straight from the old CPU to the new one, so a concurrent
    /// `task_rq_lock` never finds the task missing.
    pub fn rehome(&mut self, id: TaskId, to: CpuId) {
        let t = self.unhome(id);
        self.home(t, to, "moving to");
    }

    /// Take a dead task homed on a held runqueue out of its arena and
    /// release its id; returns its box, for the caller to drop once no
    /// scheduler lock is held (`SchedCore::bury`).
    pub fn free(&mut self, id: TaskId) -> Option<Box<Task>> {
        self.locate(id)?;
        let t = self.unhome(id);
        self.shared.free_id(id);
        Some(t)
    }
}

impl Tasks for TaskSet<'_> {
    #[inline(always)]
    fn get(&self, id: TaskId) -> Option<&Task> {
        let (cpu, slot) = self.dir(id)?;
        if let Some((c, a)) = self.held.first()
            && *c == cpu
        {
            return a.at(slot).filter(|t| t.id == id);
        }
        self.get_slow(id, cpu, slot)
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
