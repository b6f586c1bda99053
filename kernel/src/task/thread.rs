//! A kernel thread: its stack (with an overflow canary), its saved context,
//! its FPU/SSE state (if it uses the FPU), its process's address space (if
//! any), the closure it runs, and the flags the scheduler glue needs.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use sched::TaskId;
use spin::Mutex;

use super::wait::{WaitLink, WaitQueue};
use crate::arch::fpu::FpuState;
use crate::arch::switch::Context;
use crate::mm::space::AddressSpace;
use crate::sync::IrqSpinLock;

/// Kernel-side thread number (dense, reused after the thread is reaped).
pub type ThreadId = usize;

/// Default stack size of a kernel thread.
pub const STACK_BYTES: usize = bootcfg::THREAD_STACK_BYTES;
/// Written at the lowest words of every stack; a changed value means overflow.
const CANARY: u64 = 0x5CED_1AB5_7ACC_0DE5;
const CANARY_WORDS: usize = 4;

/// Where a thread is in its life, as its wakers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadState {
    /// Queued or running.
    Runnable,
    /// Blocked in the scheduler core (waiting for a wakeup).
    Blocked,
    /// Left the scheduler core: wakeups are ignored (its task id may
    /// already name another thread's task).
    Exited,
}

/// The wakeup state of a thread, under its own lock (Linux's `p->pi_lock`,
/// taken before any runqueue lock): a waker and the thread going to sleep
/// serialise here, so a wakeup is either seen by `block` (`wake_pending`)
/// or finds the thread blocked and wakes it through the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeState {
    pub state: ThreadState,
    /// A wakeup arrived while the thread was not blocked yet.
    pub wake_pending: bool,
}

/// One kernel thread.
pub struct Thread {
    pub id: ThreadId,
    /// Run-wide thread number (never reused; names the thread in traces).
    pub tid: u64,
    pub name: String,
    pub nice: i32,
    /// CPU it is bound to, if any.
    pub pinned: Option<usize>,
    /// Its task in the scheduler core.
    pub task: TaskId,
    /// Wakeup state (see [`WakeState`]).
    pub wake: IrqSpinLock<WakeState>,
    /// Saved stack pointer while not running, and `on_cpu` (true while a CPU
    /// runs it: taken before resuming it, released only after it is saved).
    pub ctx: Context,
    /// CPU it last ran on (u32::MAX = never ran).
    pub last_cpu: AtomicU32,
    stack: Mutex<Option<Box<[u64]>>>,
    entry: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// Set when it exits (readable without any lock).
    pub exited: AtomicBool,
    /// Joiners wait here.
    pub exit_wq: WaitQueue,
    /// Its place in the wait queue it sleeps on, if any (`wait.rs`).
    pub wait: WaitLink,
    /// x87/SSE state, once the thread has used the FPU (`arch/fpu.rs`).
    pub fpu: FpuState,
    /// Its process's page tables; None for a kernel thread (and threads of
    /// the kernel's process), which runs on whatever the CPU has loaded.
    pub space: Option<Arc<AddressSpace>>,
}

impl Thread {
    /// A thread that will run `entry` from `start` on its own stack of
    /// `stack_bytes` (at least [`STACK_BYTES`]), in no address space (set
    /// `space` before sharing it).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: ThreadId,
        name: String,
        nice: i32,
        pinned: Option<usize>,
        task: TaskId,
        entry: Box<dyn FnOnce() + Send>,
        start: extern "sysv64" fn() -> !,
        stack_bytes: usize,
    ) -> Thread {
        let mut stack = alloc::vec![0u64; stack_bytes.max(STACK_BYTES) / 8].into_boxed_slice();
        stack[..CANARY_WORDS].fill(CANARY);
        let ctx = Context::new(&mut stack, start);
        Thread {
            id,
            tid: crate::trace::new_tid(&name),
            name,
            nice,
            pinned,
            task,
            wake: IrqSpinLock::new(WakeState {
                state: ThreadState::Runnable,
                wake_pending: false,
            }),
            ctx,
            last_cpu: AtomicU32::new(u32::MAX),
            stack: Mutex::new(Some(stack)),
            entry: Mutex::new(Some(entry)),
            exited: AtomicBool::new(false),
            exit_wq: WaitQueue::new(),
            wait: WaitLink::new(),
            fpu: FpuState::new(),
            space: None,
        }
    }

    /// Takes the closure to run (once, at thread start).
    pub fn take_entry(&self) -> Option<Box<dyn FnOnce() + Send>> {
        self.entry.lock().take()
    }

    /// Panics if the stack's canary was overwritten (stack overflow).
    pub fn check_canary(&self) {
        if let Some(stack) = self.stack.lock().as_ref() {
            assert!(
                stack[..CANARY_WORDS].iter().all(|&w| w == CANARY),
                "stack overflow in thread {} '{}' (canary overwritten)",
                self.id,
                self.name
            );
        }
    }

    /// Frees the stack of an exited thread (after its CPU left it).
    pub fn release_stack(&self) {
        self.stack.lock().take();
    }

    /// Whether it exited.
    pub fn has_exited(&self) -> bool {
        self.exited.load(Ordering::Acquire)
    }
}
