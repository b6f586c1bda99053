//! Time: the TSC, calibrated once at boot, is the kernel's clock.
//!
//! The frequency comes from the first source that gives one, in this order:
//!
//! 1. `cpuid-15h`: CPUID leaf 0x15 when it states the crystal clock exactly
//!    (crystal Hz x numerator / denominator; common on recent Intel servers).
//! 2. `hpet`: timing the TSC against the HPET's main counter (period in
//!    femtoseconds from its capabilities register), found through the ACPI
//!    HPET table.
//! 3. `pm-timer`: timing it against the ACPI PM timer (3.579545 MHz, 24 or
//!    32 bits, port from the FADT).
//! 4. `pit`: timing it against PIT channel 2 (i8254 at 1.193182 MHz).
//!
//! The HPET comes before the PM timer because it is finer (10 ns in QEMU,
//! ~70 ns on chipsets, against 279 ns) and because its counter is restarted
//! from zero for the measurement, so the result does not depend on when the
//! kernel started. That matters under QEMU `-icount`, where runs must repeat
//! exactly (docs/results.md, "Determinism"): every timer is then driven by
//! the virtual clock, and a measurement that starts at a counter edge (PIT:
//! the gate starts channel 2; HPET: the counter is restarted) gives the same
//! TSC count in every run. The PM timer free-runs from reset, so its phase
//! at kernel start follows the firmware's host-timed disk reads; it is
//! therefore skipped under `-icount`, which falls back to the PIT.
//!
//! The source and the value go into the `smp` record (`tsc_source`,
//! `tsc_hz`) so a result says how its clock was obtained; docs/boot.md lists
//! what each QEMU firmware path uses. Under TCG the TSC is one global source,
//! synchronous across vCPUs.

use core::arch::x86_64::_rdtsc;
use core::sync::atomic::{AtomicU64, Ordering};

use raw_cpuid::CpuId;
use x86_64::instructions::port::Port;

static TSC_HZ: AtomicU64 = AtomicU64::new(0);
static TSC_AT_BOOT: AtomicU64 = AtomicU64::new(0);
/// ns = (tsc_delta * MULT) >> 32
static NS_MULT: AtomicU64 = AtomicU64::new(0);

/// Where the TSC frequency came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TscSource {
    /// CPUID leaf 0x15 (crystal clock and TSC/crystal ratio).
    Cpuid15h,
    /// Timed against the HPET main counter.
    Hpet,
    /// Timed against the ACPI PM timer.
    PmTimer,
    /// Timed against PIT channel 2.
    Pit,
}

impl TscSource {
    /// Name used in records.
    pub fn name(self) -> &'static str {
        match self {
            TscSource::Cpuid15h => "cpuid-15h",
            TscSource::Hpet => "hpet",
            TscSource::PmTimer => "pm-timer",
            TscSource::Pit => "pit",
        }
    }
}

/// The calibration's result and the CPU's clock facts next to it.
#[derive(Clone, Copy, Debug)]
pub struct Calibration {
    pub hz: u64,
    pub source: TscSource,
    /// CPUID 0x80000007:EDX[8]: the TSC runs at a constant rate in every
    /// P-, C- and T-state.
    pub invariant: bool,
    /// CPUID leaf 0x16 base frequency in MHz (0 when the leaf is absent or
    /// empty); reported as a cross-check, never used as the TSC rate.
    pub cpuid_base_mhz: u16,
}

/// Reads the time-stamp counter.
#[inline]
pub fn rdtsc() -> u64 {
    // SAFETY: RDTSC is available on every x86_64 CPU and has no side effects.
    unsafe { _rdtsc() }
}

const PIT_HZ: u64 = 1_193_182;
const PM_TIMER_HZ: u64 = 3_579_545;
/// Length of every timed calibration.
const CALIBRATION_MS: u64 = 50;
/// Reads of a timer that does not move before it is declared broken.
const STUCK_READS: u32 = 1_000_000;

/// TSC cycles elapsed while PIT channel 2 counts down `CALIBRATION_MS`.
fn tsc_hz_from_pit() -> u64 {
    let mut gate = Port::<u8>::new(0x61);
    let mut command = Port::<u8>::new(0x43);
    let mut ch2 = Port::<u8>::new(0x42);
    let count = PIT_HZ * CALIBRATION_MS / 1000;
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
        (end - start) * 1000 / CALIBRATION_MS
    }
}

const HPET_CAPABILITIES: u64 = 0x000;
const HPET_CONFIG: u64 = 0x010;
const HPET_COUNTER: u64 = 0x0F0;
const HPET_ENABLE: u64 = 1;
/// Capabilities bit 13: the main counter is 64 bits wide.
const HPET_COUNTER_64: u64 = 1 << 13;
/// Largest period the HPET specification allows (100 ns, in fs).
const HPET_MAX_PERIOD_FS: u64 = 100_000_000;

/// TSC rate timed against the HPET whose registers are at physical `phys`:
/// the counter is halted, zeroed and started, then the TSC is read at the
/// first count and again after `CALIBRATION_MS` of counts. The HPET's
/// configuration is restored afterwards (the kernel uses none of its
/// comparators). `None` if its period is out of range or it does not count.
fn tsc_hz_from_hpet(phys: u64, phys_offset: u64) -> Option<u64> {
    let base = crate::mm::mmio::map(phys, 0x400, phys_offset);
    let reg = |off: u64| (base + off) as *mut u64;
    // SAFETY: `base` maps the HPET's 1 KiB register block uncached (HPET
    // table address, memory space checked by `acpi::clock_hardware`); the
    // capabilities, configuration and main counter registers are 64-bit
    // registers at architectural offsets, and nothing else in the kernel
    // uses the HPET.
    let (cap, config) = unsafe {
        (
            core::ptr::read_volatile(reg(HPET_CAPABILITIES)),
            core::ptr::read_volatile(reg(HPET_CONFIG)),
        )
    };
    let period_fs = cap >> 32;
    if period_fs == 0 || period_fs > HPET_MAX_PERIOD_FS {
        log::warn!("HPET: counter period {period_fs} fs is out of range: not used");
        return None;
    }
    let wide = cap & HPET_COUNTER_64 != 0;
    let read_counter = || {
        // SAFETY: see above; a 32-bit counter is read with a 32-bit access.
        unsafe {
            if wide {
                core::ptr::read_volatile(reg(HPET_COUNTER))
            } else {
                core::ptr::read_volatile(reg(HPET_COUNTER) as *const u32) as u64
            }
        }
    };
    // SAFETY: see above. Writing the main counter is allowed while it is
    // halted (ENABLE_CNF clear); only the ENABLE_CNF bit is changed.
    unsafe {
        core::ptr::write_volatile(reg(HPET_CONFIG), config & !HPET_ENABLE);
        if wide {
            core::ptr::write_volatile(reg(HPET_COUNTER), 0);
        } else {
            core::ptr::write_volatile(reg(HPET_COUNTER) as *mut u32, 0);
        }
        core::ptr::write_volatile(reg(HPET_CONFIG), config | HPET_ENABLE);
    }
    let ticks = CALIBRATION_MS * 1_000_000_000_000 / period_fs;
    let result = time_against(read_counter, ticks, u64::MAX);
    // SAFETY: see above; puts back the configuration the firmware left.
    unsafe { core::ptr::write_volatile(reg(HPET_CONFIG), config) };
    let (tsc, counts) = result?;
    Some((tsc as u128 * 1_000_000_000_000_000 / (counts as u128 * period_fs as u128)) as u64)
}

/// The ACPI power-management timer (3.579545 MHz), as the FADT gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmTimer {
    /// I/O port of the PM_TMR register.
    pub port: u16,
    /// Counter width: 24 or 32 bits (FADT flag TMR_VAL_EXT).
    pub bits: u8,
}

/// Timers found in the ACPI tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockHardware {
    /// From the FADT; `None` when it has no (I/O-space) PM timer.
    pub pm_timer: Option<PmTimer>,
    /// Physical address of the HPET's register block (HPET table).
    pub hpet: Option<u64>,
}

/// TSC rate timed against the ACPI PM timer. The window starts at a counter
/// edge, so it measures whole timer periods.
fn tsc_hz_from_pm_timer(t: PmTimer) -> Option<u64> {
    let mask = if t.bits == 32 {
        u32::MAX as u64
    } else {
        0xFF_FFFF
    };
    let mut port = Port::<u32>::new(t.port);
    // SAFETY: the FADT names this port as the PM_TMR register, a read-only
    // free-running counter; reading it has no side effects.
    let mut read = || unsafe { port.read() } as u64 & mask;
    let first = read();
    let mut stuck = 0;
    while read() == first {
        stuck += 1;
        if stuck == STUCK_READS {
            log::warn!(
                "ACPI PM timer at port {:#x} does not count: not used",
                t.port
            );
            return None;
        }
    }
    let ticks = PM_TIMER_HZ * CALIBRATION_MS / 1000;
    let (tsc, counts) = time_against(read, ticks, mask)?;
    Some(tsc * PM_TIMER_HZ / counts)
}

/// Reads `counter` and the TSC, then polls until `counter` has advanced by
/// at least `ticks` (modulo `mask` + 1) and reads the TSC again. Returns
/// (TSC cycles, counter ticks) between the two reads, or `None` if the
/// counter stops moving.
fn time_against(mut counter: impl FnMut() -> u64, ticks: u64, mask: u64) -> Option<(u64, u64)> {
    let c0 = counter();
    let t0 = rdtsc();
    let (mut last, mut stuck) = (c0, 0);
    loop {
        let c = counter();
        let elapsed = c.wrapping_sub(c0) & mask;
        if elapsed >= ticks {
            return Some((rdtsc() - t0, elapsed));
        }
        if c == last {
            stuck += 1;
            if stuck == STUCK_READS {
                log::warn!("calibration timer stopped counting after {elapsed} ticks");
                return None;
            }
        } else {
            (last, stuck) = (c, 0);
        }
        core::hint::spin_loop();
    }
}

fn tsc_hz_from_cpuid(cpuid: &CpuId<raw_cpuid::CpuIdReaderNative>) -> Option<u64> {
    // Leaf 0x15: eax = denominator, ebx = numerator, ecx = crystal Hz (0 =
    // not stated); `tsc_frequency` is None unless all three are set.
    cpuid.get_tsc_info()?.tsc_frequency()
}

/// Calibrates the TSC on the boot CPU with the first source that works
/// (see the module documentation). `icount`: running under QEMU `-icount`,
/// where the PM timer is skipped to keep runs repeatable.
pub fn init(clock: &ClockHardware, phys_offset: u64, icount: bool) -> Calibration {
    let cpuid = CpuId::new();
    let measured = tsc_hz_from_cpuid(&cpuid)
        .map(|hz| (hz, TscSource::Cpuid15h))
        .or_else(|| {
            clock
                .hpet
                .and_then(|phys| tsc_hz_from_hpet(phys, phys_offset))
                .map(|hz| (hz, TscSource::Hpet))
        })
        .or_else(|| {
            clock
                .pm_timer
                .filter(|_| !icount)
                .and_then(tsc_hz_from_pm_timer)
                .map(|hz| (hz, TscSource::PmTimer))
        });
    let (hz, source) = measured.unwrap_or_else(|| (tsc_hz_from_pit(), TscSource::Pit));
    assert!(
        hz > 1_000_000,
        "TSC calibration ({}) gave an implausible {hz} Hz",
        source.name()
    );
    TSC_HZ.store(hz, Ordering::Relaxed);
    NS_MULT.store(
        ((1_000_000_000u128 << 32) / hz as u128) as u64,
        Ordering::Relaxed,
    );
    TSC_AT_BOOT.store(rdtsc(), Ordering::Relaxed);
    Calibration {
        hz,
        source,
        invariant: cpuid
            .get_advanced_power_mgmt_info()
            .is_some_and(|a| a.has_invariant_tsc()),
        cpuid_base_mhz: cpuid
            .get_processor_frequency_info()
            .map_or(0, |f| f.processor_base_frequency()),
    }
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
