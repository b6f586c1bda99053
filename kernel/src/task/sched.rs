//! The kernel side of scheduling: runs the pure `sched` core on every CPU at
//! once and carries out its decisions (context switch, reschedule IPIs),
//! keeps the thread table, the per-CPU sleeper timers and per-CPU state.
//!
//! Locking: the core takes per-runqueue locks itself (a CPU's own, plus a
//! second one in CPU order to move a task; see `kernel/sched/src/core/`);
//! the kernel only keeps interrupts off for the duration of every core call
//! and reads the CPU number after disabling them. Around the core:
//! - a thread's wakeup state (`Thread::wake`, Linux's `p->pi_lock`) is taken
//!   before any runqueue lock, by the thread going to sleep and by wakers;
//! - `TASK_THREAD[task]` maps a core task to its thread (per-task locks);
//! - `THREADS` (the thread table) is taken only to create, reap or list;
//! - each CPU's sleepers and current/previous thread cells are its own;
//! - a remote wakeup may be parked on the target's wake list in the core
//!   (TTWU_QUEUE): the target activates it from its reschedule IPI
//!   (`on_reschedule_ipi`), its idle loop or any `schedule()`.
//!
//! A CPU decides (core call), then switches with interrupts still off. A
//! thread's `on_cpu` flag stays set until the CPU that ran it has saved its
//! context; `switch_context` releases the old context before it acquires the
//! new one (Linux's `p->on_cpu` handshake), so a thread woken or migrated to
//! another CPU mid-switch never runs twice and two CPUs swapping threads
//! never wait on each other.

use alloc::collections::BinaryHeap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cmp::{Ordering as CmpOrdering, Reverse};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use sched::{CpuList, DynPolicy, SchedConfig, SchedTopo, Scheduler, TaskId};
use spin::{Mutex, Once};

use super::api::exit;
use super::thread::{Thread, ThreadId};
use super::wake::{WF_NONE, try_to_wake_up};
use crate::arch::irq::{self, IrqsOff};
use crate::arch::switch::{self, Context};
use crate::arch::{fpu, ipi, percpu, time};
use crate::mm::space::LoadedMm;
use crate::sync::IrqSpinLock;
use crate::trace;

/// The thread table: every live thread by id (for creation, reaping and
/// reports; never touched on the scheduling fast paths).
pub(super) struct ThreadTable {
    pub(super) slots: Vec<Option<Arc<Thread>>>,
    pub(super) free_ids: Vec<ThreadId>,
    /// Threads created / exited so far.
    pub(super) created: u64,
    pub(super) exited: u64,
}

pub(super) static THREADS: IrqSpinLock<ThreadTable> = IrqSpinLock::new(ThreadTable {
    slots: Vec::new(),
    free_ids: Vec::new(),
    created: 0,
    exited: 0,
});

/// A sleeping thread's timer.
struct Sleeper {
    deadline: u64,
    thread: Arc<Thread>,
}

impl PartialEq for Sleeper {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == CmpOrdering::Equal
    }
}
impl Eq for Sleeper {}
impl PartialOrd for Sleeper {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Sleeper {
    fn cmp(&self, o: &Self) -> CmpOrdering {
        (self.deadline, self.thread.id).cmp(&(o.deadline, o.thread.id))
    }
}

/// Per-CPU scheduling state, touched by its own CPU with interrupts off
/// (the atomics are also read by other CPUs for reports).
pub struct CpuSched {
    current: Mutex<Option<Arc<Thread>>>,
    /// Thread id + 1 of the running thread, 0 = idle (for remote readers).
    pub current_id: AtomicUsize,
    /// The idle context (this CPU's boot stack): `on_cpu` while it runs.
    idle: Context,
    prev: Mutex<Option<Arc<Thread>>>,
    /// Threads sleeping until a deadline, woken by this CPU's tick.
    sleepers: IrqSpinLock<BinaryHeap<Reverse<Sleeper>>>,
    /// Context switches done by this CPU.
    pub switches: AtomicU64,
    /// Threads that arrived here having last run on another CPU.
    pub migrations_in: AtomicU64,
    /// The address space in this CPU's CR3 (Linux's `cpu_tlbstate.loaded_mm`).
    mm: LoadedMm,
    /// CR3 loads for a switch to a thread of another address space.
    pub mm_switches: AtomicU64,
    /// NOHZ_IDLE: the scheduler's tick is stopped (this CPU idles tickless).
    /// The LAPIC timer keeps running for the sleepers and the watchdog; what
    /// stops is `sched_tick` (`on_tick` skips the core's tick).
    tick_stopped: AtomicBool,
}

static CORE: Once<Scheduler<DynPolicy>> = Once::new();
/// The thread of each core task, indexed by task id.
static TASK_THREAD: Once<Vec<IrqSpinLock<Option<Arc<Thread>>>>> = Once::new();
static CPUS: Once<Vec<CpuSched>> = Once::new();
/// Idle CPUs wait with MONITOR/MWAIT instead of HLT.
static IDLE_MWAIT: AtomicBool = AtomicBool::new(false);
/// NOHZ_IDLE is on (the core's switch, read once: the reschedule IPI tests
/// it before it looks for a posted kick).
static NOHZ_IDLE: AtomicBool = AtomicBool::new(false);

/// Chooses how idle CPUs wait (call before `machine::scheduler_ready`).
pub fn set_idle_mwait(on: bool) {
    IDLE_MWAIT.store(on, Ordering::Relaxed);
}

/// Per-CPU state of `cpu`.
pub fn cpu_state(cpu: usize) -> &'static CpuSched {
    &CPUS.get().expect("scheduler not initialised")[cpu]
}

/// The thread id `cpu` runs now (None = idle, or before the scheduler
/// starts): a lock-free read for reports.
pub fn running_thread_id(cpu: usize) -> Option<usize> {
    let id = CPUS.get()?.get(cpu)?.current_id.load(Ordering::Relaxed);
    id.checked_sub(1)
}

/// The scheduler core. Call its operations only with interrupts off (its
/// configuration and topology may be read any time).
pub fn core() -> &'static Scheduler<DynPolicy> {
    CORE.get().expect("scheduler not initialised")
}

/// Creates the scheduler for this machine.
pub fn init(topo: SchedTopo, cfg: SchedConfig, policy: DynPolicy, nr_cpus: usize) {
    CPUS.call_once(|| {
        (0..nr_cpus)
            .map(|_| CpuSched {
                current: Mutex::new(None),
                current_id: AtomicUsize::new(0),
                idle: Context::running(),
                prev: Mutex::new(None),
                sleepers: IrqSpinLock::new(BinaryHeap::new()),
                switches: AtomicU64::new(0),
                migrations_in: AtomicU64::new(0),
                mm: LoadedMm::new(),
                mm_switches: AtomicU64::new(0),
                tick_stopped: AtomicBool::new(false),
            })
            .collect()
    });
    TASK_THREAD.call_once(|| (0..cfg.max_tasks).map(|_| IrqSpinLock::new(None)).collect());
    let core = CORE.call_once(|| Scheduler::with_policy(topo, cfg, policy));
    NOHZ_IDLE.store(core.nohz_idle(), Ordering::Relaxed);
}

/// This CPU's number. Only meaningful with interrupts off (a thread with
/// interrupts on can be preempted and migrated between reading its CPU
/// number and using it), hence the token. Read from the per-CPU block
/// (`percpu::installed_cpu_index`): every caller runs after its CPU
/// installed the block (threads, the scheduler's IPI and tick handlers,
/// which check that the scheduler exists first).
#[inline]
pub(super) fn this_cpu(_irq: &IrqsOff) -> usize {
    percpu::installed_cpu_index() as usize
}

/// Runs `f(irq, cpu)` with interrupts off, `cpu` read after disabling them.
pub(super) fn on_this_cpu<R>(f: impl FnOnce(&IrqsOff, usize) -> R) -> R {
    irq::without(|irq| f(irq, this_cpu(irq)))
}

/// The running thread, if any (None on the idle context). Interrupts are
/// off while the per-CPU cell is locked: a tick that switches threads takes
/// the same cell, and must not find it held by the code it interrupted.
pub fn current() -> Option<Arc<Thread>> {
    irq::without(|irq| {
        CPUS.get()
            .and_then(|c| c[this_cpu(irq)].current.lock().clone())
    })
}

/// This CPU's running-thread cell, for a caller with interrupts off that
/// only borrows the thread (no reference count to copy, as [`current`]
/// does). The guard borrows the token, so interrupts stay off while it is
/// held. While it is held nothing on this CPU may take the cell again: no
/// `current()` (wait queues' `prepare`/`finish`, jitter) and no switch
/// (`switch_to` takes it): that CPU would spin on its own lock.
#[inline]
pub(super) fn current_cell<'a>(
    _irq: &'a IrqsOff,
    cpu: usize,
) -> spin::MutexGuard<'a, Option<Arc<Thread>>> {
    cpu_state(cpu).current.lock()
}

/// Registers the thread of a (reserved) core task before it can run.
pub(super) fn set_task_thread(task: TaskId, t: Option<Arc<Thread>>) {
    let map = TASK_THREAD.get().expect("scheduler not initialised");
    *map[task.0 as usize].lock() = t;
}

/// The thread of core task `task` (its callers, the switch and tick paths,
/// have interrupts off).
fn thread_of(irq: &IrqsOff, task: TaskId) -> Option<Arc<Thread>> {
    TASK_THREAD
        .get()?
        .get(task.0 as usize)?
        .lock_irqs_off(irq)
        .clone()
}

/// Threads created and exited so far.
pub fn thread_counts() -> (u64, u64) {
    let t = THREADS.lock();
    (t.created, t.exited)
}

/// The core's machine-wide statistics (per-CPU counters summed).
pub fn stats() -> sched::stats::SchedStats {
    irq::without(|_| core().stats())
}

/// The core's machine-wide statistics as JSON.
pub fn stats_json() -> String {
    let mut s = String::new();
    let st = irq::without(|_| core().stats());
    let _ = st.write_json(&mut s);
    s
}

/// Registers a sleeper on this CPU's (`cpu`, read with interrupts off)
/// timer heap.
/// Threads every CPU's sleeper heap has room for ([`make_room_for_sleepers`]).
static SLEEPER_ROOM: AtomicUsize = AtomicUsize::new(0);

/// Gives every CPU's sleeper heap room for `threads` sleepers, in the
/// core's steps ([`sched::core::ROOM_STEP`]), so that no `sleep` allocates
/// wherever it runs (the spawn path calls it with its thread table's size;
/// 16 bytes per thread per CPU).
pub(super) fn make_room_for_sleepers(_irq: &IrqsOff, threads: usize) {
    if threads <= SLEEPER_ROOM.load(Ordering::Relaxed) {
        return;
    }
    let n = threads.next_multiple_of(sched::core::ROOM_STEP);
    for c in CPUS.get().expect("scheduler not initialised").iter() {
        let mut heap = c.sleepers.lock();
        let len = heap.len();
        heap.reserve_exact(n.saturating_sub(len));
    }
    SLEEPER_ROOM.fetch_max(n, Ordering::Relaxed);
}

pub(super) fn add_sleeper(_irq: &IrqsOff, cpu: usize, deadline: u64, thread: Arc<Thread>) {
    cpu_state(cpu)
        .sleepers
        .lock()
        .push(Reverse(Sleeper { deadline, thread }));
}

/// One line per CPU for a fault report: what runs, need_resched, queued
/// threads. Never waits: a CPU whose runqueue lock is taken is said so.
pub fn describe_cpus(now: u64) -> Vec<String> {
    let Some(core) = CORE.get() else {
        return Vec::new();
    };
    let name_of = |t: TaskId| match TASK_THREAD
        .get()
        .and_then(|m| m.get(t.0 as usize))
        .and_then(|l| l.try_lock())
        .and_then(|g| g.clone())
    {
        Some(th) => alloc::format!("{} '{}'", th.id, th.name),
        None => alloc::format!("task {}", t.0),
    };
    let mut lines = Vec::new();
    for p in percpu::all() {
        let c = p.cpu as usize;
        let age = now.saturating_sub(p.last_tick_ns.load(Ordering::Relaxed)) / 1_000_000;
        let Some(sc) = core.shared.try_lock(c) else {
            lines.push(alloc::format!(
                "CPU {c}: runqueue lock held (by a stuck CPU?); last tick {age} ms ago"
            ));
            continue;
        };
        let rq = &sc.rqs[c];
        let curr = rq.curr.map_or(String::from("idle"), name_of);
        let queued: Vec<String> = sc
            .rq_tasks(c)
            .filter(|&t| Some(t) != rq.curr)
            .map(name_of)
            .collect();
        let listed = if core.shared.ttwu_pending(c) {
            "; wake list pending"
        } else {
            ""
        };
        lines.push(alloc::format!(
            "CPU {c}: running {curr}; need_resched {}{listed}; last tick {age} ms ago; {} queued: [{}]",
            rq.need_resched,
            queued.len(),
            queued.join(", ")
        ));
    }
    lines
}

/// One line per live thread (at most `limit`): id, name, state. Never waits.
pub fn describe_threads(limit: usize) -> Vec<String> {
    let Some(table) = THREADS.try_lock() else {
        return alloc::vec![String::from("(thread table locked)")];
    };
    let live = table.slots.iter().flatten();
    let mut out: Vec<String> = live
        .clone()
        .take(limit)
        .map(|t| {
            let state = t.wake.try_lock().map_or(String::from("(locked)"), |w| {
                let pending = if w.wake_pending {
                    " (wake pending)"
                } else {
                    ""
                };
                alloc::format!("{:?}{pending}", w.state)
            });
            let bound = t
                .pinned
                .map_or(String::new(), |c| alloc::format!(", bound to CPU {c}"));
            alloc::format!(
                "thread {} '{}' (nice {}{bound}): {state}",
                t.id,
                t.name,
                t.nice
            )
        })
        .collect();
    let n = live.count();
    if n > limit {
        out.push(alloc::format!("... and {} more threads", n - limit));
    }
    out
}

/// Trace the tasks the core moved (balancing, exec) from `cpu`'s call: an
/// inline test, the tracing itself out of line.
#[inline]
fn trace_migrations(irq: &IrqsOff, cpu: usize, moved: &[sched::core::Migration]) {
    if !moved.is_empty() && trace::on() {
        trace_moved(irq, cpu, moved);
    }
}

#[inline(never)]
fn trace_moved(irq: &IrqsOff, cpu: usize, moved: &[sched::core::Migration]) {
    for m in moved {
        if let Some(t) = thread_of(irq, m.task) {
            let to = ((m.to as u64) << 4) | m.reason as u64;
            trace::event(cpu, trace::Kind::Migrate, t.tid, m.from as u64, to);
        }
    }
}

/// Gives a spilled move list's room back to the core (a batch of balance
/// moves then never allocates; a list that stayed inline has none).
#[inline]
fn recycle_migrations(cpu: usize, moved: &mut sched::Migrations) {
    if moved.spare_room() > 0 {
        core().recycle_migrations(cpu, core::mem::take(moved));
    }
}

/// Sends the reschedule IPIs a core call asked for, except to `me`, this CPU
/// (interrupts still off since the call, so it is still this CPU).
pub(super) fn send_ipis(_irq: &IrqsOff, cpus: &[usize], me: usize) {
    for &c in cpus {
        if c != me {
            ipi::send_reschedule(c);
        }
    }
}

/// Decides what `cpu` runs next and switches to it; returns after this
/// context runs again (maybe on another CPU: callers re-read the CPU
/// number).
pub(super) fn schedule(irq: &IrqsOff, cpu: usize) {
    switch_to(irq, cpu, &mut core().schedule(cpu, time::now_ns()));
}

/// Reschedules `cpu` if the core asked it to.
pub(super) fn resched_if_needed(irq: &IrqsOff, cpu: usize) {
    if core().need_resched(cpu) {
        schedule(irq, cpu);
    }
}

/// Carries out a `schedule()` decision of this CPU: reschedule IPIs, then
/// the context switch. The crate's one `unsafe` outside `arch/` and `mm/`:
/// the switch's safety rests on which thread runs and when a stack may be
/// freed, which only this module knows.
#[allow(unsafe_code)]
pub(super) fn switch_to(irq: &IrqsOff, cpu: usize, sw: &mut sched::Switch) {
    debug_assert!(!irq::are_enabled(), "schedule with interrupts on");
    debug_assert_eq!(cpu, this_cpu(irq), "schedule for the wrong CPU");
    let next = sw
        .next
        .map(|t| thread_of(irq, t).expect("picked a task with no thread"));
    send_ipis(irq, &sw.resched, cpu);
    trace_migrations(irq, cpu, &sw.migrations);
    recycle_migrations(cpu, &mut sw.migrations);
    let cs = cpu_state(cpu);
    // The cell is this CPU's, taken with interrupts off: `next` goes in
    // once, `prev` comes out by value (no reference count to copy). Locked
    // through `cs` directly, not `current_cell`, which would look the CPU's
    // state up again (16-28 more instructions per round trip under icount).
    let mut cell = cs.current.lock();
    let same = match (&*cell, &next) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    };
    if same {
        return;
    }
    let prev = core::mem::replace(&mut *cell, next);
    let next = cell.as_ref();
    if let Some(n) = next {
        // Leaving tickless idle restarts the tick (`tick_nohz_idle_exit`;
        // the timer keeps its grid): the next one is a normal tick.
        if cs.tick_stopped.load(Ordering::Relaxed) {
            cs.tick_stopped.store(false, Ordering::Relaxed);
        }
        let last = n.last_cpu.swap(cpu as u32, Ordering::Relaxed);
        if last != cpu as u32 && last != u32::MAX {
            cs.migrations_in.fetch_add(1, Ordering::Relaxed);
        }
    }
    if let Some(p) = &prev {
        p.check_canary();
    }
    let (next_tid, prev_tid) = (
        next.map_or(0, |t| t.tid),
        prev.as_ref().map_or(0, |t| t.tid),
    );
    trace::event(cpu, trace::Kind::Switch, next_tid, prev_tid, 0);
    fpu::switch_out(irq, prev.as_deref().map(|p| &p.fpu));
    // switch_mm: a thread of another process than the loaded one loads its
    // page tables; kernel threads and idle load nothing (lazy TLB).
    if let Some(space) = next.and_then(|n| n.space.as_ref())
        && cs.mm.switch_to(space)
    {
        cs.mm_switches.fetch_add(1, Ordering::Relaxed);
    }
    // Raw pointers: the threads stay in `cs.prev`/`cs.current`, which keep
    // them alive across the switch.
    let from: *const Context = prev.as_ref().map_or(&cs.idle, |p| &p.ctx);
    let to: *const Context = next.map_or(&cs.idle, |n| &n.ctx);
    cs.current_id
        .store(next.map_or(0, |n| n.id + 1), Ordering::Relaxed);
    drop(cell);
    *cs.prev.lock() = prev;
    cs.switches.fetch_add(1, Ordering::Relaxed);
    // SAFETY: interrupts are off (`irq`). `from` is the context running now:
    // a thread kept alive by `cs.prev` until the context resumed here runs
    // `finish_switch`, which is after this switch saved and released it, or
    // this CPU's idle context, which lives for good. `to` is a live thread's
    // context (kept alive by `cs.current`) made by `Context::new` or saved
    // by an earlier switch, or this CPU's idle context, saved by the switch
    // that last left it. A thread's stack is freed only after it exited and
    // its context was released (`finish_switch`), so it never runs again.
    unsafe { switch::switch(irq, &*from, &*to) };
    // Resumed, maybe on another CPU: restore this thread's FPU registers.
    fpu::switch_in(
        irq,
        current_cell(irq, this_cpu(irq)).as_deref().map(|t| &t.fpu),
    );
    finish_switch(irq);
}

/// Runs on the new context right after a switch: drops this CPU's reference
/// to the previous thread, freeing its stack if it exited (its context was
/// released by `switch_context` and no CPU will run it again).
fn finish_switch(irq: &IrqsOff) {
    let cs = cpu_state(this_cpu(irq));
    // A dead thread never runs again once released; if another CPU still
    // has it on_cpu, that CPU's own finish_switch frees the stack.
    if let Some(p) = cs.prev.lock().take()
        && p.has_exited()
        && !p.ctx.is_on_cpu()
    {
        p.release_stack();
    }
}

/// Makes every CPU that runs no thread of a process (idle or a kernel
/// thread) leave the address space it lazily kept loaded, so that exited
/// processes' page tables are freed; returns how many CPUs had one. A CPU
/// running a process's thread keeps its space. Not for hot paths (one
/// call-function IPI per CPU).
pub fn leave_lazy_mms() -> usize {
    let left = Arc::new(AtomicUsize::new(0));
    for p in percpu::online() {
        let l = left.clone();
        let done = ipi::call_on(p.cpu as usize, move || {
            // Interrupt context: interrupts are off, so this is the CPU the
            // call runs on and its `current` cell is not held.
            let cs = cpu_state(percpu::cpu_index() as usize);
            let own = cs
                .current
                .lock()
                .as_ref()
                .is_some_and(|t| t.space.is_some());
            if !own && cs.mm.leave_lazy() {
                l.fetch_add(1, Ordering::Relaxed);
            }
        });
        assert!(
            done.wait_timeout(5_000_000_000),
            "CPU {} did not answer the lazy-mm call",
            p.cpu
        );
    }
    left.load(Ordering::Relaxed)
}

/// First code of every new thread.
pub(super) extern "sysv64" fn thread_start() -> ! {
    // Entered by a switch made with interrupts off; the switcher's token
    // stayed with its context, so take (and give back) one of our own.
    let off = irq::disable();
    finish_switch(&off);
    irq::enable(off);
    // No reference to the thread may stay in this frame: `exit` never
    // returns, so one held here would never drop (the thread, and its
    // address space, would leak).
    let (tid, entry) = {
        let me = current().expect("thread_start without a current thread");
        (me.tid, me.take_entry())
    };
    // `--seed`: a seed-derived spin before the body (see `jitter`).
    let jitter = super::jitter::start_jitter_ns(tid);
    if jitter > 0 {
        super::jitter::burn(jitter);
    }
    if let Some(entry) = entry {
        entry();
    }
    exit()
}

/// Timer tick hook (interrupt context, after EOI): this CPU's expired
/// sleepers, the core's tick (PELT, preemption, periodic balance), then
/// preemption if needed.
pub fn on_tick(irq: &IrqsOff) {
    if CORE.get().is_none() {
        return;
    }
    let cpu = this_cpu(irq);
    let now = time::now_ns();
    // Expired sleepers one at a time (no Vec of them to allocate on the tick).
    let mut resched = CpuList::new();
    loop {
        let expired = {
            let mut heap = cpu_state(cpu).sleepers.lock();
            if heap.peek().is_none_or(|s| s.0.deadline > now) {
                break;
            }
            heap.pop().map(|s| s.0.thread)
        };
        if let Some(r) = expired.and_then(|t| try_to_wake_up(irq, &t, WF_NONE, cpu, now)) {
            for &c in r.resched.iter() {
                resched.insert(c);
            }
        }
    }
    // Tickless idle: no `sched_tick` (NOHZ_IDLE). A thread switched in
    // here clears the flag (`switch_to`), so its first tick is a normal one.
    if cpu_state(cpu).tick_stopped.load(Ordering::Relaxed) {
        send_ipis(irq, &resched, cpu);
        if resched.contains(&cpu) {
            schedule(irq, cpu);
        }
        return;
    }
    let mut tick = core().tick(cpu, now);
    trace_migrations(irq, cpu, &tick.migrations);
    recycle_migrations(cpu, &mut tick.migrations);
    for &c in tick.resched.iter() {
        resched.insert(c);
    }
    // NOHZ_IDLE: the idle-load-balancer kick goes as a reschedule IPI;
    // its handler finds the posted flags (`on_reschedule_ipi`).
    if let Some(ilb) = tick.nohz_kick {
        resched.insert(ilb);
    }
    send_ipis(irq, &resched, cpu);
    if tick.need_resched || resched.contains(&cpu) {
        schedule(irq, cpu);
    }
}

/// Activates the wakeups other CPUs put on `cpu`'s wake list
/// (`sched_ttwu_pending`; TTWU_QUEUE) and sends the reschedule IPIs that
/// asks for (a wakee that preempts here sets this CPU's need_resched).
/// One atomic load when the list is empty.
pub(super) fn ttwu_pending(irq: &IrqsOff, cpu: usize) {
    if core().shared.ttwu_pending(cpu) {
        let resched = core().sched_ttwu_pending(cpu, time::now_ns());
        send_ipis(irq, &resched, cpu);
    }
}

/// Reschedule-IPI hook (interrupt context, after EOI): the wake list
/// first (a queued wakeup's IPI sets no need_resched of its own), then a
/// reschedule if the core asked for one.
pub fn on_reschedule_ipi(irq: &IrqsOff) {
    if CORE.get().is_some() {
        let cpu = this_cpu(irq);
        nohz_kick(irq, cpu);
        // Idle with wakeups queued for it: any wakee preempts idle, and
        // `schedule` activates the list before it picks, so one core call
        // (one runqueue-lock acquisition) does both.
        if core().shared.ttwu_pending(cpu) && core().current(cpu).is_none() {
            schedule(irq, cpu);
            return;
        }
        ttwu_pending(irq, cpu);
        resched_if_needed(irq, cpu);
    }
}

/// NOHZ_IDLE: the idle-load-balancer kick posted to `cpu` (its flags
/// arrive with a reschedule IPI): balance for the tickless CPUs
/// (`nohz_csd_func` + `nohz_idle_balance`) and send the IPIs that asks
/// for; a pull onto this CPU sets its need_resched, which the caller
/// tests. One atomic load when nothing is posted.
#[inline]
fn nohz_kick(irq: &IrqsOff, cpu: usize) {
    if NOHZ_IDLE.load(Ordering::Relaxed) {
        nohz_kick_posted(irq, cpu);
    }
}

#[inline(never)]
fn nohz_kick_posted(irq: &IrqsOff, cpu: usize) {
    use sched::balance::nohz::NOHZ_KICK_MASK;
    if core().shared.nohz.flags(cpu) & NOHZ_KICK_MASK == 0 {
        return;
    }
    let mut r = core().nohz_kick(cpu, time::now_ns());
    trace_migrations(irq, cpu, &r.migrations);
    recycle_migrations(cpu, &mut r.migrations);
    send_ipis(irq, &r.resched, cpu);
}

/// The idle loop of every CPU once the scheduler runs: pick work when asked,
/// otherwise halt until the next interrupt.
pub fn idle_loop() -> ! {
    let off = irq::disable();
    // The idle context never migrates: its CPU number holds for good.
    let cpu = this_cpu(&off);
    // Entering idle: let the core pick (and pull work by newly-idle balance).
    schedule(&off, cpu);
    let nohz = NOHZ_IDLE.load(Ordering::Relaxed);
    let stopped = &cpu_state(cpu).tick_stopped;
    // `do_idle` runs again after every `schedule_idle`.
    let mut rescheduled = true;
    loop {
        let off = irq::disable();
        // A wake list that is not empty counts as work: `schedule`
        // activates it before it picks. Checked with interrupts off, so
        // an IPI for a wakeup queued after this test stays pending in the
        // LAPIC and ends the HLT below.
        if core().need_resched(cpu) || core().shared.ttwu_pending(cpu) {
            schedule(&off, cpu);
            rescheduled = true;
            continue;
        }
        // The core's idle entry (`do_idle`: `nohz_run_idle_balance`, then
        // the tick stops) after this loop's `schedule()`, and whenever the
        // CPU would halt with its tick running: after any thread ran here
        // (which restarted the tick, in `switch_to`, wherever the switch
        // came from) and after an interrupt while the core kept the tick.
        // Interrupts stay off from the test above to the halt, so a wakeup
        // meanwhile stays pending and ends it.
        if nohz
            && (rescheduled || !stopped.load(Ordering::Relaxed))
            && core().nohz_idle_enter(cpu, time::now_ns())
        {
            stopped.store(true, Ordering::Relaxed);
        }
        rescheduled = false;
        // `sti; hlt` (or `sti; mwait`) is atomic: no wakeup IPI can slip in
        // between. MWAIT also ends on a write to the monitored per-CPU word.
        if IDLE_MWAIT.load(Ordering::Relaxed) {
            let word = cpu_state(cpu).current_id.as_ptr() as *const u8;
            crate::arch::cpu::monitor_mwait(off, word);
        } else {
            irq::enable_and_hlt(off);
        }
    }
}
