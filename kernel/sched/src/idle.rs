//! Idle-core and busy-CPU tracking per LLC (reference §D).
//!
//! Mainline: `has_idle_cores` is set at idle entry when the whole core is
//! idle (`update_idle_core`) and cleared by a failed LLC scan;
//! `nr_busy_cpus` changes only in `nohz_balance_enter_idle` (a CPU stops
//! its tick in idle) and `nohz_balance_exit_idle` (its first busy tick):
//! with NOHZ_IDLE at those points (`crate::balance::nohz`), without it at
//! the tick (CPUs idle through a tick count as idle).
//!
//! Seed 001, Srikar Dronamraju's "sched/fair: wake_affine improvements" v3
//! (13 May 2021), one switch per patch (docs/policies.md):
//! * IDLE_CORE_ID, 2/8 "sched/fair: Maintain the identity of idle-core": the
//!   LLC records *which* core is idle (`idle_core`, -1 = none known);
//! * IDLE_CORE_UPDATE, 3/8 "sched/fair: Update idle-core more often": -2 /
//!   -1 / core encoding, `set_next_idle_core` at idle entry and
//!   `set_core_busy` at idle exit;
//! * IDLE_BUSY_ACCT, 6/8 "sched/idle: Move busy_cpu accounting to idle
//!   callback": `nr_busy_cpus` in pick_next_task_idle / put_prev_task_idle.
//!
//! schedlab calls [`idle_enter`] when a CPU switches to the idle task (and
//! once per CPU at start, after the LLC state is built) and [`idle_exit`]
//! when it leaves it. Linux also re-picks the idle task on an idle CPU
//! (put_prev_task_idle then pick_next_task_idle); under 6/8 that pair adds
//! and removes one, so leaving it out changes no count.

use crate::CpuId;
use crate::core::SchedCore;
use crate::features::{Feat, Features};
use crate::rq::IdleCore;

/// Is 2/8's idle-core identity in use? 3/8 is written on top of 2/8, so
/// IDLE_CORE_UPDATE implies it.
pub fn idle_core_id(f: &Features) -> bool {
    f.has(Feat::IdleCoreId) || f.has(Feat::IdleCoreUpdate)
}

/// Are all SMT siblings of `cpu`'s core other than `cpu` itself available
/// idle (the loop of `__update_idle_core`)?
fn siblings_idle(core: &SchedCore, cpu: CpuId) -> bool {
    core.topo.smt[cpu]
        .iter()
        .filter(|&c| c != cpu)
        .all(|c| core.idle_cpu(c))
}

/// v3 3/8 `set_next_idle_core(target)`: scan the cores of `target`'s LLC
/// other than its own, wrapping from `target`; the first whose siblings are
/// all available idle becomes the LLC's idle core (its `smt_id`), and if
/// there is none the LLC has "no idle core" (-2). The scan visits each core
/// once, at the first of its CPUs met in wrap order.
fn set_next_idle_core(core: &SchedCore, target: CpuId) {
    let t = &core.topo;
    let llc = &core.llc[t.llc_id[target]];
    let span = &t.llc_span[target];
    for c in span.iter_wrap(target) {
        if t.smt[target].contains(c) || !t.first_of_core_in_scan(span, c, target) {
            continue;
        }
        if t.smt[c].iter().all(|s| core.idle_cpu(s)) {
            llc.set_idle_core(IdleCore::Core(t.core_id(c)));
            return;
        }
    }
    llc.set_idle_core(IdleCore::None);
}

/// `__update_idle_core()` at idle entry (only with SMT).
///
/// Mainline: set `has_idle_cores` if every other sibling is idle.
/// 2/8: if the LLC has no idle core recorded (`get_idle_core(cpu, 0) < 0`)
/// and every other sibling is idle, record this core (`smt_id`).
/// 3/8: if a sibling is busy and the value is -1 ("unknown"), look for
/// another idle core (`set_next_idle_core`); -2 stays -2.
pub fn update_idle_core(core: &mut SchedCore, cpu: CpuId) {
    if !core.topo.smt_active {
        return;
    }
    let id = core.topo.llc_id[cpu];
    let f = core.cfg.features;
    if idle_core_id(&f) {
        let cur = core.llc[id].idle_core();
        if let IdleCore::Core(_) = cur {
            return;
        }
        if siblings_idle(core, cpu) {
            core.llc[id].set_idle_core(IdleCore::Core(core.topo.core_id(cpu)));
        } else if f.has(Feat::IdleCoreUpdate) && cur == IdleCore::Unknown {
            set_next_idle_core(core, cpu);
        }
        return;
    }
    if core.llc[id].has_idle_cores() {
        return;
    }
    if siblings_idle(core, cpu) {
        core.llc[id].set_has_idle_cores(true);
    }
}

/// Idle entry (`set_next_task_idle` / `pick_next_task_idle`).
///
/// 6/8's pick_next_task_idle: decrement `nr_busy_cpus` (never below 0)
/// whatever `is_idle` says, then set `is_idle`.
pub fn idle_enter(core: &mut SchedCore, cpu: CpuId) {
    core.stats.rq.idle_enter += 1;
    update_idle_core(core, cpu);
    if core.cfg.features.has(Feat::IdleBusyAcct) {
        let id = core.topo.llc_id[cpu];
        core.llc[id].dec_busy();
        core.rqs[cpu].acct_idle = true;
    }
}

/// Idle exit (`put_prev_task_idle`).
///
/// 3/8's `set_core_busy(cpu)` (with SMT): if the LLC's idle core is this
/// CPU's core, it becomes -1 ("unknown"). 6/8: if `is_idle`, increment
/// `nr_busy_cpus` (an unbounded `atomic_inc`) and clear `is_idle`.
pub fn idle_exit(core: &mut SchedCore, cpu: CpuId) {
    core.stats.rq.idle_exit += 1;
    let id = core.topo.llc_id[cpu];
    let f = core.cfg.features;
    if f.has(Feat::IdleCoreUpdate) && core.topo.smt_active {
        let mine = IdleCore::Core(core.topo.core_id(cpu));
        if core.llc[id].idle_core() == mine {
            core.llc[id].set_idle_core(IdleCore::Unknown);
        }
    }
    if f.has(Feat::IdleBusyAcct) && core.rqs[cpu].acct_idle {
        core.llc[id].inc_busy_unbounded();
        core.rqs[cpu].acct_idle = false;
    }
}

/// Tick-time accounting without NOHZ_IDLE: a CPU idle at a tick stands for
/// a CPU that stopped its tick (`set_cpu_sd_state_idle`), a busy one for
/// its first busy tick after that (`set_cpu_sd_state_busy`). With
/// NOHZ_IDLE the same two calls come from `nohz_balance_enter_idle` and
/// `nohz_balance_exit_idle` (`crate::balance::nohz`).
pub fn tick_accounting(core: &mut SchedCore, cpu: CpuId) {
    if core.idle_cpu(cpu) {
        set_cpu_sd_state_idle(core, cpu);
    } else {
        set_cpu_sd_state_busy(core, cpu);
    }
}

/// `set_cpu_sd_state_idle()`: this CPU's LLC counts it idle
/// (`sd_llc->nohz_idle`). Mainline decrements `nr_busy_cpus`; 6/8 only
/// marks `nohz_idle`.
pub fn set_cpu_sd_state_idle(core: &mut SchedCore, cpu: CpuId) {
    let id = core.topo.llc_id[cpu];
    let rq = &mut core.rqs[cpu];
    if !rq.nohz_idle {
        rq.nohz_idle = true;
        if !core.cfg.features.has(Feat::IdleBusyAcct) {
            core.llc[id].dec_busy();
        }
    }
}

/// `set_cpu_sd_state_busy()`: the LLC counts this CPU busy again. Mainline
/// increments `nr_busy_cpus`; 6/8 increments (bounded by the LLC size)
/// only if `is_idle`, and clears it.
pub fn set_cpu_sd_state_busy(core: &mut SchedCore, cpu: CpuId) {
    let acct_at_idle = core.cfg.features.has(Feat::IdleBusyAcct);
    let id = core.topo.llc_id[cpu];
    let rq = &mut core.rqs[cpu];
    if rq.nohz_idle {
        rq.nohz_idle = false;
        if !acct_at_idle {
            core.llc[id].inc_busy();
        } else if rq.acct_idle {
            core.llc[id].inc_busy();
            rq.acct_idle = false;
        }
    }
}
