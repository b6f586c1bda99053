//! Interrupt and exception entry (stable Rust: `global_asm!`, no `x86-interrupt` ABI).
//!
//! 256 entry stubs, each 16 bytes apart starting at `trap_stubs`, push a dummy
//! error code when the CPU pushes none, push the vector and jump to
//! `trap_common`, which saves all general-purpose registers into a [`TrapFrame`],
//! calls [`trap_dispatch`] and returns with `iretq`.

use core::arch::global_asm;

use super::{apic, fpu, ipi, pic, timer};

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

/// Rust side of every interrupt and exception.
extern "sysv64" fn trap_dispatch(frame: &mut TrapFrame) {
    // SAFETY: every IDT gate is an interrupt gate, so the CPU cleared IF on
    // entry; `iretq` restores it after this function returns.
    let irq = unsafe { super::irq::IrqsOff::assume() };
    let irq = &irq;
    let vector = frame.vector as u8;
    match vector {
        2 if crate::watchdog::fired() => crate::watchdog::nmi_report(frame),
        7 => {
            if let Err(why) = fpu::device_not_available(frame) {
                crate::fault::cpu_exception_because(frame, why)
            }
        }
        0..32 => crate::fault::cpu_exception(frame),
        apic::TIMER_VECTOR => {
            timer::handle_tick();
            apic::eoi();
            crate::watchdog::on_tick();
            crate::task::sched::on_tick(irq);
        }
        apic::RESCHEDULE_VECTOR => {
            ipi::handle_reschedule();
            apic::eoi();
            crate::task::sched::on_reschedule_ipi(irq);
        }
        apic::CALL_FUNCTION_VECTOR => {
            ipi::handle_call_function();
            apic::eoi();
        }
        apic::ERROR_VECTOR => {
            log::warn!("local APIC error interrupt");
            apic::eoi();
        }
        // Spurious interrupts are not acknowledged (Intel SDM 10.9).
        apic::SPURIOUS_VECTOR => {}
        // The 8259s are masked; only their spurious IRQ 7 / 15 can show up.
        v if v == pic::PIC_VECTOR_BASE + 7 || v == pic::PIC_VECTOR_BASE + 15 => {}
        _ => crate::fault::unexpected_interrupt(frame),
    }
}
