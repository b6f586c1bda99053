//! COM1 (16550 UART at I/O port 0x3F8): the console for logs and result records.
//!
//! Whole lines are written under one spinlock with interrupts disabled, so lines
//! from different CPUs and from interrupt handlers never interleave.

use core::fmt::{self, Write};

use spin::Mutex;
use uart_16550::SerialPort;
use x86_64::instructions::interrupts;

const COM1: u16 = 0x3F8;

static PORT: Mutex<Option<SerialPort>> = Mutex::new(None);

/// Initialises COM1 (115200 8N1). Call once on the boot CPU before any output.
pub fn init() {
    // SAFETY: 0x3F8 is the standard COM1 base on PC-compatible machines (QEMU and
    // the real servers we target); nothing else in the kernel drives these ports.
    let mut port = unsafe { SerialPort::new(COM1) };
    port.init();
    *PORT.lock() = Some(port);
}

/// Runs `f` with exclusive use of the port, interrupts disabled: everything `f`
/// writes appears as one unbroken piece of output. Does nothing before `init`.
pub fn with_port(f: impl FnOnce(&mut dyn Write) -> fmt::Result) {
    interrupts::without_interrupts(|| {
        if let Some(port) = PORT.lock().as_mut() {
            // SerialPort's fmt::Write never fails; a formatting error from `f`
            // (a Display impl failing) only truncates the line.
            let _ = f(port);
        }
    });
}

/// Writes to COM1 without taking the lock: only for the panic and fatal-exception
/// paths, where the lock may be held by the very code that failed.
pub fn write_fmt_emergency(args: fmt::Arguments<'_>) {
    // SAFETY: see `init`; on the fatal path no other output matters more than the
    // report, and a garbled interleave with a concurrent writer is acceptable.
    let mut port = unsafe { SerialPort::new(COM1) };
    let _ = port.write_fmt(args);
}
