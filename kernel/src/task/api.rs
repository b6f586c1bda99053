//! The thread-facing scheduling API: spawn and join, block and wake, sleep,
//! yield, preemption points and exit. Each call takes the scheduler lock,
//! asks the pure core for its decision and lets `sched.rs` carry it out.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use core::cmp::Reverse;
use core::sync::atomic::Ordering;

use sched::TaskPolicy;

use super::sched::{Slot, current, lock_here, send_ipis, switch_locked, thread_start, with};
use super::thread::{Thread, ThreadState};
use crate::arch::time;

/// Handle to wait for a thread's end.
pub struct JoinHandle {
    thread: Arc<Thread>,
}

impl JoinHandle {
    /// Blocks until the thread has exited.
    pub fn join(self) {
        let wq = &self.thread.exit_wq;
        loop {
            wq.prepare();
            if self.thread.has_exited() {
                break;
            }
            block();
        }
        wq.finish();
    }
}

/// Options of a new thread.
#[derive(Clone, Debug, Default)]
pub struct SpawnOptions {
    pub name: String,
    pub nice: i32,
    /// Bind to this CPU for the thread's whole life (no placement decisions,
    /// never balanced away).
    pub pinned: Option<usize>,
}

/// Creates a thread running `f`, placed by the core's fork placement
/// (`select_task_rq` with SD_BALANCE_FORK) unless pinned.
pub fn spawn(opts: SpawnOptions, f: impl FnOnce() + Send + 'static) -> JoinHandle {
    let body: Box<dyn FnOnce() + Send> = Box::new(f);
    let (mut g, cpu) = lock_here();
    let now = time::now_ns();
    let ks = g.as_mut().expect("scheduler not initialised");
    let id = ks.free_ids.pop().unwrap_or_else(|| {
        ks.slots.push(None);
        ks.slots.len() - 1
    });
    let thread = Arc::new(Thread::new(
        id,
        opts.name,
        opts.nice,
        opts.pinned,
        body,
        thread_start,
    ));
    let parent = ks.core.current(cpu);
    let res = match opts.pinned {
        Some(c) => ks
            .core
            .wake_up_new_task_bound(parent, c, opts.nice, TaskPolicy::Normal, now),
        None => ks
            .core
            .wake_up_new_task(parent, cpu, opts.nice, TaskPolicy::Normal, now),
    };
    let t = res.task.0 as usize;
    if ks.thread_of_task.len() <= t {
        ks.thread_of_task.resize(t + 1, None);
    }
    ks.thread_of_task[t] = Some(id);
    ks.slots[id] = Some(Slot {
        thread: thread.clone(),
        task: res.task,
        state: ThreadState::Runnable,
        wake_pending: false,
    });
    ks.created += 1;
    let local = res.resched.contains(&cpu);
    // IPIs go out before interrupts come back, so `cpu` is still this CPU.
    let irq_was_on = g.unlock_keep_irqs_off();
    send_ipis(&res.resched, cpu);
    if irq_was_on {
        x86_64::instructions::interrupts::enable();
    }
    if local {
        preempt_point();
    }
    JoinHandle { thread }
}

/// Reschedules if the core asked this CPU to (thread context, interrupts on).
pub fn preempt_point() {
    let (g, cpu) = lock_here();
    let need = g.as_ref().is_some_and(|ks| ks.core.need_resched(cpu));
    if need {
        switch_locked(g, cpu);
    }
}

/// Gives the CPU to another runnable thread, if the policy prefers one.
pub fn yield_now() {
    let (g, cpu) = lock_here();
    switch_locked(g, cpu);
}

/// Blocks the current thread until a wakeup (returns at once if a wakeup
/// arrived since it last blocked). Callers re-check their condition.
pub fn block() {
    let (mut g, cpu) = lock_here();
    let ks = g.as_mut().expect("scheduler not initialised");
    let id = ks.current_id(cpu).expect("block() outside a thread");
    let slot = ks.slot(id);
    if core::mem::take(&mut slot.wake_pending) {
        return;
    }
    slot.state = ThreadState::Blocked;
    ks.core.block(cpu, time::now_ns());
    switch_locked(g, cpu);
}

/// Wakes `t`; `sync` = the waker is about to sleep (WF_SYNC). Preempts the
/// waker when the core says the wakee should run here now, unless the caller
/// has interrupts off (interrupt handlers, exit path).
pub fn wake(t: &Arc<Thread>, sync: bool) {
    let may_preempt = x86_64::instructions::interrupts::are_enabled();
    let (mut g, cpu) = lock_here();
    let ks = g.as_mut().expect("scheduler not initialised");
    let resched = ks.wake_locked(t, sync, cpu, time::now_ns());
    // IPIs go out before interrupts come back, so `cpu` is still this CPU.
    g.unlock_keep_irqs_off();
    send_ipis(&resched, cpu);
    if may_preempt {
        x86_64::instructions::interrupts::enable();
    }
    if resched.contains(&cpu) && may_preempt {
        preempt_point();
    }
}

/// Sleeps for at least `ns` (tick resolution).
pub fn sleep_ns(ns: u64) {
    let me = current().expect("sleep outside a thread");
    let deadline = time::now_ns() + ns;
    with(|ks| ks.sleepers.push(Reverse((deadline, me.id))));
    while time::now_ns() < deadline {
        block();
    }
}

/// Ends the current thread: leaves the core (the books count it as exited
/// from here on), wakes its joiners, switches away for good. Interrupts stay
/// off throughout, so nothing preempts the thread between these steps.
pub fn exit() -> ! {
    x86_64::instructions::interrupts::disable();
    let me = current().expect("exit() outside a thread");
    let (mut g, cpu) = lock_here();
    let ks = g.as_mut().expect("scheduler not initialised");
    let task = ks.core.exit(cpu, time::now_ns());
    ks.thread_of_task[task.0 as usize] = None;
    drop(ks.slots[me.id].take());
    ks.free_ids.push(me.id);
    ks.exited += 1;
    me.exited.store(true, Ordering::Release);
    drop(g);
    me.exit_wq.wake_all(false);
    drop(me);
    let (g, cpu) = lock_here();
    switch_locked(g, cpu);
    unreachable!("an exited thread was scheduled again")
}
