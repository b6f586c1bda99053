//! The kernel side of scheduling: runs the pure `sched` core under one
//! interrupt-safe lock and carries out its decisions (context switch,
//! reschedule IPIs), keeps the thread table, sleepers and per-CPU state.
//!
//! Locking: one global scheduler lock (`SCHED`) protects the core and the
//! thread table. A CPU decides under the lock, releases it, then switches
//! with interrupts still off. A thread's `on_cpu` flag stays set until the
//! CPU that ran it has saved its context; `switch_context` releases the old
//! context before it acquires the new one (Linux's `p->on_cpu` handshake),
//! so a thread woken or migrated to another CPU mid-switch never runs twice
//! and two CPUs swapping threads never wait on each other.
//! Lock order: primitive state -> wait queue -> scheduler; nothing is ever
//! taken while holding the scheduler lock except the per-CPU cells below.

use alloc::collections::BinaryHeap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cmp::Reverse;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use sched::{DynPolicy, SchedConfig, SchedTopo, Scheduler, TaskId};
use spin::{Mutex, Once};

use super::api::{exit, preempt_point};
use super::switch::switch_context;
use super::thread::{Thread, ThreadId, ThreadState};
use crate::arch::{ipi, percpu, time};
use crate::sync::IrqSpinLock;
use crate::sync::spinlock::IrqGuard;

/// Scheduler-side record of a live thread.
pub(super) struct Slot {
    pub(super) thread: Arc<Thread>,
    pub(super) task: TaskId,
    pub(super) state: ThreadState,
    /// A wakeup arrived while the thread was not blocked yet.
    pub(super) wake_pending: bool,
}

/// Everything under the scheduler lock.
pub struct KernelSched {
    /// The policy core, with the run's policy.
    pub core: Scheduler<DynPolicy>,
    pub(super) slots: Vec<Option<Slot>>,
    pub(super) free_ids: Vec<ThreadId>,
    pub(super) thread_of_task: Vec<Option<ThreadId>>,
    pub(super) sleepers: BinaryHeap<Reverse<(u64, ThreadId)>>,
    /// Threads created / exited so far.
    pub created: u64,
    pub exited: u64,
}

/// Per-CPU scheduling state, touched by its own CPU with interrupts off
/// (the atomics are also read by other CPUs for reports).
pub struct CpuSched {
    current: Mutex<Option<Arc<Thread>>>,
    /// Thread id + 1 of the running thread, 0 = idle (for remote readers).
    pub current_id: AtomicUsize,
    idle_rsp: AtomicU64,
    /// `on_cpu` of the idle context: set while this CPU runs its idle loop.
    idle_on_cpu: AtomicBool,
    prev: Mutex<Option<Arc<Thread>>>,
    /// Context switches done by this CPU.
    pub switches: AtomicU64,
    /// Threads that arrived here having last run on another CPU.
    pub migrations_in: AtomicU64,
}

pub(super) static SCHED: IrqSpinLock<Option<KernelSched>> = IrqSpinLock::new(None);
/// Idle CPUs wait with MONITOR/MWAIT instead of HLT.
static IDLE_MWAIT: AtomicBool = AtomicBool::new(false);

/// Chooses how idle CPUs wait (call before `machine::scheduler_ready`).
pub fn set_idle_mwait(on: bool) {
    IDLE_MWAIT.store(on, Ordering::Relaxed);
}
static CPUS: Once<Vec<CpuSched>> = Once::new();

/// Per-CPU state of `cpu`.
pub fn cpu_state(cpu: usize) -> &'static CpuSched {
    &CPUS.get().expect("scheduler not initialised")[cpu]
}

/// Creates the scheduler for this machine.
pub fn init(topo: SchedTopo, cfg: SchedConfig, policy: DynPolicy, nr_cpus: usize) {
    CPUS.call_once(|| {
        (0..nr_cpus)
            .map(|_| CpuSched {
                current: Mutex::new(None),
                current_id: AtomicUsize::new(0),
                idle_rsp: AtomicU64::new(0),
                idle_on_cpu: AtomicBool::new(true),
                prev: Mutex::new(None),
                switches: AtomicU64::new(0),
                migrations_in: AtomicU64::new(0),
            })
            .collect()
    });
    *SCHED.lock() = Some(KernelSched {
        core: Scheduler::with_policy(topo, cfg, policy),
        slots: Vec::new(),
        free_ids: Vec::new(),
        thread_of_task: Vec::new(),
        sleepers: BinaryHeap::new(),
        created: 0,
        exited: 0,
    });
}

/// Runs `f` on the scheduler state under its lock (for reports and checks).
pub fn with<R>(f: impl FnOnce(&mut KernelSched) -> R) -> R {
    let mut g = SCHED.lock();
    f(g.as_mut().expect("scheduler not initialised"))
}

/// Like [`with`], but gives up after `spins` attempts (for fault reports).
pub fn try_with<R>(spins: usize, f: impl FnOnce(&mut KernelSched) -> R) -> Option<R> {
    for _ in 0..spins {
        if let Some(mut g) = SCHED.try_lock() {
            return g.as_mut().map(f);
        }
        core::hint::spin_loop();
    }
    None
}

fn this_cpu() -> usize {
    percpu::cpu_index() as usize
}

/// Takes the scheduler lock and only then reads the CPU number: with
/// interrupts on, a thread can be preempted and migrated between reading the
/// CPU and locking, and would then act on the wrong CPU's state.
pub(super) fn lock_here() -> (IrqGuard<'static, Option<KernelSched>>, usize) {
    let g = SCHED.lock();
    (g, this_cpu())
}

/// The running thread, if any (None on the idle context). Interrupts are
/// off while the per-CPU cell is locked: a tick that switches threads takes
/// the same cell, and must not find it held by the code it interrupted (nor
/// may the thread migrate between reading the CPU number and locking).
pub fn current() -> Option<Arc<Thread>> {
    x86_64::instructions::interrupts::without_interrupts(|| {
        CPUS.get()
            .and_then(|c| c[this_cpu()].current.lock().clone())
    })
}

impl KernelSched {
    pub(super) fn slot(&mut self, id: ThreadId) -> &mut Slot {
        self.slots[id].as_mut().expect("thread slot is empty")
    }

    pub(super) fn current_id(&self, cpu: usize) -> Option<ThreadId> {
        let t = self.core.current(cpu)?;
        self.thread_of_task.get(t.0 as usize).copied().flatten()
    }

    /// Name and id of what `cpu` runs, and its queued threads (for reports).
    pub fn describe_cpu(&self, cpu: usize) -> (String, Vec<String>) {
        let name_of = |t: TaskId| {
            self.thread_of_task
                .get(t.0 as usize)
                .copied()
                .flatten()
                .and_then(|id| self.slots[id].as_ref())
                .map_or(alloc::format!("task {}", t.0), |s| {
                    alloc::format!("{} '{}'", s.thread.id, s.thread.name)
                })
        };
        let curr = self.core.current(cpu).map_or(String::from("idle"), name_of);
        let queued = self
            .core
            .core
            .rq_tasks(cpu)
            .filter(|&t| Some(t) != self.core.current(cpu))
            .map(name_of)
            .collect();
        (curr, queued)
    }

    /// One line per live thread (at most `limit`): id, name, state.
    pub fn describe_threads(&self, limit: usize) -> Vec<String> {
        let live = self.slots.iter().flatten();
        let mut out: Vec<String> = live
            .clone()
            .take(limit)
            .map(|s| {
                let pending = if s.wake_pending {
                    " (wake pending)"
                } else {
                    ""
                };
                let bound = s
                    .thread
                    .pinned
                    .map_or(String::new(), |c| alloc::format!(", bound to CPU {c}"));
                alloc::format!(
                    "thread {} '{}' (nice {}{bound}): {:?}{pending}",
                    s.thread.id,
                    s.thread.name,
                    s.thread.nice,
                    s.state
                )
            })
            .collect();
        let n = live.count();
        if n > limit {
            out.push(alloc::format!("... and {} more threads", n - limit));
        }
        out
    }

    /// Wakes `t` (if it is still the thread in its slot). Returns CPUs to IPI.
    pub(super) fn wake_locked(
        &mut self,
        t: &Arc<Thread>,
        sync: bool,
        cpu: usize,
        now: u64,
    ) -> Vec<usize> {
        let Some(Some(slot)) = self.slots.get_mut(t.id) else {
            return Vec::new();
        };
        if !Arc::ptr_eq(&slot.thread, t) {
            return Vec::new(); // exited and reaped; the id now names another thread
        }
        match slot.state {
            ThreadState::Blocked => {
                slot.state = ThreadState::Runnable;
                let task = slot.task;
                self.core.wake_up(task, cpu, sync, now).resched
            }
            ThreadState::Runnable => {
                slot.wake_pending = true;
                Vec::new()
            }
        }
    }
}

pub(super) fn send_ipis(cpus: &[usize], me: usize) {
    for &c in cpus {
        if c != me {
            ipi::send_reschedule(c);
        }
    }
}

/// Decides what `cpu` runs next and switches to it. Called with the lock held
/// (interrupts off); returns after this context runs again (maybe elsewhere).
pub(super) fn switch_locked(mut g: IrqGuard<'_, Option<KernelSched>>, cpu: usize) {
    let ks = g.as_mut().expect("scheduler not initialised");
    let now = time::now_ns();
    let sw = ks.core.schedule(cpu, now);
    let next = sw.next.map(|t| {
        let id = ks.thread_of_task[t.0 as usize].expect("picked a task with no thread");
        ks.slot(id).thread.clone()
    });
    let irq_was_on = g.unlock_keep_irqs_off();
    debug_assert!(
        !x86_64::instructions::interrupts::are_enabled(),
        "switch with interrupts on"
    );
    debug_assert_eq!(cpu, this_cpu(), "switch_locked for the wrong CPU");
    send_ipis(&sw.resched, cpu);
    let cs = cpu_state(cpu);
    let prev = cs.current.lock().clone();
    let same = match (&prev, &next) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    };
    if !same {
        if let Some(n) = &next {
            let last = n.last_cpu.swap(cpu as u32, Ordering::Relaxed);
            if last != cpu as u32 && last != u32::MAX {
                cs.migrations_in.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(p) = &prev {
            p.check_canary();
        }
        crate::arch::fpu::switch_out(prev.as_deref().map(|p| &p.fpu));
        let (save, prev_on_cpu) = match &prev {
            Some(p) => (p.rsp.as_ptr(), &p.on_cpu as *const AtomicBool),
            None => (cs.idle_rsp.as_ptr(), &cs.idle_on_cpu as *const AtomicBool),
        };
        let (load, next_on_cpu) = match &next {
            Some(n) => (n.rsp.as_ptr() as *const u64, &n.on_cpu as *const AtomicBool),
            None => (
                cs.idle_rsp.as_ptr() as *const u64,
                &cs.idle_on_cpu as *const AtomicBool,
            ),
        };
        cs.current_id
            .store(next.as_ref().map_or(0, |n| n.id + 1), Ordering::Relaxed);
        *cs.current.lock() = next;
        *cs.prev.lock() = prev;
        cs.switches.fetch_add(1, Ordering::Relaxed);
        // SAFETY: interrupts are off. `save`/`prev_on_cpu` belong to the
        // context running now (a thread kept alive by `cs.prev`, or this CPU's
        // idle context); `load`/`next_on_cpu` belong to a live thread (kept
        // alive by `cs.current`) or to this CPU's idle context, whose rsp was
        // stored by the switch that last left it, or by `initial_stack`.
        unsafe { switch_context(save, prev_on_cpu, load, next_on_cpu) };
        crate::arch::fpu::switch_in();
        finish_switch();
    }
    if irq_was_on {
        x86_64::instructions::interrupts::enable();
    }
}

/// Runs on the new context right after a switch: drops this CPU's reference
/// to the previous thread, freeing its stack if it exited (its context was
/// released by `switch_context` and no CPU will run it again).
fn finish_switch() {
    let cs = cpu_state(this_cpu());
    // A dead thread never runs again once released; if another CPU still
    // has it on_cpu, that CPU's own finish_switch frees the stack.
    if let Some(p) = cs.prev.lock().take()
        && p.has_exited()
        && !p.on_cpu.load(Ordering::Acquire)
    {
        p.release_stack();
    }
}

/// First code of every new thread.
pub(super) extern "sysv64" fn thread_start() -> ! {
    finish_switch();
    x86_64::instructions::interrupts::enable();
    let me = current().expect("thread_start without a current thread");
    if let Some(entry) = me.take_entry() {
        entry();
    }
    exit()
}

/// Timer tick hook (interrupt context, after EOI): sleepers, the core's
/// tick (PELT, preemption, periodic balance), then preemption if needed.
pub fn on_tick() {
    let cpu = this_cpu();
    // An idle CPU does not queue behind busy ones just to account an idle
    // tick: if the lock is taken, its scheduler work waits for the next tick
    // (a light form of Linux's NO_HZ idle; wakeups still reach it by IPI).
    let idle = CPUS
        .get()
        .is_some_and(|c| c[cpu].current_id.load(Ordering::Relaxed) == 0);
    let mut g = if idle {
        match SCHED.try_lock() {
            Some(g) => g,
            None => return,
        }
    } else {
        SCHED.lock()
    };
    let now = time::now_ns();
    let Some(ks) = g.as_mut() else { return };
    let mut resched = Vec::new();
    while let Some(&Reverse((deadline, id))) = ks.sleepers.peek() {
        if deadline > now {
            break;
        }
        ks.sleepers.pop();
        if let Some(Some(slot)) = ks.slots.get(id) {
            let t = slot.thread.clone();
            resched.extend(ks.wake_locked(&t, false, cpu, now));
        }
    }
    resched.extend(ks.core.tick(cpu, now).resched);
    let need = ks.core.need_resched(cpu);
    if need {
        send_ipis(&resched, cpu);
        switch_locked(g, cpu);
    } else {
        drop(g);
        send_ipis(&resched, cpu);
    }
}

/// Reschedule-IPI hook (interrupt context, after EOI).
pub fn on_reschedule_ipi() {
    if CPUS.get().is_some() {
        preempt_point();
    }
}

/// The idle loop of every CPU once the scheduler runs: pick work when asked,
/// otherwise halt until the next interrupt.
pub fn idle_loop() -> ! {
    let cpu = this_cpu();
    // Entering idle: let the core pick (and pull work by newly-idle balance).
    let g = SCHED.lock();
    switch_locked(g, cpu);
    loop {
        x86_64::instructions::interrupts::disable();
        let g = SCHED.lock();
        if g.as_ref().is_some_and(|ks| ks.core.need_resched(cpu)) {
            switch_locked(g, cpu);
            continue;
        }
        drop(g);
        // `sti; hlt` (or `sti; mwait`) is atomic: no wakeup IPI can slip in
        // between. MWAIT also ends on a write to the monitored per-CPU word.
        if IDLE_MWAIT.load(Ordering::Relaxed) {
            crate::arch::cpu::monitor_mwait(cpu_state(cpu).current_id.as_ptr() as *const u8);
        } else {
            x86_64::instructions::interrupts::enable_and_hlt();
        }
    }
}
