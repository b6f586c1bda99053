//! Per-CPU runqueue state (`struct rq`) and the per-LLC shared state
//! (`struct sched_domain_shared`), plus per-domain balancing state.

use crate::CpuId;
use crate::fair::cfs_rq::CfsRq;
use crate::task::TaskId;
use alloc::vec::Vec;

/// Per (CPU, domain level) balancing state (the mutable fields of
/// `struct sched_domain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdState {
    /// `last_balance` (ns).
    pub last_balance: u64,
    /// `balance_interval` (ms), adapted between min and max interval.
    pub balance_interval_ms: u64,
    /// `nr_balance_failed`.
    pub nr_balance_failed: u32,
    /// `max_newidle_lb_cost` (ns).
    pub max_newidle_lb_cost: u64,
    /// `last_decay_max_lb_cost` (ns).
    pub last_decay_max_lb_cost: u64,
}

/// The runqueue of one CPU (fair class only).
#[derive(Clone, Debug)]
pub struct Rq {
    /// This CPU.
    pub cpu: CpuId,
    /// `rq_clock`: the latest time this CPU was told (ns).
    pub clock: u64,
    /// The fair runqueue.
    pub cfs: CfsRq,
    /// The running task; `None` = the idle task.
    pub curr: Option<TaskId>,
    /// TIF_NEED_RESCHED of curr.
    pub need_resched: bool,
    /// When the CPU last went (newly) idle, 0 when busy (`idle_stamp`).
    pub idle_stamp: u64,
    /// EWMA of idle durations (`avg_idle`).
    pub avg_idle: u64,
    /// `max_idle_balance_cost`.
    pub max_idle_balance_cost: u64,
    /// `next_balance` (ns).
    pub next_balance: u64,
    /// Per-domain balancing state, index = attached domain level.
    pub sd: Vec<SdState>,
    /// Mainline nr_busy_cpus state (`sd_llc->nohz_idle`): counted as idle.
    pub nohz_idle: bool,
    /// Srikar's per-CPU `is_idle` flag (IDLE_ACCT_ENTRY).
    pub acct_idle: bool,
    /// Pending active balance: push one task to this CPU.
    pub active_balance: Option<CpuId>,
    /// Pending sched_exec move of the current task (task, destination).
    pub exec_migrate: Option<(crate::task::TaskId, CpuId)>,
    /// `cpu_capacity` (1024: no RT/IRQ pressure on this machine).
    pub cpu_capacity: u64,
    /// `cpu_capacity_orig`.
    pub cpu_capacity_orig: u64,
    /// Total idle time (ns).
    pub idle_ns: u64,
    /// Start of the current idle period (the idle task runs), if idle.
    pub idle_since: Option<u64>,
    /// Wakeups issued from this CPU (`ttwu_count`).
    pub ttwu_count: u64,
    /// ... that chose this CPU (`ttwu_local`).
    pub ttwu_local: u64,
}

impl Rq {
    /// A fresh, idle runqueue with `nr_levels` domain levels.
    pub fn new(cpu: CpuId, min_intervals_ms: &[u64], migration_cost: u64) -> Self {
        Rq {
            cpu,
            clock: 0,
            cfs: CfsRq::default(),
            curr: None,
            need_resched: false,
            idle_stamp: 0,
            avg_idle: 2 * migration_cost,
            max_idle_balance_cost: migration_cost,
            next_balance: 0,
            sd: min_intervals_ms
                .iter()
                .map(|&ms| SdState {
                    last_balance: 0,
                    balance_interval_ms: ms,
                    nr_balance_failed: 0,
                    max_newidle_lb_cost: 0,
                    last_decay_max_lb_cost: 0,
                })
                .collect(),
            nohz_idle: false,
            acct_idle: false,
            active_balance: None,
            exec_migrate: None,
            cpu_capacity: 1024,
            cpu_capacity_orig: 1024,
            idle_ns: 0,
            idle_since: Some(0),
            ttwu_count: 0,
            ttwu_local: 0,
        }
    }

    /// Idle time up to `now`, including the current idle period.
    pub fn idle_time(&self, now: u64) -> u64 {
        self.idle_ns + self.idle_since.map_or(0, |t| now.saturating_sub(t))
    }

    /// `nr_running` (fair tasks only: the whole runqueue here).
    pub fn nr_running(&self) -> u32 {
        self.cfs.nr_running
    }

    /// `idle_cpu()`: the idle task runs and nothing is queued.
    pub fn is_idle(&self) -> bool {
        self.curr.is_none() && self.cfs.nr_running == 0
    }

    /// `sched_idle_cpu()`: only SCHED_IDLE tasks are runnable.
    pub fn is_sched_idle(&self) -> bool {
        self.cfs.nr_running > 0 && self.cfs.nr_running == self.cfs.nr_idle
    }
}

/// Known-idle-core hint of Srikar Dronamraju's series (seed 001).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleCore {
    /// -2: no idle core in the LLC.
    None,
    /// -1: unknown (a known idle core became busy).
    Unknown,
    /// >= 0: the first CPU of a fully idle core.
    Core(CpuId),
}

/// `struct sched_domain_shared` of one LLC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LlcShared {
    /// CPUs of the LLC.
    pub size: u32,
    /// `nr_busy_cpus` (initially all busy, as Linux builds it).
    pub nr_busy_cpus: u32,
    /// `has_idle_cores` hint.
    pub has_idle_cores: bool,
    /// Idle-core identity (IDLE_CORE_HINT).
    pub idle_core: IdleCore,
    /// SIS_UTIL scan depth (`nr_idle_scan`).
    pub nr_idle_scan: u32,
}

impl LlcShared {
    /// Initial state for an LLC of `size` CPUs.
    pub fn new(size: usize) -> Self {
        LlcShared {
            size: size as u32,
            nr_busy_cpus: size as u32,
            has_idle_cores: false,
            idle_core: IdleCore::Unknown,
            nr_idle_scan: size as u32,
        }
    }
}
