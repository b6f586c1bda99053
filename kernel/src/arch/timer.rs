//! The per-CPU periodic tick (local APIC timer): counts ticks, records the
//! watchdog heartbeat, re-arms TSC-deadline mode. The scheduler hooks in here.

use core::sync::atomic::Ordering;

use spin::Once;

use super::apic::{self, TimerSetup};
use super::{percpu, time};

static SETUP: Once<TimerSetup> = Once::new();

/// Calibrates the APIC timer for `hz` ticks per second (boot CPU, once).
pub fn init(hz: u32) -> TimerSetup {
    *SETUP.call_once(|| apic::timer_calibrate(hz))
}

/// Starts the tick on the executing CPU (after `init`).
pub fn start_this_cpu() {
    apic::timer_start(SETUP.get().expect("timer::init not called"));
}

/// Timer interrupt handler (interrupt context).
pub fn handle_tick() {
    let me = percpu::current();
    // The time first: a watcher that reads a stale time and then the count
    // must not see the new count with the old time.
    me.last_tick_ns.store(time::now_ns(), Ordering::Relaxed);
    me.ticks.fetch_add(1, Ordering::Release);
    if let Some(setup) = SETUP.get() {
        apic::timer_rearm(setup);
    }
}
