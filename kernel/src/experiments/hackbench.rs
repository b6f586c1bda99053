//! hackbench (rt-tests `hackbench`, `perf bench sched messaging`) in thread
//! mode: `groups` groups of `fds` senders and `fds` receivers; one channel
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
//! per-CPU context switches and migrations.
//!
//! Process mode is not modelled (threads share one address space here, like
//! hackbench `-T`). Pipes hold 64 KiB (Linux's default 16 pages); a socket
//! channel holds 208 KiB (the default `net.core.wmem_default`); both wake
//! readers and writers with WF_SYNC, as `pipe_write` and `sock_def_readable`
//! do.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use super::args::Args;
use super::gate::Gate;
use super::interval::Interval;
use crate::arch::qemu::ExitCode;
use crate::machine::Machine;
use crate::record::Record;
use crate::sync::pipe;
use crate::sync::pipe::{PipeReader, PipeWriter};
use crate::task::{self, SpawnOptions};
use crate::watchdog;

/// Linux's default pipe size.
const PIPE_BYTES: usize = 64 * 1024;
/// Linux's default socket send buffer (`net.core.wmem_default`).
const SOCKET_BYTES: usize = 208 * 1024;
/// Most worker threads (each has a 64 KiB stack).
const MAX_TASKS: u64 = 8192;

#[derive(Default)]
struct Books {
    messages_sent: AtomicU64,
    bytes_received: AtomicU64,
}

/// A receiver's channel: what it reads from, and the write side its group's
/// senders share (dropped with the last sender, which ends the stream).
fn channel(transport: &str) -> (Arc<PipeWriter>, PipeReader) {
    let bytes = if transport == "pipe" {
        PIPE_BYTES
    } else {
        SOCKET_BYTES
    };
    let (w, r) = pipe(bytes);
    (Arc::new(w), r)
}

/// Runs the experiment.
pub fn run(_m: &Machine, a: &mut Args<'_>) -> Result<ExitCode, String> {
    let groups = a.u64("groups", 10, 1..=4096)? as usize;
    let fds = a.u64("fds", 20, 1..=1024)? as usize;
    let loops = a.u64("loops", 100, 1..=100_000_000)?;
    let datasize = a.u64("datasize", 100, 1..=65_536)? as usize;
    let transport = a.choice("transport", &["socket", "pipe"])?;
    let tasks = groups * fds * 2;
    if tasks as u64 > MAX_TASKS {
        return Err(alloc::format!(
            "hackbench: {groups} groups x {} tasks = {tasks} threads, more than {MAX_TASKS}",
            2 * fds
        ));
    }
    log::info!(
        "Running in threaded mode with {groups} groups using {} file descriptors each (== {tasks} tasks)",
        2 * fds
    );
    log::info!("Each sender will pass {loops} messages of {datasize} bytes ({transport})");

    let gate = Arc::new(Gate::new());
    let books = Arc::new(Books::default());
    let per_receiver = fds as u64 * loops * datasize as u64;
    watchdog::arm(30_000_000_000);
    let mut handles = Vec::with_capacity(tasks);
    for g in 0..groups {
        let mut writers = Vec::with_capacity(fds);
        for r in 0..fds {
            let (w, rx) = channel(transport);
            writers.push(w);
            let (gate, books) = (gate.clone(), books.clone());
            handles.push(task::spawn(
                SpawnOptions {
                    name: alloc::format!("hb-recv{g}.{r}"),
                    ..Default::default()
                },
                move || {
                    gate.check_in_and_wait();
                    let mut buf = vec![0u8; datasize];
                    let mut got = 0u64;
                    let mut since_progress = 0u64;
                    while got < per_receiver {
                        let n = rx.read(&mut buf) as u64;
                        if n == 0 {
                            break; // every sender gone early: the books show it
                        }
                        got += n;
                        since_progress += n;
                        if since_progress >= 64 * 1024 {
                            since_progress = 0;
                            watchdog::progress();
                        }
                    }
                    books.bytes_received.fetch_add(got, Ordering::Relaxed);
                },
            ));
        }
        let writers = Arc::new(writers);
        for s in 0..fds {
            let (gate, books, writers) = (gate.clone(), books.clone(), writers.clone());
            handles.push(task::spawn(
                SpawnOptions {
                    name: alloc::format!("hb-send{g}.{s}"),
                    ..Default::default()
                },
                move || {
                    gate.check_in_and_wait();
                    let msg = vec![0x5Au8; datasize];
                    for _ in 0..loops {
                        for w in writers.iter() {
                            if w.write(&msg).is_err() {
                                return;
                            }
                            books.messages_sent.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                },
            ));
        }
    }
    gate.wait_ready(tasks);
    let interval = Interval::start();
    gate.open();
    for h in handles {
        h.join();
    }
    let elapsed = interval.elapsed_ns();
    let sched = interval.sched_json();
    watchdog::disarm();

    let messages = books.messages_sent.load(Ordering::Relaxed);
    let received = books.bytes_received.load(Ordering::Relaxed);
    let want_messages = (groups * fds * fds) as u64 * loops;
    Record::new("hackbench")
        .str("mode", "thread")
        .str("transport", transport)
        .u64("groups", groups as u64)
        .u64("fds", fds as u64)
        .u64("loops", loops)
        .u64("datasize", datasize as u64)
        .u64("tasks", tasks as u64)
        .u64("messages", messages)
        .u64("bytes", received)
        .u64("time_ns", elapsed)
        .raw("per_cpu", &interval.per_cpu_json())
        .raw("sched", &sched)
        .emit();
    log::info!(
        "Time: {}.{:03}",
        elapsed / 1_000_000_000,
        elapsed / 1_000_000 % 1000
    );
    if messages != want_messages || received != want_messages * datasize as u64 {
        return Err(alloc::format!(
            "hackbench: {messages} messages sent and {received} bytes received, expected {want_messages} and {}",
            want_messages * datasize as u64
        ));
    }
    Ok(ExitCode::Success)
}
