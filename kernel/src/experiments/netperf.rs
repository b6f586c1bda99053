//! netperf's loopback tests between `pairs` client/server thread pairs, the
//! workload of seed 004 (Mike Galbraith's netperf placements) and of SIS
//! overload studies: each pair has its own socketpair channel (208 KiB
//! buffers, WF_SYNC wakeups like `sock_def_readable`).
//!
//! - `TCP_RR`: the client sends a `request`-byte request, the server answers
//!   with `response` bytes; one transaction outstanding, no think time.
//!   Result: transactions per second (all pairs summed, and per pair).
//! - `TCP_STREAM`: the client sends `send_size`-byte writes back to back;
//!   result: Mbit/s received by the servers.
//!
//! All pairs start together through the start gate; the test runs for
//! `duration_ms`, then the clients stop after their current transaction and
//! close their sockets, which ends the servers. Connection setup is outside
//! the measurement, as in netperf.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::args::Args;
use super::gate::Gate;
use super::interval::Interval;
use crate::arch::qemu::ExitCode;
use crate::arch::time;
use crate::machine::Machine;
use crate::record::{Record, json_array};
use crate::sync::socketpair;
use crate::task::{self, SpawnOptions};
use crate::watchdog;

/// Linux's default socket buffer (`net.core.wmem_default`).
const SOCKET_BYTES: usize = 208 * 1024;

/// One pair's counts.
#[derive(Default)]
struct PairBooks {
    transactions: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
}

/// Runs the experiment.
pub fn run(_m: &Machine, a: &mut Args<'_>) -> Result<ExitCode, String> {
    let nr_cpus = crate::arch::percpu::online().count() as u64;
    let test = a.choice("test", &["TCP_RR", "TCP_STREAM"])?;
    let pairs = a.u64("pairs", nr_cpus, 1..=2048)? as usize;
    let duration_ns = a.u64("duration_ms", 2000, 10..=3_600_000)? * 1_000_000;
    let request = a.u64("request", 1, 1..=65_536)? as usize;
    let response = a.u64("response", 1, 1..=65_536)? as usize;
    let send_size = a.u64("send_size", 16_384, 1..=1_048_576)? as usize;
    let rr = test == "TCP_RR";
    if rr {
        log::info!(
            "netperf {test}: {pairs} pairs, {request}-byte requests, {response}-byte responses, {} ms",
            duration_ns / 1_000_000
        );
    } else {
        log::info!(
            "netperf {test}: {pairs} pairs, {send_size}-byte sends, {} ms",
            duration_ns / 1_000_000
        );
    }
    let gate = Arc::new(Gate::new());
    let stop = Arc::new(AtomicBool::new(false));
    let books: Vec<Arc<PairBooks>> = (0..pairs).map(|_| Arc::new(PairBooks::default())).collect();
    watchdog::arm(30_000_000_000);
    let mut handles = Vec::with_capacity(2 * pairs);
    for (i, b) in books.iter().enumerate() {
        let (client, server) = socketpair(SOCKET_BYTES);
        let (g, bk) = (gate.clone(), b.clone());
        handles.push(task::spawn(
            SpawnOptions {
                name: alloc::format!("netserver{i}"),
                ..Default::default()
            },
            move || {
                g.check_in_and_wait();
                if rr {
                    let (mut req, resp) = (vec![0u8; request], vec![0xA5u8; response]);
                    while server.recv_exact(&mut req) {
                        bk.bytes_received
                            .fetch_add(request as u64, Ordering::Relaxed);
                        if server.send(&resp).is_err() {
                            break;
                        }
                    }
                } else {
                    let mut buf = vec![0u8; send_size];
                    loop {
                        let n = server.recv(&mut buf);
                        if n == 0 {
                            break;
                        }
                        bk.bytes_received.fetch_add(n as u64, Ordering::Relaxed);
                    }
                }
            },
        ));
        let (g, bk, st) = (gate.clone(), b.clone(), stop.clone());
        handles.push(task::spawn(
            SpawnOptions {
                name: alloc::format!("netperf{i}"),
                ..Default::default()
            },
            move || {
                g.check_in_and_wait();
                let mut n = 0u64;
                if rr {
                    let (req, mut resp) = (vec![0x5Au8; request], vec![0u8; response]);
                    while !st.load(Ordering::Relaxed) {
                        if client.send(&req).is_err() || !client.recv_exact(&mut resp) {
                            break;
                        }
                        bk.transactions.fetch_add(1, Ordering::Relaxed);
                        bk.bytes_sent.fetch_add(request as u64, Ordering::Relaxed);
                        n += 1;
                        if n.is_multiple_of(256) {
                            watchdog::progress();
                        }
                    }
                } else {
                    let buf = vec![0x5Au8; send_size];
                    while !st.load(Ordering::Relaxed) {
                        if client.send(&buf).is_err() {
                            break;
                        }
                        bk.bytes_sent.fetch_add(send_size as u64, Ordering::Relaxed);
                        n += 1;
                        if n.is_multiple_of(16) {
                            watchdog::progress();
                        }
                    }
                }
                // Dropping the socket closes the server's side: it ends.
                drop(client);
            },
        ));
    }
    gate.wait_ready(2 * pairs);
    let interval = Interval::start();
    let t0 = interval.t0;
    gate.open();
    while time::now_ns() < t0 + duration_ns {
        task::sleep_ns(10_000_000);
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed = interval.elapsed_ns();
    for h in handles {
        h.join();
    }
    let sched = interval.sched_json();
    watchdog::disarm();

    let v = |x: &AtomicU64| x.load(Ordering::Relaxed);
    let trans: u64 = books.iter().map(|b| v(&b.transactions)).sum();
    let received: u64 = books.iter().map(|b| v(&b.bytes_received)).sum();
    let sent: u64 = books.iter().map(|b| v(&b.bytes_sent)).sum();
    let per_s = |n: u64| n * 1_000_000_000 / elapsed.max(1);
    let mbit = received * 8 * 1000 / elapsed.max(1); // bits/ns * 1000 = Mbit/s
    let per_pair = json_array(books.iter(), |w, b| {
        write!(
            w,
            "{{\"transactions\":{},\"bytes_received\":{}}}",
            v(&b.transactions),
            v(&b.bytes_received)
        )
    });
    Record::new("netperf")
        .str("test", test)
        .u64("pairs", pairs as u64)
        .u64("request", request as u64)
        .u64("response", response as u64)
        .u64("send_size", send_size as u64)
        .u64("elapsed_ns", elapsed)
        .u64("transactions", trans)
        .u64("trans_per_sec", per_s(trans))
        .u64("bytes_sent", sent)
        .u64("bytes_received", received)
        .u64("mbit_per_sec", mbit)
        .raw("per_pair", &per_pair)
        .raw("sched", &sched)
        .emit();
    if rr {
        log::info!(
            "{test}: Trans. Rate per sec {} ({trans} transactions)",
            per_s(trans)
        );
    } else {
        log::info!("{test}: Throughput 10^6bits/sec {mbit} ({received} bytes)");
    }
    // Every byte a client sent was received: RR requests are answered
    // before the next is sent; STREAM servers read until end of file.
    if received != sent || (rr && trans == 0) || (!rr && received == 0) {
        return Err(alloc::format!(
            "netperf {test}: {sent} bytes sent, {received} received, {trans} transactions"
        ));
    }
    Ok(ExitCode::Success)
}
