//! The NOHZ_IDLE entry points a backend calls (`crate::balance::nohz` has
//! the state and the per-runqueue rules).
//!
//! A backend with NOHZ_IDLE on:
//! 1. calls [`Scheduler::nohz_idle_enter`] when a CPU's idle loop is about
//!    to halt with its tick running; if it returns true, the backend stops
//!    that CPU's tick until the CPU runs a task again, and then restarts it
//!    on the tick grid (`tick_nohz_idle_exit`);
//! 2. sends an IPI to [`TickResult::nohz_kick`] when a tick names one, and
//!    calls [`Scheduler::nohz_kick`] on that CPU when it arrives
//!    (`nohz_csd_func`, then the SCHED_SOFTIRQ's `nohz_idle_balance`).

use super::{Scheduler, TickResult};
use crate::CpuId;
use crate::balance::nohz::{
    self, NOHZ_BALANCE_KICK, NOHZ_KICK_MASK, NOHZ_NEWILB_KICK, NOHZ_NEXT_KICK, NOHZ_STATS_KICK,
};
use crate::core::{CpuList, Migrations};
use crate::features::Feat;
use crate::policy::SchedPolicy;

impl<P: SchedPolicy> Scheduler<P> {
    /// Is NOHZ_IDLE on?
    #[inline]
    pub fn nohz_idle(&self) -> bool {
        self.shared.cfg.features.has(Feat::NohzIdle)
    }

    /// `cpu`'s idle loop is about to halt with its tick running (`do_idle`:
    /// `nohz_run_idle_balance`, then `tick_nohz_idle_stop_tick`, which on a
    /// machine without a cpuidle driver stops the tick at every idle entry
    /// and calls `nohz_balance_enter_idle` when it does). True when the
    /// tick is now stopped: the backend must not tick `cpu` again until it
    /// runs a task. False without NOHZ_IDLE, or when work is already there.
    pub fn nohz_idle_enter(&self, cpu: CpuId, now: u64) -> bool {
        if !self.nohz_idle() {
            return false;
        }
        let flags = self.shared.nohz.fetch_andnot_flags(cpu, NOHZ_NEWILB_KICK);
        if flags == NOHZ_NEWILB_KICK && !self.need_resched(cpu) {
            let r = self.nohz_idle_balance(cpu, NOHZ_STATS_KICK, now);
            debug_assert!(r.migrations.is_empty(), "a stats-only pass moved tasks");
            self.shared.lock(cpu).stats.nohz.newilb_runs += 1;
        }
        let mut core = self.shared.lock(cpu);
        if !core.idle_cpu(cpu) || core.rqs[cpu].need_resched {
            return false;
        }
        nohz::nohz_balance_enter_idle(&mut core, cpu);
        core.rqs[cpu].nohz_tick_stopped
    }

    /// The idle-load-balancer kick IPI arrived on `cpu` (`nohz_csd_func`:
    /// take the posted flags; if the CPU is still idle, balance and update
    /// blocked load for the tickless CPUs, `nohz_idle_balance`). The result
    /// is a tick's: tasks moved, CPUs to reschedule (this one included when
    /// it pulled work for itself).
    pub fn nohz_kick(&self, cpu: CpuId, now: u64) -> TickResult {
        let flags = self
            .shared
            .nohz
            .fetch_andnot_flags(cpu, NOHZ_KICK_MASK | NOHZ_NEWILB_KICK);
        let idle = {
            let mut core = self.shared.lock(cpu);
            let idle = core.idle_cpu(cpu);
            if idle && flags & NOHZ_KICK_MASK != 0 {
                core.stats.nohz.ilb_runs += 1;
            }
            idle
        };
        if !idle || flags & NOHZ_KICK_MASK == 0 {
            return TickResult {
                need_resched: self.need_resched(cpu),
                migrations: Migrations::new(),
                resched: CpuList::new(),
                nohz_kick: None,
            };
        }
        self.nohz_idle_balance(cpu, flags, now)
    }

    /// `_nohz_idle_balance(this_rq, flags)` (6.x): for every tickless idle
    /// CPU, from the one after `this_cpu` round to `this_cpu` itself, update
    /// its blocked load (NOHZ_STATS_KICK) and, when its `next_balance` is
    /// due, run `sched_balance_domains` on its behalf (NOHZ_BALANCE_KICK);
    /// stop when `this_cpu` gets work. Then collate `nohz.next_balance` and
    /// `next_blocked`.
    fn nohz_idle_balance(&self, this_cpu: CpuId, flags: u32, now: u64) -> TickResult {
        let n = &self.shared.nohz;
        let tick_ns = self.shared.cfg.tunables.tick_ns;
        let j = now / tick_ns;
        let mut next_balance = j + 60_000_000_000 / tick_ns;
        let mut update_next_balance = false;
        let mut has_blocked_load = false;
        let mut migrations = Migrations::new();
        let mut resched = CpuList::new();
        if flags & NOHZ_STATS_KICK != 0 {
            n.set_has_blocked(false);
        }
        if flags & NOHZ_NEXT_KICK != 0 {
            n.set_needs_update(false);
        }
        let start = (this_cpu + 1) % self.shared.nr_cpus();
        let mut complete = true;
        for balance_cpu in n.tickless_wrap(start) {
            let mut core = self.shared.lock(balance_cpu);
            if !core.idle_cpu(balance_cpu) {
                continue;
            }
            let busy = if balance_cpu == this_cpu {
                core.rqs[this_cpu].need_resched
            } else {
                self.need_resched(this_cpu)
            };
            if busy {
                if flags & NOHZ_STATS_KICK != 0 {
                    has_blocked_load = true;
                }
                if flags & NOHZ_NEXT_KICK != 0 {
                    n.set_needs_update(true);
                }
                core.stats.nohz.ilb_aborted += 1;
                complete = false;
                break;
            }
            let now = core.update_rq_clock(balance_cpu, now);
            if flags & NOHZ_STATS_KICK != 0 {
                has_blocked_load |= nohz::update_nohz_stats(&mut core, balance_cpu, now);
            }
            if now >= core.rqs[balance_cpu].next_balance && flags & NOHZ_BALANCE_KICK != 0 {
                core.stats.nohz.ilb_balances += 1;
                let moved = self.policy.balance(&mut core, balance_cpu, now);
                core.append_migrations(balance_cpu, &mut migrations, moved);
            }
            let rq_next = nohz::ns_to_jiffies_up(&core, core.rqs[balance_cpu].next_balance);
            if next_balance > rq_next {
                next_balance = rq_next;
                update_next_balance = true;
            }
            for &c in core.take_resched().iter() {
                resched.insert(c);
            }
        }
        if complete {
            if update_next_balance {
                n.set_next_balance(next_balance);
            }
            if flags & NOHZ_STATS_KICK != 0 {
                let period = nohz::LOAD_AVG_PERIOD_MS * 1_000_000;
                n.set_next_blocked(j + period.div_ceil(tick_ns));
            }
        }
        if has_blocked_load {
            n.set_has_blocked(true);
        }
        TickResult {
            need_resched: self.need_resched(this_cpu) || resched.contains(&this_cpu),
            migrations,
            resched,
            nohz_kick: None,
        }
    }
}
