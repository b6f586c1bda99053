//! NOHZ idle balancing (`CONFIG_NO_HZ_COMMON`, Linux 6.x), the NOHZ_IDLE
//! switch (reference §D.3, §E.8).
//!
//! With NO_HZ_IDLE a CPU that enters idle stops its tick
//! (`tick_nohz_idle_stop_tick`; on a machine without a cpuidle driver, as
//! the simulator's HLT-only profiles and schedlab's kernel are, at every
//! idle entry). From then it neither balances periodically nor decays its
//! blocked load, and its LLC counts it idle in `nr_busy_cpus`
//! ([`nohz_balance_enter_idle`]). A busy CPU's tick decides whether an
//! idle CPU should balance on behalf of all tickless ones
//! ([`nohz_balancer_kick`]) and names it ([`kick_ilb`]); the backend sends
//! that CPU an IPI, and there `Scheduler::nohz_kick` runs
//! `_nohz_idle_balance` (`crate::sched::nohz`). The CPU becomes busy for
//! the LLC again at its first busy tick ([`nohz_balance_exit_idle`]).
//!
//! Times are the core's nanoseconds; where Linux compares jiffies
//! (`nohz.next_balance`, `next_blocked`, `last_blocked_load_update_tick`)
//! the same comparisons are made on `now / tick_ns`, or on nanoseconds for
//! values that are nanoseconds here (`rq.next_balance`).
//!
//! Not modelled: housekeeping masks (every CPU may be the ILB), the
//! asymmetric-capacity and asym-packing kick rules (symmetric machines:
//! their `sd_asym_*` domains do not exist), a timer or RCU keeping an idle
//! CPU's tick (the tick always stops at idle entry).

use crate::CpuId;
use crate::core::SchedCore;
use crate::fair::entity::update_rq_load_avg;
use crate::idle;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};

/// `NOHZ_BALANCE_KICK`: run `sched_balance_domains` for the idle CPUs.
pub const NOHZ_BALANCE_KICK: u32 = 1 << 0;
/// `NOHZ_STATS_KICK`: update the blocked load of the idle CPUs.
pub const NOHZ_STATS_KICK: u32 = 1 << 1;
/// `NOHZ_NEWILB_KICK`: a newly idle CPU updates blocked load itself
/// before it idles (`nohz_run_idle_balance`).
pub const NOHZ_NEWILB_KICK: u32 = 1 << 2;
/// `NOHZ_NEXT_KICK`: collate `nohz.next_balance` again.
pub const NOHZ_NEXT_KICK: u32 = 1 << 3;
/// `NOHZ_KICK_MASK`.
pub const NOHZ_KICK_MASK: u32 = NOHZ_BALANCE_KICK | NOHZ_STATS_KICK | NOHZ_NEXT_KICK;
/// `LOAD_AVG_PERIOD` (ms): the blocked-load update period of idle CPUs.
pub const LOAD_AVG_PERIOD_MS: u64 = 32;

/// The machine-wide `nohz` state, and each CPU's `nohz_flags`. Written
/// without runqueue locks, as Linux's atomics are.
#[derive(Debug)]
pub struct Nohz {
    idle_cpus_mask: Vec<AtomicU64>,
    nr_cpus: AtomicU32,
    has_blocked: AtomicBool,
    needs_update: AtomicBool,
    /// `nohz.next_balance`, in jiffies.
    next_balance: AtomicU64,
    /// `nohz.next_blocked`, in jiffies.
    next_blocked: AtomicU64,
    flags: Vec<AtomicU32>,
}

impl Nohz {
    /// No CPU tickless.
    pub fn new(nr_cpus: usize) -> Self {
        Nohz {
            idle_cpus_mask: (0..nr_cpus.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            nr_cpus: AtomicU32::new(0),
            has_blocked: AtomicBool::new(false),
            needs_update: AtomicBool::new(false),
            next_balance: AtomicU64::new(0),
            next_blocked: AtomicU64::new(0),
            flags: (0..nr_cpus).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// Is `cpu` in `nohz.idle_cpus_mask`?
    pub fn is_tickless(&self, cpu: CpuId) -> bool {
        self.idle_cpus_mask[cpu / 64].load(Relaxed) & (1 << (cpu % 64)) != 0
    }

    fn set_tickless(&self, cpu: CpuId, on: bool) {
        let bit = 1 << (cpu % 64);
        if on {
            self.idle_cpus_mask[cpu / 64].fetch_or(bit, Relaxed);
        } else {
            self.idle_cpus_mask[cpu / 64].fetch_and(!bit, Relaxed);
        }
    }

    /// `atomic_read(&nohz.nr_cpus)`.
    pub fn nr_cpus(&self) -> u32 {
        self.nr_cpus.load(Relaxed)
    }

    /// The tickless CPUs in `for_each_cpu_wrap(.., start)` order: from
    /// `start` up, then from 0 (each once).
    pub fn tickless_wrap(&self, start: CpuId) -> impl Iterator<Item = CpuId> + '_ {
        let n = self.flags.len();
        (0..n)
            .map(move |i| (start + i) % n)
            .filter(|&c| self.is_tickless(c))
    }

    /// `nohz_flags(cpu)`.
    pub fn flags(&self, cpu: CpuId) -> u32 {
        self.flags[cpu].load(Relaxed)
    }

    /// `atomic_fetch_or(flags, nohz_flags(cpu))`.
    pub fn fetch_or_flags(&self, cpu: CpuId, flags: u32) -> u32 {
        self.flags[cpu].fetch_or(flags, Relaxed)
    }

    /// `atomic_fetch_andnot(flags, nohz_flags(cpu))`.
    pub fn fetch_andnot_flags(&self, cpu: CpuId, flags: u32) -> u32 {
        self.flags[cpu].fetch_and(!flags, Relaxed)
    }

    /// `nohz.has_blocked`.
    pub fn has_blocked(&self) -> bool {
        self.has_blocked.load(Relaxed)
    }

    /// `WRITE_ONCE(nohz.has_blocked, v)`.
    pub fn set_has_blocked(&self, v: bool) {
        self.has_blocked.store(v, Relaxed);
    }

    /// `nohz.needs_update`.
    pub fn needs_update(&self) -> bool {
        self.needs_update.load(Relaxed)
    }

    /// `WRITE_ONCE(nohz.needs_update, v)`.
    pub fn set_needs_update(&self, v: bool) {
        self.needs_update.store(v, Relaxed);
    }

    /// `nohz.next_balance` (jiffies).
    pub fn next_balance(&self) -> u64 {
        self.next_balance.load(Relaxed)
    }

    /// Set `nohz.next_balance` (jiffies).
    pub fn set_next_balance(&self, j: u64) {
        self.next_balance.store(j, Relaxed);
    }

    /// `nohz.next_blocked` (jiffies).
    pub fn next_blocked(&self) -> u64 {
        self.next_blocked.load(Relaxed)
    }

    /// Set `nohz.next_blocked` (jiffies).
    pub fn set_next_blocked(&self, j: u64) {
        self.next_blocked.store(j, Relaxed);
    }
}

/// `jiffies` at `now`.
pub fn jiffies(core: &SchedCore, now: u64) -> u64 {
    now / core.cfg.tunables.tick_ns
}

/// The jiffy at which the next balance after `ns` is due
/// (`rq->next_balance` is nanoseconds here): the first jiffy not before it.
pub fn ns_to_jiffies_up(core: &SchedCore, ns: u64) -> u64 {
    ns.div_ceil(core.cfg.tunables.tick_ns)
}

/// `nohz_balance_enter_idle(cpu)`: `cpu` stopped its tick in idle.
pub fn nohz_balance_enter_idle(core: &mut SchedCore, cpu: CpuId) {
    let nohz = &core.shared.nohz;
    core.rqs[cpu].has_blocked_load = true;
    // `on_null_domain`: a CPU with no domain to balance plays no part.
    if !core.rqs[cpu].nohz_tick_stopped && core.topo.sd(cpu).is_empty() {
        return;
    }
    if !core.rqs[cpu].nohz_tick_stopped {
        core.rqs[cpu].nohz_tick_stopped = true;
        nohz.set_tickless(cpu, true);
        nohz.nr_cpus.fetch_add(1, Relaxed);
        core.stats.nohz.tick_stops += 1;
        idle::set_cpu_sd_state_idle(core, cpu);
        core.shared.nohz.set_needs_update(true);
    }
    core.shared.nohz.set_has_blocked(true);
}

/// `nohz_balance_exit_idle(rq)`: the first busy tick after tickless idle.
pub fn nohz_balance_exit_idle(core: &mut SchedCore, cpu: CpuId) {
    if !core.rqs[cpu].nohz_tick_stopped {
        return;
    }
    core.rqs[cpu].nohz_tick_stopped = false;
    let nohz = &core.shared.nohz;
    nohz.set_tickless(cpu, false);
    nohz.nr_cpus.fetch_sub(1, Relaxed);
    idle::set_cpu_sd_state_busy(core, cpu);
}

/// `check_cpu_capacity(rq, sd)`: the CPU's capacity for CFS is noticeably
/// reduced (never on this machine model: `cpu_capacity` stays at its
/// original value; kept so the kick follows Linux's order).
fn check_cpu_capacity(core: &SchedCore, cpu: CpuId) -> bool {
    let Some(sd) = core.topo.sd(cpu).first() else {
        return false;
    };
    let rq = &core.rqs[cpu];
    rq.cpu_capacity * u64::from(sd.imbalance_pct) < rq.cpu_capacity_orig * 100
}

/// `nohz_balancer_kick(rq)` from a busy tick (the caller skips it when the
/// CPU is idle: `rq->idle_balance`). Returns the CPU to send the kick IPI
/// to, if [`kick_ilb`] chose one.
pub fn nohz_balancer_kick(core: &mut SchedCore, cpu: CpuId, now: u64) -> Option<CpuId> {
    nohz_balance_exit_idle(core, cpu);
    let nohz = &core.shared.nohz;
    if nohz.nr_cpus() == 0 {
        return None;
    }
    let j = jiffies(core, now);
    let mut flags = 0;
    if nohz.has_blocked() && j > nohz.next_blocked() {
        flags = NOHZ_STATS_KICK;
    }
    if j >= nohz.next_balance() {
        let rq = &core.rqs[cpu];
        if rq.nr_running() >= 2
            || (rq.cfs.nr_running >= 1 && check_cpu_capacity(core, cpu))
            || core.llc[core.topo.llc_id[cpu]].nr_busy_cpus() > 1
        {
            flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
        }
    }
    if core.shared.nohz.needs_update() {
        flags |= NOHZ_NEXT_KICK;
    }
    if flags == 0 {
        return None;
    }
    kick_ilb(core, cpu, flags, now)
}

/// `find_new_ilb()`: the first tickless CPU other than this one that is
/// idle (every CPU is a housekeeping CPU here).
pub fn find_new_ilb(core: &SchedCore, this_cpu: CpuId) -> Option<CpuId> {
    core.shared
        .nohz
        .tickless_wrap(0)
        .find(|&c| c != this_cpu && core.idle_cpu(c))
}

/// `kick_ilb(flags)`: pick the idle load balancer and post `flags` to it.
/// Returns the CPU to IPI, or None when there is no candidate or it
/// already has a kick pending.
pub fn kick_ilb(core: &mut SchedCore, this_cpu: CpuId, flags: u32, now: u64) -> Option<CpuId> {
    if flags & NOHZ_BALANCE_KICK != 0 {
        core.shared.nohz.set_next_balance(jiffies(core, now) + 1);
    }
    let ilb = find_new_ilb(core, this_cpu)?;
    let nohz = &core.shared.nohz;
    if nohz.flags(ilb) & flags == flags {
        return None;
    }
    if nohz.fetch_or_flags(ilb, flags) & NOHZ_KICK_MASK != 0 {
        return None;
    }
    core.stats.nohz.kicks += 1;
    if flags & NOHZ_BALANCE_KICK != 0 {
        core.stats.nohz.balance_kicks += 1;
    }
    Some(ilb)
}

/// `sched_balance_update_blocked_averages(cpu)` for the fair class: decay
/// the runqueue's PELT sums to `now`; the CPU has no blocked load left
/// when its load and utilisation reached 0 (`cfs_rq_has_blocked`).
pub fn update_blocked_averages(core: &mut SchedCore, cpu: CpuId, now: u64) {
    let j = jiffies(core, now);
    let rq = &mut core.rqs[cpu];
    update_rq_load_avg(&mut rq.cfs, now);
    rq.last_blocked_load_update_tick = j;
    if rq.cfs.avg.load_avg == 0 && rq.cfs.avg.util_avg == 0 {
        rq.has_blocked_load = false;
    }
}

/// `update_nohz_stats(rq)`: decay a tickless CPU's blocked load; true
/// while it still has some.
pub fn update_nohz_stats(core: &mut SchedCore, cpu: CpuId, now: u64) -> bool {
    if !core.rqs[cpu].has_blocked_load {
        return false;
    }
    if !core.shared.nohz.is_tickless(cpu) {
        return false;
    }
    if jiffies(core, now) <= core.rqs[cpu].last_blocked_load_update_tick {
        return true;
    }
    core.stats.nohz.stats_updates += 1;
    update_blocked_averages(core, cpu, now);
    core.rqs[cpu].has_blocked_load
}

/// `nohz_newidle_balance(this_rq)`: a CPU about to idle that pulled
/// nothing asks to update the blocked load of the tickless CPUs itself
/// before it halts (`NOHZ_NEWILB_KICK`, run by `nohz_run_idle_balance`).
pub fn nohz_newidle_balance(core: &mut SchedCore, cpu: CpuId, now: u64) {
    if core.rqs[cpu].avg_idle < core.cfg.tunables.migration_cost_ns {
        return;
    }
    let nohz = &core.shared.nohz;
    if !nohz.has_blocked() || jiffies(core, now) < nohz.next_blocked() {
        return;
    }
    nohz.fetch_or_flags(cpu, NOHZ_NEWILB_KICK);
}
