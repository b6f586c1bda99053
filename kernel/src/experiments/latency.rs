//! `latency`: pipe ping-pong round trips between two threads bound to CPUs at
//! increasing topology distance (same CPU, SMT sibling, same LLC, other LLC
//! in the node, other node), timed with the TSC, plus the context-switch cost
//! on one CPU. This is `perf bench sched pipe` / lmbench `lat_ctx` in shape.
//!
//! Arguments: `rounds` (round trips per placement, default 2000).
//!
//! A last row times a two-thread barrier round between CPU 0 and the
//! nearest other CPU (NAS's phase boundary: one side blocks, the other's
//! arrival wakes it with `wake_all`).
//!
//! Every row also counts the heap allocations made on any CPU over its
//! last three quarters of rounds (`heap_allocs`): a steady state of pipe
//! writes and reads, wakeups, blocks, switches and ticks allocates nothing,
//! and a QEMU test holds it to that.
//!
//! Each placement also reports what the scheduler did per round trip
//! (context switches, wakeup preemptions, wakeups): a same-CPU wakee may or
//! may not preempt its waker before the waker blocks, and that decision, not
//! the code's speed, can move the round trip by a switch.
//!
//! Under QEMU/TCG these are emulation times (instruction counts, or host
//! time with multi-threaded TCG), not hardware latencies: compare placements
//! with each other, not with real machines.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;

use crate::arch::qemu::ExitCode;
use crate::arch::time;
use crate::machine::Machine;
use crate::mm::heap;
use crate::record::{Emit, Record, json_array};
use crate::sync::{Barrier, IrqSpinLock, pipe};
use crate::task::{self, SpawnOptions};
use crate::watchdog;
use workloads::args::Args;

/// Round-trip statistics of one placement, in ns.
struct Rtt {
    name: &'static str,
    a: usize,
    b: usize,
    sorted: Vec<u64>,
    /// The scheduler's counters over the placement's run.
    stats: sched::stats::SchedStats,
    /// Heap allocations (every CPU) over the last three quarters of rounds.
    heap_allocs: u64,
}

impl Rtt {
    fn pct(&self, p: usize) -> u64 {
        let n = self.sorted.len();
        self.sorted[((n * p).div_ceil(100)).clamp(1, n) - 1]
    }

    fn mean(&self) -> u64 {
        self.sorted.iter().sum::<u64>() / self.sorted.len() as u64
    }

    /// A counter per round trip, to two decimals (×100).
    fn per_round_x100(&self, n: u64) -> u64 {
        n * 100 / self.sorted.len().max(1) as u64
    }

    /// The row as a JSON object.
    fn write_json(&self, w: &mut String) -> core::fmt::Result {
        let [p50, p90, p99, max, mean] = self.summary();
        write!(
            w,
            "{{\"placement\":\"{}\",\"cpus\":[{},{}],\"p50_ns\":{p50},\"p90_ns\":{p90},\"p99_ns\":{p99},\"max_ns\":{max},\"mean_ns\":{mean},\"switches\":{},\"wakeup_preempts\":{},\"wakeups\":{},\"heap_allocs\":{}}}",
            self.name,
            self.a,
            self.b,
            self.stats.rq.nr_switches,
            self.stats.rq.wakeup_preempt,
            self.stats.wake.nr_wakeups,
            self.heap_allocs,
        )
    }

    /// p50, p90, p99, max, mean.
    fn summary(&self) -> [u64; 5] {
        let max = self.sorted[self.sorted.len() - 1];
        [self.pct(50), self.pct(90), self.pct(99), max, self.mean()]
    }
}

/// Whether a CPU stands in some relation to CPU `a`.
type Relation<'a> = dyn Fn(&topology::CpuTopo) -> bool + 'a;

/// The partner of CPU `a` at each distance, if the machine has one.
fn placements(m: &Machine, a: usize) -> Vec<(&'static str, usize)> {
    let t = &m.topology;
    let ca = &t.cpus[a];
    let find = |pred: &Relation<'_>| {
        t.cpus
            .iter()
            .find(|c| c.cpu != a && m.is_online(c.cpu) && pred(c))
            .map(|c| c.cpu)
    };
    let mut v = alloc::vec![("same_cpu", a)];
    let rels: [(&'static str, &Relation<'_>); 4] = [
        ("smt_sibling", &|c| c.core == ca.core),
        ("same_llc", &|c| c.core != ca.core && c.llc == ca.llc),
        ("other_llc_same_node", &|c| {
            c.llc != ca.llc && c.node == ca.node
        }),
        ("other_node", &|c| c.node != ca.node),
    ];
    for (name, pred) in rels {
        if let Some(b) = find(pred) {
            v.push((name, b));
        }
    }
    v
}

fn ping_pong(name: &'static str, a: usize, b: usize, rounds: usize) -> Rtt {
    let (to_b, from_a) = pipe(64);
    let (to_a, from_b) = pipe(64);
    let echo = move || {
        let mut byte = [0u8; 1];
        while from_a.read(&mut byte) == 1 {
            if to_a.write(&byte).is_err() {
                break;
            }
        }
    };
    let mut byte = [0u8; 1];
    // Dropping `to_b` with the round trip ends the echo thread.
    let round_trip = move |i: usize| to_b.write(&[i as u8]).is_ok() && from_b.read(&mut byte) == 1;
    timed_pair(name, a, b, rounds, echo, round_trip)
}

/// Times up to `rounds` calls of `step` (false ends early) on a thread
/// bound to CPU `a` while `partner` runs on one bound to `b`: the
/// samples, the scheduler's counters and the heap allocations over them.
fn timed_pair(
    name: &'static str,
    a: usize,
    b: usize,
    rounds: usize,
    partner: impl FnOnce() + Send + 'static,
    mut step: impl FnMut(usize) -> bool + Send + 'static,
) -> Rtt {
    let before = task::sched::stats();
    let samples = Arc::new(IrqSpinLock::new((Vec::with_capacity(rounds), 0)));
    let out = samples.clone();
    let bound = |thread: &str, cpu| SpawnOptions {
        name: alloc::format!("{name}-{thread}"),
        pinned: Some(cpu),
        ..Default::default()
    };
    let partner = task::spawn(bound("b", b), partner);
    let timer = task::spawn(bound("a", a), move || {
        let mut local = Vec::with_capacity(rounds);
        let mut allocs = AllocWindow::new(rounds);
        for i in 0..rounds {
            allocs.round(i);
            let t0 = time::rdtsc();
            if !step(i) {
                break;
            }
            local.push(time::tsc_to_ns(time::rdtsc() - t0));
            if i % 64 == 0 {
                watchdog::progress();
            }
        }
        *out.lock() = (local, allocs.count());
        drop(step);
    });
    timer.join();
    partner.join();
    let (mut sorted, heap_allocs) = core::mem::take(&mut *samples.lock());
    sorted.sort_unstable();
    Rtt {
        name,
        a,
        b,
        sorted,
        stats: task::sched::stats().since(&before),
        heap_allocs,
    }
}

/// Counts the heap allocations from a quarter of the rounds on: the first
/// rounds may still grow a queue or a list once.
struct AllocWindow {
    from_round: usize,
    at_start: Option<u64>,
}

impl AllocWindow {
    fn new(rounds: usize) -> Self {
        AllocWindow {
            from_round: rounds / 4,
            at_start: None,
        }
    }

    /// Called before round `i`.
    fn round(&mut self, i: usize) {
        if i == self.from_round {
            self.at_start = Some(heap::allocations());
        }
    }

    /// Allocations since the window opened (0 if it never did).
    fn count(&self) -> u64 {
        self.at_start.map_or(0, |a| heap::allocations() - a)
    }
}

/// Barrier rounds between a thread on CPU `a` and one on `b`, timed on
/// `a` from its arrival to its release.
fn barrier_rounds(a: usize, b: usize, rounds: usize) -> Rtt {
    let barrier = Arc::new(Barrier::new(2));
    let other = barrier.clone();
    let partner = move || {
        for _ in 0..rounds {
            other.wait();
        }
    };
    timed_pair("barrier", a, b, rounds, partner, move |_| {
        barrier.wait();
        true
    })
}

/// Runs the experiment.
pub fn run(m: &Machine, args: &mut Args<'_>) -> Result<ExitCode, String> {
    let rounds = workloads::kernel_only::Latency::from_args(args)?.rounds;
    watchdog::arm(30_000_000_000);
    let mut results = Vec::new();
    for (name, b) in placements(m, 0) {
        let r = ping_pong(name, 0, b, rounds);
        if r.sorted.len() != rounds {
            return Err(alloc::format!(
                "{name}: only {} of {rounds} round trips completed",
                r.sorted.len()
            ));
        }
        results.push(r);
    }
    // The nearest other CPU (the first placement after same_cpu), else CPU 0.
    let partner = results.get(1).map_or(0, |r| r.b);
    let barrier = barrier_rounds(0, partner, rounds);
    watchdog::disarm();
    let hypervisor = crate::arch::cpu::under_hypervisor();
    log::info!(
        "pipe round trip (ns), {rounds} rounds each{}:",
        if hypervisor {
            ", under a hypervisor/emulator"
        } else {
            ""
        }
    );
    log::info!(
        "  {:<20} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6}",
        "placement",
        "cpus",
        "p50",
        "p90",
        "p99",
        "max",
        "mean",
        "sw/rt",
        "preempt",
        "allocs"
    );
    for r in results.iter().chain(core::iter::once(&barrier)) {
        let [p50, p90, p99, max, mean] = r.summary();
        let sw = r.per_round_x100(r.stats.rq.nr_switches);
        let pre = r.per_round_x100(r.stats.rq.wakeup_preempt);
        log::info!(
            "  {:<20} {:>3},{:<3} {p50:>10} {p90:>10} {p99:>10} {max:>10} {mean:>10} {:>6}.{:02} {:>6}.{:02} {:>6}",
            r.name,
            r.a,
            r.b,
            sw / 100,
            sw % 100,
            pre / 100,
            pre % 100,
            r.heap_allocs
        );
    }
    let json = json_array(&results, |w, r| r.write_json(w));
    let mut barrier_json = String::new();
    // Writing into a String cannot fail.
    let _ = barrier.write_json(&mut barrier_json);
    // One CPU: a round trip is two context switches plus one pipe write and
    // read on each side, so half of it bounds one switch (lmbench lat_ctx style).
    let ctx = results[0].pct(50) / 2;
    log::info!("context switch on one CPU (half the same-CPU p50 round trip): {ctx} ns");
    Record::new("latency")
        .u64("rounds", rounds as u64)
        .raw("placements", &json)
        .raw("barrier", &barrier_json)
        .u64("ctx_switch_ns", ctx)
        .str("clock", "tsc")
        .bool("hypervisor", hypervisor)
        .emit();
    Ok(ExitCode::Success)
}
