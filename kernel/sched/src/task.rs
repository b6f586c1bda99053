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
use alloc::collections::BTreeMap;

/// Index of a task in the [`TaskArena`].
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
    /// PELT averages.
    pub avg: SchedAvg,
    /// Number of CPU changes.
    pub nr_migrations: u64,
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

/// Indexed access to tasks by [`TaskId`]: implemented by one CPU's
/// [`TaskArena`] and by the multi-runqueue [`crate::core::TaskSet`] view, so
/// the fair-class code works on either.
pub trait Tasks: core::ops::Index<TaskId, Output = Task> + core::ops::IndexMut<TaskId> {
    /// The task, if present.
    fn get(&self, id: TaskId) -> Option<&Task>;
}

/// The tasks homed on one runqueue (queued, running, or asleep with this
/// as `task_cpu`), keyed by id. Protected by that runqueue's lock.
#[derive(Clone, Debug, Default)]
pub struct TaskArena {
    map: BTreeMap<TaskId, Task>,
}

impl TaskArena {
    /// Build a task with the smallest unused id and add it (host tests of
    /// the fair class; the scheduler allocates ids machine-wide).
    pub fn alloc(&mut self, make: impl FnOnce(TaskId) -> Task) -> TaskId {
        let mut next = 0u32;
        for id in self.map.keys() {
            if id.0 != next {
                break;
            }
            next += 1;
        }
        let id = TaskId(next);
        self.map.insert(id, make(id));
        id
    }

    /// Remove a task (freed, or leaving for another runqueue).
    pub fn remove(&mut self, id: TaskId) -> Option<Task> {
        self.map.remove(&id)
    }

    /// Add a task arriving on this runqueue.
    pub fn insert(&mut self, t: Task) {
        let prev = self.map.insert(t.id, t);
        debug_assert!(prev.is_none(), "task inserted twice");
    }

    /// The task, if present.
    pub fn get(&self, id: TaskId) -> Option<&Task> {
        self.map.get(&id)
    }

    /// Mutable access, if present.
    pub fn get_mut(&mut self, id: TaskId) -> Option<&mut Task> {
        self.map.get_mut(&id)
    }

    /// Tasks in id order.
    pub fn iter(&self) -> impl Iterator<Item = &Task> {
        self.map.values()
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No tasks.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl Tasks for TaskArena {
    fn get(&self, id: TaskId) -> Option<&Task> {
        self.map.get(&id)
    }
}

impl core::ops::Index<TaskId> for TaskArena {
    type Output = Task;
    fn index(&self, id: TaskId) -> &Task {
        self.get(id).expect("task not on this runqueue")
    }
}

impl core::ops::IndexMut<TaskId> for TaskArena {
    fn index_mut(&mut self, id: TaskId) -> &mut Task {
        self.get_mut(id).expect("task not on this runqueue")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_reuses_slots() {
        let mut a = TaskArena::default();
        let t0 = a.alloc(|id| Task::new(id, 0, TaskPolicy::Normal, 0));
        let t1 = a.alloc(|id| Task::new(id, 5, TaskPolicy::Normal, 1));
        assert_eq!(a.len(), 2);
        assert_eq!(a[t1].weight(), 335);
        a.remove(t0);
        assert!(a.get(t0).is_none());
        let t2 = a.alloc(|id| Task::new(id, 0, TaskPolicy::Idle, 0));
        assert_eq!(t2, t0);
        assert_eq!(a[t2].weight(), 3);
        assert_eq!(a.iter().count(), 2);
    }
}
