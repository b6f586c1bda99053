//! `calibrate`: measures, on the machine it runs on, the quantities the host
//! simulator's cost profile charges (`docs/simulator.md`, "Calibration"), so
//! that `cargo xtask profile --from console.log` can turn a bare-metal serial
//! log (or a QEMU console log) into a profile for `--backend sim --profile`.
//!
//! Partners of CPU 0 are chosen at each of the simulator's distance classes,
//! with the precedence of `sched::SchedTopo::distance`: `smt` (same core),
//! `llc` (shares the LLC), `package` (other LLC, same package), `node` (other
//! package, same NUMA node), `remote` (other node). A class the machine lacks
//! is left out of the record. Measured, each as a median of `rounds` samples
//! timed with the TSC:
//!
//! - **context switch**: two threads bound to CPU 0 yield to each other; one
//!   `yield_now` after which the partner ran once is two switches;
//! - **address-space switch**: the same with the two threads in two
//!   processes (each its own PML4, so every switch loads CR3) minus the same
//!   with them in one process (no CR3 load): `switch_mm`'s cost, CR3 load
//!   and the TLB refill it causes on the yield path; also whether the
//!   kernel's mappings are global (CR4.PGE, G bits), which decides what a
//!   CR3 load flushes;
//! - **TLB size**: the last-level 4 KiB TLB's entries from CPUID leaf 0x18
//!   (read, not timed; null where the leaf is missing, as on AMD and under
//!   QEMU TCG `-cpu max`);
//! - **page walk**: one word in each of up to 64 pages of the chase buffer
//!   (the physical-memory window's pages, 2 MiB under the bootloader) read
//!   right after a TLB flush and again warm; the difference per page;
//! - **kernel paths on one CPU**: a 1-byte pipe write + read, the same with
//!   4 KiB (copy cost), an uncontended semaphore up + down, thread creation;
//!   compute units (`workloads::args::compute`) alone and next to a busy SMT
//!   sibling;
//! - **wakeup** by distance: a thread bound to CPU 0 wakes one blocked on the
//!   partner CPU (idle, waited for) through a semaphore: the waker's cost of
//!   `up` and the latency from before `up` to the wakee running;
//! - **IPI** by distance: a call-function IPI from CPU 0 whose handler reads
//!   the TSC, to the partner while it runs a spinning thread (`busy`) and while
//!   it halts in idle (`idle`: includes the exit from HLT);
//! - **cache line** by distance: two spinning threads bounce one line; half a
//!   round trip is one transfer;
//! - **refill after migration** by working-set size and distance: a thread on
//!   CPU 0 writes a buffer, a thread on the partner reads it once (cold) and
//!   again (warm); the difference is the refill. The two threads stand for
//!   one task migrating: what matters is where the lines are;
//! - **timer interrupt** (the "detour" of fixed-work-quantum noise
//!   measurements): a thread bound to CPU 0 spins reading the TSC with
//!   interrupts on for `rounds` tick periods (20-250). An iteration over
//!   10 x the loop's median is a gap; a gap across which CPU 0's tick count
//!   rose is the periodic LAPIC tick (nothing expires in it: no thread
//!   sleeps). The other CPUs are idle and nothing is sent to CPU 0, so the
//!   tick and the IPIs (counted, 0 expected) are the only interrupts that
//!   can reach it; other gaps are SMIs on hardware, the host's stalls under
//!   emulation. The median tick gap minus the median iteration is the
//!   interrupt's cost to the thread it interrupts: entry, the tick handler,
//!   exit;
//! - **LLC hit**: a random pointer chase on CPU 0 over min(4 x (L1d + L2),
//!   LLC / 2, 32 MiB) bytes (CPUID leaf 4), after a full warm-up pass: 4 x the
//!   private caches so that few hops hit them (a random-replacement L2
//!   holding a quarter of the lines), half the LLC so that the buffer stays
//!   in it next to the kernel's own data (an LLC shared with idle CPUs).
//!   Measured only when that is at least twice the L2 (2 x L2 = 8 MiB under
//!   QEMU's L2 4 MiB, L3 16 MiB) and an LLC beyond L2 exists; else absent;
//! - **memory latency**: a random pointer chase (one hop per line, over
//!   `chase_mib` MiB) from the first CPU of each node. The kernel allocator
//!   cannot place memory on a node; the buffer's node is read from the SRAT
//!   by its physical address, so the chase from that node is local and the
//!   others remote. A buffer that straddles nodes is reported without a node.
//!
//! Under QEMU these are emulation times (TCG has no caches and no NUMA
//! latency; icount counts instructions): the profile says so.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::arch::qemu::ExitCode;
use crate::arch::{ipi, time};
use crate::machine::Machine;
use crate::mm::space::{self, AddressSpace};
use crate::record::{Emit, Record, json_array, json_string};
use crate::sync::{IrqSpinLock, Semaphore, pipe};
use crate::task::{self, SpawnOptions, sched::running_thread_id};
use crate::watchdog;
use workloads::kernel_only::Calibrate;

/// Longest wait for a partner CPU to go idle before a wakeup/IPI sample.
const IDLE_WAIT_NS: u64 = 200_000_000;
/// Settle time after a CPU went idle, so it is halted when the sample starts.
const IDLE_SETTLE_NS: u64 = 5_000;
/// Compute units per `compute` sample.
const COMPUTE_UNITS: u64 = 20_000;

/// Median of samples (0 for none).
fn median(mut v: Vec<u64>) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

fn ns_since(t0: u64) -> u64 {
    time::tsc_to_ns(time::rdtsc().saturating_sub(t0))
}

fn pinned(name: &str, cpu: usize, f: impl FnOnce() + Send + 'static) -> task::JoinHandle {
    pinned_in(name, cpu, None, f)
}

/// A thread bound to `cpu` in address space `space` (None: a kernel thread).
fn pinned_in(
    name: &str,
    cpu: usize,
    space: Option<Arc<AddressSpace>>,
    f: impl FnOnce() + Send + 'static,
) -> task::JoinHandle {
    task::spawn(
        SpawnOptions {
            name: name.into(),
            pinned: Some(cpu),
            space,
            ..Default::default()
        },
        f,
    )
}

/// Runs `f` on a thread bound to `cpu` and returns its result.
fn on_cpu<T: Send + 'static>(cpu: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    on_cpu_in(cpu, None, f)
}

/// [`on_cpu`] with the thread in address space `space`.
fn on_cpu_in<T: Send + 'static>(
    cpu: usize,
    space: Option<Arc<AddressSpace>>,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let out = Arc::new(IrqSpinLock::new(None));
    let o = out.clone();
    pinned_in("calib", cpu, space, move || {
        let v = f();
        *o.lock() = Some(v);
    })
    .join();
    out.lock()
        .take()
        .expect("the measuring thread stored its result")
}

/// The partner of CPU `a` at each simulator distance class the machine has.
fn partners(m: &Machine, a: usize) -> Vec<(&'static str, usize)> {
    let t = &m.topology;
    let ca = &t.cpus[a];
    let class = |c: &topology::CpuTopo| -> &'static str {
        if c.core == ca.core {
            "smt"
        } else if c.llc == ca.llc {
            "llc"
        } else if c.package == ca.package {
            "package"
        } else if c.node == ca.node {
            "node"
        } else {
            "remote"
        }
    };
    let mut out: Vec<(&'static str, usize)> = Vec::new();
    for name in ["smt", "llc", "package", "node", "remote"] {
        if let Some(c) = t
            .cpus
            .iter()
            .find(|c| c.cpu != a && m.is_online(c.cpu) && class(c) == name)
        {
            out.push((name, c.cpu));
        }
    }
    out
}

/// Waits (bounded) until `cpu` runs its idle loop, then a little longer.
fn wait_idle(cpu: usize) {
    let t0 = time::rdtsc();
    while running_thread_id(cpu).is_some() && ns_since(t0) < IDLE_WAIT_NS {
        core::hint::spin_loop();
    }
    time::delay_ns(IDLE_SETTLE_NS);
}

/// One switch: half the time of a `yield_now` that hands the CPU to another
/// thread bound to it and gets it back. Also the cost of a `yield_now` with
/// nothing else to run. Returns (switch ns, lone yield ns).
fn context_switch(cpu: usize, rounds: usize) -> (u64, u64) {
    let lone = on_cpu(cpu, move || {
        (0..rounds)
            .map(|_| {
                let t0 = time::rdtsc();
                task::yield_now();
                ns_since(t0)
            })
            .collect::<Vec<_>>()
    });
    (yield_pair(cpu, rounds, None, None), median(lone))
}

/// One switch between two threads bound to `cpu` that yield to each other,
/// the first in address space `a`, its partner in `b`: half the median
/// `yield_now` over those after which the partner ran exactly once (a
/// round trip of two switches). A yield that got the CPU straight back
/// (CFS picks the yielder again while the partner's vruntime is ahead by
/// more than the wakeup granularity, as right after it was forked) is not
/// a sample; at most `100 x rounds` yields are tried.
fn yield_pair(
    cpu: usize,
    rounds: usize,
    a: Option<Arc<AddressSpace>>,
    b: Option<Arc<AddressSpace>>,
) -> u64 {
    let ready = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let turns = Arc::new(AtomicU64::new(0));
    let (r2, d2, t2) = (ready.clone(), done.clone(), turns.clone());
    let partner = pinned_in("yield-b", cpu, b, move || {
        r2.fetch_add(1, Ordering::AcqRel);
        while !d2.load(Ordering::Acquire) {
            t2.fetch_add(1, Ordering::Relaxed);
            task::yield_now();
        }
    });
    let pair = on_cpu_in(cpu, a, move || {
        ready.fetch_add(1, Ordering::AcqRel);
        while ready.load(Ordering::Acquire) < 2 {
            task::yield_now();
        }
        let mut v = Vec::with_capacity(rounds);
        for i in 0..100 * rounds {
            if v.len() == rounds {
                break;
            }
            if i % 64 == 0 {
                watchdog::progress();
            }
            let before = turns.load(Ordering::Relaxed);
            let t0 = time::rdtsc();
            task::yield_now();
            let ns = ns_since(t0);
            if turns.load(Ordering::Relaxed) == before + 1 {
                v.push(ns);
            }
        }
        done.store(true, Ordering::Release);
        v
    });
    partner.join();
    median(pair) / 2
}

/// The address-space switch on `cpu`: a switch between threads of two
/// processes and one between two threads of one process (ns each), and the
/// CR3 loads `cpu` made during the two-process pairs.
struct MmSwitch {
    process_ns: u64,
    thread_ns: u64,
    loads: u64,
}

fn mm_switch(cpu: usize, rounds: usize) -> MmSwitch {
    let (created0, freed0) = space::counts();
    let loads0 = task::sched::cpu_state(cpu)
        .mm_switches
        .load(Ordering::Relaxed);
    let process_ns = yield_pair(
        cpu,
        rounds,
        Some(AddressSpace::new()),
        Some(AddressSpace::new()),
    );
    let loads = task::sched::cpu_state(cpu)
        .mm_switches
        .load(Ordering::Relaxed)
        - loads0;
    watchdog::progress();
    // Made after one of the two above was freed: its PML4 frame comes off
    // the allocator's free list.
    let one = AddressSpace::new();
    let thread_ns = yield_pair(cpu, rounds, Some(one.clone()), Some(one));
    // The last space stays loaded on `cpu` (lazy TLB) until it leaves it.
    task::sched::leave_lazy_mms();
    let (created, freed) = space::counts();
    assert_eq!(
        created - created0,
        freed - freed0,
        "calibrate: an address space was not freed"
    );
    MmSwitch {
        process_ns,
        thread_ns,
        loads,
    }
}

/// Kernel path costs on one CPU, ns: (pipe call, copy per byte x 1000,
/// semaphore op, thread creation on the parent, compute unit x 1000).
struct Paths {
    pipe_call_ns: u64,
    copy_ps_per_byte: u64,
    sem_op_ns: u64,
    spawn_ns: u64,
    compute_unit_ps: u64,
}

fn kernel_paths(cpu: usize, rounds: usize) -> Paths {
    on_cpu(cpu, move || {
        const BIG: usize = 4096;
        let (w, r) = pipe(2 * BIG);
        let small = [7u8; 1];
        let big = alloc::vec![7u8; BIG];
        let mut sink = alloc::vec![0u8; BIG];
        let mut one = Vec::with_capacity(rounds);
        let mut many = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let t0 = time::rdtsc();
            w.write(&small).expect("reader alive");
            r.read(&mut sink[..1]);
            one.push(ns_since(t0));
            let t0 = time::rdtsc();
            w.write(&big).expect("reader alive");
            assert!(r.read_exact(&mut sink));
            many.push(ns_since(t0));
        }
        let (one, many) = (median(one), median(many));
        // Each round trip is two calls; the big one copies BIG bytes in and out.
        let copy_ps = many.saturating_sub(one) * 1000 / (2 * BIG as u64);
        let sem = Semaphore::new(0);
        let sem_ops = (0..rounds)
            .map(|_| {
                let t0 = time::rdtsc();
                sem.up();
                sem.down();
                ns_since(t0)
            })
            .collect::<Vec<_>>();
        let spawns = (0..rounds.min(50))
            .map(|_| {
                let t0 = time::rdtsc();
                let h = pinned("calib-empty", cpu, || {});
                let dt = ns_since(t0);
                h.join();
                dt
            })
            .collect::<Vec<_>>();
        let compute = (0..rounds.min(50))
            .map(|_| {
                let t0 = time::rdtsc();
                core::hint::black_box(workloads::args::compute(COMPUTE_UNITS));
                ns_since(t0)
            })
            .collect::<Vec<_>>();
        Paths {
            pipe_call_ns: one / 2,
            copy_ps_per_byte: copy_ps,
            sem_op_ns: median(sem_ops) / 2,
            spawn_ns: median(spawns),
            compute_unit_ps: median(compute) * 1000 / COMPUTE_UNITS,
        }
    })
}

/// Compute speed on `a` while SMT sibling `b` also computes, relative to
/// alone (1.0 = no slowdown), in thousandths.
fn smt_shared_speed(a: usize, b: usize, rounds: usize, alone_ps: u64) -> u64 {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let hog = pinned("calib-hog", b, move || {
        while !s2.load(Ordering::Relaxed) {
            core::hint::black_box(workloads::args::compute(1000));
        }
    });
    let shared = on_cpu(a, move || {
        let v = (0..rounds.min(50))
            .map(|_| {
                let t0 = time::rdtsc();
                core::hint::black_box(workloads::args::compute(COMPUTE_UNITS));
                ns_since(t0)
            })
            .collect::<Vec<_>>();
        median(v) * 1000 / COMPUTE_UNITS
    });
    stop.store(true, Ordering::Relaxed);
    hog.join();
    if shared == 0 {
        return 0;
    }
    alone_ps * 1000 / shared
}

/// Waker-side cost of `up` and wakeup-to-running latency, ns (medians).
fn wakeup(a: usize, b: usize, rounds: usize) -> (u64, u64) {
    let wake = Arc::new(Semaphore::new(0));
    let back = Arc::new(Semaphore::new(0));
    let stamp = Arc::new(AtomicU64::new(0));
    let lat = Arc::new(IrqSpinLock::new(Vec::with_capacity(rounds)));
    let (w2, b2, s2, l2) = (wake.clone(), back.clone(), stamp.clone(), lat.clone());
    let sleeper = pinned("calib-wakee", b, move || {
        let mut v = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            w2.down();
            let t1 = time::rdtsc();
            v.push(time::tsc_to_ns(
                t1.saturating_sub(s2.load(Ordering::Acquire)),
            ));
            b2.up();
        }
        *l2.lock() = v;
    });
    let up_cost = on_cpu(a, move || {
        let mut v = Vec::with_capacity(rounds);
        for i in 0..rounds {
            if a != b {
                wait_idle(b);
            }
            if i % 64 == 0 {
                watchdog::progress();
            }
            let t0 = time::rdtsc();
            stamp.store(t0, Ordering::Release);
            wake.up();
            v.push(ns_since(t0));
            back.down();
        }
        median(v)
    });
    sleeper.join();
    let l = core::mem::take(&mut *lat.lock());
    (up_cost, median(l))
}

/// One-way call-function IPI latency from `a` to `b`, ns (median): TSC at
/// the target's handler minus TSC before sending. `busy`: the target runs a
/// spinning thread; otherwise it is halted in idle.
fn ipi_one_way(a: usize, b: usize, rounds: usize, busy: bool) -> u64 {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let spinner = busy.then(|| {
        pinned("calib-spin", b, move || {
            while !s2.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        })
    });
    let v = on_cpu(a, move || {
        let mut v = Vec::with_capacity(rounds);
        for i in 0..rounds {
            if busy {
                while running_thread_id(b).is_none() {
                    core::hint::spin_loop();
                }
            } else {
                wait_idle(b);
            }
            if i % 64 == 0 {
                watchdog::progress();
            }
            let seen = Arc::new(AtomicU64::new(0));
            let s = seen.clone();
            let t0 = time::rdtsc();
            let c = ipi::call_on(b, move || s.store(time::rdtsc(), Ordering::Release));
            if c.wait_timeout(1_000_000_000) {
                let t1 = seen.load(Ordering::Acquire);
                v.push(time::tsc_to_ns(t1.saturating_sub(t0)));
            }
        }
        v
    });
    stop.store(true, Ordering::Relaxed);
    if let Some(h) = spinner {
        h.join();
    }
    median(v)
}

/// A cache line bounced between two spinning threads.
#[repr(align(128))]
struct Line(AtomicU64);

/// One cache-line transfer from `a` to `b` and back, halved, ns (median).
fn line_transfer(a: usize, b: usize, rounds: usize) -> u64 {
    let line = Arc::new(Line(AtomicU64::new(0)));
    let l2 = line.clone();
    let echo = pinned("calib-pong", b, move || {
        for i in 0..rounds as u64 {
            while l2.0.load(Ordering::Acquire) != 2 * i + 1 {
                core::hint::spin_loop();
            }
            l2.0.store(2 * i + 2, Ordering::Release);
        }
    });
    let v = on_cpu(a, move || {
        let mut v = Vec::with_capacity(rounds);
        for i in 0..rounds as u64 {
            if i % 64 == 0 {
                watchdog::progress();
            }
            let t0 = time::rdtsc();
            line.0.store(2 * i + 1, Ordering::Release);
            while line.0.load(Ordering::Acquire) != 2 * i + 2 {
                core::hint::spin_loop();
            }
            v.push(ns_since(t0));
        }
        v
    });
    echo.join();
    median(v) / 2
}

/// Reads one word of every line of `buf`, ns.
fn read_lines(buf: &[AtomicU64], stride: usize) -> u64 {
    let t0 = time::rdtsc();
    let mut sum = 0u64;
    let mut i = 0;
    while i < buf.len() {
        sum = sum.wrapping_add(buf[i].load(Ordering::Relaxed));
        i += stride;
    }
    core::hint::black_box(sum);
    ns_since(t0)
}

/// Refill of a `bytes` working set written on `a` and read on `b`: (cold
/// read, warm re-read) in ns, medians over `reps`.
fn refill(a: usize, b: usize, bytes: usize, line: usize, reps: usize) -> (u64, u64) {
    let words = bytes / 8;
    let stride = (line / 8).max(1);
    let buf: Arc<Vec<AtomicU64>> = Arc::new((0..words).map(|_| AtomicU64::new(0)).collect());
    let written = Arc::new(Semaphore::new(0));
    let read = Arc::new(Semaphore::new(0));
    let out = Arc::new(IrqSpinLock::new((Vec::new(), Vec::new())));
    let (bw, w2, r2, o2) = (buf.clone(), written.clone(), read.clone(), out.clone());
    let reader = pinned("calib-refill-b", b, move || {
        let (mut cold, mut warm) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            w2.down();
            cold.push(read_lines(&bw, stride));
            warm.push(read_lines(&bw, stride));
            r2.up();
        }
        *o2.lock() = (cold, warm);
    });
    on_cpu(a, move || {
        for rep in 0..reps {
            let mut i = 0;
            while i < buf.len() {
                buf[i].store((rep + i) as u64, Ordering::Relaxed);
                i += stride;
            }
            written.up();
            read.down();
            watchdog::progress();
        }
    });
    reader.join();
    let (cold, warm) = core::mem::take(&mut *out.lock());
    (median(cold), median(warm))
}

/// xorshift64* for the chase permutation.
fn next_rand(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// A random single-cycle pointer chase, one hop per line: word `i * stride`
/// holds the word index of the next line.
fn chase_buffer(bytes: usize, line: usize) -> Vec<AtomicU64> {
    let stride = (line / 8).max(1);
    let lines = (bytes / line).max(2);
    let buf: Vec<AtomicU64> = (0..lines * stride).map(|_| AtomicU64::new(0)).collect();
    let mut order: Vec<u32> = (0..lines as u32).collect();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    // Fisher-Yates over everything but the first, so the cycle starts at 0.
    for i in (2..lines).rev() {
        let j = 1 + (next_rand(&mut seed) % i as u64) as usize;
        order.swap(i, j);
    }
    for k in 0..lines {
        let next = order[(k + 1) % lines] as usize;
        buf[order[k] as usize * stride].store((next * stride) as u64, Ordering::Relaxed);
    }
    buf
}

/// ns per dependent hop of the chase, after `warm` hops of warm-up.
fn chase(buf: &[AtomicU64], warm: usize, hops: usize) -> u64 {
    let mut idx = 0usize;
    for _ in 0..warm {
        idx = buf[idx].load(Ordering::Relaxed) as usize;
    }
    let t0 = time::rdtsc();
    for _ in 0..hops {
        idx = buf[idx].load(Ordering::Relaxed) as usize;
    }
    core::hint::black_box(idx);
    ns_since(t0) / hops as u64
}

/// The LLC-hit chase on CPU 0: its buffer size and the cache sizes it was
/// chosen from (bytes), and ns per hop (None: sizes unknown or too close).
struct LlcHit {
    private: u64,
    l2: u64,
    llc: u64,
    bytes: u64,
    ns: Option<u64>,
}

/// (L1d + L2, L2, LLC) bytes of the caches `cpu` uses, from CPUID leaf 4
/// as the topology holds it; None without an L1d, an L2 and a level-3 or
/// higher LLC (an L2 that is the LLC leaves no level to hit beyond it).
fn cache_sizes(m: &Machine, cpu: usize) -> Option<(u64, u64, u64)> {
    let mine = || {
        m.topology
            .caches
            .iter()
            .filter(move |c| c.cpus.contains(cpu) && c.kind != topology::CacheKind::Instruction)
    };
    let level = |l: u8| mine().find(|c| c.level == l).map(|c| c.size_bytes);
    let (l1, l2) = (level(1)?, level(2)?);
    let llc = mine().filter(|c| c.level >= 3).max_by_key(|c| c.level)?;
    Some((l1 + l2, l2, llc.size_bytes))
}

/// The LLC chase buffer's size: min(4 x private, LLC / 2,
/// `LLC_CHASE_MAX_MIB`), whole lines; None when that is not at least twice
/// the L2 (too many hops would hit it).
fn llc_chase_bytes(private: u64, l2: u64, llc: u64, line: u64) -> Option<u64> {
    let cap = Calibrate::LLC_CHASE_MAX_MIB << 20;
    let bytes = (4 * private).min(llc / 2).min(cap) / line * line;
    (bytes >= 2 * l2).then_some(bytes)
}

/// ns per hop of a random chase over a buffer between the private caches
/// and the LLC on `cpu`, after a full warm-up pass.
fn llc_hit(m: &Machine, cpu: usize, line: usize, hops: usize) -> LlcHit {
    let Some((private, l2, llc)) = cache_sizes(m, cpu) else {
        return LlcHit {
            private: 0,
            l2: 0,
            llc: 0,
            bytes: 0,
            ns: None,
        };
    };
    let bytes = llc_chase_bytes(private, l2, llc, line as u64);
    let ns = bytes.map(|b| {
        let buf = chase_buffer(b as usize, line);
        let lines = b as usize / line;
        on_cpu(cpu, move || chase(&buf, lines, hops))
    });
    LlcHit {
        private,
        l2,
        llc,
        bytes: bytes.unwrap_or(0),
        ns,
    }
}

/// The timer interrupt's detour on a CPU, from a thread that spins there
/// reading the TSC with interrupts on.
struct Detour {
    window_ns: u64,
    /// Median loop iteration, ps.
    iteration_ps: u64,
    /// Iterations longer than 10 x the median.
    gaps: u64,
    /// Of them, those across which `cpu`'s tick count rose.
    tick_gaps: u64,
    /// Ticks `cpu` took during the window.
    ticks: u64,
    /// Reschedule and call-function IPIs `cpu` took during the window.
    ipis: u64,
    /// Median tick gap, ns.
    gap_ns: u64,
}

/// Median of `n` iterations of the spin loop, TSC cycles (at least 1).
fn spin_iteration(n: usize) -> u64 {
    let mut v = Vec::with_capacity(n);
    let mut prev = time::rdtsc();
    for _ in 0..n {
        let t = time::rdtsc();
        v.push(t.saturating_sub(prev));
        prev = t;
    }
    median(v).max(1)
}

/// Spins on `cpu` (the calling thread is bound there) for `ticks` tick
/// periods of `tick_ns`, timing every iteration with the TSC. An
/// iteration over 10 x the median is a gap: an interrupt (or, under
/// emulation, the host running something else); one across which the
/// CPU's tick count rose is a tick's gap.
fn timer_detour(cpu: usize, ticks: u64, tick_ns: u64) -> Detour {
    let pc = crate::arch::percpu::get(cpu).expect("the measuring CPU is online");
    let ipis = || pc.resched_ipis.load(Ordering::Relaxed) + pc.call_ipis.load(Ordering::Relaxed);
    let iter = spin_iteration(4096);
    let threshold = 10 * iter;
    let mut tick_gaps = Vec::with_capacity(4 * ticks as usize + 64);
    let (mut gaps, mut tick_gap_count) = (0u64, 0u64);
    let (ticks0, ipis0) = (pc.ticks.load(Ordering::Acquire), ipis());
    let window = (u128::from(ticks * tick_ns) * u128::from(time::tsc_hz()) / 1_000_000_000) as u64;
    let start = time::rdtsc();
    // A tick between two TSC reads shows in the count read right after the
    // second, and not in the one read two iterations back (before the
    // first). `seen`: ticks already given to a gap, so each counts once.
    let (mut prev, mut k1, mut k2, mut seen) = (start, ticks0, ticks0, ticks0);
    while prev.saturating_sub(start) < window {
        let t = time::rdtsc();
        let k = pc.ticks.load(Ordering::Relaxed);
        if t.saturating_sub(prev) > threshold {
            gaps += 1;
            if k > k2.max(seen) {
                seen = k;
                tick_gap_count += 1;
                if tick_gaps.len() < tick_gaps.capacity() {
                    tick_gaps.push(t.saturating_sub(prev));
                }
            }
        }
        (prev, k2, k1) = (t, k1, k);
    }
    Detour {
        window_ns: time::tsc_to_ns(prev.saturating_sub(start)),
        iteration_ps: time::tsc_to_ns(iter * 1000),
        gaps,
        tick_gaps: tick_gap_count,
        ticks: pc.ticks.load(Ordering::Acquire) - ticks0,
        ipis: ipis() - ipis0,
        gap_ns: time::tsc_to_ns(median(tick_gaps)),
    }
}

/// Per-distance results.
struct Dist {
    name: &'static str,
    cpu: usize,
    wake_up_ns: u64,
    wakeup_latency_ns: u64,
    ipi_busy_ns: u64,
    ipi_idle_ns: u64,
    line_ns: u64,
    refill: Vec<(usize, u64, u64)>,
}

/// Ticks to read one word in each of the first `n` pages of `buf`
/// (`page_bytes` apart). The word moves 4 KiB + one line further into each
/// page, so the reads do not all index one set of a TLB or cache indexed
/// by low address bits (QEMU's software TLB is direct-mapped by 4 KiB page:
/// at one offset, 32 reads 2 MiB apart evicted each other even warm).
fn touch(buf: &[AtomicU64], page_bytes: usize, n: usize) -> u64 {
    let t0 = time::rdtsc();
    let mut sum = 0u64;
    for i in 0..n {
        let at = i * page_bytes + (i * (4096 + 64)) % page_bytes;
        sum = sum.wrapping_add(buf[at / 8].load(Ordering::Relaxed));
    }
    core::hint::black_box(sum);
    time::rdtsc().saturating_sub(t0)
}

/// A page walk (ps): `pages` pages of `buf` read right after a TLB flush
/// minus read warm, per page, with the same for one page subtracted from
/// both (the loop's own code and stack pages miss after the flush too).
/// Median of `reps` samples on the calling CPU.
fn page_walk(buf: &[AtomicU64], page_bytes: usize, pages: usize, reps: usize) -> u64 {
    let v = (0..reps)
        .map(|_| {
            touch(buf, page_bytes, pages);
            space::flush_tlb();
            let cold_one = touch(buf, page_bytes, 1);
            space::flush_tlb();
            let cold_all = touch(buf, page_bytes, pages);
            let warm_one = touch(buf, page_bytes, 1);
            let warm_all = touch(buf, page_bytes, pages);
            let extra = (cold_all.saturating_sub(cold_one))
                .saturating_sub(warm_all.saturating_sub(warm_one));
            time::tsc_to_ns(extra * 1000) / (pages as u64 - 1)
        })
        .collect();
    median(v)
}

/// The `timer` field: the detour and what it was measured from;
/// `detour_ns` (median tick gap minus the median iteration) is null
/// without a tick gap.
fn timer_json(d: &Detour, hz: u32) -> String {
    let detour = if d.tick_gaps == 0 {
        "null".into()
    } else {
        alloc::format!("{}", d.gap_ns.saturating_sub(d.iteration_ps / 1000))
    };
    alloc::format!(
        "{{\"hz\":{hz},\"window_ns\":{},\"iteration_ps\":{},\"gaps\":{},\"tick_gaps\":{},\"ticks\":{},\"ipis\":{},\"gap_ns\":{},\"detour_ns\":{detour}}}",
        d.window_ns,
        d.iteration_ps,
        d.gaps,
        d.tick_gaps,
        d.ticks,
        d.ipis,
        d.gap_ns
    )
}

/// Runs the experiment.
pub fn run(m: &Machine, args: &mut workloads::args::Args<'_>) -> Result<ExitCode, String> {
    let c = Calibrate::from_args(args)?;
    let rounds = c.rounds;
    let a = 0;
    let line = m
        .topology
        .caches
        .iter()
        .map(|c| c.line_bytes as usize)
        .find(|&l| l >= 16)
        .unwrap_or(64);
    watchdog::arm(60_000_000_000);
    let (ctx, lone_yield) = context_switch(a, rounds);
    watchdog::progress();
    let mm = mm_switch(a, rounds);
    let globals = space::global_mappings();
    log::info!(
        "calibrate: switch between two processes {} ns, two threads of one process {} ns ({} CR3 loads); CR4.PGE {}, {} of {} kernel pages global",
        mm.process_ns,
        mm.thread_ns,
        mm.loads,
        globals.cr4_pge,
        globals.global_leaves,
        globals.leaves
    );
    watchdog::progress();
    let paths = kernel_paths(a, rounds);
    watchdog::progress();
    let tick_ns = 1_000_000_000 / u64::from(m.hz.max(1));
    let detour = on_cpu(a, move || {
        timer_detour(a, rounds.clamp(20, 250) as u64, tick_ns)
    });
    log::info!(
        "calibrate: timer detour: {} gaps ({} across a tick) in {} ns, {} ticks, {} IPIs; median tick gap {} ns, iteration {} ps",
        detour.gaps,
        detour.tick_gaps,
        detour.window_ns,
        detour.ticks,
        detour.ipis,
        detour.gap_ns,
        detour.iteration_ps
    );
    watchdog::progress();
    let hops = (rounds * 100).max(10_000);
    let llc = llc_hit(m, a, line, hops);
    log::info!(
        "calibrate: LLC hit {:?} ns per hop over {} bytes (L1d+L2 {}, L2 {}, LLC {})",
        llc.ns,
        llc.bytes,
        llc.private,
        llc.l2,
        llc.llc
    );
    watchdog::progress();
    let parts = partners(m, a);
    let smt = parts
        .iter()
        .find(|(n, _)| *n == "smt")
        .map(|&(_, b)| smt_shared_speed(a, b, rounds, paths.compute_unit_ps));
    let reps = (rounds / 100).clamp(3, 50);
    let (same_up, same_lat) = wakeup(a, a, rounds);
    let same_refill: Vec<(usize, u64, u64)> = Calibrate::REFILL_KIB
        .iter()
        .map(|&kib| {
            let (cold, warm) = refill(a, a, kib * 1024, line, reps);
            (kib, cold, warm)
        })
        .collect();
    let mut dists = Vec::new();
    for &(name, b) in &parts {
        log::info!("calibrate: {name} (CPU {a} -> CPU {b})");
        let (wake_up_ns, wakeup_latency_ns) = wakeup(a, b, rounds);
        let ipi_busy_ns = ipi_one_way(a, b, rounds, true);
        let ipi_idle_ns = ipi_one_way(a, b, rounds, false);
        let line_ns = line_transfer(a, b, rounds);
        let refill = Calibrate::REFILL_KIB
            .iter()
            .map(|&kib| {
                let (cold, warm) = refill(a, b, kib * 1024, line, reps);
                (kib, cold, warm)
            })
            .collect();
        dists.push(Dist {
            name,
            cpu: b,
            wake_up_ns,
            wakeup_latency_ns,
            ipi_busy_ns,
            ipi_idle_ns,
            line_ns,
            refill,
        });
    }
    // Memory: a chase buffer whose node the SRAT names, if one allocation
    // lands inside one node's range (the heap cannot be asked for a node).
    let bytes = c.chase_mib << 20;
    let mut kept = Vec::new();
    let mut buf_node = None;
    let mut buf_phys = 0;
    for _ in 0..Calibrate::CHASE_TRIES {
        let b = chase_buffer(bytes, line);
        buf_phys = (b.as_ptr() as u64).wrapping_sub(m.phys_offset);
        buf_node = m.node_of_range(buf_phys, (b.len() * 8) as u64);
        kept.push(b);
        if buf_node.is_some() || m.memory_nodes.is_empty() {
            break;
        }
    }
    let chase_buf = Arc::new(kept.pop().expect("one buffer"));
    drop(kept);
    // Page walks over the chase buffer's pages (the window's page size).
    let page_bytes = space::page_size(chase_buf.as_ptr() as u64).unwrap_or(4096) as usize;
    let walk_pages = (chase_buf.len() * 8 / page_bytes).min(64);
    let walk_ps = if walk_pages >= 2 {
        let b = chase_buf.clone();
        on_cpu(a, move || {
            page_walk(&b, page_bytes, walk_pages, rounds.min(200))
        })
    } else {
        0
    };
    log::info!(
        "calibrate: page walk {walk_ps} ps ({walk_pages} pages of {page_bytes} bytes after a TLB flush)"
    );
    watchdog::progress();
    let mut mem = Vec::new();
    for node in 0..m.topology.nr_nodes as u32 {
        let Some(cpu) = m
            .topology
            .cpus
            .iter()
            .find(|c| c.node == node && m.is_online(c.cpu))
            .map(|c| c.cpu)
        else {
            continue;
        };
        let b = chase_buf.clone();
        let ns = on_cpu(cpu, move || chase(&b, hops.min(b.len()), hops));
        watchdog::progress();
        mem.push((node, cpu, ns));
    }
    watchdog::disarm();

    let vendor = crate::arch::identity::hypervisor_vendor().unwrap_or_default();
    let tlb = on_cpu(a, crate::arch::cpu::tlb_4k);
    let refill_json = |r: &[(usize, u64, u64)]| {
        json_array(r, |w, &(kib, cold, warm)| {
            write!(w, "{{\"kib\":{kib},\"cold_ns\":{cold},\"warm_ns\":{warm}}}")
        })
    };
    let dist_json = json_array(&dists, |w, d| {
        write!(
            w,
            "{{\"distance\":\"{}\",\"cpus\":[{a},{}],\"wake_up_ns\":{},\"wakeup_latency_ns\":{},\"ipi_busy_ns\":{},\"ipi_idle_ns\":{},\"line_ns\":{},\"refill\":{}}}",
            d.name,
            d.cpu,
            d.wake_up_ns,
            d.wakeup_latency_ns,
            d.ipi_busy_ns,
            d.ipi_idle_ns,
            d.line_ns,
            refill_json(&d.refill)
        )
    });
    let mem_json = json_array(&mem, |w, &(node, cpu, ns)| {
        let slit = buf_node.map_or(0, |bn| m.topology.distance[node as usize][bn as usize]);
        write!(
            w,
            "{{\"node\":{node},\"cpu\":{cpu},\"ns_per_hop\":{ns},\"slit\":{slit}}}"
        )
    });
    log::info!(
        "calibrate: switch {ctx} ns, pipe call {} ns, semaphore op {} ns, spawn {} ns, compute unit {} ps",
        paths.pipe_call_ns,
        paths.sem_op_ns,
        paths.spawn_ns,
        paths.compute_unit_ps
    );
    for d in &dists {
        log::info!(
            "calibrate: {:<8} cpu {:>3}: wake_up {} ns, wakeup latency {} ns, IPI busy {} / idle {} ns, line {} ns",
            d.name,
            d.cpu,
            d.wake_up_ns,
            d.wakeup_latency_ns,
            d.ipi_busy_ns,
            d.ipi_idle_ns,
            d.line_ns
        );
    }
    for (node, cpu, ns) in &mem {
        log::info!("calibrate: memory chase from node {node} (CPU {cpu}): {ns} ns per hop");
    }
    Record::new("calibrate")
        .u64("rounds", rounds as u64)
        .str("clock", "tsc")
        .u64("tsc_hz", m.tsc.hz)
        .bool("hypervisor", crate::arch::cpu::under_hypervisor())
        .raw("hypervisor_vendor", &json_string(&vendor))
        .u64("cpu", a as u64)
        .u64("line_bytes", line as u64)
        .u64("context_switch_ns", ctx)
        .u64("yield_alone_ns", lone_yield)
        .raw(
            "mm",
            &alloc::format!(
                "{{\"process_switch_ns\":{},\"thread_switch_ns\":{},\"switch_ns\":{},\"cr3_loads\":{},\"cr4_pge\":{},\"cr4_pcide\":{},\"pages\":{},\"global_pages\":{},\"page_bytes\":{page_bytes},\"walk_pages\":{walk_pages},\"page_walk_ps\":{walk_ps},\"tlb_level\":{},\"tlb_4k_entries\":{}}}",
                mm.process_ns,
                mm.thread_ns,
                mm.process_ns.saturating_sub(mm.thread_ns),
                mm.loads,
                globals.cr4_pge,
                globals.cr4_pcide,
                globals.leaves,
                globals.global_leaves,
                tlb.map_or_else(|| "null".into(), |(l, _)| alloc::format!("{l}")),
                tlb.map_or_else(|| "null".into(), |(_, n)| alloc::format!("{n}"))
            ),
        )
        .raw("timer", &timer_json(&detour, m.hz))
        .raw(
            "llc_hit",
            &alloc::format!(
                "{{\"private_bytes\":{},\"l2_bytes\":{},\"llc_bytes\":{},\"bytes\":{},\"hops\":{hops},\"ns_per_hop\":{}}}",
                llc.private,
                llc.l2,
                llc.llc,
                llc.bytes,
                llc.ns.map_or_else(|| "null".into(), |n| alloc::format!("{n}"))
            ),
        )
        .u64("pipe_call_ns", paths.pipe_call_ns)
        .u64("copy_ps_per_byte", paths.copy_ps_per_byte)
        .u64("semaphore_op_ns", paths.sem_op_ns)
        .u64("spawn_ns", paths.spawn_ns)
        .u64("compute_unit_ps", paths.compute_unit_ps)
        .raw(
            "smt_shared_speed_milli",
            &smt.map_or_else(|| "null".into(), |s| alloc::format!("{s}")),
        )
        .raw(
            "same_cpu",
            &alloc::format!(
                "{{\"wake_up_ns\":{same_up},\"wakeup_latency_ns\":{same_lat},\"refill\":{}}}",
                refill_json(&same_refill)
            ),
        )
        .raw("distances", &dist_json)
        .raw(
            "memory",
            &alloc::format!(
                "{{\"bytes\":{},\"hops\":{hops},\"buffer_phys\":{buf_phys},\"buffer_node\":{},\"node_ranges\":{},\"from\":{mem_json}}}",
                chase_buf.len() * 8,
                buf_node.map_or_else(|| "null".into(), |n| alloc::format!("{n}")),
                m.memory_nodes.len()
            ),
        )
        .emit();
    Ok(ExitCode::Success)
}
