//! Wakee tracking and the affine-wakeup decision.
//!
//! Mirrors `record_wakee()`, `wake_wide()`, `wake_affine()`,
//! `wake_affine_idle()` and `wake_affine_weight()` (reference §C.3, §C.4),
//! including the seed switches WA_IDLE_PREV (000), RUNNABLE_LOAD (000),
//! WAKE_WIDE_HEAVY (003) and WA_SYNC (004).

use crate::CpuId;
use crate::core::SchedCore;
use crate::features::Feat;
use crate::task::TaskId;

/// One second (HZ jiffies) in ns: the wakee_flips decay period.
pub const WAKEE_FLIP_DECAY_NS: u64 = 1_000_000_000;

/// `record_wakee(p)` run by the waker `w` on `this_cpu`.
pub fn record_wakee(core: &mut SchedCore, w: TaskId, p: TaskId, this_cpu: CpuId, now: u64) {
    let heavy = core.cfg.features.has(Feat::WakeWideHeavy);
    let min = 2 * core.topo.llc_size[this_cpu] as u32;
    let p_flips = core.tasks[p].wakee_flips;
    let waker = &mut core.tasks[w];
    if now > waker.wakee_flip_decay_ts + WAKEE_FLIP_DECAY_NS {
        waker.wakee_flips >>= 1;
        waker.wakee_flip_decay_ts = now;
    }
    if waker.last_wakee != Some(p) {
        // Seed 003 (Gorman): a heavy waker lends the wakee one flip.
        let inherit = heavy && waker.wakee_flips > p_flips.saturating_mul(min);
        waker.last_wakee = Some(p);
        waker.wakee_flips += 1;
        if inherit {
            core.tasks[p].wakee_flips += 1;
        }
    }
}

/// `wake_wide(p)`: true = spread (do not try the affine path).
pub fn wake_wide(core: &mut SchedCore, p: TaskId, waker: Option<TaskId>, this_cpu: CpuId) -> bool {
    let factor = core.topo.llc_size[this_cpu] as u32;
    let a = waker.map_or(0, |w| core.tasks[w].wakee_flips);
    let b = core.tasks[p].wakee_flips;
    let (master, slave) = if a >= b { (a, b) } else { (b, a) };
    // Mainline: a wakee with few flips (slave < factor) stays affine. Seed
    // 003 (Gorman) replaces that clause with `slave < factor && master <
    // (factor >> 1) * factor`: a waker heavy enough (master at least half
    // of factor squared) spreads even a wakee with few flips. (Not implied
    // by the mainline clause: LLC 16, slave 0, master 128 stays local in
    // mainline and goes wide with the patch.)
    let few_flips = if core.cfg.features.has(Feat::WakeWideHeavy) {
        slave < factor && master < (factor >> 1).saturating_mul(factor)
    } else {
        slave < factor
    };
    let narrow = few_flips || master < slave.saturating_mul(factor);
    if !narrow {
        core.stats.wake.wake_wide_hits += 1;
    }
    !narrow
}

/// `wake_affine_idle(this_cpu, prev_cpu, sync)`.
pub fn wake_affine_idle(
    core: &SchedCore,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
) -> Option<CpuId> {
    if core.idle_cpu(this_cpu) && core.topo.share_cache(this_cpu, prev_cpu) {
        return Some(if core.idle_cpu(prev_cpu) {
            prev_cpu
        } else {
            this_cpu
        });
    }
    if sync && core.nr_running(this_cpu) == 1 {
        return Some(this_cpu);
    }
    // Seed 000 (Lawall, v5.11): an idle prev_cpu wins over the load test.
    if core.cfg.features.has(Feat::WaIdlePrev) && core.idle_cpu(prev_cpu) {
        return Some(prev_cpu);
    }
    None
}

/// `wake_affine_weight(sd, p, this_cpu, prev_cpu, sync)` with the domain's
/// `imbalance_pct`. Loads are `cpu_load` (runnable load with RUNNABLE_LOAD).
pub fn wake_affine_weight(
    core: &SchedCore,
    imbalance_pct: u32,
    p: TaskId,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
) -> Option<CpuId> {
    let bias = core.cfg.features.has(Feat::WaBias);
    let mut this_eff = core.cpu_load(this_cpu) as i128;
    if sync && let Some(cur) = core.rqs[this_cpu].curr {
        let current_load = core.task_h_load(cur) as i128;
        if current_load > this_eff {
            return Some(this_cpu);
        }
        this_eff -= current_load;
    }
    let task_load = core.task_h_load(p) as i128;
    this_eff += task_load;
    if bias {
        this_eff *= 100;
    }
    this_eff *= core.capacity_of(prev_cpu) as i128;

    let mut prev_eff = core.cpu_load(prev_cpu) as i128 - task_load;
    if bias {
        prev_eff *= 100 + (i128::from(imbalance_pct) - 100) / 2;
    }
    prev_eff *= core.capacity_of(this_cpu) as i128;
    if sync {
        prev_eff += 1;
    }
    (this_eff < prev_eff).then_some(this_cpu)
}

/// `wake_affine(sd, p, this_cpu, prev_cpu, sync)`: returns this_cpu or prev_cpu.
pub fn wake_affine(
    core: &mut SchedCore,
    this_cpu: CpuId,
    sd_level: usize,
    p: TaskId,
    prev_cpu: CpuId,
    sync: bool,
) -> CpuId {
    let f = core.cfg.features;
    let mut target = None;
    if f.has(Feat::WaIdle) {
        target = wake_affine_idle(core, this_cpu, prev_cpu, sync);
        if target.is_some() {
            core.stats.wake.wa_idle_decided += 1;
        }
    }
    if f.has(Feat::WaWeight) && target.is_none() {
        let pct = core.topo.sd(this_cpu)[sd_level].imbalance_pct;
        target = wake_affine_weight(core, pct, p, this_cpu, prev_cpu, sync);
        if target.is_some() {
            core.stats.wake.wa_weight_this += 1;
        }
    }
    core.stats.wake.wake_affine_attempts += 1;
    core.tasks[p].stats.nr_wakeups_affine_attempts += 1;
    if target != Some(this_cpu) {
        return prev_cpu;
    }
    core.stats.wake.wake_affine_success += 1;
    core.tasks[p].stats.nr_wakeups_affine += 1;
    this_cpu
}
