//! Interrupt and exception entry (stable Rust: `global_asm!`, no `x86-interrupt` ABI).
//!
//! 256 entry stubs, each 16 bytes apart starting at `trap_stubs`, push a dummy
//! error code when the CPU pushes none, push the vector and jump to
//! `trap_common`, which saves all general-purpose registers into a [`TrapFrame`],
//! calls [`trap_dispatch`] and returns with `iretq`. Which code runs for which
//! vector is not decided here: the kernel installs a [`Routes`] table at boot
//! (`crate::irq`), so this layer calls nothing above it.

use core::arch::global_asm;

use spin::Once;

use super::irq::IrqsOff;

/// Distance between two entry stubs, in bytes.
pub const STUB_STRIDE: usize = 16;

global_asm!(
    r#"
    .section .text.trap_stubs, "ax"
    .balign 16
    .global trap_stubs
trap_stubs:
    .set vec, 0
    .rept 256
    .balign 16
    .if (vec == 8) || (vec >= 10 && vec <= 14) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
    .else
    push 0
    .endif
    push vec
    jmp trap_common
    .set vec, vec + 1
    .endr

trap_common:
    push rax
    push rbx
    push rcx
    push rdx
    push rsi
    push rdi
    push rbp
    push r8
    push r9
    push r10
    push r11
    push r12
    push r13
    push r14
    push r15
    mov rdi, rsp
    cld
    call {dispatch}
    pop r15
    pop r14
    pop r13
    pop r12
    pop r11
    pop r10
    pop r9
    pop r8
    pop rbp
    pop rdi
    pop rsi
    pop rdx
    pop rcx
    pop rbx
    pop rax
    add rsp, 16
    iretq
    "#,
    dispatch = sym trap_dispatch,
);

unsafe extern "C" {
    /// First byte of the entry stub table emitted above.
    static trap_stubs: u8;
}

/// Address of the entry stub for `vector`.
pub fn stub_address(vector: u8) -> u64 {
    let base = &raw const trap_stubs as u64;
    base + vector as u64 * STUB_STRIDE as u64
}

/// Register state saved by `trap_common`, lowest address first.
#[repr(C)]
#[derive(Debug)]
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    pub vector: u64,
    pub error_code: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

impl TrapFrame {
    /// Up to `max` words of the interrupted stack from its `rsp` up, stopping
    /// at the end of the page holding `rsp` (stacks are page-backed heap
    /// memory, so this never touches an unmapped page).
    pub fn stack_words(&self, max: usize) -> impl Iterator<Item = u64> + '_ {
        let page = self.rsp & !0xFFF;
        (0..max as u64)
            .map(move |i| self.rsp + i * 8)
            .take_while(move |addr| addr & !0xFFF == page)
            .map(|addr| {
                // SAFETY: `addr` lies in the same page as the interrupted
                // stack pointer, which is mapped (the CPU pushed this frame
                // just below it); reading a stack word has no side effects.
                unsafe { core::ptr::read_volatile(addr as *const u64) }
            })
    }
}

/// What runs for one vector: interrupt context, interrupts off, `frame` the
/// interrupted state. A handler acknowledges its own interrupt (`apic::eoi`).
pub type Handler = fn(&IrqsOff, &mut TrapFrame);

/// The vector routing: a handler per vector, and one for every other vector.
/// The layer above builds it once at boot (`crate::irq`) and [`install`]s it;
/// this module only saves registers and calls what the table says.
pub struct Routes {
    handlers: [Option<Handler>; 256],
    other: Handler,
}

impl Routes {
    /// A table that sends every vector to `other`.
    pub const fn new(other: Handler) -> Routes {
        Routes {
            handlers: [None; 256],
            other,
        }
    }

    /// Sends `vector` to `h`.
    pub const fn route(mut self, vector: u8, h: Handler) -> Routes {
        self.handlers[vector as usize] = Some(h);
        self
    }
}

static ROUTES: Once<Routes> = Once::new();

/// Installs the vector routing (once, before the IDT is loaded).
pub fn install(routes: Routes) {
    ROUTES.call_once(|| routes);
}

/// Rust side of every interrupt and exception.
extern "sysv64" fn trap_dispatch(frame: &mut TrapFrame) {
    // SAFETY: every IDT gate is an interrupt gate, so the CPU cleared IF on
    // entry; `iretq` restores it after this function returns.
    let irq = unsafe { IrqsOff::assume() };
    let vector = frame.vector as usize;
    let Some(routes) = ROUTES.get() else {
        panic!("vector {vector} before the vector routing was installed: {frame:?}");
    };
    let h = routes.handlers[vector].unwrap_or(routes.other);
    h(&irq, frame);
}
