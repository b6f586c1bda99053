//! Per-CPU runqueue state (`struct rq`) and the per-LLC shared state
//! (`struct sched_domain_shared`), plus per-domain balancing state.

use crate::CpuId;
use crate::fair::cfs_rq::CfsRq;
use crate::task::TaskId;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64};

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
    /// NI_RANDOM: newly idle passes counted (`newidle_call`).
    pub newidle_call: u32,
    /// NI_RANDOM: their weighted successes (`newidle_success`).
    pub newidle_success: u32,
    /// NI_RANDOM: the success ratio out of 1,024 (`newidle_ratio`).
    pub newidle_ratio: u32,
}

impl SdState {
    /// `sd_init()`'s balancing state for a level whose minimum interval is
    /// `min_interval_ms`; the newly idle statistics start at 50 % success.
    pub fn new(min_interval_ms: u64) -> Self {
        SdState {
            last_balance: 0,
            balance_interval_ms: min_interval_ms,
            nr_balance_failed: 0,
            max_newidle_lb_cost: 0,
            last_decay_max_lb_cost: 0,
            newidle_call: 512,
            newidle_success: 256,
            newidle_ratio: 512,
        }
    }
}

/// Spare move lists per runqueue: one per list alive at once (a pass's
/// own, a domain level's, the caller's result being built).
pub const MIGR_SPARES: usize = 4;
/// Room in each: Linux's `sysctl_sched_nr_migrate` (32), the most one
/// `detach_tasks` moves, twice over.
pub const MIGR_SPARE_ROOM: usize = 64;

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
    /// The task `schedule()` is switching away from while it may drop this
    /// runqueue's lock (balancing): still on the CPU, so not movable.
    pub switching_out: Option<TaskId>,
    /// The idle task's `wakee_flips`, decay stamp and `last_wakee`: Linux's
    /// `record_wakee` runs on `current`, which is the idle task for a
    /// wakeup issued from an idle CPU.
    pub idle_wakee: crate::placement::wake::WakeeFields,
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
    /// NI_RANDOM's die (`sched_rnd_state`, per CPU).
    pub ni_rng: crate::balance::ni_random::Lfsr113,
    /// Mainline nr_busy_cpus state (`sd_llc->nohz_idle`): counted as idle.
    pub nohz_idle: bool,
    /// NOHZ_IDLE: the tick is stopped in idle (`rq->nohz_tick_stopped`;
    /// this CPU is in `nohz.idle_cpus_mask`).
    pub nohz_tick_stopped: bool,
    /// NOHZ_IDLE: blocked load may still need decaying (`has_blocked_load`).
    pub has_blocked_load: bool,
    /// NOHZ_IDLE: the jiffy of the last blocked-load update
    /// (`last_blocked_load_update_tick`).
    pub last_blocked_load_update_tick: u64,
    /// Srikar v3 6/8's per-CPU `is_idle` (IDLE_BUSY_ACCT): this CPU is
    /// counted idle in `nr_busy_cpus`. 1 when the domains are built.
    pub acct_idle: bool,
    /// Scratch for `detach_tasks`' LRU order (reused, see `lru_tasks`).
    pub lru_scratch: Vec<(u64, crate::task::TaskId)>,
    /// Spare room for the lists of tasks a balance pass moves
    /// ([`crate::core::Migrations`], taken by `SchedCore::push_migration`
    /// and `append_migrations` when a list would spill, given back by
    /// `recycle_migrations`), so a batch of up to `nr_migrate` moves
    /// allocates nothing.
    pub migr_spares: Vec<Vec<crate::core::Migration>>,
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
    /// A fresh, idle runqueue with `nr_levels` domain levels; `rng_seed`
    /// is the run's random seed ([`crate::SchedConfig::rng_seed`]).
    pub fn new(cpu: CpuId, min_intervals_ms: &[u64], migration_cost: u64, rng_seed: u64) -> Self {
        Rq {
            cpu,
            clock: 0,
            cfs: CfsRq::default(),
            curr: None,
            need_resched: false,
            switching_out: None,
            idle_wakee: Default::default(),
            idle_stamp: 0,
            avg_idle: 2 * migration_cost,
            max_idle_balance_cost: migration_cost,
            next_balance: 0,
            sd: min_intervals_ms
                .iter()
                .map(|&ms| SdState::new(ms))
                .collect(),
            ni_rng: crate::balance::ni_random::Lfsr113::new(rng_seed.rotate_left(32) ^ cpu as u64),
            nohz_idle: false,
            nohz_tick_stopped: false,
            has_blocked_load: false,
            last_blocked_load_update_tick: 0,
            acct_idle: true,
            lru_scratch: Vec::with_capacity(64),
            migr_spares: (0..MIGR_SPARES)
                .map(|_| Vec::with_capacity(MIGR_SPARE_ROOM))
                .collect(),
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
    #[inline]
    pub fn nr_running(&self) -> u32 {
        self.cfs.nr_running
    }

    /// `rq->curr == rq->idle`: no task runs and `schedule()` is not
    /// switching away from one. Linux's `rq->curr` stays the previous task
    /// until the context switch, so a CPU balancing in newidle on the way
    /// to idle is not idle yet (its own group does not count it idle in
    /// `update_sg_lb_stats`, nor does anyone else).
    #[inline]
    pub fn runs_idle_task(&self) -> bool {
        self.curr.is_none() && self.switching_out.is_none()
    }

    /// `idle_cpu()`: the idle task runs and nothing is queued.
    pub fn is_idle(&self) -> bool {
        self.runs_idle_task() && self.cfs.nr_running == 0
    }

    /// `sched_idle_cpu()`: only SCHED_IDLE tasks are runnable.
    pub fn is_sched_idle(&self) -> bool {
        self.cfs.nr_running > 0 && self.cfs.nr_running == self.cfs.nr_idle
    }
}

/// `sched_domain_shared->idle_core` of Srikar Dronamraju's v3 series
/// (seed 001). 2/8 alone uses two states: -1 "no idle core known" (the
/// initial value, stored as [`IdleCore::Unknown`]) and a core; 3/8 adds -2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleCore {
    /// -2 (3/8): no idle core in the LLC.
    None,
    /// -1: 3/8: unknown (a known idle core became busy); 2/8 alone: none.
    Unknown,
    /// >= 0: `smt_id` (first CPU) of a fully idle core.
    Core(CpuId),
}

/// `struct sched_domain_shared` of one LLC: read and written by every CPU
/// of the LLC without a runqueue lock, as in Linux (atomics, racy by design).
#[derive(Debug)]
pub struct LlcShared {
    /// CPUs of the LLC.
    pub size: u32,
    nr_busy_cpus: AtomicU32,
    has_idle_cores: AtomicBool,
    /// -2 none, -1 unknown, >= 0 a core's first CPU (see [`IdleCore`]).
    idle_core: AtomicI64,
    nr_idle_scan: AtomicU32,
}

impl LlcShared {
    /// Initial state for an LLC of `size` CPUs ("all busy", as Linux builds it).
    pub fn new(size: usize) -> Self {
        LlcShared {
            size: size as u32,
            nr_busy_cpus: AtomicU32::new(size as u32),
            has_idle_cores: AtomicBool::new(false),
            idle_core: AtomicI64::new(-1),
            nr_idle_scan: AtomicU32::new(size as u32),
        }
    }

    /// `nr_busy_cpus`.
    pub fn nr_busy_cpus(&self) -> u32 {
        self.nr_busy_cpus.load(Relaxed)
    }

    /// One more busy CPU, capped at the LLC size (`atomic_add_unless(..,
    /// 1, sd_llc_size)`; mainline's tick accounting never exceeds it).
    pub fn inc_busy(&self) {
        let size = self.size;
        let _ = self
            .nr_busy_cpus
            .fetch_update(Relaxed, Relaxed, |n| Some((n + 1).min(size)));
    }

    /// One more busy CPU, not capped (`atomic_inc`, Srikar v3 6/8's
    /// put_prev_task_idle).
    pub fn inc_busy_unbounded(&self) {
        self.nr_busy_cpus.fetch_add(1, Relaxed);
    }

    /// One busy CPU less, floored at 0 (`atomic_add_unless(.., -1, 0)`).
    pub fn dec_busy(&self) {
        let _ = self
            .nr_busy_cpus
            .fetch_update(Relaxed, Relaxed, |n| Some(n.saturating_sub(1)));
    }

    /// `has_idle_cores`.
    pub fn has_idle_cores(&self) -> bool {
        self.has_idle_cores.load(Relaxed)
    }

    /// Set or clear `has_idle_cores`.
    pub fn set_has_idle_cores(&self, v: bool) {
        self.has_idle_cores.store(v, Relaxed);
    }

    /// The recorded idle core (IDLE_CORE_ID / IDLE_CORE_UPDATE).
    pub fn idle_core(&self) -> IdleCore {
        match self.idle_core.load(Relaxed) {
            -2 => IdleCore::None,
            v if v < 0 => IdleCore::Unknown,
            v => IdleCore::Core(v as CpuId),
        }
    }

    /// Store the idle-core hint.
    pub fn set_idle_core(&self, h: IdleCore) {
        let v = match h {
            IdleCore::None => -2,
            IdleCore::Unknown => -1,
            IdleCore::Core(c) => c as i64,
        };
        self.idle_core.store(v, Relaxed);
    }

    /// Replace the hint only if it still is `old` (a racing CPU may have
    /// changed it); true if replaced.
    pub fn swap_idle_core(&self, old: IdleCore, new: IdleCore) -> bool {
        let enc = |h| match h {
            IdleCore::None => -2,
            IdleCore::Unknown => -1,
            IdleCore::Core(c) => c as i64,
        };
        self.idle_core
            .compare_exchange(enc(old), enc(new), Relaxed, Relaxed)
            .is_ok()
    }

    /// SIS_UTIL scan depth (`nr_idle_scan`).
    pub fn nr_idle_scan(&self) -> u32 {
        self.nr_idle_scan.load(Relaxed)
    }

    /// Store the SIS_UTIL scan depth.
    pub fn set_nr_idle_scan(&self, v: u32) {
        self.nr_idle_scan.store(v, Relaxed);
    }
}

/// What other CPUs may read of a runqueue without its lock: published by the
/// lock holder each time it releases the runqueue; read field by field
/// (one atomic load each) through `SchedCore`'s accessors. Linux reads these fields
/// of a remote `struct rq` with READ_ONCE; here they are explicit atomics.
#[derive(Debug, Default)]
pub struct RqSnap {
    /// Task id + 1 of curr, 0 = idle.
    pub(crate) curr: AtomicU32,
    pub(crate) need_resched: AtomicBool,
    pub(crate) nr_running: AtomicU32,
    pub(crate) nr_idle: AtomicU32,
    pub(crate) nr_delayed: AtomicU32,
    pub(crate) curr_idle: AtomicBool,
    pub(crate) load_avg: AtomicU64,
    pub(crate) runnable_load_avg: AtomicU64,
    pub(crate) util_avg: AtomicU64,
    pub(crate) runnable_avg: AtomicU64,
    pub(crate) last_update_time: AtomicU64,
    pub(crate) min_vruntime: AtomicU64,
    pub(crate) idle_stamp: AtomicU64,
    pub(crate) capacity: AtomicU64,
    pub(crate) capacity_orig: AtomicU64,
    /// `rq->ttwu_pending`: the CPU's wake list is not empty. Not part of
    /// `publish`: wakers set it without the runqueue lock, the CPU clears
    /// it once it has activated the list (under its lock and the list's).
    pub(crate) ttwu_pending: AtomicBool,
    /// ROOT_H_LOAD: the root `cfs_rq->h_load` (its `load_avg` when first
    /// read in the jiffy `last_h_load_update` - 1) and that jiffy + 1 (0:
    /// never). Not part of `publish`: `task_h_load` callers refresh them
    /// without the runqueue lock, as Linux's `update_cfs_rq_h_load` does.
    pub(crate) h_load: AtomicU64,
    pub(crate) last_h_load_update: AtomicU64,
}

impl RqSnap {
    /// Publish the values of `rq` (its lock holder, before unlocking).
    /// Returns how the published "more than one task" state changed (+1,
    /// -1 or 0): a rise sets the root domain's `overloaded` flag
    /// (`Shared::rd_overloaded`).
    #[inline]
    #[must_use]
    pub(crate) fn publish(&self, rq: &Rq) -> isize {
        let a = &rq.cfs.avg;
        self.curr.store(rq.curr.map_or(0, |t| t.0 + 1), Relaxed);
        self.need_resched.store(rq.need_resched, Relaxed);
        let was = self.nr_running.load(Relaxed) > 1;
        self.nr_running.store(rq.cfs.nr_running, Relaxed);
        self.nr_idle.store(rq.cfs.nr_idle, Relaxed);
        self.nr_delayed.store(rq.cfs.nr_delayed, Relaxed);
        self.curr_idle.store(rq.runs_idle_task(), Relaxed);
        self.load_avg.store(a.load_avg, Relaxed);
        self.runnable_load_avg.store(a.runnable_load_avg, Relaxed);
        self.util_avg.store(a.util_avg, Relaxed);
        self.runnable_avg.store(a.runnable_avg, Relaxed);
        self.last_update_time.store(a.last_update_time, Relaxed);
        self.min_vruntime.store(rq.cfs.min_vruntime, Relaxed);
        self.idle_stamp.store(rq.idle_stamp, Relaxed);
        self.capacity.store(rq.cpu_capacity, Relaxed);
        self.capacity_orig.store(rq.cpu_capacity_orig, Relaxed);
        (rq.cfs.nr_running > 1) as isize - was as isize
    }

    /// Queued fair tasks (running one included) as last published.
    pub fn nr_running(&self) -> u32 {
        self.nr_running.load(Relaxed)
    }

    /// The running task as last published (None = idle).
    #[inline]
    pub fn curr(&self) -> Option<TaskId> {
        match self.curr.load(Relaxed) {
            0 => None,
            t => Some(TaskId(t - 1)),
        }
    }

    /// need_resched as last published.
    #[inline]
    pub fn need_resched(&self) -> bool {
        self.need_resched.load(Relaxed)
    }

    /// `rq->ttwu_pending` (acquire: a CPU that sees it set finds the
    /// entries on its wake list).
    #[inline]
    pub fn ttwu_pending(&self) -> bool {
        self.ttwu_pending
            .load(core::sync::atomic::Ordering::Acquire)
    }
}
