//! Test-only experiments that fail on purpose, so the test suite can prove that
//! faults are visible: each must end the run with its own failing status.

use crate::arch::qemu::ExitCode;

/// Panics with a recognisable message.
pub fn panic() -> ExitCode {
    log::info!("experiment 'test-panic': panicking on purpose");
    panic!("deliberate panic from the test-panic experiment")
}

/// Writes to a non-canonical-free but unmapped address to raise #PF.
pub fn page_fault() -> ExitCode {
    log::info!("experiment 'test-pagefault': writing to unmapped address 0xdead0000");
    let p = 0xdead_0000 as *mut u64;
    // SAFETY: deliberately unsound: this write must fault. Address 0xdead0000 is
    // below the bootloader's mappings (it maps the kernel and physical memory
    // at high addresses), so the page-fault handler ends the run.
    unsafe { core::ptr::write_volatile(p, 0x5ced_1ab) };
    log::error!("write to 0xdead0000 did not fault");
    ExitCode::Failure
}

/// Spins forever with interrupts off; only the host's timeout can end it.
pub fn hang() -> ExitCode {
    log::info!("experiment 'test-hang': spinning forever");
    x86_64::instructions::interrupts::disable();
    loop {
        core::hint::spin_loop();
    }
}
