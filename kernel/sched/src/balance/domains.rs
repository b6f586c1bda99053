//! Driving balancing over the domain hierarchy: `sched_balance_domains()`
//! (`rebalance_domains`) with balance intervals and busy_factor, and
//! `sched_balance_newidle()` bounded by avg_idle vs max_newidle_lb_cost
//! (reference §E.3, §E.4).

use super::CpuIdleType;
use super::lb::load_balance;
use crate::CpuId;
use crate::core::{Migrations, SchedCore};
use crate::fair::entity::update_rq_load_avg;
use topology::{SD_BALANCE_NEWIDLE, SD_SERIALIZE};

/// Modelled cost of a newly-idle balance pass per CPU of the domain (ns).
/// Linux measures wall time; the pure core has no clock of its own.
pub const NEWIDLE_COST_PER_CPU_NS: u64 = 200;

/// One second, the max_newidle_lb_cost decay period.
const DECAY_PERIOD_NS: u64 = 1_000_000_000;

/// `sched_balance_newidle`'s starting `next_balance`, `jiffies + HZ`.
const NEWIDLE_NEXT_BALANCE_NS: u64 = 1_000_000_000;

/// `get_sd_balance_interval()` in ns.
pub fn sd_balance_interval_ns(core: &SchedCore, cpu: CpuId, level: usize, busy: bool) -> u64 {
    let t = &core.cfg.tunables;
    let sd = &core.topo.sd(cpu)[level];
    let mut ms = core.rqs[cpu].sd[level].balance_interval_ms;
    if busy {
        ms *= u64::from(sd.busy_factor);
    }
    let mut ticks = t.ms_to_ticks(ms);
    if busy && ticks > 1 {
        ticks -= 1;
    }
    // max_load_balance_interval = HZ * nr_cpus / 10 jiffies.
    let max_ticks = (1_000_000_000 / t.tick_ns * core.nr_cpus() as u64 / 10).max(1);
    ticks.clamp(1, max_ticks) * t.tick_ns
}

/// `sched_balance_domains(rq, idle)`: periodic balancing of every due domain.
/// Its times are jiffies, as in Linux: a pass stamps `sd->last_balance`
/// with the jiffy it runs in (`now` rounded down to the tick grid), so a
/// pass that runs a little after a tick (the idle load balancer's, on its
/// IPI) is due again a whole number of ticks after that tick, not after
/// itself.
pub fn rebalance_domains(core: &mut SchedCore, cpu: CpuId, now: u64) -> Migrations {
    let tick = core.cfg.tunables.tick_ns;
    let jiffies_ns = now / tick * tick;
    let mut moved = Migrations::new();
    let mut idle = if core.idle_cpu(cpu) {
        CpuIdleType::Idle
    } else {
        CpuIdleType::NotIdle
    };
    let mut busy = idle == CpuIdleType::NotIdle && !core.rqs[cpu].is_sched_idle();
    let mut next_balance = jiffies_ns + 60 * 1_000_000_000;
    update_rq_load_avg(&mut core.rqs[cpu].cfs, now);
    for level in 0..core.topo.sd(cpu).len() {
        let st = &mut core.rqs[cpu].sd[level];
        if now > st.last_decay_max_lb_cost + DECAY_PERIOD_NS {
            st.max_newidle_lb_cost = st.max_newidle_lb_cost * 253 / 256;
            st.last_decay_max_lb_cost = now;
        }
        let mut interval = sd_balance_interval_ns(core, cpu, level, busy);
        let mut cont = true;
        // SD_SERIALIZE (NUMA levels): one CPU at a time walks such a level,
        // due or not (`sched_balance_running`); a CPU that finds it taken
        // skips the level this time (`goto out`), keeping its stamp.
        let serialize = core.topo.sd(cpu)[level].flags.contains(SD_SERIALIZE);
        if !serialize || core.shared.try_serialize_balance() {
            if now >= core.rqs[cpu].sd[level].last_balance + interval {
                let r = load_balance(core, cpu, level, idle, now);
                cont = r.continue_balancing;
                if !r.moved.is_empty() {
                    idle = if core.idle_cpu(cpu) {
                        CpuIdleType::Idle
                    } else {
                        CpuIdleType::NotIdle
                    };
                    busy = idle == CpuIdleType::NotIdle && !core.rqs[cpu].is_sched_idle();
                }
                core.append_migrations(cpu, &mut moved, r.moved);
                core.rqs[cpu].sd[level].last_balance = jiffies_ns;
                interval = sd_balance_interval_ns(core, cpu, level, busy);
            }
            if serialize {
                core.shared.end_serialized_balance();
            }
        } else {
            core.stats.lb.serialize_skips += 1;
        }
        next_balance = next_balance.min(core.rqs[cpu].sd[level].last_balance + interval);
        if !cont {
            break;
        }
    }
    core.rqs[cpu].next_balance = next_balance;
    moved
}

/// `update_newidle_cost(sd, cost, success)` after a newly idle pass; the
/// success statistics are kept only with NI_RANDOM, their one reader.
fn update_newidle_cost(
    core: &mut SchedCore,
    cpu: CpuId,
    level: usize,
    cost: u64,
    success: Option<u32>,
    now: u64,
) {
    let st = &mut core.rqs[cpu].sd[level];
    if let Some(s) = success
        && cost != 0
    {
        super::ni_random::update_newidle_stats(st, s);
    }
    if cost > st.max_newidle_lb_cost {
        st.max_newidle_lb_cost = cost;
        st.last_decay_max_lb_cost = now;
    }
}

/// `update_next_balance(sd, &next_balance)`: the idle (not busy) interval
/// of `level` from its last balance, if it comes before `next_balance`.
fn update_next_balance(core: &SchedCore, cpu: CpuId, level: usize, next_balance: &mut u64) {
    let next =
        core.rqs[cpu].sd[level].last_balance + sd_balance_interval_ns(core, cpu, level, false);
    *next_balance = (*next_balance).min(next);
}

/// `sched_balance_newidle(this_rq)`: try to pull work before going idle.
///
/// Like Linux it stamps `idle_stamp` (the idle period a wakeup folds into
/// `avg_idle`) and, on every exit after that, brings `rq->next_balance`
/// forward to the idle interval of each domain it visited (of the lowest
/// one when it does not balance), from one second ahead: a CPU that goes
/// idle gets its periodic `CPU_IDLE` balance an idle interval after its
/// domains' last balance, not a busy one.
pub fn newidle_balance(core: &mut SchedCore, cpu: CpuId, now: u64) -> Migrations {
    let mut moved = Migrations::new();
    // A wakeup queued on this CPU's wake list since `schedule()` drained it
    // (TTWU_QUEUE, kernel only): "no need to search for one", before the
    // stamp.
    if core.rqs[cpu].nr_running() > 0 || core.shared.ttwu_pending(cpu) {
        return moved;
    }
    core.rqs[cpu].idle_stamp = now.max(1);
    core.stats.lb.newidle_count += 1;
    let mut next_balance = now + NEWIDLE_NEXT_BALANCE_NS;
    // The root domain's `overloaded` flag: some CPU has more than one task.
    let overloaded = core.any_overloaded();
    let avg_idle = core.rqs[cpu].avg_idle;
    let nr_levels = core.topo.sd(cpu).len();
    if !overloaded || nr_levels == 0 || avg_idle < core.rqs[cpu].sd[0].max_newidle_lb_cost {
        core.stats.lb.newidle_skipped += 1;
        if nr_levels > 0 {
            update_next_balance(core, cpu, 0, &mut next_balance);
        }
        let rq = &mut core.rqs[cpu];
        rq.next_balance = rq.next_balance.min(next_balance);
        if core.cfg.features.has(crate::features::Feat::NohzIdle) {
            super::nohz::nohz_newidle_balance(core, cpu, now);
        }
        return moved;
    }
    update_rq_load_avg(&mut core.rqs[cpu].cfs, now);
    let mut curr_cost = 0;
    for level in 0..nr_levels {
        update_next_balance(core, cpu, level, &mut next_balance);
        if avg_idle < curr_cost + core.rqs[cpu].sd[level].max_newidle_lb_cost {
            break;
        }
        let sd = &core.topo.sd(cpu)[level];
        if sd.flags.contains(SD_BALANCE_NEWIDLE) {
            let cost = NEWIDLE_COST_PER_CPU_NS * sd.span.weight() as u64;
            // NI_RANDOM: run the pass in proportion to its success rate.
            let weight = if core.cfg.features.has(crate::features::Feat::NiRandom) {
                let rq = &mut core.rqs[cpu];
                match super::ni_random::roll(&mut rq.sd[level], &mut rq.ni_rng) {
                    Some(w) => Some(w),
                    None => {
                        core.stats.ni.skipped += 1;
                        continue;
                    }
                }
            } else {
                None
            };
            let before = moved.len();
            let r = load_balance(core, cpu, level, CpuIdleType::NewlyIdle, now);
            core.append_migrations(cpu, &mut moved, r.moved);
            curr_cost += cost;
            let pulled = moved.len() > before;
            if weight.is_some() {
                core.stats.ni.ran += 1;
                core.stats.ni.pulled += u64::from(pulled);
            }
            let success = weight.map(|w| w * u32::from(pulled));
            update_newidle_cost(core, cpu, level, cost, success, now);
        }
        if !moved.is_empty() || core.rqs[cpu].nr_running() > 0 {
            break;
        }
    }
    let rq = &mut core.rqs[cpu];
    rq.max_idle_balance_cost = rq.max_idle_balance_cost.max(curr_cost);
    rq.next_balance = rq.next_balance.min(next_balance);
    // Work that arrived while the locks were let go counts as pulled
    // ("pretend we pulled a task"): the stamp is cleared, no NOHZ update.
    if !moved.is_empty() || rq.nr_running() > 0 {
        rq.idle_stamp = 0;
        if !moved.is_empty() {
            core.stats.lb.newidle_pulled += 1;
        }
    } else if core.cfg.features.has(crate::features::Feat::NohzIdle) {
        super::nohz::nohz_newidle_balance(core, cpu, now);
    }
    moved
}
