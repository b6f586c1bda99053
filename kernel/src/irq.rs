//! Vector routing: which kernel code runs for each interrupt and exception.
//! The arch layer only saves registers and calls this table (`arch::trap`);
//! it is built here, above `arch`, and installed once at boot by [`init`].
//!
//! | vector | handler |
//! |---|---|
//! | 2 (NMI) | watchdog report once it fired; a heartbeat probe's answer; else a fault |
//! | 7 (#NM) | a thread's first FPU instruction (`arch::fpu`) |
//! | other 0-31 | CPU exception: fault report, run ends |
//! | LAPIC timer | tick count, EOI, watchdog, scheduler tick |
//! | reschedule IPI | ack, EOI, preemption point |
//! | call-function IPI | run the queued call, EOI |
//! | LAPIC error | warning, EOI |
//! | spurious (LAPIC, 8259 IRQ 7/15) | nothing (no EOI, Intel SDM 10.9) |
//! | anything else | unexpected-interrupt fault |

use crate::arch::irq::IrqsOff;
use crate::arch::trap::{self, Routes, TrapFrame};
use crate::arch::{apic, fpu, ipi, pic, timer};
use crate::{fault, task, watchdog};

/// Installs the routing (before the IDT is loaded).
pub fn init() {
    let mut routes = Routes::new(unexpected);
    for v in 0..32 {
        routes = routes.route(v, exception);
    }
    let routes = routes
        .route(2, nmi)
        .route(7, device_not_available)
        .route(apic::TIMER_VECTOR, timer_tick)
        .route(apic::RESCHEDULE_VECTOR, reschedule)
        .route(apic::CALL_FUNCTION_VECTOR, call_function)
        .route(apic::ERROR_VECTOR, apic_error)
        .route(apic::SPURIOUS_VECTOR, spurious)
        .route(pic::PIC_VECTOR_BASE + 7, spurious)
        .route(pic::PIC_VECTOR_BASE + 15, spurious);
    trap::install(routes);
}

fn exception(_irq: &IrqsOff, frame: &mut TrapFrame) {
    fault::cpu_exception(frame)
}

fn nmi(_irq: &IrqsOff, frame: &mut TrapFrame) {
    if watchdog::fired() && !watchdog::is_reporter() {
        watchdog::nmi_report(frame)
    }
    if watchdog::nmi_probe(frame) {
        return;
    }
    fault::cpu_exception(frame)
}

fn device_not_available(_irq: &IrqsOff, frame: &mut TrapFrame) {
    let handled = fpu::check_device_not_available(frame).and_then(|()| {
        let thread = task::sched::current()
            .ok_or("FPU/SSE instruction outside a thread (idle loop or before the scheduler)")?;
        fpu::first_use(&thread.fpu)
    });
    if let Err(why) = handled {
        fault::cpu_exception_because(frame, why)
    }
}

fn timer_tick(irq: &IrqsOff, _frame: &mut TrapFrame) {
    timer::handle_tick();
    apic::eoi();
    watchdog::on_tick();
    task::sched::on_tick(irq);
}

fn reschedule(irq: &IrqsOff, _frame: &mut TrapFrame) {
    ipi::handle_reschedule();
    apic::eoi();
    task::sched::on_reschedule_ipi(irq);
}

fn call_function(_irq: &IrqsOff, _frame: &mut TrapFrame) {
    ipi::handle_call_function();
    apic::eoi();
}

fn apic_error(_irq: &IrqsOff, _frame: &mut TrapFrame) {
    log::warn!("local APIC error interrupt");
    apic::eoi();
}

fn spurious(_irq: &IrqsOff, _frame: &mut TrapFrame) {}

fn unexpected(_irq: &IrqsOff, frame: &mut TrapFrame) {
    fault::unexpected_interrupt(frame)
}
