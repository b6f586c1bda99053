//! Fatal paths: Rust panics and CPU exceptions. Each prints a readable report
//! (CPU, what happened, where) and a `fault` record to serial using the
//! lock-free emergency writer, then ends the run with a failing exit status.

use core::fmt::Write;
use core::panic::PanicInfo;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::qemu::{self, ExitCode};
use crate::arch::trap::TrapFrame;
use crate::arch::{cpu, percpu, serial};
use crate::record::{Escaper, PREFIX};

/// Set by the first CPU to enter a fatal path; later ones only halt, so one
/// clean report reaches the console.
static DYING: AtomicBool = AtomicBool::new(false);

fn claim_report() -> bool {
    !DYING.swap(true, Ordering::SeqCst)
}

/// Writes through the emergency (lock-free) serial path.
struct Emergency;

impl Write for Emergency {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        serial::write_fmt_emergency(format_args!("{s}"));
        Ok(())
    }
}

fn finish(kind: ExitCode) -> ! {
    let _ = writeln!(
        Emergency,
        "{PREFIX}{{\"type\":\"exit\",\"status\":\"{}\"}}",
        kind.name()
    );
    qemu::exit(kind)
}

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    let _off = crate::arch::irq::disable();
    if !claim_report() {
        cpu::halt_forever();
    }
    let cpu = percpu::cpu_index();
    let (file, line) = info
        .location()
        .map_or(("<unknown>", 0), |l| (l.file(), l.line()));
    let msg = info.message();
    let _ = writeln!(
        Emergency,
        "\n!!! PANIC on CPU {cpu} at {file}:{line}: {msg}"
    );
    let mut w = Emergency;
    let _ = write!(
        w,
        "{PREFIX}{{\"type\":\"fault\",\"kind\":\"panic\",\"cpu\":{cpu},\"file\":\""
    );
    let _ = write!(Escaper(&mut w), "{file}");
    let _ = write!(w, "\",\"line\":{line},\"message\":\"");
    let _ = write!(Escaper(&mut w), "{msg}");
    let _ = writeln!(w, "\"}}");
    finish(ExitCode::Panic)
}

/// Mnemonic and name of an architectural exception vector.
pub fn exception_name(vector: u8) -> (&'static str, &'static str) {
    match vector {
        0 => ("#DE", "Divide Error"),
        1 => ("#DB", "Debug"),
        2 => ("NMI", "Non-Maskable Interrupt"),
        3 => ("#BP", "Breakpoint"),
        4 => ("#OF", "Overflow"),
        5 => ("#BR", "BOUND Range Exceeded"),
        6 => ("#UD", "Invalid Opcode"),
        7 => ("#NM", "Device Not Available"),
        8 => ("#DF", "Double Fault"),
        10 => ("#TS", "Invalid TSS"),
        11 => ("#NP", "Segment Not Present"),
        12 => ("#SS", "Stack-Segment Fault"),
        13 => ("#GP", "General Protection"),
        14 => ("#PF", "Page Fault"),
        16 => ("#MF", "x87 Floating-Point Error"),
        17 => ("#AC", "Alignment Check"),
        18 => ("#MC", "Machine Check"),
        19 => ("#XM", "SIMD Floating-Point Exception"),
        20 => ("#VE", "Virtualization Exception"),
        21 => ("#CP", "Control Protection"),
        28 => ("#HV", "Hypervisor Injection"),
        29 => ("#VC", "VMM Communication"),
        30 => ("#SX", "Security Exception"),
        _ => ("#??", "Reserved"),
    }
}

/// Reports an exception (vectors 0-31) and ends the run. Never returns.
pub fn cpu_exception(f: &TrapFrame) -> ! {
    report_exception(f, None)
}

/// Like [`cpu_exception`], for an exception a handler looked at and refused
/// (e.g. #NM outside a thread), with the handler's `reason`.
pub fn cpu_exception_because(f: &TrapFrame, reason: &str) -> ! {
    report_exception(f, Some(reason))
}

fn report_exception(f: &TrapFrame, reason: Option<&str>) -> ! {
    if !claim_report() {
        cpu::halt_forever();
    }
    let cpu = percpu::cpu_index();
    let vector = f.vector as u8;
    let (mnemonic, name) = exception_name(vector);
    let cr2 = if vector == 14 { Some(cpu::cr2()) } else { None };
    let mut w = Emergency;
    let _ = writeln!(
        w,
        "\n!!! CPU {cpu}: EXCEPTION {mnemonic} {name} (vector {vector}) error_code={:#x}",
        f.error_code
    );
    if let Some(reason) = reason {
        let _ = writeln!(w, "    {reason}");
    }
    if let Some(cr2) = cr2 {
        let e = f.error_code;
        let _ = writeln!(
            w,
            "    page fault at CR2={cr2:#018x}: {} {} access in {} mode",
            if e & 1 != 0 {
                "protection violation on"
            } else {
                "non-present page,"
            },
            if e & 0x10 != 0 {
                "instruction-fetch"
            } else if e & 2 != 0 {
                "write"
            } else {
                "read"
            },
            if e & 4 != 0 { "user" } else { "kernel" },
        );
    }
    let _ = writeln!(
        w,
        "    RIP={:#018x} CS={:#x} RFLAGS={:#x} RSP={:#018x} SS={:#x}",
        f.rip, f.cs, f.rflags, f.rsp, f.ss
    );
    let _ = writeln!(
        w,
        "    RAX={:#x} RBX={:#x} RCX={:#x} RDX={:#x} RSI={:#x} RDI={:#x} RBP={:#x}",
        f.rax, f.rbx, f.rcx, f.rdx, f.rsi, f.rdi, f.rbp
    );
    let _ = write!(
        w,
        "{PREFIX}{{\"type\":\"fault\",\"kind\":\"exception\",\"cpu\":{cpu},\"vector\":{vector},\
         \"mnemonic\":\"{mnemonic}\",\"name\":\"{name}\",\"error_code\":{},\"rip\":{},\"rsp\":{}",
        f.error_code, f.rip, f.rsp
    );
    if let Some(cr2) = cr2 {
        let _ = write!(w, ",\"cr2\":{cr2}");
    }
    if let Some(reason) = reason {
        let _ = write!(w, ",\"reason\":\"");
        let _ = write!(Escaper(&mut w), "{reason}");
        let _ = write!(w, "\"");
    }
    let _ = writeln!(w, "}}");
    finish(ExitCode::Exception)
}

/// An interrupt vector nobody registered for: reported as a fatal exception-like fault.
pub fn unexpected_interrupt(f: &TrapFrame) -> ! {
    if !claim_report() {
        cpu::halt_forever();
    }
    let cpu = percpu::cpu_index();
    let _ = writeln!(
        Emergency,
        "\n!!! CPU {cpu}: unexpected interrupt vector {} at RIP={:#018x}\n{PREFIX}{{\"type\":\"fault\",\"kind\":\"unexpected_interrupt\",\"cpu\":{cpu},\"vector\":{},\"rip\":{}}}",
        f.vector, f.rip, f.vector, f.rip
    );
    finish(ExitCode::Exception)
}
