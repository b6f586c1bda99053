//! Tasks and their scheduling entities, stored in an arena indexed by
//! [`TaskId`].
//!
//! Mirrors the fair-class parts of `struct task_struct` / `struct
//! sched_entity`: weight, vruntime, EEVDF deadline/lag/slice, PELT averages,
//! `wakee_flips`/`last_wakee` (record_wakee), `recent_used_cpu`, and the
//! schedstat wait-time fields. The kernel never sees these structs: it refers
//! to tasks only by `TaskId`.

use crate::CpuId;
use crate::pelt::SchedAvg;
use crate::weight::{LoadWeight, WEIGHT_IDLEPRIO};
use alloc::boxed::Box;
use alloc::vec::Vec;

/// A task's machine-wide id (dense, reused after the task exits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub u32);

/// Scheduling policy within the fair class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskPolicy {
    /// SCHED_NORMAL
    Normal,
    /// SCHED_BATCH (no wakeup preemption)
    Batch,
    /// SCHED_IDLE (weight 3, treated as idle for placement)
    Idle,
}

/// Lifecycle state as seen by the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Queued on its CPU's runqueue, waiting.
    Runnable,
    /// Current task of its CPU.
    Running,
    /// Blocked (not on any runqueue).
    Sleeping,
    /// Exited; the slot is free.
    Dead,
}

/// The fair-class scheduling entity (`struct sched_entity`).
#[derive(Clone, Debug, Default)]
pub struct SchedEntity {
    /// Weight and inverse.
    pub load: LoadWeight,
    /// Counted in its runqueue (queued or running).
    pub on_rq: bool,
    /// Clock of the last accounting (set when picked, advanced by update_curr).
    pub exec_start: u64,
    /// Total CPU time received.
    pub sum_exec_runtime: u64,
    /// `sum_exec_runtime` when last picked.
    pub prev_sum_exec_runtime: u64,
    /// Virtual runtime (absolute on its runqueue; 0-offset free).
    pub vruntime: u64,
    /// EEVDF virtual deadline.
    pub deadline: u64,
    /// EEVDF virtual lag saved at dequeue.
    pub vlag: i64,
    /// EEVDF request size (ns).
    pub slice: u64,
    /// EEVDF: deadline stored relative to vruntime (PLACE_REL_DEADLINE).
    pub rel_deadline: bool,
    /// EEVDF RUN_TO_PARITY protection: the deadline recorded when picked.
    pub vprot: Option<u64>,
    /// EEVDF DELAY_DEQUEUE (`sched_delayed`): blocked but left queued
    /// (`on_rq` stays true) until picked or woken.
    pub sched_delayed: bool,
    /// PELT averages.
    pub avg: SchedAvg,
    /// Number of CPU changes.
    pub nr_migrations: u64,
    /// Where the task sits in its runqueue's `cfs_tasks` list (`group_node`):
    /// the queue's counter value when it was last put at the head
    /// (enqueued, picked, or skipped by `detach_tasks`). The balancer
    /// visits from the tail, the smallest value first.
    pub cfs_tasks_pos: u64,
    /// Its entry's insertion number in its runqueue's timeline while it is
    /// in the tree ([`Timeline::insert`](crate::fair::timeline::Timeline::insert)):
    /// what orders it after entities with the same key queued before it.
    pub tree_seq: u64,
}

/// Per-task counters (`struct sched_statistics` + `sched_info`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskStats {
    /// `nr_wakeups`.
    pub nr_wakeups: u64,
    /// `nr_wakeups_sync`.
    pub nr_wakeups_sync: u64,
    /// `nr_wakeups_migrate`.
    pub nr_wakeups_migrate: u64,
    /// `nr_wakeups_affine_attempts`.
    pub nr_wakeups_affine_attempts: u64,
    /// `nr_wakeups_affine`.
    pub nr_wakeups_affine: u64,
    /// `wait_sum` (ns runnable but not running).
    pub wait_sum: u64,
    /// `wait_max`.
    pub wait_max: u64,
    /// `wait_count`.
    pub wait_count: u64,
    /// `pcount`: times picked.
    pub pcount: u64,
}

/// A task as the scheduler core knows it.
#[derive(Clone, Debug)]
pub struct Task {
    /// Its id.
    pub id: TaskId,
    /// Nice value.
    pub nice: i32,
    /// Fair-class policy.
    pub policy: TaskPolicy,
    /// State.
    pub state: TaskState,
    /// `task_cpu(p)`: the CPU whose runqueue it is (or was last) on.
    pub cpu: CpuId,
    /// Scheduling entity.
    pub se: SchedEntity,
    /// `wakee_flips` (record_wakee / wake_wide).
    pub wakee_flips: u32,
    /// `wakee_flip_decay_ts` in ns.
    pub wakee_flip_decay_ts: u64,
    /// `last_wakee`.
    pub last_wakee: Option<TaskId>,
    /// `recent_used_cpu`.
    pub recent_used_cpu: CpuId,
    /// schedstat `wait_start` (0 = not waiting).
    pub wait_start: u64,
    /// Counters.
    pub stats: TaskStats,
    /// A per-CPU kernel thread (never migrated by the balancer).
    pub is_percpu_kthread: bool,
    /// The one CPU the task may run on (Linux `nr_cpus_allowed == 1`, as
    /// after `kthread_bind` or a one-CPU `sched_setaffinity`): wakeups go
    /// there without a placement decision and the balancer never moves it.
    pub bound_cpu: Option<CpuId>,
}

impl Task {
    /// A new task (state Sleeping until `wake_up_new_task`).
    pub fn new(id: TaskId, nice: i32, policy: TaskPolicy, cpu: CpuId) -> Self {
        let load = match policy {
            TaskPolicy::Idle => LoadWeight {
                weight: WEIGHT_IDLEPRIO,
                inv_weight: 1_431_655_765,
            },
            _ => LoadWeight::from_nice(nice),
        };
        Task {
            id,
            nice,
            policy,
            state: TaskState::Sleeping,
            cpu,
            se: SchedEntity {
                load,
                ..Default::default()
            },
            wakee_flips: 0,
            wakee_flip_decay_ts: 0,
            last_wakee: None,
            recent_used_cpu: cpu,
            wait_start: 0,
            stats: TaskStats::default(),
            is_percpu_kthread: false,
            bound_cpu: None,
        }
    }

    /// Scaled-down weight.
    pub fn weight(&self) -> u64 {
        self.se.load.weight
    }
}

/// Indexed access to tasks by [`TaskId`]: implemented by the
/// multi-runqueue [`crate::core::TaskSet`] view the scheduler uses, and by
/// the standalone [`TaskTable`], so the fair-class code works on either.
pub trait Tasks: core::ops::Index<TaskId, Output = Task> + core::ops::IndexMut<TaskId> {
    /// The task, if present.
    fn get(&self, id: TaskId) -> Option<&Task>;
}

/// The tasks homed on one runqueue (queued, running, or asleep with this
/// as `task_cpu`), densely stored by slot. The scheduler finds a task's slot
/// through its machine-wide directory ([`crate::core::Shared`]), so lookups
/// are O(1) and moving tasks allocates nothing once the vector has grown.
/// Each task is boxed: it is allocated once, at fork, and a wakeup or
/// migration that moves it between arenas, transit and wake lists moves a
/// pointer, not the ~300-byte task (`Task` by value cost a wakeup across
/// CPUs five copies of it: ~400 host instructions per message in
/// `examples/wake_cycle cross`). Protected by that runqueue's lock.
#[derive(Clone, Debug, Default)]
pub struct TaskArena {
    // Boxed on purpose (clippy's vec_box): the vector's elements move
    // between arenas, not just the vector.
    #[allow(clippy::vec_box)]
    tasks: Vec<Box<Task>>,
}

impl TaskArena {
    /// An arena with room for `n` tasks before it first grows.
    pub fn with_capacity(n: usize) -> Self {
        TaskArena {
            tasks: Vec::with_capacity(n),
        }
    }

    /// Add a task; returns its slot.
    pub fn push(&mut self, t: Box<Task>) -> usize {
        self.tasks.push(t);
        self.tasks.len() - 1
    }

    /// Remove the task in `slot`; the last task moves into `slot`, and its
    /// id is returned so the caller can update its directory entry.
    pub fn swap_remove(&mut self, slot: usize) -> (Box<Task>, Option<TaskId>) {
        let t = self.tasks.swap_remove(slot);
        (t, self.tasks.get(slot).map(|m| m.id))
    }

    /// The task in `slot`.
    #[inline]
    pub fn at(&self, slot: usize) -> Option<&Task> {
        self.tasks.get(slot).map(|t| &**t)
    }

    /// The task in `slot`, mutable.
    #[inline]
    pub fn at_mut(&mut self, slot: usize) -> Option<&mut Task> {
        self.tasks.get_mut(slot).map(|t| &mut **t)
    }

    /// The tasks, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter().map(|t| &**t)
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// No tasks.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Room for `n` tasks in all before the arena grows again.
    pub fn reserve_total(&mut self, n: usize) {
        self.tasks.reserve_exact(n.saturating_sub(self.tasks.len()));
    }
}

/// A standalone task table indexed directly by id, ids reused after
/// `free` (host tests and benchmarks of the fair class on one runqueue).
#[derive(Clone, Debug, Default)]
pub struct TaskTable {
    slots: Vec<Option<Task>>,
    free: Vec<u32>,
}

impl TaskTable {
    /// Allocate an id and build the task with it.
    pub fn alloc(&mut self, make: impl FnOnce(TaskId) -> Task) -> TaskId {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        };
        let id = TaskId(idx);
        self.slots[idx as usize] = Some(make(id));
        id
    }

    /// Release an id.
    pub fn free(&mut self, id: TaskId) {
        if self.slots[id.0 as usize].take().is_some() {
            self.free.push(id.0);
        }
    }

    /// Mutable access, if alive.
    pub fn get_mut(&mut self, id: TaskId) -> Option<&mut Task> {
        self.slots.get_mut(id.0 as usize).and_then(|s| s.as_mut())
    }

    /// Live tasks.
    pub fn iter(&self) -> impl Iterator<Item = &Task> {
        self.slots.iter().filter_map(|s| s.as_ref())
    }

    /// Number of live tasks.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// No live tasks.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Tasks for TaskTable {
    fn get(&self, id: TaskId) -> Option<&Task> {
        self.slots.get(id.0 as usize).and_then(|s| s.as_ref())
    }
}

impl core::ops::Index<TaskId> for TaskTable {
    type Output = Task;
    fn index(&self, id: TaskId) -> &Task {
        Tasks::get(self, id).expect("stale TaskId")
    }
}

impl core::ops::IndexMut<TaskId> for TaskTable {
    fn index_mut(&mut self, id: TaskId) -> &mut Task {
        self.get_mut(id).expect("stale TaskId")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_reuses_slots() {
        let mut a = TaskTable::default();
        let t0 = a.alloc(|id| Task::new(id, 0, TaskPolicy::Normal, 0));
        let t1 = a.alloc(|id| Task::new(id, 5, TaskPolicy::Normal, 1));
        assert_eq!(a.len(), 2);
        assert_eq!(a[t1].weight(), 335);
        a.free(t0);
        assert!(Tasks::get(&a, t0).is_none());
        let t2 = a.alloc(|id| Task::new(id, 0, TaskPolicy::Idle, 0));
        assert_eq!(t2, t0);
        assert_eq!(a[t2].weight(), 3);
        assert_eq!(a.iter().count(), 2);
    }

    #[test]
    fn runqueue_arena_reports_the_task_that_fills_a_slot() {
        let mut a = TaskArena::default();
        for i in 0..3 {
            assert_eq!(
                a.push(Box::new(Task::new(
                    TaskId(10 + i),
                    0,
                    TaskPolicy::Normal,
                    0
                ))),
                i as usize
            );
        }
        let (t, moved) = a.swap_remove(0);
        assert_eq!((t.id, moved), (TaskId(10), Some(TaskId(12))));
        assert_eq!(a.at(0).map(|t| t.id), Some(TaskId(12)));
        let (t, moved) = a.swap_remove(1);
        assert_eq!((t.id, moved), (TaskId(11), None));
        assert_eq!(a.len(), 1);
    }
}
