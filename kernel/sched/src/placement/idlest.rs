//! The fork/exec slow path: `find_idlest_cpu()` walking down the domains with
//! `find_idlest_group()` and `find_idlest_group_cpu()`.
//!
//! Default: the 5.5+ group-classification algorithm (reference §C.8). With
//! RUNNABLE_LOAD (seeds 000/002) the pre-5.5 load comparison (§C.9) is used:
//! runnable load with an absolute margin and, with IDLEST_BLOCKED, the
//! blocked-inclusive load as the second key (Guittot 2016); without
//! IDLEST_BLOCKED the pre-4.11 runnable-only multiplicative test.

use crate::CpuId;
use crate::balance::stats::{GroupType, group_classify};
use crate::core::SchedCore;
use crate::features::Feat;
use crate::task::TaskId;
use topology::{CpuMask, SD_NUMA, SchedDomain, SdFlags};

/// `struct sg_lb_stats` as filled by `update_sg_wakeup_stats` (all values
/// exclude the task being placed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SgWakeupStats {
    /// Σ cpu_load_without.
    pub group_load: u64,
    /// Σ cpu_util_without.
    pub group_util: u64,
    /// Σ cpu_runnable_without.
    pub group_runnable: u64,
    /// Σ nr_running.
    pub sum_nr_running: u32,
    /// Idle CPUs.
    pub idle_cpus: u32,
    /// Σ capacity.
    pub group_capacity: u64,
    /// CPUs in the group.
    pub group_weight: u32,
    /// Classification.
    pub group_type: GroupType,
    /// load * 1024 / capacity for fully_busy / overloaded.
    pub avg_load: u64,
}

/// `update_sg_wakeup_stats(sd, group, sgs, p)` (Linux 6.15): like Linux,
/// `p` is discounted from its own CPU's load, util, runnable, nr_running
/// and idleness, so an exec'ing task does not count against the CPU it
/// runs on:
/// - `task_running_on_cpu(cpu, p)`: `p` (queued or running, with PELT
///   history) counts in `cpu`'s nr_running;
/// - `idle_cpu_without(cpu, p)`: `cpu` would be idle without `p` (its curr
///   is the idle task or `p`) and has no wakeup pending on its wake list
///   (`rq->ttwu_pending`, TTWU_QUEUE), tested when nr_running without `p`
///   is 0.
///
/// Each CPU's figures come from one lookup (`SchedCore::cpu_figures`) and
/// `p`'s from one before the scan: at 1,024 CPUs a fork's placement visits
/// about 1,200 CPUs, and a lookup per figure cost ~430 host instructions
/// per CPU visited.
pub fn update_sg_wakeup_stats(
    core: &SchedCore,
    pct: u32,
    span: &CpuMask,
    p: TaskId,
) -> SgWakeupStats {
    let mut s = SgWakeupStats::default();
    // p's own figures, looked up once: only its own CPU discounts them
    // (`cpu_load_without` and the other *_without helpers test
    // `task_cpu(p) == cpu` and a load that has been attached; the
    // nr_running discount also needs p queued: `task_running_on_cpu`).
    let t = &core.tasks[p];
    let p_cpu = t.cpu;
    let attached = t.se.avg.last_update_time != 0;
    let queued = attached && t.se.on_rq;
    let (p_load, p_util, p_runnable) = (
        core.task_h_load(p),
        t.se.avg.util_avg,
        t.se.avg.runnable_avg,
    );
    let runnable_load = core.cfg.features.has(Feat::RunnableLoad);
    for cpu in span.iter() {
        // One lookup per CPU for every figure (`cpu_figures`).
        let f = core.cpu_figures(cpu, runnable_load);
        let own = cpu == p_cpu;
        // What p takes away here: its figures on its own CPU, else nothing.
        let (dl, du, dr) = if own && attached {
            (p_load, p_util, p_runnable)
        } else {
            (0, 0, 0)
        };
        s.group_load += f.load.saturating_sub(dl);
        s.group_util += f.util.saturating_sub(du).min(f.capacity_orig);
        s.group_runnable += f.runnable.saturating_sub(dr);
        let nr = f.nr_running - u32::from(own && queued);
        s.sum_nr_running += nr;
        // `idle_cpu_without(cpu, p)`, from the same lookup.
        if nr == 0
            && match f.live {
                Some(rq) => {
                    rq.curr.or(rq.switching_out).is_none_or(|c| c == p)
                        && !core.shared.ttwu_pending(cpu)
                }
                None => core.idle_cpu(cpu),
            }
        {
            s.idle_cpus += 1;
        }
        s.group_capacity += f.capacity;
        s.group_weight += 1;
    }
    s.group_type = group_classify(
        pct,
        s.sum_nr_running,
        s.group_weight,
        s.group_capacity,
        s.group_util,
        s.group_runnable,
    );
    if matches!(s.group_type, GroupType::FullyBusy | GroupType::Overloaded) {
        s.avg_load = s.group_load * 1024 / s.group_capacity.max(1);
    }
    s
}

/// `update_pick_idlest(idlest, sgs)`: is `s` idler than `best`?
fn update_pick_idlest(best: &SgWakeupStats, s: &SgWakeupStats) -> bool {
    if s.group_type != best.group_type {
        return s.group_type < best.group_type;
    }
    match s.group_type {
        GroupType::Overloaded | GroupType::FullyBusy => s.avg_load < best.avg_load,
        GroupType::HasSpare => {
            if best.idle_cpus > s.idle_cpus {
                return false;
            }
            !(best.idle_cpus == s.idle_cpus && best.group_util <= s.group_util)
        }
        _ => false,
    }
}

/// `adjust_numa_imbalance(imbalance, dst_running, imb_numa_nr)`.
pub fn adjust_numa_imbalance(imbalance: u64, dst_running: u64, imb_numa_nr: u64) -> u64 {
    const NUMA_IMBALANCE_MIN: u64 = 2;
    if dst_running > imb_numa_nr {
        return imbalance;
    }
    if imbalance <= NUMA_IMBALANCE_MIN {
        return 0;
    }
    imbalance
}

/// `find_idlest_group(sd, p, this_cpu)` (5.5+): index of the chosen group.
pub fn find_idlest_group(
    core: &SchedCore,
    sd: &SchedDomain,
    p: TaskId,
    this_cpu: CpuId,
) -> Option<usize> {
    if core.cfg.features.has(Feat::RunnableLoad) {
        return find_idlest_group_legacy(core, sd, this_cpu);
    }
    let pct = sd.imbalance_pct;
    let mut idlest: Option<(usize, SgWakeupStats)> = None;
    let mut local: Option<SgWakeupStats> = None;
    for (gi, g) in sd.groups.iter().enumerate() {
        let s = update_sg_wakeup_stats(core, pct, &g.span, p);
        if g.span.contains(this_cpu) {
            local = Some(s);
            continue;
        }
        if idlest
            .as_ref()
            .is_none_or(|(_, b)| update_pick_idlest(b, &s))
        {
            idlest = Some((gi, s));
        }
    }
    let (gi, idl) = idlest?;
    let Some(loc) = local else { return Some(gi) };
    if loc.group_type < idl.group_type {
        return None;
    }
    if loc.group_type > idl.group_type {
        return Some(gi);
    }
    match loc.group_type {
        GroupType::Overloaded | GroupType::FullyBusy => {
            let imb = 1024 * u64::from(pct - 100) / 100;
            if sd.flags.contains(SD_NUMA) && idl.avg_load + imb >= loc.avg_load {
                return None;
            }
            if idl.avg_load >= loc.avg_load + imb {
                return None;
            }
            if 100 * loc.avg_load <= u64::from(pct) * idl.avg_load {
                return None;
            }
        }
        GroupType::HasSpare => {
            if sd.flags.contains(SD_NUMA) {
                let imb = u64::from(loc.idle_cpus.abs_diff(idl.idle_cpus));
                if adjust_numa_imbalance(
                    imb,
                    u64::from(loc.sum_nr_running) + 1,
                    u64::from(sd.imb_numa_nr),
                ) == 0
                {
                    return None;
                }
            }
            if loc.idle_cpus >= idl.idle_cpus {
                return None;
            }
        }
        _ => return None,
    }
    Some(gi)
}

/// Pre-5.5 `find_idlest_group` keyed on runnable load (seed 002). With
/// IDLEST_BLOCKED this is the 4.11-5.4 rule: a group with significantly
/// less runnable load sets both minima; a group whose runnable load is
/// close but whose blocked-inclusive load is lower updates only
/// `min_avg_load`. The spare-capacity shortcut of 4.13-5.4 is not modelled.
fn find_idlest_group_legacy(core: &SchedCore, sd: &SchedDomain, this_cpu: CpuId) -> Option<usize> {
    let pct = u64::from(sd.imbalance_pct);
    let imbalance = 1024 * (pct - 100) / 100;
    let scale = 100 + (pct - 100) / 2;
    let blocked_key = core.cfg.features.has(Feat::IdlestBlocked);
    let (mut min_run, mut min_avg) = (u64::MAX, u64::MAX);
    let (mut this_run, mut this_avg) = (0u64, 0u64);
    let mut idlest = None;
    for (gi, g) in sd.groups.iter().enumerate() {
        let cap: u64 = g
            .span
            .iter()
            .map(|c| core.capacity_of(c))
            .sum::<u64>()
            .max(1);
        let run: u64 = g
            .span
            .iter()
            .map(|c| core.cpu_runnable_load(c))
            .sum::<u64>()
            * 1024
            / cap;
        let avg: u64 = g.span.iter().map(|c| core.cpu_load_avg(c)).sum::<u64>() * 1024 / cap;
        if g.span.contains(this_cpu) {
            (this_run, this_avg) = (run, avg);
            continue;
        }
        if !blocked_key {
            if run < min_run {
                (min_run, min_avg) = (run, avg);
                idlest = Some(gi);
            }
        } else if min_run == u64::MAX || min_run > run + imbalance {
            // Significantly less runnable load: new minimum of both keys.
            (min_run, min_avg) = (run, avg);
            idlest = Some(gi);
        } else if run < min_run + imbalance && 100 * min_avg > scale * avg {
            // Runnable loads are close: Linux moves only min_avg_load; the
            // minimum runnable load stays the reference for later groups.
            min_avg = avg;
            idlest = Some(gi);
        }
    }
    let gi = idlest?;
    if blocked_key {
        if min_run > this_run + imbalance {
            return None;
        }
        if this_run < min_run + imbalance && 100 * this_avg < scale * min_avg {
            return None;
        }
        if sd.flags.contains(SD_NUMA) && min_run + imbalance >= this_run {
            return None;
        }
    } else if 100 * this_run < scale * min_run {
        return None;
    }
    Some(gi)
}

/// `find_idlest_group_cpu(group, p, this_cpu)`: a SCHED_IDLE-only CPU, else
/// the most recently idled idle CPU (no cpuidle exit latencies here), else
/// the least loaded CPU.
pub fn find_idlest_group_cpu(core: &SchedCore, span: &CpuMask, this_cpu: CpuId) -> CpuId {
    if span.weight() == 1 {
        return span.first().unwrap_or(this_cpu);
    }
    let mut least = this_cpu;
    let mut min_load = u64::MAX;
    let mut shallowest: Option<CpuId> = None;
    let mut latest_stamp = 0u64;
    for cpu in span.iter() {
        if core.sched_idle_cpu(cpu) {
            return cpu;
        }
        if core.idle_cpu(cpu) {
            let stamp = core.idle_stamp(cpu);
            if shallowest.is_none() || stamp > latest_stamp {
                latest_stamp = stamp;
                shallowest = Some(cpu);
            }
        } else if shallowest.is_none() {
            let load = core.cpu_load(cpu);
            if load < min_load || (load == min_load && cpu == this_cpu) {
                min_load = load;
                least = cpu;
            }
        }
    }
    shallowest.unwrap_or(least)
}

/// `find_idlest_cpu(sd, p, cpu, prev_cpu, sd_flag)`: walk down from
/// `this_cpu`'s domain at `level`.
pub fn find_idlest_cpu(
    core: &SchedCore,
    this_cpu: CpuId,
    level: usize,
    p: TaskId,
    _prev_cpu: CpuId,
    sd_flag: SdFlags,
) -> CpuId {
    let mut cpu = this_cpu;
    let mut new_cpu = this_cpu;
    let mut sd: Option<(CpuId, usize)> = Some((this_cpu, level));
    while let Some((c, l)) = sd {
        let child = |l: usize| if l == 0 { None } else { Some((c, l - 1)) };
        let d = &core.topo.sd(c)[l];
        if !d.flags.contains(sd_flag) {
            sd = child(l);
            continue;
        }
        let Some(gi) = find_idlest_group(core, d, p, cpu) else {
            sd = child(l);
            continue;
        };
        new_cpu = find_idlest_group_cpu(core, &d.groups[gi].span, cpu);
        if new_cpu == cpu {
            sd = child(l);
            continue;
        }
        cpu = new_cpu;
        let weight = d.span.weight();
        sd = None;
        for (tl, t) in core.topo.sd(cpu).iter().enumerate() {
            if t.span.weight() >= weight {
                break;
            }
            if t.flags.contains(sd_flag) {
                sd = Some((cpu, tl));
            }
        }
    }
    new_cpu
}
