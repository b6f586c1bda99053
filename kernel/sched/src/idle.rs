//! Idle-core and busy-CPU tracking per LLC (reference §D).
//!
//! Mainline: `has_idle_cores` is set at idle entry when the whole core is
//! idle (`update_idle_core`) and cleared by a failed LLC scan;
//! `nr_busy_cpus` changes only at the tick (`nohz_balance_enter_idle` /
//! `nohz_balance_exit_idle`: CPUs idle through a tick count as idle).
//! Seed 001 switches: IDLE_ACCT_ENTRY moves the busy accounting to idle
//! entry/exit (Srikar's "Move busy_cpu accounting to idle callback");
//! IDLE_CORE_HINT keeps the identity of an idle core (`idle_core`, with
//! `set_next_idle_core` at idle entry and `set_core_busy` at idle exit).

use crate::CpuId;
use crate::core::SchedCore;
use crate::features::Feat;
use crate::placement::sis::core_fully_idle;
use crate::rq::IdleCore;

/// `set_next_idle_core()`: scan the other cores of the LLC, wrapping from
/// `cpu`, for a fully idle one.
fn set_next_idle_core(core: &SchedCore, cpu: CpuId) -> IdleCore {
    let t = &core.topo;
    let own = t.cpus[cpu].core;
    let start = (cpu + 1) % t.nr_cpus;
    for c in t.llc_span[cpu].iter_wrap(start) {
        if t.cpus[c].core == own || t.cpus[c].thread != 0 && t.core_id(c) != c {
            continue;
        }
        if core_fully_idle(core, c) {
            return IdleCore::Core(t.core_id(c));
        }
    }
    IdleCore::None
}

/// `__update_idle_core()` at idle entry (only with SMT).
pub fn update_idle_core(core: &mut SchedCore, cpu: CpuId) {
    if !core.topo.smt_active {
        return;
    }
    let id = core.topo.llc_id[cpu];
    if core.cfg.features.has(Feat::IdleCoreHint) {
        if let IdleCore::Core(_) = core.llc[id].idle_core() {
            return;
        }
        let hint = if core_fully_idle(core, cpu) {
            IdleCore::Core(core.topo.core_id(cpu))
        } else {
            set_next_idle_core(core, cpu)
        };
        core.llc[id].set_idle_core(hint);
        core.llc[id].set_has_idle_cores(hint != IdleCore::None);
        return;
    }
    if core.llc[id].has_idle_cores() {
        return;
    }
    if core_fully_idle(core, cpu) {
        core.llc[id].set_has_idle_cores(true);
    }
}

/// Idle entry (`set_next_task_idle` / `pick_next_task_idle`).
pub fn idle_enter(core: &mut SchedCore, cpu: CpuId) {
    core.stats.rq.idle_enter += 1;
    update_idle_core(core, cpu);
    if core.cfg.features.has(Feat::IdleAcctEntry) && !core.rqs[cpu].acct_idle {
        let id = core.topo.llc_id[cpu];
        core.llc[id].dec_busy();
        core.rqs[cpu].acct_idle = true;
    }
}

/// Idle exit (`put_prev_task_idle`): `set_core_busy` and busy accounting.
pub fn idle_exit(core: &mut SchedCore, cpu: CpuId) {
    core.stats.rq.idle_exit += 1;
    let id = core.topo.llc_id[cpu];
    if core.cfg.features.has(Feat::IdleCoreHint) {
        let mine = IdleCore::Core(core.topo.core_id(cpu));
        core.llc[id].swap_idle_core(mine, IdleCore::Unknown);
    }
    if core.cfg.features.has(Feat::IdleAcctEntry) && core.rqs[cpu].acct_idle {
        core.llc[id].inc_busy();
        core.rqs[cpu].acct_idle = false;
    }
}

/// Tick-time accounting (mainline `nohz_balance_enter_idle` /
/// `nohz_balance_exit_idle` via `set_cpu_sd_state_idle/busy`).
pub fn tick_accounting(core: &mut SchedCore, cpu: CpuId) {
    if core.cfg.features.has(Feat::IdleAcctEntry) {
        return;
    }
    let id = core.topo.llc_id[cpu];
    let idle = core.idle_cpu(cpu);
    let rq = &mut core.rqs[cpu];
    if idle && !rq.nohz_idle {
        rq.nohz_idle = true;
        core.llc[id].dec_busy();
    } else if !idle && rq.nohz_idle {
        rq.nohz_idle = false;
        core.llc[id].inc_busy();
    }
}
