//! The wakeup fast path: `select_idle_sibling()` and its LLC scans.
//!
//! Mirrors Linux 6.x `select_idle_sibling()` (reference §C.5: target, prev,
//! per-CPU-kthread stacking, recent_used_cpu, prev's SMT siblings, LLC scan,
//! fallback), `select_idle_smt()`, `select_idle_core()` and
//! `select_idle_cpu()` with the SIS_UTIL scan limit (§C.6), plus seed 001's
//! switches from Srikar Dronamraju's v3 series (13 May 2021):
//! IDLE_CORE_ID (2/8, the LLC's `idle_core` replaces `has_idle_cores`),
//! IDLE_CORE_UPDATE (3/8, its -2/-1/core encoding) and SIS_SKIP_BUSY_LLCS
//! (8/8, no scan when wake_affine_idler_llc saw both LLCs fully busy).

use crate::CpuId;
use crate::core::SchedCore;
use crate::features::Feat;
use crate::idle::idle_core_id;
use crate::rq::IdleCore;
use crate::task::TaskId;

/// Mainline `test_idle_cores(cpu)`: does the LLC of `cpu` (probably) have
/// an idle core?
pub fn test_idle_cores(core: &SchedCore, cpu: CpuId) -> bool {
    core.llc[core.topo.llc_id[cpu]].has_idle_cores()
}

/// Mainline `set_idle_cores(cpu, false)` after a failed full scan.
fn clear_idle_cores(core: &mut SchedCore, cpu: CpuId) {
    let id = core.topo.llc_id[cpu];
    core.llc[id].set_has_idle_cores(false);
    core.stats.sis.has_idle_cores_cleared += 1;
}

/// Are all SMT siblings of `cpu`'s core idle (`is_core_idle` incl. cpu)?
pub fn core_fully_idle(core: &SchedCore, cpu: CpuId) -> bool {
    core.topo.smt[cpu].iter().all(|c| core.idle_cpu(c))
}

/// `select_idle_smt(p, prev)`: an idle-ish SMT sibling of prev in its LLC.
pub fn select_idle_smt(core: &SchedCore, prev: CpuId) -> Option<CpuId> {
    let llc = &core.topo.llc_span[prev];
    core.topo.smt[prev]
        .iter()
        .find(|&c| c != prev && llc.contains(c) && core.idle_ish(c))
}

/// `select_idle_core(p, core_cpu, cpus, &idle_cpu)`: returns `core_cpu` if
/// its whole core is idle; remembers the first idle-ish sibling otherwise.
/// Returns the number of CPUs examined as well.
fn select_idle_core(
    core: &SchedCore,
    core_cpu: CpuId,
    idle_cpu: &mut Option<CpuId>,
) -> (Option<CpuId>, u64) {
    let mut idle = true;
    let mut examined = 0;
    for c in core.topo.smt[core_cpu].iter() {
        examined += 1;
        if !core.idle_cpu(c) {
            idle = false;
            if idle_cpu.is_none() {
                if core.sched_idle_cpu(c) {
                    *idle_cpu = Some(c);
                    break;
                }
                continue;
            }
            break;
        }
        if idle_cpu.is_none() {
            *idle_cpu = Some(c);
        }
    }
    (idle.then_some(core_cpu), examined)
}

/// Which branch of select_idle_cpu found the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanResult {
    /// A fully idle core.
    IdleCore(CpuId),
    /// An idle(-ish) CPU.
    IdleCpu(CpuId),
    /// Nothing.
    None,
}

/// `select_idle_cpu(p, sd_llc, has_idle_core, target)` (mainline).
pub fn select_idle_cpu(core: &mut SchedCore, has_idle_core: bool, target: CpuId) -> ScanResult {
    select_idle_cpu_hint(core, has_idle_core, None, target)
}

/// [`select_idle_cpu`] with seed 001's idle-core record: `hint` is the
/// LLC's `idle_core` as select_idle_sibling read it when IDLE_CORE_ID (v3
/// 2/8) is on, `None` for mainline. 2/8 changes two things here: when the core scan returns the recorded core (same `smt_id`), the
/// record is reset to -1; and a full scan that found no idle core no longer
/// clears anything (mainline clears `has_idle_cores`).
pub fn select_idle_cpu_hint(
    core: &mut SchedCore,
    has_idle_core: bool,
    hint: Option<IdleCore>,
    target: CpuId,
) -> ScanResult {
    let f = core.cfg.features;
    let llc_id = core.topo.llc_id[target];
    core.stats.sis.sis_domain_search += 1;
    let mut nr: i64 = i64::MAX;
    if f.has(Feat::SisUtil) {
        nr = i64::from(core.llc[llc_id].nr_idle_scan()) + 1;
        if nr == 1 {
            core.stats.sis.sis_util_skip += 1;
            return ScanResult::None;
        }
    }
    let topo = core.topo;
    let span = &topo.llc_span[target];
    let mut idle_cpu = None;
    let mut scanned = 0u64;
    let start = (target + 1) % topo.nr_cpus;
    let mut found = ScanResult::None;
    if has_idle_core {
        for cpu in span.iter_wrap(start) {
            // Each core once, at its first CPU in scan order.
            if !topo.first_of_core_in_scan(span, cpu, start) {
                continue;
            }
            // Without SMT, Linux's select_idle_core() is __select_idle_cpu():
            // the CPU itself if idle-ish. Only 3/8 gets here without SMT (its
            // "has idle core" is "!= -2", and the value passed is -1).
            let (r, ex) = if core.topo.smt_active {
                select_idle_core(core, cpu, &mut idle_cpu)
            } else {
                (core.idle_ish(cpu).then_some(cpu), 1)
            };
            scanned += ex;
            if let Some(c) = r {
                if hint == Some(IdleCore::Core(core.topo.core_id(c))) {
                    core.llc[llc_id].set_idle_core(IdleCore::Unknown);
                    core.stats.sis.idle_core_taken += 1;
                }
                found = ScanResult::IdleCore(c);
                break;
            }
        }
    } else {
        // The plain scan, its own loop (the test of `has_idle_core` out of
        // it): at most `nr - 1` CPUs, each one `idle_ish` test; a CPU that
        // is not one of the (at most two) held runqueues is read from its
        // snapshot without a search of the held list.
        let few = core.rqs.few();
        for cpu in span.iter_wrap(start) {
            nr -= 1;
            if nr <= 0 {
                break;
            }
            scanned += 1;
            let idle = match few {
                Some([a, b]) if cpu != a && cpu != b => {
                    SchedCore::snap_idle_ish(core.shared.snap(cpu))
                }
                _ => core.idle_ish(cpu),
            };
            if idle {
                found = ScanResult::IdleCpu(cpu);
                break;
            }
        }
    }
    if has_idle_core && found == ScanResult::None {
        if hint.is_none() {
            clear_idle_cores(core, target);
        }
        if let Some(c) = idle_cpu {
            found = ScanResult::IdleCpu(c);
        }
    }
    core.stats.sis.sis_scanned += scanned;
    core.stats.scan_len.record(scanned);
    if found == ScanResult::None {
        core.stats.sis.sis_failed += 1;
    }
    found
}

/// `select_idle_sibling(p, prev, target)`; `this_cpu`/`waker` identify the
/// waking context (for the per-CPU kthread rule).
pub fn select_idle_sibling(
    core: &mut SchedCore,
    p: TaskId,
    prev: CpuId,
    target: CpuId,
    this_cpu: CpuId,
    waker: Option<TaskId>,
) -> CpuId {
    select_idle_sibling_idle(core, p, prev, target, this_cpu, waker, true)
}

/// [`select_idle_sibling`] with v3 8/8's `idle` argument: false when
/// wake_affine_idler_llc found both LLCs fully busy, and then (with
/// SIS_SKIP_BUSY_LLCS) the target is returned after the recent_used_cpu
/// test, without looking at the LLC.
pub fn select_idle_sibling_idle(
    core: &mut SchedCore,
    p: TaskId,
    prev: CpuId,
    target: CpuId,
    this_cpu: CpuId,
    waker: Option<TaskId>,
    idle: bool,
) -> CpuId {
    core.stats.sis.sis_search += 1;
    if core.idle_ish(target) {
        core.stats.sis.sis_target += 1;
        return target;
    }
    if prev != target && core.topo.share_cache(prev, target) && core.idle_ish(prev) {
        core.stats.sis.sis_prev += 1;
        return prev;
    }
    if let Some(w) = waker
        && core.tasks[w].is_percpu_kthread
        && prev == this_cpu
        && core.nr_running(this_cpu) <= 1
    {
        core.stats.sis.sis_kthread += 1;
        return prev;
    }
    let recent = core.tasks[p].recent_used_cpu;
    core.tasks[p].recent_used_cpu = prev;
    if recent != prev
        && recent != target
        && core.topo.share_cache(recent, target)
        && core.idle_ish(recent)
    {
        core.stats.sis.sis_recent += 1;
        return recent;
    }
    if !idle {
        core.stats.sis.sis_idle_skip += 1;
        core.stats.sis.sis_fallback += 1;
        return target;
    }
    if core.topo.llc_level[target].is_none() {
        core.stats.sis.sis_fallback += 1;
        return target;
    }
    let f = core.cfg.features;
    let mut has_idle_core = false;
    let mut hint = None;
    if idle_core_id(&f) {
        // v3 2/8: the value starts as -1; with SMT it is read from the
        // target's LLC, and any negative value with prev in the target's
        // LLC tries prev's SMT siblings first. 2/8 alone stores only -1
        // (none) or a core; 3/8 scans for cores unless the value is -2
        // ("none"), so -1 ("unknown") both takes the sibling shortcut and
        // scans cores -- also without SMT, where the -1 is never replaced.
        let mut h = IdleCore::Unknown;
        if core.topo.smt_active {
            h = core.llc[core.topo.llc_id[target]].idle_core();
            if !matches!(h, IdleCore::Core(_))
                && core.topo.share_cache(prev, target)
                && let Some(c) = select_idle_smt(core, prev)
            {
                core.stats.sis.sis_smt += 1;
                return c;
            }
        }
        has_idle_core = if f.has(Feat::IdleCoreUpdate) {
            h != IdleCore::None
        } else {
            matches!(h, IdleCore::Core(_))
        };
        hint = Some(h);
    } else if core.topo.smt_active {
        has_idle_core = test_idle_cores(core, target);
        if !has_idle_core
            && core.topo.share_cache(prev, target)
            && let Some(c) = select_idle_smt(core, prev)
        {
            core.stats.sis.sis_smt += 1;
            return c;
        }
    }
    match select_idle_cpu_hint(core, has_idle_core, hint, target) {
        ScanResult::IdleCore(c) => {
            core.stats.sis.sis_idle_core += 1;
            c
        }
        ScanResult::IdleCpu(c) => {
            core.stats.sis.sis_idle_cpu += 1;
            c
        }
        ScanResult::None => {
            core.stats.sis.sis_fallback += 1;
            target
        }
    }
}
