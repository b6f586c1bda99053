//! The default experiment: prove the machine is fully up. Every online CPU
//! must take timer ticks and answer a reschedule IPI and a call-function IPI;
//! the `cpus` record gives the per-CPU counts.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::arch::qemu::ExitCode;
use crate::arch::{ipi, percpu, time};
use crate::machine::Machine;
use crate::record::{Emit, Record, json_array};

/// The shortest time to let every CPU tick before checking (the
/// `ticks_in_window` counts cover at least this).
const TICK_WINDOW_NS: u64 = 200_000_000;
/// Ticks every CPU must take in the window (two: one full tick period).
const TICKS_WANTED: u64 = 2;
/// How long a CPU may take to answer an IPI (TCG with many vCPUs is slow).
const IPI_TIMEOUT_NS: u64 = 2_000_000_000;

pub fn run(m: &Machine) -> ExitCode {
    let online: Vec<&percpu::PerCpu> = percpu::online().collect();
    let ticks_before: Vec<u64> = online
        .iter()
        .map(|p| p.ticks.load(Ordering::Relaxed))
        .collect();
    // Wait for at least the window and until every CPU has ticked twice, up
    // to the watchdog's heartbeat limit: a vCPU the host starves for a while
    // still ticks when it runs (a fixed 200 ms window failed on a loaded
    // host), one that never ticks is still caught.
    let start = time::now_ns();
    let limit = start + crate::watchdog::heartbeat_timeout_ns().max(TICK_WINDOW_NS);
    let ticked = |i: usize, p: &percpu::PerCpu| {
        p.ticks.load(Ordering::Relaxed) >= ticks_before[i] + TICKS_WANTED
    };
    loop {
        let now = time::now_ns();
        let all = online.iter().enumerate().all(|(i, p)| ticked(i, p));
        if (all && now >= start + TICK_WINDOW_NS) || now >= limit {
            break;
        }
        core::hint::spin_loop();
    }
    let window_ns = time::now_ns() - start;
    let ticks_after: Vec<u64> = online
        .iter()
        .map(|p| p.ticks.load(Ordering::Relaxed))
        .collect();

    // Call-function IPI to all CPUs; each records its own number.
    let answered = Arc::new(AtomicU64::new(0));
    let seen = answered.clone();
    let calls = ipi::call_on_all(move |cpu| {
        seen.fetch_add(1 << (cpu % 64), Ordering::Relaxed);
    });
    let calls_done = calls.wait_timeout(IPI_TIMEOUT_NS);
    // And a directed call to the highest-numbered CPU, which must run there.
    let last = online.last().map_or(0, |p| p.cpu);
    let ran_on = Arc::new(AtomicU64::new(u64::MAX));
    let slot = ran_on.clone();
    let directed = ipi::call_on(last as usize, move || {
        slot.store(percpu::cpu_index() as u64, Ordering::Release);
    });
    let directed_ok =
        directed.wait_timeout(IPI_TIMEOUT_NS) && ran_on.load(Ordering::Acquire) == last as u64;

    // Reschedule IPI to every other CPU; wait for its counter to move.
    let resched_before: Vec<u64> = online
        .iter()
        .map(|p| p.resched_ipis.load(Ordering::Relaxed))
        .collect();
    for p in &online {
        ipi::send_reschedule(p.cpu as usize);
    }
    let deadline = time::now_ns() + IPI_TIMEOUT_NS;
    let resched_ok = |i: usize| online[i].resched_ipis.load(Ordering::Relaxed) > resched_before[i];
    while !(0..online.len()).all(resched_ok) && time::now_ns() < deadline {
        core::hint::spin_loop();
    }

    let mut problems = String::new();
    let window_ms = window_ns / 1_000_000;
    let expected = m.hz as u64 * window_ms / 1000;
    for (i, p) in online.iter().enumerate() {
        let ticks = ticks_after[i] - ticks_before[i];
        if ticks == 0 {
            let _ = write!(problems, "cpu {} took no tick in {window_ms} ms; ", p.cpu);
        }
        if !resched_ok(i) {
            let _ = write!(problems, "cpu {} did not answer a reschedule IPI; ", p.cpu);
        }
    }
    let per_cpu = json_array(online.iter().enumerate(), |w, (i, p)| {
        write!(
            w,
            "{{\"cpu\":{},\"apic_id\":{},\"ticks\":{},\"ticks_in_window\":{},\"resched_ipis\":{},\"call_ipis\":{}}}",
            p.cpu,
            p.apic_id,
            p.ticks.load(Ordering::Relaxed),
            ticks_after[i] - ticks_before[i],
            p.resched_ipis.load(Ordering::Relaxed),
            p.call_ipis.load(Ordering::Relaxed),
        )
    });
    if !directed_ok {
        let _ = write!(problems, "call_on(cpu {last}) did not run on cpu {last}; ");
    }
    if !calls_done {
        let _ = write!(
            problems,
            "{} CPUs did not run a call-function IPI; ",
            calls.pending()
        );
    }
    Record::new("cpus")
        .u64("online", online.len() as u64)
        .u64("tick_window_ms", window_ms)
        .u64("expected_ticks_in_window", expected)
        .raw("per_cpu", &per_cpu)
        .emit();
    if problems.is_empty() {
        log::info!(
            "all {} CPUs tick (about {expected} ticks each in {window_ms} ms expected) and answer IPIs",
            online.len()
        );
        ExitCode::Success
    } else {
        log::error!("{problems}");
        Record::new("error")
            .str("kind", "check")
            .str("message", &problems)
            .emit();
        ExitCode::Failure
    }
}
