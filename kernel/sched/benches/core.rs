//! Micro-benchmarks of the scheduler core (plain `std::time::Instant`).
//!
//! 1. Runqueue cost of one enqueue + pick + dequeue with N entities queued,
//!    for the CFS and EEVDF timelines, next to a naive Vec with linear-scan
//!    pick measured in the same run.
//! 2. `select_task_rq` cost on the 160-CPU machine (4 sockets x 20 cores x
//!    2 threads, 4 nodes) for wakeups and forks.
//! 3. One wake + block + schedule cycle of two tasks on one CPU (the core's
//!    part of a pipe ping-pong), with its runqueue locking.
//! 4. Scaling: host threads each driving their own CPU's ping-pong pair at
//!    once through the per-runqueue locks, next to the same work serialised
//!    by one global lock (what the kernel had before), runs of the two
//!    alternating. Besides cycles per second it prints the host CPU time the
//!    threads got (a busy host gives two threads less than two CPUs, and then
//!    no row can show scaling: the bench says so) and the CPU time per cycle,
//!    which stays flat from one thread to two only if the threads share no
//!    cache lines (docs/kernel.md has the numbers and what they showed).
//!
//! Run with `cargo bench -p sched` (all), or name parts:
//! `cargo bench -p sched --bench core -- scaling threads=1,2`.

use sched::config::{PickPolicy, SchedConfig};
use sched::fair::cfs_rq::CfsRq;
use sched::fair::entity::{DequeueFlags, EnqueueFlags, dequeue_entity, enqueue_entity};
use sched::placement::{WakeFlags, select_task_rq_fair};
use sched::task::{Task, TaskId, TaskPolicy, TaskTable};
use sched::{PickDiscipline, SchedTopo, Scheduler};
use std::hint::black_box;
use std::sync::Mutex;
use std::time::Instant;
use topology::SyntheticSpec;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// ns per (enqueue + pick + dequeue) on the real timeline.
fn bench_timeline(pick: PickPolicy, n: usize, iters: usize) -> f64 {
    let cfg = SchedConfig::new(1, pick);
    let mut tasks = TaskTable::default();
    let mut cfs = CfsRq::default();
    let mut rng = Rng(0x1234_5678);
    let ids: Vec<TaskId> = (0..=n)
        .map(|i| tasks.alloc(|id| Task::new(id, (i % 7) as i32 - 3, TaskPolicy::Normal, 0)))
        .collect();
    // CFS enqueues without ENQUEUE_WAKEUP take a vruntime relative to
    // min_vruntime (fork/migration renormalisation); EEVDF an absolute one.
    let base = if pick.enqueue_relative(EnqueueFlags::default()) {
        0
    } else {
        cfs.min_vruntime
    };
    for &id in &ids {
        let se = &mut tasks[id].se;
        se.vruntime = base + rng.next() % 10_000_000;
        se.deadline = se.vruntime + 3_000_000;
        se.slice = 3_000_000;
    }
    let now = 1_000_000;
    for &id in &ids[..n] {
        enqueue_entity(&mut cfs, &mut tasks, &cfg, id, EnqueueFlags::default(), now);
    }
    let x = ids[n];
    let t0 = Instant::now();
    for _ in 0..iters {
        enqueue_entity(&mut cfs, &mut tasks, &cfg, x, EnqueueFlags::default(), now);
        black_box(pick.pick_next_entity(&mut cfs, &tasks, &cfg));
        dequeue_entity(
            &mut cfs,
            &mut tasks,
            &cfg,
            x,
            DequeueFlags {
                sleep: false,
                migrate: false,
                special: false,
            },
            now,
        );
        // Keep x's key moving so inserts land all over the tree.
        let se = &mut tasks[x].se;
        se.vruntime = base + rng.next() % 10_000_000;
        se.deadline = se.vruntime + 3_000_000;
        se.rel_deadline = false;
        se.vlag = 0;
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

/// ns per (push + linear-scan min + linear-scan remove) on a Vec.
fn bench_naive(n: usize, iters: usize) -> f64 {
    let mut rng = Rng(0x1234_5678);
    let mut v: Vec<(u64, u32)> = (0..n as u32)
        .map(|i| (rng.next() % 10_000_000, i))
        .collect();
    let x = n as u32;
    let t0 = Instant::now();
    for _ in 0..iters {
        v.push((rng.next() % 10_000_000, x));
        let best = v.iter().copied().min();
        black_box(best);
        let pos = v.iter().position(|e| e.1 == x).unwrap();
        v.swap_remove(pos);
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

fn big160(pick: PickPolicy) -> Scheduler {
    let spec = SyntheticSpec {
        nodes: 4,
        ..SyntheticSpec::simple(4, 20, 2)
    };
    let topo = SchedTopo::synthetic(&spec).expect("160-cpu topology");
    let n = topo.nr_cpus;
    Scheduler::new(topo, SchedConfig::new(n, pick))
}

/// ns per select_task_rq_fair on 160 CPUs with `busy` CPUs running a task.
fn bench_select(busy_every: usize, flags: WakeFlags, iters: usize) -> f64 {
    let s = big160(PickPolicy::Eevdf);
    let n = s.shared.nr_cpus();
    let mut sleepers = Vec::new();
    for cpu in 0..n {
        let t = s
            .wake_up_new_task_on(None, cpu, 0, TaskPolicy::Normal, 1000)
            .task;
        s.schedule(cpu, 1000);
        s.block(cpu, 2000);
        s.schedule(cpu, 2000);
        sleepers.push(t);
    }
    for cpu in (0..n).step_by(busy_every) {
        s.wake_up_new_task_on(None, cpu, 0, TaskPolicy::Normal, 3000);
        s.schedule(cpu, 3000);
    }
    let mut rng = Rng(42);
    let t0 = Instant::now();
    for i in 0..iters {
        let p = sleepers[(rng.next() as usize) % n];
        let waker = (rng.next() as usize) % n;
        // As in try_to_wake_up: the task's and the waker's runqueues are
        // held, every other CPU is read from its published snapshot.
        let prev = s.shared.task_cpu(p).expect("sleeper alive");
        let mut core = s.shared.context(waker);
        core.lock_also(prev);
        core.lock_also(waker);
        black_box(select_task_rq_fair(
            &mut core,
            p,
            prev,
            waker,
            flags,
            10_000 + i as u64,
        ));
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

/// One ping-pong step on `cpu`: curr wakes its partner (WF_SYNC), blocks,
/// and the CPU schedules.
fn cycle(s: &Scheduler, cpu: usize, pair: (TaskId, TaskId), now: u64) {
    let cur = s.current(cpu).expect("a pair member runs");
    let other = if cur == pair.0 { pair.1 } else { pair.0 };
    s.wake_up(other, cpu, true, now);
    s.block(cpu, now + 500);
    s.schedule(cpu, now + 500);
}

/// A machine of `n` CPUs with a bound ping-pong pair running on each.
fn pairs(n: usize) -> (Scheduler, Vec<(TaskId, TaskId)>) {
    let topo = SchedTopo::synthetic(&SyntheticSpec::simple(1, n as u32, 1)).expect("topology");
    let s = Scheduler::new(topo, SchedConfig::new(n, PickPolicy::Eevdf));
    let p = (0..n)
        .map(|cpu| {
            let mk = || {
                s.wake_up_new_task_bound(None, cpu, 0, TaskPolicy::Normal, 1000)
                    .task
            };
            let pair = (mk(), mk());
            s.schedule(cpu, 1000);
            pair
        })
        .collect();
    (s, p)
}

/// ns per ping-pong cycle on one CPU.
fn bench_cycle(iters: u64) -> f64 {
    let (s, p) = pairs(1);
    let t0 = Instant::now();
    for i in 0..iters {
        cycle(&s, 0, p[0], 2000 + i * 1000);
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

/// Nanoseconds this thread has run on a host CPU (Linux schedstat), if the
/// host tells.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// One run of [`bench_parallel`].
struct Parallel {
    /// Cycles per second of wall-clock time, all threads together.
    per_sec: f64,
    /// Host CPU time the threads got, in CPUs (CPU seconds / wall seconds):
    /// `threads` on an idle host, less when other work shares its CPUs.
    cpus_used: Option<f64>,
}

/// Cycles per second when `threads` host threads drive CPUs 0.. at once;
/// `global` serialises every cycle behind one lock.
fn bench_parallel(threads: usize, global: bool, iters: u64) -> Parallel {
    let (s, p) = pairs(threads);
    let big_lock = Mutex::new(());
    let t0 = Instant::now();
    let cpu_ns: Vec<Option<u64>> = std::thread::scope(|sc| {
        let hs: Vec<_> = p
            .iter()
            .enumerate()
            .map(|(cpu, &pair)| {
                let (s, big_lock) = (&s, &big_lock);
                sc.spawn(move || {
                    let c0 = thread_cpu_ns();
                    for i in 0..iters {
                        let _g = global.then(|| big_lock.lock().unwrap());
                        cycle(s, cpu, pair, 2000 + i * 1000);
                    }
                    Some(thread_cpu_ns()? - c0?)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let wall = t0.elapsed().as_secs_f64();
    let cpu: Option<u64> = cpu_ns.into_iter().sum();
    Parallel {
        per_sec: (threads as u64 * iters) as f64 / wall,
        cpus_used: cpu.map(|ns| ns as f64 / 1e9 / wall),
    }
}

fn bench_runqueues() {
    println!("runqueue: ns per enqueue+pick+dequeue with N entities queued");
    println!(
        "{:>8} {:>12} {:>12} {:>14}",
        "N", "CFS tree", "EEVDF tree", "naive Vec scan"
    );
    for &n in &[10usize, 100, 1_000, 10_000] {
        let iters = 2_000_000 / (1 + n / 100).min(20);
        let naive_iters = (20_000_000 / n).clamp(2_000, 2_000_000);
        let c = bench_timeline(PickPolicy::Cfs, n, iters);
        let e = bench_timeline(PickPolicy::Eevdf, n, iters);
        let v = bench_naive(n, naive_iters);
        println!("{n:>8} {c:>12.1} {e:>12.1} {v:>14.1}");
    }
    println!();
}

fn bench_selects() {
    println!(
        "select_task_rq_fair on 160 CPUs (4 sockets x 20 cores x 2 threads, 4 nodes): ns per call"
    );
    println!("{:>22} {:>10} {:>10}", "busy CPUs", "wakeup", "fork");
    for &(every, label) in &[(160usize, "1/160"), (2, "80/160"), (1, "160/160")] {
        let w = bench_select(every, WakeFlags::TTWU, 200_000);
        let f = bench_select(every, WakeFlags::FORK, 20_000);
        println!("{label:>22} {w:>10.0} {f:>10.0}");
    }
    println!();
}

/// Which parts to run: `cargo bench -p sched --bench core -- [runqueue]
/// [select] [cycle] [scaling] [threads=1,2,4] [iters=N] [runs=N]` (no part
/// named = all; `iters`: scaling cycles per thread per run, `runs`: runs
/// per row, the median is shown).
struct Args {
    parts: Vec<String>,
    threads: Vec<usize>,
    iters: u64,
    runs: usize,
}

impl Args {
    fn parse() -> Args {
        let mut a = Args {
            parts: Vec::new(),
            threads: vec![1, 2, 4],
            iters: 400_000,
            runs: 3,
        };
        // cargo bench passes `--bench`; other flags are ignored too.
        for arg in std::env::args().skip(1).filter(|x| !x.starts_with("--")) {
            let num = |v: &str| v.parse::<u64>().expect("a number");
            match arg.split_once('=') {
                Some(("threads", list)) => {
                    a.threads = list.split(',').map(|t| num(t) as usize).collect();
                }
                Some(("iters", n)) => a.iters = num(n),
                Some(("runs", n)) => a.runs = num(n).max(1) as usize,
                _ => a.parts.push(arg),
            }
        }
        a
    }

    fn wants(&self, part: &str) -> bool {
        self.parts.is_empty() || self.parts.iter().any(|p| p == part)
    }
}

/// The median of `runs` measurements (by cycles per second) of per-rq locks
/// and of the global lock, runs of the two alternating so that a change in
/// host load hits both alike.
fn median_pair(threads: usize, iters: u64, runs: usize) -> (Parallel, Parallel) {
    let (mut per_rq, mut global) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        per_rq.push(bench_parallel(threads, false, iters));
        global.push(bench_parallel(threads, true, iters));
    }
    let median = |mut v: Vec<Parallel>| {
        v.sort_by(|a, b| a.per_sec.total_cmp(&b.per_sec));
        v.swap_remove(runs / 2)
    };
    (median(per_rq), median(global))
}

fn main() {
    let args = Args::parse();
    if args.wants("runqueue") {
        bench_runqueues();
    }
    if args.wants("select") {
        bench_selects();
    }
    if args.wants("cycle") {
        println!(
            "wake + block + schedule on one CPU (runqueue locks included): {:.0} ns per cycle",
            bench_cycle(200_000)
        );
        println!();
    }
    if args.wants("scaling") {
        bench_scaling(&args);
    }
}

/// Case 4: per-runqueue locks against one global lock, 1.. host threads.
fn bench_scaling(args: &Args) {
    let (iters, runs) = (args.iters, args.runs);
    let hw = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(String::from))
        .unwrap_or_else(|| String::from("?"));
    println!(
        "ping-pong cycles per second of wall-clock time, one host thread per simulated CPU, \
         each driving its own bound pair ({hw} host CPUs, 1-min load average {load} at start; \
         median of {runs} runs of {iters} cycles per thread):"
    );
    println!(
        "{:>8} | {:>12} {:>9} {:>8} {:>8} | {:>12} {:>9} {:>8} | {:>6}",
        "threads",
        "per-rq locks",
        "CPUs used",
        "CPU ns",
        "speed-up",
        "global lock",
        "CPUs used",
        "CPU ns",
        "ratio"
    );
    let cpus = |p: &Parallel| p.cpus_used.map_or(String::from("?"), |c| format!("{c:.2}"));
    let cpu_ns = |p: &Parallel| {
        p.cpus_used
            .map_or(String::from("?"), |c| format!("{:.0}", c * 1e9 / p.per_sec))
    };
    let mut one = None;
    let mut starved = false;
    for &t in &args.threads {
        let (per_rq, global) = median_pair(t, iters, runs);
        let base = *one.get_or_insert(per_rq.per_sec / t as f64);
        let busy = per_rq.cpus_used.is_some_and(|c| c < 0.9 * t.min(hw) as f64);
        starved |= busy && t > 1;
        let note = if t > hw {
            "  (more threads than host CPUs)"
        } else if busy {
            "  (host busy: threads got fewer CPUs than they are)"
        } else {
            ""
        };
        println!(
            "{t:>8} | {:>12.0} {:>9} {:>8} {:>7.2}x | {:>12.0} {:>9} {:>8} | {:>5.2}x{note}",
            per_rq.per_sec,
            cpus(&per_rq),
            cpu_ns(&per_rq),
            per_rq.per_sec / base,
            global.per_sec,
            cpus(&global),
            cpu_ns(&global),
            per_rq.per_sec / global.per_sec,
        );
    }
    println!(
        "cycles/s: all threads together, wall clock. CPUs used: host CPU time the threads got / \
         wall time (below `threads` when the host is busy). CPU ns: host CPU time per cycle (flat \
         across rows when nothing is shared). speed-up: per-rq cycles/s over the first row's per \
         thread. ratio: per-rq over global lock."
    );
    if starved {
        println!(
            "the host did not give the threads a CPU each: other work shared its CPUs, so these \
             rows cannot show scaling (run on an idle host)."
        );
    }
}
