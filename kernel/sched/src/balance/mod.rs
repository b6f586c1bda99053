//! Load balancing: periodic per-domain balancing, newly-idle balancing and
//! active balancing (Linux `sched_balance_domains`, `sched_balance_rq`,
//! `sched_balance_newidle`, `active_load_balance_cpu_stop`).
//!
//! ```text
//!  tick ─► rebalance_domains(cpu) ─► for each domain (SMT, MC, PKG, NUMA):
//!            interval due? ─► load_balance(env)
//!                              ├─ should_we_balance (one CPU per group)
//!                              ├─ find_busiest_group ─► calculate_imbalance
//!                              ├─ find_busiest_queue
//!                              ├─ detach_tasks / attach (can_migrate_task)
//!                              └─ need_active_balance ─► push on src's next schedule()
//!  schedule() finds nothing ─► newidle_balance(cpu)
//! ```
//! The core moves tasks between its own runqueues and returns the list of
//! migrations; the kernel sends the IPIs.

pub mod domains;
pub mod fbg;
pub mod lb;
pub mod ni_random;
pub mod nohz;
pub mod stats;

#[cfg(test)]
mod tests;

use crate::CpuId;

/// `env->cpus`, kept as the CPUs taken out of the domain's span: each
/// busiest queue whose tasks were all pinned away from the puller
/// (`load_balance`'s `redo`). Group statistics and the busiest-queue search
/// skip them. Room for [`ExcludedCpus::MAX`]; a pass that would take out
/// more ends as all pinned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExcludedCpus {
    cpus: [CpuId; ExcludedCpus::MAX],
    len: usize,
}

impl ExcludedCpus {
    /// How many CPUs one pass may take out.
    pub const MAX: usize = 8;

    /// Is `cpu` taken out?
    #[inline]
    pub fn contains(&self, cpu: CpuId) -> bool {
        self.cpus[..self.len].contains(&cpu)
    }

    /// Take `cpu` out; false when there is no room.
    pub fn push(&mut self, cpu: CpuId) -> bool {
        if self.len == Self::MAX {
            return false;
        }
        self.cpus[self.len] = cpu;
        self.len += 1;
        true
    }
}

/// `enum cpu_idle_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuIdleType {
    /// CPU_NOT_IDLE: periodic balance on a busy CPU.
    NotIdle,
    /// CPU_IDLE: periodic balance on an idle CPU.
    Idle,
    /// CPU_NEWLY_IDLE: about to go idle.
    NewlyIdle,
}

/// `enum migration_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationType {
    /// Move load (weighted PELT).
    Load,
    /// Move utilization.
    Util,
    /// Move a number of tasks.
    Task,
    /// Move a misfit task (asymmetric systems; unused here).
    Misfit,
}

/// `struct lb_env` (the parts used on symmetric machines).
#[derive(Clone, Copy, Debug)]
pub struct LbEnv {
    /// The pulling CPU.
    pub dst_cpu: CpuId,
    /// Domain level index in dst's hierarchy.
    pub level: usize,
    /// Idle type.
    pub idle: CpuIdleType,
    /// Source CPU once found.
    pub src_cpu: CpuId,
    /// Amount to move (load, util or tasks).
    pub imbalance: i64,
    /// What to move.
    pub migration_type: MigrationType,
    /// Max tasks to examine.
    pub loop_max: u32,
    /// CPUs taken out of `env->cpus` by the all-pinned `redo`.
    pub excluded: ExcludedCpus,
    /// `LBF_ALL_PINNED`: no task seen so far may run on `dst_cpu`
    /// (cleared by [`lb::can_migrate_task`](crate::balance::lb::can_migrate_task)
    /// at the first task whose affinity allows it).
    pub all_pinned: bool,
}
