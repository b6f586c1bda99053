//! The thread-facing scheduling API: spawn and join, block, sleep, yield,
//! preemption points and exit (the wake side is `wake.rs`). Each call turns interrupts off, asks
//! the pure core for its decision (the core takes the runqueue locks it
//! needs) and lets `sched.rs` carry it out.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use sched::{Start, TaskPolicy};

use super::sched::{
    THREADS, add_sleeper, core, current, current_cell, make_room_for_sleepers, on_this_cpu,
    resched_if_needed, schedule, send_ipis, set_task_thread, switch_to, this_cpu, thread_start,
};
use super::thread::{STACK_BYTES, Thread, ThreadState};
use super::wake::WF_NONE;
use crate::arch::{irq, time};
use crate::mm::space::AddressSpace;

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
    /// The address space it runs in (`mm::space`): None = a kernel thread.
    pub space: Option<Arc<AddressSpace>>,
    /// Stack size in bytes; 0 (or less than the default) = the default
    /// 64 KiB (`thread::STACK_BYTES`).
    pub stack_bytes: usize,
}

/// Bytes a thread takes besides its stack, its `Thread` and its room on
/// the runqueues: the `Arc` header, its name, its boxed closure (an
/// estimate on the high side for a workload's closures).
const THREAD_EXTRA_BYTES: usize = 512;

/// Whether `threads` more threads fit before any is made (a workload's
/// `Env::check_threads`): under the core's live-task table
/// (`SchedConfig::max_tasks`), and in the heap's free bytes less a tenth
/// for everything else: per thread its default stack, its `Thread`, its
/// scheduler task, and the room every CPU keeps for every task (`Shared::make_room_for_all_tasks`,
/// the sleeper heaps). Err says which limit, and by how much.
pub fn check_room_for_threads(threads: usize) -> Result<(), String> {
    let (live, max, cpus) = irq::without(|_| {
        let sh = &core().shared;
        (sh.live_tasks(), sh.cfg.max_tasks, sh.nr_cpus())
    });
    if live + threads > max {
        return Err(alloc::format!(
            "{threads} threads with {live} alive exceed the scheduler core's {max} live tasks \
             (SchedConfig::max_tasks)"
        ));
    }
    let per_cpu =
        sched::core::Shared::room_bytes_per_task() + core::mem::size_of::<(u64, Arc<Thread>)>();
    let per = STACK_BYTES
        + core::mem::size_of::<Thread>()
        + THREAD_EXTRA_BYTES
        + sched::core::Shared::task_bytes()
        + cpus * per_cpu;
    let need = threads as u64 * per as u64;
    let (_, free) = crate::mm::heap::usage();
    let usable = (free - free / 10) as u64;
    if need > usable {
        return Err(alloc::format!(
            "{threads} threads need about {} MiB of the kernel heap ({} KiB each: a {} KiB stack, \
             the thread, and room on each of the {cpus} CPUs' runqueues); {} MiB of it are free: \
             give the machine more memory (--memory MIB)",
            need >> 20,
            per >> 10,
            STACK_BYTES >> 10,
            free >> 20
        ));
    }
    Ok(())
}

/// Creates a thread running `f`, placed by the core's fork placement
/// (`select_task_rq` with SD_BALANCE_FORK) unless pinned. Panics with a
/// clear message past `SchedConfig::max_tasks` live threads.
pub fn spawn(opts: SpawnOptions, f: impl FnOnce() + Send + 'static) -> JoinHandle {
    let body: Box<dyn FnOnce() + Send> = Box::new(f);
    // The fork path is where allocation belongs: the core's per-CPU
    // containers get room for every live task here, so no wakeup, block,
    // switch, balance or exit of any thread allocates later.
    let task = on_this_cpu(|_, _| {
        let task = core().reserve_task();
        core().shared.make_room_for_all_tasks();
        task
    })
    .unwrap_or_else(|| {
        panic!(
            "spawn: more than {} threads alive (SchedConfig::max_tasks)",
            core().shared.cfg.max_tasks
        )
    });
    let thread = {
        let mut table = THREADS.lock();
        let id = table.free_ids.pop().unwrap_or_else(|| {
            table.slots.push(None);
            table.slots.len() - 1
        });
        let mut thread = Thread::new(
            id,
            opts.name,
            opts.nice,
            opts.pinned,
            task,
            body,
            thread_start,
            opts.stack_bytes,
        );
        thread.space = opts.space;
        let thread = Arc::new(thread);
        table.slots[id] = Some(thread.clone());
        table.created += 1;
        // Room for every slot's id on the free list: `exit` never allocates.
        let (slots, free) = (table.slots.len(), table.free_ids.len());
        table.free_ids.reserve(slots - free);
        // And in every CPU's sleeper heap: no `sleep` allocates.
        irq::without(|irq| make_room_for_sleepers(irq, slots));
        thread
    };
    set_task_thread(task, Some(thread.clone()));
    let off = irq::save_disable();
    let cpu = this_cpu(off.irqs());
    let now = time::now_ns();
    let parent = core().current(cpu);
    let start = opts.pinned.map_or(Start::Fork, Start::Bound);
    let res = core().start_task(task, parent, cpu, start, opts.nice, TaskPolicy::Normal, now);
    crate::trace::event(cpu, crate::trace::Kind::Fork, thread.tid, res.cpu as u64, 0);
    // IPIs go out before interrupts come back, so `cpu` is still this CPU.
    send_ipis(off.irqs(), &res.resched, cpu);
    drop(off);
    if res.resched.contains(&cpu) {
        preempt_point();
    }
    JoinHandle { thread }
}

/// Reschedules if the core asked this CPU to (thread or interrupt context).
pub fn preempt_point() {
    on_this_cpu(resched_if_needed);
}

/// `sched_yield()`: the core's `yield_task_fair` (CFS skip buddy / EEVDF
/// deadline push, nothing for a lone task), then `schedule()`, as Linux's
/// `do_sched_yield`.
pub fn yield_now() {
    on_this_cpu(|irq, cpu| {
        core().yield_current(cpu, time::now_ns());
        schedule(irq, cpu);
    });
}

/// Blocks the current thread until a wakeup (returns at once if a wakeup
/// arrived since it last blocked). Callers re-check their condition.
pub fn block() {
    let off = irq::save_disable();
    let cpu = this_cpu(off.irqs());
    // The thread is borrowed from this CPU's cell, which nothing else takes
    // while interrupts are off here.
    let cell = current_cell(off.irqs(), cpu);
    let me = cell.as_ref().expect("block() outside a thread");
    // The core blocks the task under the thread's wake lock, so a waker
    // either finds it runnable (and leaves a pending wakeup) or blocked in
    // the core; one runqueue-lock acquisition blocks and picks the next.
    let mut w = me.wake.lock_irqs_off(off.irqs());
    if core::mem::take(&mut w.wake_pending) {
        return;
    }
    w.state = ThreadState::Blocked;
    // The switch stays where the core returned it (it is ~200 bytes: no
    // copy into an Option, none into `switch_to`).
    let (_, mut sw) = core().block_and_schedule(cpu, time::now_ns());
    drop(w);
    drop(cell);
    switch_to(off.irqs(), cpu, &mut sw);
}

/// Sleeps for at least `ns` (tick resolution).
pub fn sleep_ns(ns: u64) {
    let me = current().expect("sleep outside a thread");
    let deadline = time::now_ns() + ns;
    on_this_cpu(|irq, cpu| add_sleeper(irq, cpu, deadline, me));
    while time::now_ns() < deadline {
        block();
    }
}

/// Ends the current thread: leaves the core (the books count it as exited
/// from here on), wakes its joiners, switches away for good. Interrupts stay
/// off throughout, so nothing preempts the thread between these steps.
pub fn exit() -> ! {
    let off = irq::disable();
    let me = current().expect("exit() outside a thread");
    // From here wakeups are ignored: the task id is freed at the switch below
    // and may then name another thread's task.
    me.wake.lock().state = ThreadState::Exited;
    let cpu = this_cpu(&off);
    let task = core().exit(cpu, time::now_ns());
    set_task_thread(task, None);
    {
        let mut table = THREADS.lock();
        table.slots[me.id] = None;
        table.free_ids.push(me.id);
        table.exited += 1;
    }
    me.exited.store(true, Ordering::Release);
    me.exit_wq.wake_all(WF_NONE);
    drop(me);
    schedule(&off, cpu);
    unreachable!("an exited thread was scheduled again")
}
