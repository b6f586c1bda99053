//! hackbench (rt-tests `hackbench`, `perf bench sched messaging`):
//! `groups` groups of `fds` senders and `fds` receivers; one channel
//! per receiver (a socketpair by default, a pipe with `transport=pipe`);
//! every sender writes `loops` messages of `datasize` bytes to every
//! receiver of its group, round-robin, and each receiver reads
//! `fds x loops` messages. Traffic never crosses groups.
//!
//! Timing follows hackbench: every worker is created first and reports ready,
//! then the parent takes the start time, opens the start gate (hackbench's
//! "wake" fd every child polls) and joins every worker; the reported time
//! is that interval, exit tail included, fork and setup excluded. The
//! `hackbench` record adds what the seeds look at: the scheduler's decisions
//! during the timed interval (wakeups, select_idle_sibling branches,
//! migrations by reason and topology distance, runqueue wait histogram) and
//! per-CPU context switches, migrations and address-space switches; on the
//! kernel also `heap_allocs`, the heap allocations made during it (every
//! message, wait, wakeup, switch and exit; 0 is the design).
//!
//! `mode=thread` (the default, hackbench `-T`) makes every worker a thread
//! of one process; `mode=process` (hackbench's own default) forks each
//! sender and receiver as its own process, so a switch between two workers
//! changes page tables. Process mode needs an environment with address
//! spaces ([`Env::address_spaces`]: the simulator, and the kernel, which
//! gives each process its own PML4). The record's `per_cpu` entries count
//! the switches that loaded another process's page tables (`mm_switches`).
//! Pipes hold 64 KiB (Linux's default 16 pages); a socket
//! channel holds 208 KiB (the default `net.core.wmem_default`); both wake
//! readers and writers with WF_SYNC, as `pipe_write` and `sock_def_readable`
//! do.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::args::Args;
use crate::env::{Env, Space, Spawn};
use crate::gate::Gate;
use crate::interval::Interval;
use crate::json::Record;
use crate::noise::{Noise, NoiseWorkers};

/// Linux's default pipe size.
pub const PIPE_BYTES: usize = 64 * 1024;
/// Linux's default socket send buffer (`net.core.wmem_default`).
pub const SOCKET_BYTES: usize = 208 * 1024;
/// Most worker threads the arguments may ask for: the scheduler core's
/// live-task table ([`sched::config::DEFAULT_MAX_TASKS`], 16,384) less room
/// for the run's other threads. Whether they fit this machine (the kernel's
/// heap: a 64 KiB stack each) is [`Env::check_threads`]'s, before any starts.
pub const MAX_TASKS: u64 = sched::config::DEFAULT_MAX_TASKS as u64 - 1024;

/// hackbench's options.
#[derive(Clone, Debug)]
pub struct Params {
    /// `-g`: groups.
    pub groups: usize,
    /// `-f`: senders (and receivers) per group.
    pub fds: usize,
    /// `-l`: messages each sender writes to each receiver.
    pub loops: u64,
    /// `-s`: bytes per message.
    pub datasize: usize,
    /// "socket" or "pipe" (`-p`).
    pub transport: &'static str,
    /// "thread" (`-T`) or "process" (`-P`, hackbench's default).
    pub mode: &'static str,
    /// Per-CPU kworker noise.
    pub noise: Noise,
    /// `wakee_flips` of the launching thread before it forks the workers,
    /// which they inherit (Linux copies them at fork): what a shell passes
    /// on. 0 = a quiet launcher; the Linux 6.12 rig's hackbench threads
    /// started with 52 (docs/benchmarks.md).
    pub launch_wakee_flips: u32,
}

impl Params {
    /// Reads the experiment's arguments.
    pub fn from_args(a: &mut Args<'_>) -> Result<Params, String> {
        let p = Params {
            groups: a.u64("groups", 10, 1..=4096)? as usize,
            fds: a.u64("fds", 20, 1..=1024)? as usize,
            loops: a.u64("loops", 100, 1..=100_000_000)?,
            datasize: a.u64("datasize", 100, 1..=65_536)? as usize,
            transport: a.choice("transport", &["socket", "pipe"])?,
            mode: a.choice("mode", &["thread", "process"])?,
            noise: Noise::from_args(a)?,
            launch_wakee_flips: a.u64("launch_wakee_flips", 0, 0..=1_000_000)? as u32,
        };
        let tasks = p.tasks() as u64;
        if tasks > MAX_TASKS {
            return Err(format!(
                "hackbench: {} groups x {} tasks = {tasks} threads, more than {MAX_TASKS}",
                p.groups,
                2 * p.fds
            ));
        }
        Ok(p)
    }

    /// Worker threads.
    pub fn tasks(&self) -> usize {
        self.groups * self.fds * 2
    }

    pub(crate) fn channel_bytes(&self) -> usize {
        if self.transport == "pipe" {
            PIPE_BYTES
        } else {
            SOCKET_BYTES
        }
    }
}

#[derive(Default)]
struct Books {
    messages_sent: AtomicU64,
    bytes_received: AtomicU64,
}

/// Runs hackbench and emits its `hackbench` record.
pub async fn run<E: Env>(env: &E, p: Params) -> Result<(), String> {
    let tasks = p.tasks();
    env.check_threads(tasks + p.noise.threads(env.nr_cpus()))
        .map_err(|e| format!("hackbench: {} groups x {} tasks: {e}", p.groups, 2 * p.fds))?;
    let (groups, fds, loops, datasize) = (p.groups, p.fds, p.loops, p.datasize);
    let space = if p.mode == "process" {
        if !env.address_spaces() {
            return Err(String::from(
                "hackbench mode=process: every task here shares one address space, so process \
                 mode would measure threads; use mode=thread",
            ));
        }
        Space::Process
    } else {
        Space::Thread
    };
    let how = |name: String| Spawn {
        name,
        pinned: None,
        space,
        nice: 0,
    };
    if p.launch_wakee_flips > 0 {
        env.set_wakee_flips(p.launch_wakee_flips);
    }
    env.log(format_args!(
        "Running in {} mode with {groups} groups using {} file descriptors each (== {tasks} tasks)",
        if space == Space::Process {
            "process"
        } else {
            "threaded"
        },
        2 * fds
    ));
    env.log(format_args!(
        "Each sender will pass {loops} messages of {datasize} bytes ({})",
        p.transport
    ));
    let gate = Arc::new(Gate::new(env, tasks));
    let books = Arc::new(Books::default());
    let per_receiver = fds as u64 * loops * datasize as u64;
    let mut handles = Vec::with_capacity(tasks);
    for g in 0..groups {
        let mut writers = Vec::with_capacity(fds);
        for r in 0..fds {
            let (w, mut rx) = env.channel(p.channel_bytes());
            env.reserve_recv(&mut rx, datasize);
            writers.push(w);
            let (e, gate, books) = (env.clone(), gate.clone(), books.clone());
            let body = async move {
                gate.check_in_and_wait(&e).await;
                let mut got = 0u64;
                let mut since_progress = 0u64;
                while got < per_receiver {
                    let n = e.recv(&mut rx, datasize).await as u64;
                    if n == 0 {
                        break; // every sender gone early: the books show it
                    }
                    got += n;
                    since_progress += n;
                    if since_progress >= 64 * 1024 {
                        since_progress = 0;
                        e.progress();
                    }
                }
                books.bytes_received.fetch_add(got, Ordering::Relaxed);
            };
            handles.push(env.spawn(how(format!("hb-recv{g}.{r}")), body).await);
        }
        let writers = Arc::new(writers);
        for s in 0..fds {
            let (e, gate, books, writers) =
                (env.clone(), gate.clone(), books.clone(), writers.clone());
            let body = async move {
                gate.check_in_and_wait(&e).await;
                for _ in 0..loops {
                    for w in writers.iter() {
                        if e.send(w, datasize).await.is_err() {
                            return;
                        }
                        books.messages_sent.fetch_add(1, Ordering::Relaxed);
                    }
                }
            };
            handles.push(env.spawn(how(format!("hb-send{g}.{s}")), body).await);
        }
    }
    let noise = NoiseWorkers::start(env, p.noise).await;
    gate.wait_ready(env).await;
    let interval = Interval::start(env);
    gate.open(env).await;
    for h in handles {
        env.join(h).await;
    }
    let end = interval.end(env);
    noise.stop(env).await;
    let elapsed = end.elapsed_ns;

    let messages = books.messages_sent.load(Ordering::Relaxed);
    let received = books.bytes_received.load(Ordering::Relaxed);
    let want_messages = (groups * fds * fds) as u64 * loops;
    let rec = Record::new("hackbench")
        .str("mode", p.mode)
        .str("transport", p.transport)
        .u64("groups", groups as u64)
        .u64("fds", fds as u64)
        .u64("loops", loops)
        .u64("launch_wakee_flips", u64::from(p.launch_wakee_flips))
        .u64("datasize", datasize as u64)
        .u64("tasks", tasks as u64)
        .u64("messages", messages)
        .u64("bytes", received)
        .u64("time_ns", elapsed)
        .opt_u64("heap_allocs", end.heap_allocs)
        .raw("per_cpu", &end.per_cpu_json)
        .raw("sched", &end.sched_json());
    env.emit(&rec.finish());
    env.log(format_args!(
        "Time: {}.{:03}",
        elapsed / 1_000_000_000,
        elapsed / 1_000_000 % 1000
    ));
    if messages != want_messages || received != want_messages * datasize as u64 {
        return Err(format!(
            "hackbench: {messages} messages sent and {received} bytes received, expected {want_messages} and {}",
            want_messages * datasize as u64
        ));
    }
    Ok(())
}
