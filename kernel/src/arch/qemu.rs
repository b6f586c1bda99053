//! Leaving the machine with a status: QEMU's `isa-debug-exit` device at port 0xF4.
//!
//! Writing `v` makes QEMU exit with status `(v << 1) | 1`. The codes are shared
//! with xtask (see `docs/results.md`). On real hardware the port write does nothing
//! and the CPU halts with interrupts off after printing its final record.

use x86_64::instructions::port::Port;

/// Why the kernel stops. The discriminant is the value written to the exit port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ExitCode {
    /// The experiment finished and its checks passed (QEMU status 33).
    Success = 0x10,
    /// The experiment ran but failed its checks, or its configuration was bad (35).
    Failure = 0x11,
    /// A Rust panic (37).
    Panic = 0x12,
    /// An unexpected CPU exception (39).
    Exception = 0x13,
    /// The watchdog saw no progress (41).
    Watchdog = 0x14,
}

impl ExitCode {
    /// Name used in the final `exit` record.
    pub fn name(self) -> &'static str {
        match self {
            ExitCode::Success => "success",
            ExitCode::Failure => "failure",
            ExitCode::Panic => "panic",
            ExitCode::Exception => "exception",
            ExitCode::Watchdog => "watchdog",
        }
    }
}

/// Exits QEMU with `code`; halts forever where there is no debug-exit device.
pub fn exit(code: ExitCode) -> ! {
    let mut port = Port::<u32>::new(0xF4);
    // SAFETY: port 0xF4 is QEMU's isa-debug-exit device (xtask always adds it);
    // on hardware without it the write is ignored by the chipset.
    unsafe { port.write(code as u32) };
    super::cpu::halt_forever()
}
