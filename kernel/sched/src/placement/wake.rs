//! Wakee tracking and the affine-wakeup decision.
//!
//! Mirrors `record_wakee()`, `wake_wide()`, `wake_affine()`,
//! `wake_affine_idle()` and `wake_affine_weight()` (reference §C.3, §C.4),
//! including the seed switches WA_IDLE_PREV (000), RUNNABLE_LOAD (000),
//! WAKE_WIDE_HEAVY (003), WA_SYNC (004), and seed 001's WA_IDLER_LLC
//! (Srikar v3 4/8, `wake_affine_idler_llc()`) and WA_IDLER_LLC_ACROSS (v3
//! 5/8), with 8/8's "both LLCs busy" signal (SIS_SKIP_BUSY_LLCS).

use crate::CpuId;
use crate::core::SchedCore;
use crate::features::Feat;
use crate::rq::IdleCore;
use crate::task::TaskId;

/// One second (HZ jiffies) in ns: the wakee_flips decay period.
pub const WAKEE_FLIP_DECAY_NS: u64 = 1_000_000_000;

/// Linux's `current` on the waking CPU, whose wakee fields `record_wakee`
/// updates and `wake_wide` reads: the running task, or, for a wakeup issued
/// from an idle CPU (a timer expiring in idle), that CPU's idle task, which
/// has wakee fields of its own ([`Rq::idle_wakee`](crate::rq::Rq::idle_wakee)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waker {
    /// A task runs on the waking CPU.
    Task(TaskId),
    /// The waking CPU runs its idle task.
    Idle(CpuId),
}

/// A waker's `wakee_flips`, `wakee_flip_decay_ts` and `last_wakee`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakeeFields {
    /// `wakee_flips`.
    pub flips: u32,
    /// `wakee_flip_decay_ts` (ns).
    pub decay_ts: u64,
    /// `last_wakee`.
    pub last: Option<TaskId>,
}

fn waker_fields(core: &SchedCore, w: Waker) -> WakeeFields {
    match w {
        Waker::Task(t) => {
            let t = &core.tasks[t];
            WakeeFields {
                flips: t.wakee_flips,
                decay_ts: t.wakee_flip_decay_ts,
                last: t.last_wakee,
            }
        }
        Waker::Idle(cpu) => core.rqs[cpu].idle_wakee,
    }
}

/// `record_wakee`'s update of the waker's fields, in place; true when the
/// waker lends the wakee a flip (seed 003's heavy-waker rule).
#[inline]
fn record_on(
    flips: &mut u32,
    decay_ts: &mut u64,
    last: &mut Option<TaskId>,
    p: TaskId,
    lend_over: Option<u32>,
    now: u64,
) -> bool {
    if now > *decay_ts + WAKEE_FLIP_DECAY_NS {
        *flips >>= 1;
        *decay_ts = now;
    }
    if *last == Some(p) {
        return false;
    }
    // Seed 003 (Gorman): a heavy waker lends the wakee one flip.
    let inherit = lend_over.is_some_and(|m| *flips > m);
    *last = Some(p);
    *flips += 1;
    inherit
}

/// `record_wakee(p)` run by the waker `w` on `this_cpu`.
pub fn record_wakee(core: &mut SchedCore, w: Waker, p: TaskId, this_cpu: CpuId, now: u64) {
    // WAKE_WIDE_HEAVY: the waker lends a flip above `p.flips * 2 * llc_size`.
    let lend_over = core.cfg.features.has(Feat::WakeWideHeavy).then(|| {
        let min = 2 * core.topo.llc_size[this_cpu] as u32;
        core.tasks[p].wakee_flips.saturating_mul(min)
    });
    let inherit = match w {
        Waker::Task(t) => {
            let t = &mut core.tasks[t];
            record_on(
                &mut t.wakee_flips,
                &mut t.wakee_flip_decay_ts,
                &mut t.last_wakee,
                p,
                lend_over,
                now,
            )
        }
        Waker::Idle(cpu) => {
            let f = &mut core.rqs[cpu].idle_wakee;
            record_on(
                &mut f.flips,
                &mut f.decay_ts,
                &mut f.last,
                p,
                lend_over,
                now,
            )
        }
    };
    if inherit {
        core.tasks[p].wakee_flips += 1;
    }
}

/// `wake_wide(p)`: true = spread (do not try the affine path).
pub fn wake_wide(core: &mut SchedCore, p: TaskId, waker: Waker, this_cpu: CpuId) -> bool {
    let factor = core.topo.llc_size[this_cpu] as u32;
    let a = waker_fields(core, waker).flips;
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
    let idle_prev = core.cfg.features.has(Feat::WaIdlePrev);
    wake_affine_idle_rules(core, this_cpu, prev_cpu, sync, idle_prev)
}

/// `wake_affine_idle` with (v5.11, Lawall d8fcb81f1acf) or without
/// (pre-5.11) the final "prev_cpu idle -> prev_cpu" rule.
fn wake_affine_idle_rules(
    core: &SchedCore,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
    idle_prev: bool,
) -> Option<CpuId> {
    if core.idle_cpu(this_cpu) && core.topo.share_cache(this_cpu, prev_cpu) {
        return Some(if core.idle_cpu(prev_cpu) {
            prev_cpu
        } else {
            this_cpu
        });
    }
    // 6.12.y (by 6.12.67): delayed-dequeue tasks do not count, so a waker
    // alone with sleepers still queued behind it takes the wakee.
    if sync && core.nr_running(this_cpu) - core.nr_delayed(this_cpu) == 1 {
        return Some(this_cpu);
    }
    // Seed 000 (Lawall, v5.11): an idle prev_cpu wins over the load test.
    if idle_prev && core.idle_cpu(prev_cpu) {
        return Some(prev_cpu);
    }
    None
}

/// Seed 000 diagnostic, counted with WA_IDLE_PREV on and off alike (the
/// mainline chain WA_IDLE then WA_WEIGHT only): the wakeups where the
/// patch's rule decides otherwise than the pre-5.11 chain would, i.e. the
/// first two rules of `wake_affine_idle` do not decide, prev_cpu is idle
/// and `wake_affine_weight` picks this_cpu. `wa_idle_prev_flips_cross_llc`
/// counts those of them where prev_cpu and this_cpu do not share an LLC:
/// only there does the wakee's CPU change, since within an LLC
/// select_idle_sibling(prev, this) takes the idle prev_cpu anyway.
fn count_idle_prev_flips(
    core: &mut SchedCore,
    this_cpu: CpuId,
    sd_level: usize,
    p: TaskId,
    prev_cpu: CpuId,
    sync: bool,
) {
    if wake_affine_idle_rules(core, this_cpu, prev_cpu, sync, false).is_some()
        || !core.idle_cpu(prev_cpu)
    {
        return;
    }
    let pct = core.topo.sd(this_cpu)[sd_level].imbalance_pct;
    if wake_affine_weight(core, pct, p, this_cpu, prev_cpu, sync) == Some(this_cpu) {
        core.stats.wake.wa_idle_prev_flips += 1;
        if !core.topo.share_cache(this_cpu, prev_cpu) {
            core.stats.wake.wa_idle_prev_flips_cross_llc += 1;
        }
    }
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
    wake_affine_weight_inputs(core, imbalance_pct, p, this_cpu, prev_cpu, sync).0
}

/// The four loads a `wake_affine_weight` comparison read.
#[derive(Clone, Copy)]
struct WeightInputs {
    this_load: u64,
    current_load: u64,
    task_load: u64,
    prev_load: u64,
}

/// [`wake_affine_weight`] and, when it compared the loads, what it compared
/// (None when a sync rule answered before: the waker's load above its CPU's,
/// or WA_IDLER_LLC_ACROSS's "at most one task").
fn wake_affine_weight_inputs(
    core: &SchedCore,
    imbalance_pct: u32,
    p: TaskId,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
) -> (Option<CpuId>, Option<WeightInputs>) {
    let bias = core.cfg.features.has(Feat::WaBias);
    // Seed 001 (Srikar v3 5/8): the sync rule moved here from
    // wake_affine_idle, as "the waker's CPU runs at most one task".
    if sync && core.cfg.features.has(Feat::WaIdlerLlcAcross) && core.nr_running(this_cpu) <= 1 {
        return (Some(this_cpu), None);
    }
    let this_load = core.cpu_load(this_cpu);
    let mut this_eff = this_load as i128;
    let mut current_load = 0;
    if sync && let Some(cur) = core.rqs[this_cpu].curr {
        current_load = core.task_h_load(cur);
        if current_load as i128 > this_eff {
            return (Some(this_cpu), None);
        }
        this_eff -= current_load as i128;
    }
    let task_load = core.task_h_load(p);
    this_eff += task_load as i128;
    if bias {
        this_eff *= 100;
    }
    this_eff *= core.capacity_of(prev_cpu) as i128;

    let prev_load = core.cpu_load(prev_cpu);
    let mut prev_eff = prev_load as i128 - task_load as i128;
    if bias {
        prev_eff *= 100 + (i128::from(imbalance_pct) - 100) / 2;
    }
    prev_eff *= core.capacity_of(this_cpu) as i128;
    if sync {
        prev_eff += 1;
    }
    let inputs = WeightInputs {
        this_load,
        current_load,
        task_load,
        prev_load,
    };
    ((this_eff < prev_eff).then_some(this_cpu), Some(inputs))
}

/// Sums a compared `wake_affine_weight`'s inputs in the wakeup statistics
/// (`wa_weight_tests`, `wa_weight_sum_*`) so their means can be set next to
/// Linux's. The inputs are the values the rule compared (returned by it, not
/// read again).
fn count_weight_inputs(
    core: &mut SchedCore,
    inputs: WeightInputs,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    this: bool,
) {
    let cross = !core.topo.share_cache(this_cpu, prev_cpu);
    let w = &mut core.stats.wake;
    w.wa_weight_tests += 1;
    w.wa_weight_tests_this += u64::from(this);
    if cross {
        w.wa_weight_tests_cross_llc += 1;
        w.wa_weight_this_cross_llc += u64::from(this);
    }
    w.wa_weight_sum_this_load += inputs.this_load;
    w.wa_weight_sum_current_load += inputs.current_load;
    w.wa_weight_sum_task_load += inputs.task_load;
    w.wa_weight_sum_prev_load += inputs.prev_load;
}

/// Seed 001, Srikar v3 5/8 "sched/fair: Use affine_idler_llc for wakeups
/// across LLC": `wake_affine_idle(this_cpu, prev_cpu)`, now called only when
/// both CPUs share the LLC: prev if idle-ish, else this if idle-ish.
pub fn wake_affine_idle_llc(core: &SchedCore, this_cpu: CpuId, prev_cpu: CpuId) -> Option<CpuId> {
    if core.idle_ish(prev_cpu) {
        return Some(prev_cpu);
    }
    if core.idle_ish(this_cpu) {
        return Some(this_cpu);
    }
    None
}

/// v3 4/8's `test_reset_idle_core()`: claim the recorded idle core of
/// `cpu`'s LLC by compare-and-swap to -1, so two wakers never get the same
/// core. (Every task may run on that core here: bound tasks never reach
/// the placement code.)
fn claim_idle_core(core: &SchedCore, cpu: CpuId) -> Option<CpuId> {
    let llc = &core.llc[core.topo.llc_id[cpu]];
    match llc.idle_core() {
        IdleCore::Core(c) if llc.swap_idle_core(IdleCore::Core(c), IdleCore::Unknown) => Some(c),
        _ => None,
    }
}

/// Seed 001, Srikar v3 4/8 "sched/fair: Prefer idle CPU to cache affinity":
/// `wake_affine_idler_llc(p, pref_cpu = this_cpu, try_cpu = prev_cpu,
/// sync)`, in the patch's order:
/// 1. not sync: swap, so prev is preferred (sync prefers the waker's CPU);
/// 2. pref idle-ish -> pref;
/// 3. pref's LLC has a recorded idle core (2/8's `idle_core >= 0`),
///    claimed by compare-and-swap to -1 -> that core;
/// 4. try idle-ish -> try;
/// 5. try's LLC's recorded idle core, claimed the same way -> that core;
/// 6. both LLCs fully busy (`nr_busy_cpus == sd_llc_size`) -> none;
/// 7. `diff = nr_busy(try) * size(pref) - nr_busy(pref) * size(try)`:
///    > 0 -> pref, < 0 -> try, 0 -> none.
///
/// Returns the CPU and 8/8's `idle`: false only in case 6 with
/// SIS_SKIP_BUSY_LLCS ("Dont iterate if no idle CPUs"). Without IDLE_CORE_ID
/// no core is ever recorded (the value stays -1), so 3 and 5 never apply.
pub fn wake_affine_idler_llc(
    core: &mut SchedCore,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
) -> (Option<CpuId>, bool) {
    let (pref, try_cpu) = if sync {
        (this_cpu, prev_cpu)
    } else {
        (prev_cpu, this_cpu)
    };
    if core.idle_ish(pref) {
        return (Some(pref), true);
    }
    if let Some(c) = claim_idle_core(core, pref) {
        core.stats.wake.wa_idler_llc_core += 1;
        return (Some(c), true);
    }
    if core.idle_ish(try_cpu) {
        return (Some(try_cpu), true);
    }
    if let Some(c) = claim_idle_core(core, try_cpu) {
        core.stats.wake.wa_idler_llc_core += 1;
        return (Some(c), true);
    }
    let t = &core.topo;
    let (pl, tl) = (&core.llc[t.llc_id[pref]], &core.llc[t.llc_id[try_cpu]]);
    let (pnr, tnr) = (i64::from(pl.nr_busy_cpus()), i64::from(tl.nr_busy_cpus()));
    let (psize, tsize) = (t.llc_size[pref] as i64, t.llc_size[try_cpu] as i64);
    if tnr == tsize && pnr == psize {
        return (None, !core.cfg.features.has(Feat::SisSkipBusyLlcs));
    }
    let diff = tnr * psize - pnr * tsize;
    match diff.signum() {
        1 => (Some(pref), true),
        -1 => (Some(try_cpu), true),
        _ => (None, true),
    }
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
    wake_affine_idle_flag(core, this_cpu, sd_level, p, prev_cpu, sync).0
}

/// [`wake_affine`] plus 8/8's `idle` flag for select_idle_sibling.
///
/// Mainline order: WA_IDLE, then WA_WEIGHT if undecided. Seed 001:
/// WA_IDLER_LLC (4/8) runs wake_affine_idler_llc between them; with
/// WA_IDLER_LLC_ACROSS (5/8, which also turns the patch's WA_IDLER_LLC on,
/// so it implies it) wake_affine_idle runs only when prev and this share
/// the LLC and wake_affine_idler_llc only when they do not. Since
/// wake_affine_idler_llc can return a CPU that is neither this_cpu nor
/// prev_cpu (a claimed idle core), the 5.13 return rule of the series' base
/// is used: the decided CPU, or prev_cpu when undecided (for the mainline
/// deciders this is the same as 6.x's "this_cpu or else prev_cpu").
pub fn wake_affine_idle_flag(
    core: &mut SchedCore,
    this_cpu: CpuId,
    sd_level: usize,
    p: TaskId,
    prev_cpu: CpuId,
    sync: bool,
) -> (CpuId, bool) {
    let f = core.cfg.features;
    let mut target = None;
    let mut idle = true;
    if f.has(Feat::WaIdlerLlcAcross) {
        let share = core.topo.share_cache(prev_cpu, this_cpu);
        if f.has(Feat::WaIdle) && share {
            target = wake_affine_idle_llc(core, this_cpu, prev_cpu);
            if target.is_some() {
                core.stats.wake.wa_idle_decided += 1;
            }
        } else if !share {
            (target, idle) = wake_affine_idler_llc(core, this_cpu, prev_cpu, sync);
            if target.is_some() {
                core.stats.wake.wa_idler_llc += 1;
            }
        }
    } else {
        if f.has(Feat::WaIdle) && f.has(Feat::WaWeight) && !f.has(Feat::WaIdlerLlc) {
            count_idle_prev_flips(core, this_cpu, sd_level, p, prev_cpu, sync);
        }
        if f.has(Feat::WaIdle) {
            target = wake_affine_idle(core, this_cpu, prev_cpu, sync);
            if target.is_some() {
                core.stats.wake.wa_idle_decided += 1;
            }
        }
        if f.has(Feat::WaIdlerLlc) && target.is_none() {
            (target, idle) = wake_affine_idler_llc(core, this_cpu, prev_cpu, sync);
            if target.is_some() {
                core.stats.wake.wa_idler_llc += 1;
            }
        }
    }
    if f.has(Feat::WaWeight) && target.is_none() {
        let pct = core.topo.sd(this_cpu)[sd_level].imbalance_pct;
        let inputs;
        (target, inputs) = wake_affine_weight_inputs(core, pct, p, this_cpu, prev_cpu, sync);
        if target.is_some() {
            core.stats.wake.wa_weight_this += 1;
        }
        if let Some(inputs) = inputs {
            count_weight_inputs(core, inputs, this_cpu, prev_cpu, target.is_some());
        }
    }
    core.stats.wake.wake_affine_attempts += 1;
    core.tasks[p].stats.nr_wakeups_affine_attempts += 1;
    let cpu = target.unwrap_or(prev_cpu);
    if cpu == this_cpu {
        core.stats.wake.wake_affine_success += 1;
        core.tasks[p].stats.nr_wakeups_affine += 1;
    }
    (cpu, idle)
}
