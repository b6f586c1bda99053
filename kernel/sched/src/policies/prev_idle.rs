//! "prev-idle" policy: a deliberately simple wakeup placement used to prove
//! the policy seam (in the spirit of scx_simple / bpfland's idle-first order).
//!
//! Wakeups: prev_cpu if it is idle; else the first idle CPU of prev's LLC
//! (scanning from prev); else the waker's CPU if idle; else prev.
//! Fork/exec placement, picking, ticks and balancing stay fair.

use crate::CpuId;
use crate::core::SchedCore;
use crate::placement::{self, WakeFlags};
use crate::policy::SchedPolicy;
use crate::task::TaskId;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The prev-idle wakeup policy.
/// Its counters are atomics: every CPU places wakeups concurrently.
#[derive(Debug, Default)]
pub struct PrevIdlePolicy {
    /// Wakeups that went to prev.
    pub to_prev: AtomicU64,
    /// Wakeups that went to another idle CPU of prev's LLC.
    pub to_llc_idle: AtomicU64,
    /// Wakeups that went to the waker's CPU.
    pub to_waker: AtomicU64,
}

impl SchedPolicy for PrevIdlePolicy {
    fn name(&self) -> &'static str {
        "prev_idle"
    }

    fn select_cpu(
        &self,
        core: &mut SchedCore,
        p: TaskId,
        prev_cpu: CpuId,
        this_cpu: CpuId,
        flags: WakeFlags,
        now: u64,
    ) -> CpuId {
        if !flags.has(WakeFlags::TTWU) {
            return placement::select_task_rq_fair(core, p, prev_cpu, this_cpu, flags, now);
        }
        if core.idle_cpu(prev_cpu) {
            self.to_prev.fetch_add(1, Relaxed);
            return prev_cpu;
        }
        let start = (prev_cpu + 1) % core.nr_cpus();
        if let Some(c) = core.topo.llc_span[prev_cpu]
            .iter_wrap(start)
            .find(|&c| core.idle_cpu(c))
        {
            self.to_llc_idle.fetch_add(1, Relaxed);
            return c;
        }
        if core.idle_cpu(this_cpu) {
            self.to_waker.fetch_add(1, Relaxed);
            return this_cpu;
        }
        self.to_prev.fetch_add(1, Relaxed);
        prev_cpu
    }
}
