//! The wake path, in one place: `try_to_wake_up` for kernel threads.
//!
//! A waker (a wait queue's `wake_one`/`wake_all`, a CPU's tick for its
//! expired sleepers) names the thread and the `WF_*` flags of its call site
//! (`WakeFlags::SYNC` when the waker is about to sleep, as a pipe write
//! before the writer blocks; [`WF_NONE`] otherwise). Under the thread's wake
//! lock (`Thread::wake`, Linux's `p->pi_lock`, taken before any runqueue
//! lock) [`try_to_wake_up`]:
//! - finds it **blocked**: marks it runnable and lets the core place and
//!   queue it (`Scheduler::wake_up_queue`: `select_task_rq`, then either
//!   enqueue and preemption check at once, or, with TTWU_QUEUE when
//!   `ttwu_queue_cond` holds, the target CPU's wake list, which the target
//!   activates after the reschedule IPI the result names), tracing the
//!   wakeup; a thread whose dequeue the core delayed (DELAY_DEQUEUE) is
//!   still queued, and the core requeues it where it is instead;
//! - finds it still **runnable** (it has not reached `block()` yet): leaves
//!   `wake_pending`, which makes its next `block()` return at once;
//! - finds it **exited**: nothing (its task id may name another thread now).
//!
//! [`wake`] is the thread-context entry: it sends the reschedule IPIs the
//! core asked for and preempts the waker when the wakee should run on the
//! waker's CPU now (unless the caller had interrupts off).

use alloc::sync::Arc;

use sched::{WakeFlags, WakeupResult};

use super::api::preempt_point;
use super::sched::{core, send_ipis, this_cpu};
use super::thread::{Thread, ThreadState};
use crate::arch::irq::{self, IrqsOff};
use crate::arch::time;
use crate::trace;

/// A wakeup with no `WF_*` flag.
pub const WF_NONE: WakeFlags = WakeFlags(0);

/// Wakes `t` from this CPU with the caller's `flags`. Preempts the waker
/// when the core says the wakee runs here now, unless the caller has
/// interrupts off (interrupt handlers, exit path).
pub fn wake(t: &Arc<Thread>, flags: WakeFlags) {
    let off = irq::save_disable();
    let may_preempt = off.were_on();
    let cpu = this_cpu(off.irqs());
    let Some(r) = try_to_wake_up(off.irqs(), t, flags, cpu, time::now_ns()) else {
        return;
    };
    // IPIs go out before interrupts come back, so `cpu` is still this CPU.
    send_ipis(off.irqs(), &r.resched, cpu);
    drop(off);
    if r.resched.contains(&cpu) && may_preempt {
        preempt_point();
    }
}

/// Wakes `t` from this CPU with the caller's `flags`, and never preempts
/// the waker: true if the wakee should run on this CPU now, for a caller
/// that holds a lock (a wait queue's `wake_all`) to act on once it let go.
pub fn wake_no_preempt(t: &Arc<Thread>, flags: WakeFlags) -> bool {
    let off = irq::save_disable();
    let cpu = this_cpu(off.irqs());
    let Some(r) = try_to_wake_up(off.irqs(), t, flags, cpu, time::now_ns()) else {
        return false;
    };
    send_ipis(off.irqs(), &r.resched, cpu);
    r.resched.contains(&cpu)
}

/// Wakes `t` from `cpu` (see the module docs). Returns the core's decision
/// (where `t` was queued, the CPUs to IPI) if `t` was blocked, None if the
/// wakeup was left pending or ignored.
pub(super) fn try_to_wake_up(
    irq: &IrqsOff,
    t: &Arc<Thread>,
    flags: WakeFlags,
    cpu: usize,
    now: u64,
) -> Option<WakeupResult> {
    let mut w = t.wake.lock_irqs_off(irq);
    match w.state {
        ThreadState::Blocked => {
            w.state = ThreadState::Runnable;
            let r = core().wake_up_queue(t.task, cpu, flags, now);
            let sync = u64::from(flags.has(WakeFlags::SYNC));
            trace::event(cpu, trace::Kind::Wakeup, t.tid, r.cpu as u64, sync);
            Some(r)
        }
        ThreadState::Runnable => {
            w.wake_pending = true;
            None
        }
        ThreadState::Exited => None,
    }
}
