//! Time: the TSC, calibrated once at boot, is the kernel's clock.
//!
//! The frequency comes from CPUID leaf 0x15 when it states the crystal clock
//! exactly (common on recent Intel servers), otherwise from timing the TSC
//! against PIT channel 2 (i8254 at 1.193182 MHz, emulated by QEMU). The source
//! is reported in the records so a result says how its clock was obtained.
//! Under TCG the TSC is one global source, synchronous across vCPUs.

use core::arch::x86_64::{__cpuid, _rdtsc};
use core::sync::atomic::{AtomicU64, Ordering};

use x86_64::instructions::port::Port;

static TSC_HZ: AtomicU64 = AtomicU64::new(0);
static TSC_AT_BOOT: AtomicU64 = AtomicU64::new(0);
/// ns = (tsc_delta * MULT) >> 32
static NS_MULT: AtomicU64 = AtomicU64::new(0);

/// Where the TSC frequency came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TscSource {
    /// CPUID leaf 0x15 (crystal clock and TSC/crystal ratio).
    Cpuid15,
    /// Timed against PIT channel 2.
    Pit,
}

impl TscSource {
    /// Name used in records.
    pub fn name(self) -> &'static str {
        match self {
            TscSource::Cpuid15 => "cpuid15",
            TscSource::Pit => "pit",
        }
    }
}

/// Reads the time-stamp counter.
#[inline]
pub fn rdtsc() -> u64 {
    // SAFETY: RDTSC is available on every x86_64 CPU and has no side effects.
    unsafe { _rdtsc() }
}

const PIT_HZ: u64 = 1_193_182;
const PIT_CALIBRATION_MS: u64 = 50;

/// TSC cycles elapsed while PIT channel 2 counts down `PIT_CALIBRATION_MS`.
fn tsc_hz_from_pit() -> u64 {
    let mut gate = Port::<u8>::new(0x61);
    let mut command = Port::<u8>::new(0x43);
    let mut ch2 = Port::<u8>::new(0x42);
    let count = PIT_HZ * PIT_CALIBRATION_MS / 1000;
    // SAFETY: ports 0x42/0x43/0x61 are the i8254 PIT and the NMI/speaker
    // control register; channel 2 is used by nobody else, and the speaker
    // output is kept disabled (bit 1 clear).
    unsafe {
        let g = gate.read();
        gate.write((g & !0x02) & !0x01);
        command.write(0xB0); // channel 2, lobyte/hibyte, mode 0, binary
        ch2.write(count as u8);
        ch2.write((count >> 8) as u8);
        let g = gate.read();
        gate.write(g | 0x01); // start counting
        let start = rdtsc();
        while gate.read() & 0x20 == 0 {
            core::hint::spin_loop();
        }
        let end = rdtsc();
        (end - start) * 1000 / PIT_CALIBRATION_MS
    }
}

fn tsc_hz_from_cpuid() -> Option<u64> {
    if __cpuid(0).eax < 0x15 {
        return None;
    }
    let r = __cpuid(0x15);
    // eax = denominator, ebx = numerator, ecx = crystal Hz (0 = not stated).
    (r.eax != 0 && r.ebx != 0 && r.ecx != 0).then(|| r.ecx as u64 * r.ebx as u64 / r.eax as u64)
}

/// Calibrates the TSC on the boot CPU. Returns (Hz, source).
pub fn init() -> (u64, TscSource) {
    let (hz, source) = match tsc_hz_from_cpuid() {
        Some(hz) => (hz, TscSource::Cpuid15),
        None => (tsc_hz_from_pit(), TscSource::Pit),
    };
    assert!(
        hz > 1_000_000,
        "TSC calibration gave an implausible {hz} Hz"
    );
    TSC_HZ.store(hz, Ordering::Relaxed);
    NS_MULT.store(
        ((1_000_000_000u128 << 32) / hz as u128) as u64,
        Ordering::Relaxed,
    );
    TSC_AT_BOOT.store(rdtsc(), Ordering::Relaxed);
    (hz, source)
}

/// Stops PIT channel 0 (the firmware leaves it ticking at 18.2 Hz): mode 0
/// (interrupt on terminal count) with a count of 1 ends after one period and
/// never re-arms. Its IRQ is masked at the PIC anyway; this removes the timer
/// itself, whose phase was set by the firmware.
pub fn stop_pit_channel0() {
    let mut command = Port::<u8>::new(0x43);
    let mut ch0 = Port::<u8>::new(0x40);
    // SAFETY: ports 0x40/0x43 are the i8254's channel 0 and command register;
    // the kernel never uses channel 0 (its tick is the local APIC timer).
    unsafe {
        command.write(0x30); // channel 0, lobyte/hibyte, mode 0, binary
        ch0.write(1);
        ch0.write(0);
    }
}

/// Moves the origin of [`now_ns`] to this instant (used once, after the
/// `-icount` alignment, so kernel times exclude the alignment wait).
pub fn restart_clock() {
    TSC_AT_BOOT.store(rdtsc(), Ordering::Relaxed);
}

/// Calibrated TSC frequency (0 before `init`).
pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// Converts a TSC delta to nanoseconds.
pub fn tsc_to_ns(delta: u64) -> u64 {
    ((delta as u128 * NS_MULT.load(Ordering::Relaxed) as u128) >> 32) as u64
}

/// Nanoseconds since calibration.
pub fn now_ns() -> u64 {
    tsc_to_ns(rdtsc().saturating_sub(TSC_AT_BOOT.load(Ordering::Relaxed)))
}

/// Busy-waits for `ns` nanoseconds.
pub fn delay_ns(ns: u64) {
    let end = now_ns() + ns;
    while now_ns() < end {
        core::hint::spin_loop();
    }
}
