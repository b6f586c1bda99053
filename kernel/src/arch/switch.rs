//! The context switch. A thread that is not running is fully described by
//! its saved stack pointer ([`Context`]): `switch_context` pushes the
//! callee-saved registers (rbx, rbp, r12-r15) on the old stack, stores rsp,
//! loads the new rsp and pops the new thread's registers. Everything else is caller-saved by the
//! System V ABI. Always called with interrupts disabled.
//!
//! FPU/SSE: the kernel target (`x86_64-unknown-none`) is soft-float, so
//! compiled code holds no x87/SSE state and `switch_context` saves none.
//! Threads that use the FPU through inline assembly are handled around it
//! (`fpu.rs`): `task::sched::switch_to` calls `fpu::switch_out` right before
//! `switch_context` (fxsave while the old context is still ours, then
//! CR0.TS set) and `fpu::switch_in` right after it on the resumed context
//! (clts + fxrstor for an FPU thread).

use core::arch::naked_asm;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::irq::IrqsOff;

/// An execution context: its saved stack pointer while it does not run, and
/// its `on_cpu` flag (Linux's `p->on_cpu`): set while a CPU runs it, taken by
/// [`switch`] before resuming it and released only after it is saved.
pub struct Context {
    rsp: AtomicU64,
    on_cpu: AtomicBool,
}

impl Context {
    /// The context running now on this CPU (its boot/idle context): its
    /// stack pointer is stored by the first switch away from it.
    pub const fn running() -> Context {
        Context {
            rsp: AtomicU64::new(0),
            on_cpu: AtomicBool::new(true),
        }
    }

    /// A new context on `stack` whose first switch-in enters `entry` (see
    /// [`initial_stack`]).
    pub fn new(stack: &mut [u64], entry: extern "sysv64" fn() -> !) -> Context {
        Context {
            rsp: AtomicU64::new(initial_stack(stack, entry)),
            on_cpu: AtomicBool::new(false),
        }
    }

    /// Whether a CPU still runs it (or has not finished saving it).
    pub fn is_on_cpu(&self) -> bool {
        self.on_cpu.load(Ordering::Acquire)
    }
}

/// Saves the running context `prev`, releases it, then takes and resumes
/// `next`; returns when `prev` is resumed (by some CPU).
///
/// # Safety
/// `prev` must be the context running now on this CPU. `next` must be a
/// context made by [`Context::new`] or saved by an earlier `switch`, whose
/// stack stays allocated until it runs again and for as long as it runs; it
/// may still be running elsewhere (this waits for its release). `prev`
/// itself is touched only until this switch has released it; its stack must
/// stay allocated until it is resumed, or for good if it never is (an
/// exited thread's).
pub unsafe fn switch(_irq: &IrqsOff, prev: &Context, next: &Context) {
    // SAFETY: interrupts are off (the token); the caller guarantees the
    // contexts and their stacks as `switch_context` requires.
    unsafe {
        switch_context(
            prev.rsp.as_ptr(),
            &prev.on_cpu,
            next.rsp.as_ptr(),
            &next.on_cpu,
        )
    }
}

/// Saves the current context, releases it, then takes and resumes the next.
///
/// 1. push callee-saved registers, store rsp to `*save_rsp`;
/// 2. clear `*prev_on_cpu` (the saved context may now be resumed elsewhere;
///    nothing below touches the old stack again);
/// 3. spin until `*next_on_cpu` can be changed from 0 to 1 (the CPU that last
///    ran the next context has finished step 2 for it);
/// 4. load rsp from `*load_rsp`, pop, return into the next context.
///
/// Releasing before acquiring means two CPUs that swap contexts with each
/// other can never wait on one another.
///
/// # Safety
/// Interrupts must be off. `save_rsp`/`prev_on_cpu` must belong to the
/// running context, `load_rsp`/`next_on_cpu` to a live context that is either
/// running elsewhere (and will be released) or saved; `*load_rsp` must come
/// from an earlier `switch_context` or [`initial_stack`].
#[unsafe(naked)]
unsafe extern "sysv64" fn switch_context(
    save_rsp: *mut u64,
    prev_on_cpu: *const AtomicBool,
    load_rsp: *const u64,
    next_on_cpu: *const AtomicBool,
) {
    naked_asm!(
        "push rbp",
        "push rbx",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "mov [rdi], rsp",
        // Release: x86 stores are not reordered with earlier stores.
        "mov byte ptr [rsi], 0",
        "2:",
        "xor eax, eax",
        "mov r8d, 1",
        "lock cmpxchg byte ptr [rcx], r8b",
        "je 3f",
        "pause",
        "jmp 2b",
        "3:",
        "mov rsp, [rdx]",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop rbx",
        "pop rbp",
        "ret",
    )
}

/// Number of u64 slots `initial_stack` uses at the top of a stack.
const FRAME_WORDS: usize = 8;

/// Prepares `stack` so that the first `switch_context` into it "returns" into
/// `entry` with a System V-conformant stack (rsp = 8 mod 16 at entry, as
/// after a call). Returns the initial saved rsp.
fn initial_stack(stack: &mut [u64], entry: extern "sysv64" fn() -> !) -> u64 {
    let base = stack.as_ptr() as usize;
    // Highest 16-byte-aligned address within the stack, as an index.
    let top = ((base + stack.len() * 8) & !15) - base;
    let top = top / 8;
    assert!(top >= FRAME_WORDS + 2, "stack too small");
    stack[top - 1] = 0; // fake return address of `entry` (never used)
    stack[top - 2] = entry as *const () as u64; // popped by `ret`
    for w in &mut stack[top - FRAME_WORDS..top - 2] {
        *w = 0; // r15, r14, r13, r12, rbx, rbp
    }
    &stack[top - FRAME_WORDS] as *const u64 as u64
}
