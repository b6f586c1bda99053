//! Task placement: `select_task_rq_fair()` and the wakeup/fork helpers.
//!
//! Decision order follows Linux 6.15 (reference §C.2): record_wakee and
//! wake_wide decide `want_affine`; the domain walk from the waker's CPU finds
//! the first SD_WAKE_AFFINE domain containing prev (wake_affine) or the
//! highest domain with the balance flag (slow path `find_idlest_cpu`); the
//! fast path is `select_idle_sibling`. Seed 004's forced wakee placements
//! short-circuit the wakeup path right after record_wakee (where Linux checks
//! WF_CURRENT_CPU).

pub mod idlest;
pub mod sis;
pub mod wake;

#[cfg(test)]
mod fidelity_tests;
#[cfg(test)]
mod seed001_tests;
#[cfg(test)]
mod seed002_tests;
#[cfg(test)]
mod seed_tests;
#[cfg(test)]
mod tests;

use crate::CpuId;
use crate::core::SchedCore;
use crate::features::Feat;
use crate::task::TaskId;
use topology::{SD_BALANCE_EXEC, SD_BALANCE_FORK, SD_BALANCE_WAKE, SD_WAKE_AFFINE, SdFlags};

/// Wake flags (`WF_*`, Linux 6.x values).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakeFlags(pub u32);

impl WakeFlags {
    /// `WF_EXEC`.
    pub const EXEC: WakeFlags = WakeFlags(0x02);
    /// `WF_FORK`.
    pub const FORK: WakeFlags = WakeFlags(0x04);
    /// `WF_TTWU`.
    pub const TTWU: WakeFlags = WakeFlags(0x08);
    /// `WF_SYNC`: the waker will block soon.
    pub const SYNC: WakeFlags = WakeFlags(0x10);
    /// `WF_MIGRATED`.
    pub const MIGRATED: WakeFlags = WakeFlags(0x20);

    /// Contains all bits of `o`.
    pub fn has(self, o: WakeFlags) -> bool {
        self.0 & o.0 == o.0
    }

    /// Union.
    pub fn or(self, o: WakeFlags) -> WakeFlags {
        WakeFlags(self.0 | o.0)
    }

    /// The matching `SD_BALANCE_*` flag (`wake_flags & 0xF`).
    pub fn sd_flag(self) -> SdFlags {
        if self.has(Self::EXEC) {
            SD_BALANCE_EXEC
        } else if self.has(Self::FORK) {
            SD_BALANCE_FORK
        } else {
            SD_BALANCE_WAKE
        }
    }
}

/// Seed 004: where a forced WAKEE_* mode puts the wakee, if one is active.
pub fn forced_wakee_cpu(core: &SchedCore, this_cpu: CpuId) -> Option<CpuId> {
    let f = &core.cfg.features;
    let t = &core.topo;
    if f.has(Feat::WakeeStacked) {
        return Some(this_cpu);
    }
    if f.has(Feat::WakeeCrossSmt) {
        return Some(
            t.smt[this_cpu]
                .iter()
                .find(|&c| c != this_cpu)
                .unwrap_or(this_cpu),
        );
    }
    if f.has(Feat::WakeeCrossCore) {
        let my_core = t.cpus[this_cpu].core;
        let span = &t.llc_span[this_cpu];
        let start = (this_cpu + 1) % t.nr_cpus;
        return Some(
            span.iter_wrap(start)
                .find(|&c| t.cpus[c].core != my_core && t.cpus[c].thread == 0)
                .or_else(|| span.iter_wrap(start).find(|&c| t.cpus[c].core != my_core))
                .unwrap_or(this_cpu),
        );
    }
    None
}

/// `select_task_rq_fair(p, prev_cpu, wake_flags)` executed on `this_cpu`
/// (the waker's or parent's CPU). `now` feeds record_wakee's decay.
pub fn select_task_rq_fair(
    core: &mut SchedCore,
    p: TaskId,
    prev_cpu: CpuId,
    this_cpu: CpuId,
    wake_flags: WakeFlags,
    now: u64,
) -> CpuId {
    let waker = core.rqs[this_cpu].curr.filter(|&w| w != p);
    // Linux's `current`: with no task running, the waking CPU's idle task
    // (a timer that expired in idle), whose own wakee fields record_wakee
    // updates and wake_wide reads. `sync` is WF_SYNC unless current exits;
    // an idle task never does.
    let current = waker.map_or(wake::Waker::Idle(this_cpu), wake::Waker::Task);
    let sync = wake_flags.has(WakeFlags::SYNC) && core.cfg.features.has(Feat::WaSync);
    let sd_flag = wake_flags.sd_flag();
    let mut new_cpu = prev_cpu;
    let mut want_affine = false;

    if wake_flags.has(WakeFlags::TTWU) {
        wake::record_wakee(core, current, p, this_cpu, now);
        if waker.is_some()
            && let Some(c) = forced_wakee_cpu(core, this_cpu)
        {
            core.stats.wake.wake_forced += 1;
            return c;
        }
        want_affine = !wake::wake_wide(core, p, current, this_cpu);
    }

    let mut sd_level: Option<usize> = None;
    // Seed 001 (Srikar v3 8/8): false when wake_affine_idler_llc saw both
    // LLCs fully busy.
    let mut idle = true;
    let nr_levels = core.topo.sd(this_cpu).len();
    for lvl in 0..nr_levels {
        let d = &core.topo.sd(this_cpu)[lvl];
        if want_affine && d.flags.contains(SD_WAKE_AFFINE) && d.span.contains(prev_cpu) {
            if this_cpu != prev_cpu {
                (new_cpu, idle) =
                    wake::wake_affine_idle_flag(core, this_cpu, lvl, p, prev_cpu, sync);
            }
            sd_level = None;
            break;
        }
        if d.flags.contains(sd_flag) {
            sd_level = Some(lvl);
        } else if !want_affine {
            break;
        }
    }

    if let Some(lvl) = sd_level {
        if wake_flags.has(WakeFlags::TTWU) {
            core.stats.wake.wake_slow_path += 1;
        }
        // sched_balance_find_dst_cpu(): p's utilization for
        // cpu_util_without() is synced to its queue's last update first,
        // except at fork (a new task has no history to sync).
        if !wake_flags.has(WakeFlags::FORK) {
            core.sync_entity_load_avg(p);
        }
        new_cpu = idlest::find_idlest_cpu(core, this_cpu, lvl, p, prev_cpu, sd_flag);
    } else if wake_flags.has(WakeFlags::TTWU) {
        new_cpu = sis::select_idle_sibling_idle(core, p, prev_cpu, new_cpu, this_cpu, waker, idle);
    }
    new_cpu
}
