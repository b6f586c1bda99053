//! Test-only experiments that fail on purpose, so the test suite can prove that
//! faults are visible: each must end the run with its own failing status.

use alloc::sync::Arc;

use crate::arch::qemu::ExitCode;
use crate::machine::Machine;
use crate::sync::Semaphore;
use crate::task::{self, SpawnOptions};
use crate::watchdog;

/// Panics with a recognisable message.
pub fn panic() -> ExitCode {
    log::info!("experiment 'test-panic': panicking on purpose");
    panic!("deliberate panic from the test-panic experiment")
}

/// Writes to a non-canonical-free but unmapped address to raise #PF.
pub fn page_fault() -> ExitCode {
    log::info!("experiment 'test-pagefault': writing to unmapped address 0xdead0000");
    crate::mm::phys::write_unmapped(0x05ce_d1ab);
    log::error!("write to 0xdead0000 did not fault");
    ExitCode::Failure
}

/// Every CPU spins forever with interrupts off (each in a call-function
/// IPI): no CPU ticks, so not even the in-kernel watchdog can see it; only
/// the host's wall-clock timeout can end the run.
pub fn hang() -> ExitCode {
    log::info!("experiment 'test-hang': every CPU spins forever with interrupts off");
    let _never = crate::arch::ipi::call_on_all(|_| {
        loop {
            core::hint::spin_loop();
        }
    });
    let _off = crate::arch::irq::disable();
    loop {
        core::hint::spin_loop();
    }
}

/// Binds a thread to the last CPU that spins there with interrupts off: that
/// CPU stops ticking and its neighbour's heartbeat check must report it.
pub fn stuck(m: &Machine) -> ExitCode {
    let cpu = m.topology.nr_cpus() - 1;
    log::info!("experiment 'test-stuck': a thread on CPU {cpu} spins with interrupts off");
    task::spawn(
        SpawnOptions {
            name: "stuck".into(),
            pinned: Some(cpu),
            ..Default::default()
        },
        || {
            let _off = crate::arch::irq::disable();
            loop {
                core::hint::spin_loop();
            }
        },
    )
    .join();
    log::error!("the stuck thread returned");
    ExitCode::Failure
}

/// Two threads each take one semaphore and wait for the other's: a
/// deadlock the progress watchdog must report, naming the blocked threads.
pub fn deadlock() -> ExitCode {
    log::info!("experiment 'test-deadlock': two threads wait for each other");
    watchdog::arm(3_000_000_000);
    let a = Arc::new((Semaphore::new(0), Semaphore::new(0)));
    let b = a.clone();
    let t1 = task::spawn(
        SpawnOptions {
            name: "waits-for-b".into(),
            ..Default::default()
        },
        move || b.0.down(),
    );
    let c = a.clone();
    let t2 = task::spawn(
        SpawnOptions {
            name: "waits-for-a".into(),
            ..Default::default()
        },
        move || c.1.down(),
    );
    t1.join();
    t2.join();
    log::error!("the deadlocked threads returned");
    ExitCode::Failure
}
