//! `find_busiest_group()`, `calculate_imbalance()`, `sibling_imbalance()` and
//! `find_busiest_queue()` (reference §E.6, Linux 6.x forms on a symmetric
//! machine).

use super::stats::{GroupType, SdLbStats, SgLbStats, update_sd_lb_stats};
use super::{CpuIdleType, LbEnv, MigrationType};
use crate::CpuId;
use crate::core::SchedCore;
use crate::placement::idlest::adjust_numa_imbalance;
use topology::{SD_NUMA, SD_SHARE_LLC};

/// `sibling_imbalance()`: tasks to move so both groups run the same number of
/// tasks per core.
pub fn sibling_imbalance(env: &LbEnv, busiest: &SgLbStats, local: &SgLbStats) -> i64 {
    if env.idle == CpuIdleType::NotIdle || busiest.sum_nr_running == 0 {
        return 0;
    }
    let (nb, nl) = (i64::from(busiest.cores), i64::from(local.cores));
    let (bn, ln) = (
        i64::from(busiest.sum_nr_running),
        i64::from(local.sum_nr_running),
    );
    if nb == nl {
        return (bn - ln).max(0);
    }
    let mut imb = (nl * bn - nb * ln).max(0);
    imb = (2 * imb + nl + nb) / (nl + nb);
    if imb <= 1 && ln == 0 && bn > 1 {
        imb = 2;
    }
    imb
}

/// `calculate_imbalance()`: sets `env.migration_type` and `env.imbalance`.
pub fn calculate_imbalance(core: &SchedCore, env: &mut LbEnv, sds: &mut SdLbStats) {
    let sd = &core.topo.sd(env.dst_cpu)[env.level];
    let local = sds.local;
    let Some(busiest) = sds.busiest else { return };
    // group_smt_balance: one task fewer on the SMT core that shares it.
    if busiest.group_type == GroupType::SmtBalance {
        env.migration_type = MigrationType::Task;
        env.imbalance = 1;
        return;
    }
    if local.group_type == GroupType::HasSpare {
        if busiest.group_type > GroupType::FullyBusy && !sd.flags.contains(SD_SHARE_LLC) {
            env.migration_type = MigrationType::Util;
            env.imbalance =
                local.group_capacity.max(local.group_util) as i64 - local.group_util as i64;
            if env.idle != CpuIdleType::NotIdle && env.imbalance == 0 {
                env.migration_type = MigrationType::Task;
                env.imbalance = 1;
            }
            return;
        }
        env.migration_type = MigrationType::Task;
        env.imbalance = if busiest.group_weight == 1 || sds.prefer_sibling {
            sibling_imbalance(env, &busiest, &local)
        } else {
            (i64::from(local.idle_cpus) - i64::from(busiest.idle_cpus)).max(0)
        };
        if sd.flags.contains(SD_NUMA) {
            env.imbalance = adjust_numa_imbalance(
                env.imbalance as u64,
                u64::from(local.sum_nr_running) + 1,
                u64::from(sd.imb_numa_nr),
            ) as i64;
        }
        env.imbalance >>= 1;
        return;
    }
    if local.group_type < GroupType::Overloaded {
        sds.local.avg_load = local.group_load * 1024 / local.group_capacity.max(1);
        if sds.local.avg_load >= busiest.avg_load {
            env.imbalance = 0;
            return;
        }
        sds.avg_load = sds.total_load * 1024 / sds.total_capacity.max(1);
        if sds.local.avg_load >= sds.avg_load {
            env.imbalance = 0;
            return;
        }
    }
    // Linux's unsigned arithmetic, wrap included: when the busiest group's
    // avg_load is below the domain's (a non-overloaded group above the
    // average made it so), its term wraps to a huge value and the local
    // group's gap decides; a saturating 0 would call the domain balanced.
    env.migration_type = MigrationType::Load;
    let a = busiest
        .avg_load
        .wrapping_sub(sds.avg_load)
        .wrapping_mul(busiest.group_capacity);
    let b = sds
        .avg_load
        .wrapping_sub(sds.local.avg_load)
        .wrapping_mul(sds.local.group_capacity);
    env.imbalance = (a.min(b) / 1024) as i64;
}

/// `find_busiest_group()`: the group to pull from (index), with the
/// imbalance computed into `env`; `None` when balanced.
pub fn find_busiest_group(core: &mut SchedCore, env: &mut LbEnv) -> Option<usize> {
    let mut sds = update_sd_lb_stats(core, env);
    let busiest = sds.busiest?;
    if busiest.sum_h_nr_running == 0 {
        return None;
    }
    let local = sds.local;
    let pct = u64::from(core.topo.sd(env.dst_cpu)[env.level].imbalance_pct);
    if local.group_type > busiest.group_type {
        return None;
    }
    let mut force = false;
    if local.group_type == GroupType::Overloaded {
        sds.local.avg_load = local.group_load * 1024 / local.group_capacity.max(1);
        if sds.local.avg_load >= busiest.avg_load {
            return None;
        }
        sds.avg_load = sds.total_load * 1024 / sds.total_capacity.max(1);
        if sds.local.avg_load >= sds.avg_load {
            return None;
        }
        if 100 * busiest.avg_load <= pct * sds.local.avg_load {
            return None;
        }
    }
    if sds.prefer_sibling
        && local.group_type == GroupType::HasSpare
        && sibling_imbalance(env, &busiest, &local) > 1
    {
        force = true;
    }
    if !force && busiest.group_type != GroupType::Overloaded {
        if env.idle == CpuIdleType::NotIdle {
            return None;
        }
        if busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
            return None;
        }
        if busiest.sum_h_nr_running == 1 {
            return None;
        }
    }
    calculate_imbalance(core, env, &mut sds);
    (env.imbalance != 0).then_some(busiest.group)
}

/// `find_busiest_queue(env, group)` (`sched_balance_find_src_rq`). As in
/// Linux the running maxima start at zero (load 0 over capacity 1, util 0,
/// 0 tasks) and only a strictly larger value replaces them, so a queue with
/// no load (or, for `migrate_util`, no boosted utilization) is never the
/// source; `migrate_util` ranks by `cpu_util_cfs_boost`.
pub fn find_busiest_queue(core: &SchedCore, env: &LbEnv, group: usize) -> Option<CpuId> {
    let sd = &core.topo.sd(env.dst_cpu)[env.level];
    let mut busiest = None;
    let (mut b_load, mut b_cap, mut b_util, mut b_nr) = (0u64, 1u64, 0u64, 0u32);
    for cpu in sd.groups[group].span.iter() {
        let nr = core.nr_running(cpu);
        if nr == 0 || env.excluded.contains(cpu) {
            continue;
        }
        let cap = core.capacity_of(cpu);
        match env.migration_type {
            MigrationType::Load => {
                let load = core.cpu_load_avg(cpu);
                // A lone task heavier than the imbalance stays (full capacity).
                if nr == 1 && load as i64 > env.imbalance {
                    continue;
                }
                if load * b_cap > b_load * cap {
                    (b_load, b_cap, busiest) = (load, cap, Some(cpu));
                }
            }
            MigrationType::Util => {
                let util = core.cpu_util_cfs_boost(cpu);
                if nr <= 1 {
                    continue;
                }
                if b_util < util {
                    (b_util, busiest) = (util, Some(cpu));
                }
            }
            MigrationType::Task | MigrationType::Misfit => {
                if b_nr < nr {
                    (b_nr, busiest) = (nr, Some(cpu));
                }
            }
        }
    }
    busiest
}
