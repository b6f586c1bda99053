//! Group statistics for load balancing: `update_sg_lb_stats()`,
//! `group_classify()`, `update_sd_pick_busiest()`, `update_sd_lb_stats()`
//! and the SIS_UTIL `update_idle_cpu_scan()` (reference §C.6, §C.8, §E.6).

use super::LbEnv;
use crate::CpuId;
use crate::core::SchedCore;
use crate::features::Feat;
use topology::{CpuMask, SD_PREFER_SIBLING};

/// `enum group_type`, in increasing "busyness" order. Only the symmetric-
/// machine classes are produced here (no misfit/asym/imbalanced groups;
/// `group_smt_balance` with GROUP_SMT_BALANCE).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    /// `group_has_spare`.
    #[default]
    HasSpare,
    /// `group_fully_busy`.
    FullyBusy,
    /// `group_misfit_task` (asymmetric systems; not produced).
    MisfitTask,
    /// `group_smt_balance` (GROUP_SMT_BALANCE, v6.6): an SMT core with more
    /// than one task, seen by an idle CPU.
    SmtBalance,
    /// `group_asym_packing` (not produced).
    AsymPacking,
    /// `group_imbalanced` (affinity; not produced).
    Imbalanced,
    /// `group_overloaded`.
    Overloaded,
}

/// `group_is_overloaded()`.
pub fn group_is_overloaded(
    pct: u32,
    nr: u32,
    weight: u32,
    cap: u64,
    util: u64,
    runnable: u64,
) -> bool {
    let pct = u64::from(pct);
    if nr <= weight {
        return false;
    }
    cap * 100 < util * pct || cap * pct < runnable * 100
}

/// `group_has_capacity()`.
pub fn group_has_capacity(
    pct: u32,
    nr: u32,
    weight: u32,
    cap: u64,
    util: u64,
    runnable: u64,
) -> bool {
    let pct = u64::from(pct);
    if nr < weight {
        return true;
    }
    if cap * pct < runnable * 100 {
        return false;
    }
    cap * 100 > util * pct
}

/// `group_classify()`.
pub fn group_classify(
    pct: u32,
    nr: u32,
    weight: u32,
    cap: u64,
    util: u64,
    runnable: u64,
) -> GroupType {
    if group_is_overloaded(pct, nr, weight, cap, util, runnable) {
        GroupType::Overloaded
    } else if !group_has_capacity(pct, nr, weight, cap, util, runnable) {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    }
}

/// `struct sg_lb_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SgLbStats {
    /// Index of the group in the domain.
    pub group: usize,
    /// avg_load (overloaded or computed on demand).
    pub avg_load: u64,
    /// Σ cpu_load.
    pub group_load: u64,
    /// Σ capacity.
    pub group_capacity: u64,
    /// Σ cpu_util.
    pub group_util: u64,
    /// Σ cpu_runnable.
    pub group_runnable: u64,
    /// Σ nr_running.
    pub sum_nr_running: u32,
    /// Σ h_nr_runnable (CFS tasks).
    pub sum_h_nr_running: u32,
    /// Idle CPUs.
    pub idle_cpus: u32,
    /// CPUs.
    pub group_weight: u32,
    /// Cores (for sibling_imbalance).
    pub cores: u32,
    /// Classification.
    pub group_type: GroupType,
    /// Group is the SMT siblings of one core.
    pub is_smt: bool,
}

/// `update_sg_lb_stats()`. Returns stats and whether some CPU has > 1 task.
pub fn update_sg_lb_stats(
    core: &SchedCore,
    pct: u32,
    gi: usize,
    span: &CpuMask,
    excluded: &super::ExcludedCpus,
) -> (SgLbStats, bool) {
    let mut s = SgLbStats {
        group: gi,
        ..Default::default()
    };
    let mut overloaded = false;
    let mut first_threads = 0;
    for cpu in span.iter() {
        // The group's capacity and weight are the whole group's
        // (sgc->capacity, group_weight); the sums below skip the CPUs an
        // all-pinned redo took out (for_each_cpu_and(.., env->cpus)).
        // Every figure from one lookup of the held runqueues
        // (`cpu_figures`: `capacity_of`, `cpu_load_avg` — the balancer's
        // load is the blocked-inclusive one whatever RUNNABLE_LOAD says —,
        // `cpu_util`, `cpu_runnable`, `nr_running`).
        let f = core.cpu_figures(cpu, false);
        s.group_capacity += f.capacity;
        s.group_weight += 1;
        if core.topo.cpus[cpu].thread == 0 {
            first_threads += 1;
        }
        if excluded.contains(cpu) {
            continue;
        }
        s.group_load += f.load;
        s.group_util += f.util.min(f.capacity_orig);
        s.group_runnable += f.runnable;
        let nr = f.nr_running;
        s.sum_nr_running += nr;
        s.sum_h_nr_running += nr;
        overloaded |= nr > 1;
        if nr == 0 && core.idle_cpu(cpu) {
            s.idle_cpus += 1;
        }
    }
    s.cores = first_threads.max(1);
    s.is_smt = s.group_weight > 1 && span.first().is_some_and(|c| core.topo.smt[c] == *span);
    s.group_type = group_classify(
        pct,
        s.sum_nr_running,
        s.group_weight,
        s.group_capacity,
        s.group_util,
        s.group_runnable,
    );
    if s.group_type == GroupType::Overloaded {
        s.avg_load = s.group_load * 1024 / s.group_capacity.max(1);
    }
    (s, overloaded)
}

/// `update_sd_pick_busiest()`: should `s` replace `busiest`?
pub fn update_sd_pick_busiest(busiest: Option<&SgLbStats>, s: &SgLbStats) -> bool {
    if s.sum_h_nr_running == 0 {
        return false;
    }
    let Some(b) = busiest else { return true };
    if s.group_type != b.group_type {
        return s.group_type > b.group_type;
    }
    match s.group_type {
        GroupType::Overloaded => s.avg_load > b.avg_load,
        // Either core with an idle CPU: the has-spare rules; else as fully
        // busy (both avg_load 0: the first SMT core is kept).
        GroupType::SmtBalance if s.idle_cpus != 0 || b.idle_cpus != 0 => has_spare_pick(b, s),
        GroupType::FullyBusy | GroupType::SmtBalance => {
            if s.avg_load < b.avg_load {
                return false;
            }
            !(s.avg_load == b.avg_load && b.is_smt)
        }
        GroupType::HasSpare => has_spare_pick(b, s),
        _ => false,
    }
}

/// `update_sd_pick_busiest`'s `has_spare` rule: the group with fewer idle
/// CPUs, then more running tasks.
fn has_spare_pick(b: &SgLbStats, s: &SgLbStats) -> bool {
    if s.idle_cpus > b.idle_cpus {
        return false;
    }
    !(s.idle_cpus == b.idle_cpus && s.sum_nr_running <= b.sum_nr_running)
}

/// `struct sd_lb_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SdLbStats {
    /// Busiest non-local group.
    pub busiest: Option<SgLbStats>,
    /// The group containing dst.
    pub local: SgLbStats,
    /// Σ group_load.
    pub total_load: u64,
    /// Σ group_capacity.
    pub total_capacity: u64,
    /// Domain average load.
    pub avg_load: u64,
    /// The child domain has SD_PREFER_SIBLING.
    pub prefer_sibling: bool,
}

/// `update_sd_lb_stats()`, plus SIS_UTIL's scan-depth refresh.
pub fn update_sd_lb_stats(core: &mut SchedCore, env: &LbEnv) -> SdLbStats {
    let dst = env.dst_cpu;
    let sd = &core.topo.sd(dst)[env.level];
    let pct = sd.imbalance_pct;
    let mut sds = SdLbStats {
        prefer_sibling: env.level > 0
            && core.topo.sd(dst)[env.level - 1]
                .flags
                .contains(SD_PREFER_SIBLING),
        ..Default::default()
    };
    let mut sum_util = 0;
    let mut sg_overloaded = false;
    let top = env.level + 1 == core.topo.sd(dst).len();
    let smt_balance =
        core.cfg.features.has(Feat::GroupSmtBalance) && env.idle != super::CpuIdleType::NotIdle;
    for (gi, g) in sd.groups.iter().enumerate() {
        let (mut s, over) = update_sg_lb_stats(core, pct, gi, &g.span, &env.excluded);
        let local = g.span.contains(dst);
        // `smt_balance()`: a non-local group that is one SMT core
        // (SD_SHARE_CPUCAPACITY) with more than one task, when this CPU is
        // idle; `group_classify` ranks it below overloaded only.
        if smt_balance
            && !local
            && s.is_smt
            && s.sum_h_nr_running > 1
            && s.group_type != GroupType::Overloaded
        {
            s.group_type = GroupType::SmtBalance;
        }
        sg_overloaded |= over;
        sum_util += s.group_util;
        sds.total_load += s.group_load;
        sds.total_capacity += s.group_capacity;
        if local {
            sds.local = s;
        } else if update_sd_pick_busiest(sds.busiest.as_ref(), &s) {
            sds.busiest = Some(s);
        }
    }
    // At the top domain (no parent) the pass refreshes the root domain's
    // sticky `overloaded` flag from what it saw.
    if top {
        core.shared.set_rd_overloaded(sg_overloaded);
    }
    let span_w = sd.span.weight();
    if env.idle != super::CpuIdleType::NewlyIdle {
        update_idle_cpu_scan(core, dst, span_w, pct, sum_util);
    }
    sds
}

/// `update_idle_cpu_scan()` (SIS_UTIL): at the LLC-sized domain, set
/// `nr_idle_scan = (1024 - min(1024, x^2 pct^2 / (10000*1024))) * llc / 1024`
/// with x the LLC's average utilization per CPU.
pub fn update_idle_cpu_scan(
    core: &mut SchedCore,
    cpu: CpuId,
    span_weight: usize,
    pct: u32,
    sum_util: u64,
) {
    if !core.cfg.features.has(Feat::SisUtil) {
        return;
    }
    let llc_weight = core.topo.llc_size[cpu];
    if span_weight != llc_weight || core.topo.llc_level[cpu].is_none() {
        return;
    }
    let x = sum_util / llc_weight as u64;
    let pct = u64::from(pct);
    let tmp = (x * x * pct * pct / (10000 * 1024)).min(1024);
    let y = (1024 - tmp) * llc_weight as u64 / 1024;
    let id = core.topo.llc_id[cpu];
    core.llc[id].set_nr_idle_scan(y as u32);
}
