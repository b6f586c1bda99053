//! netperf's loopback tests between `pairs` client/server thread pairs, the
//! workload of seed 004 (Mike Galbraith's netperf placements) and of SIS
//! overload studies: each pair has its own socketpair (one channel each
//! way, 208 KiB buffers, WF_SYNC wakeups like `sock_def_readable`). The
//! client is netperf (`netperf{i}`), the server netserver (`netserver{i}`).
//!
//! - `TCP_RR`: the client sends a `request`-byte request, the server answers
//!   with `response` bytes; one transaction outstanding, no think time.
//!   Result: transactions per second (all pairs summed, and per pair).
//! - `UDP_RR`: TCP_RR over datagram sockets ([`Env::datagram_channel`]): no
//!   connection, and each send and receive takes the datagram path, which
//!   the simulator charges `kernel.datagram_syscall_ns` instead of
//!   `kernel.syscall_ns` (0.48 of it: the UDP/TCP ratio of per-message
//!   kernel time measured on loopback, docs/simulator.md). One message is in
//!   flight each way, so nothing can be dropped; a drop fails the run.
//! - `TCP_STREAM`: the client sends `send_size`-byte writes back to back;
//!   result: 10^6 bits/s received by the servers.
//! - `TCP_MAERTS`: TCP_STREAM backwards: the server sends, the client
//!   receives (netperf's "data flows netserver to netperf").
//! - `TCP_SENDFILE`: TCP_STREAM whose client sends with `sendfile()`
//!   ([`Env::sendfile`]): no user-to-kernel copy. In the simulator the
//!   client's per-send cost drops from `syscall_ns + send_size x
//!   copy_ns_per_byte` to `syscall_ns`: 450 ns instead of 1,433 ns at the
//!   default 16 KiB sends on the nominal profile, a ratio of 0.31; and the
//!   server's copy reads page-cache lines no CPU wrote, so it pays no
//!   cache-line transfer from the client's CPU. The reasoning is the
//!   mechanism (sendfile removes exactly the sender's copy), not a fit; the
//!   real saving is smaller, because the model's socket send has no TCP
//!   protocol cost for the copy to be a share of: Andrew Morton measured
//!   sendfile at 0.48 of read()+write()'s sender CPU (lkml, 27 Jan 2001,
//!   "sendfile+zerocopy: fairly sexy", a NIC sender whose write path also
//!   read the file), and on a Linux 6.18 VM a 16 KiB loopback sendfile()
//!   took about as long as write() (median ratio 1.0; 0.84 at 64 KiB;
//!   docs/probes/netcost.c).
//!   In the kernel the channel is a byte ring and sendfile copies: there
//!   TCP_SENDFILE is TCP_STREAM.
//! - `UDP_STREAM`: the client sends `send_size`-byte datagrams back to back
//!   and never blocks: a datagram that does not fit whole in the server's
//!   208 KiB receive buffer is dropped and counted, as UDP drops
//!   (`RcvbufErrors`). Result: 10^6 bits/s *received* (netperf's second
//!   line), with the send rate and the message counts beside it; every
//!   datagram sent is received or counted as dropped. `send_size` must fit
//!   one datagram (65,507 bytes).
//!
//! `placement` pins each pair as Galbraith ran seed 004 with `taskset`:
//! `stacked` (client and server on one CPU), `cross-smt` (SMT siblings of
//! one core), `cross-core` (two cores of one LLC), `cross-node` (two NUMA
//! nodes); `unbound` (default) leaves placement to the scheduler. Pair `i`
//! uses the `i`-th core (wrapping around), so pinned pairs share CPUs only
//! when there are more pairs than cores.
//!
//! All pairs start together through the start gate; the test runs for
//! `duration_ms`, then the senders stop after their current transaction or
//! send and close their sockets, which ends the receivers. Connection setup
//! is outside the measurement, as in netperf.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::args::Args;
use sched::SchedTopo;

use crate::env::{Env, Space, Spawn, recv_exact};
use crate::gate::Gate;
use crate::json::{Record, json_array};
use crate::noise::Noise;

/// Linux's default socket buffer (`net.core.wmem_default`).
pub const SOCKET_BYTES: usize = 208 * 1024;

/// The largest UDP payload over IPv4 (65,535 - 8 - 20).
pub const MAX_DATAGRAM: usize = 65_507;

/// Tests `test=` accepts (the first is the default).
pub const TESTS: &[&str] = &[
    "TCP_RR",
    "TCP_STREAM",
    "TCP_MAERTS",
    "TCP_SENDFILE",
    "UDP_STREAM",
    "UDP_RR",
];

/// True for the request/response tests (result: transactions per second);
/// the others are streams (result: 10^6 bits/s).
pub fn is_rr(test: &str) -> bool {
    test.ends_with("_RR")
}

/// True for the tests over datagram sockets.
pub fn is_udp(test: &str) -> bool {
    test.starts_with("UDP_")
}

/// netperf's options.
#[derive(Clone, Debug)]
pub struct Params {
    /// One of [`TESTS`].
    pub test: &'static str,
    /// Client/server pairs.
    pub pairs: usize,
    /// Test length.
    pub duration_ns: u64,
    /// RR request bytes.
    pub request: usize,
    /// RR response bytes.
    pub response: usize,
    /// Stream bytes per send (per datagram for UDP_STREAM).
    pub send_size: usize,
    /// Pinning of each pair (see the module docs).
    pub placement: &'static str,
    /// Per-CPU kworker noise.
    pub noise: Noise,
}

/// Placements `placement=` accepts.
pub const PLACEMENTS: &[&str] = &[
    "unbound",
    "stacked",
    "cross-smt",
    "cross-core",
    "cross-node",
];

/// (server CPU, client CPU) of pair `i` under `placement`; None = unbound.
pub fn pair_cpus(
    topo: &SchedTopo,
    placement: &str,
    i: usize,
) -> Result<Option<(usize, usize)>, String> {
    // The first CPU of every core, in CPU order.
    let cores: Vec<usize> = (0..topo.nr_cpus)
        .filter(|&c| topo.smt[c].first() == Some(c))
        .collect();
    let core = |k: usize| cores[k % cores.len()];
    match placement {
        "unbound" => Ok(None),
        "stacked" => Ok(Some((core(i), core(i)))),
        "cross-smt" => {
            let c = core(i);
            let sib = topo.smt[c].iter().find(|&s| s != c).ok_or_else(|| {
                String::from("netperf: placement=cross-smt needs SMT siblings; this machine has one thread per core")
            })?;
            Ok(Some((c, sib)))
        }
        "cross-core" => {
            let c = core(i);
            let other = cores
                .iter()
                .copied()
                .filter(|&o| o != c && topo.llc_span[c].contains(o))
                .nth(i / cores.len().max(1) % cores.len().max(1))
                .or_else(|| {
                    cores
                        .iter()
                        .copied()
                        .find(|&o| o != c && topo.llc_span[c].contains(o))
                })
                .ok_or_else(|| {
                    String::from("netperf: placement=cross-core needs two cores sharing an LLC")
                })?;
            Ok(Some((c, other)))
        }
        "cross-node" => {
            let c = core(i);
            let node = topo.cpus[c].node;
            let far: Vec<usize> = cores
                .iter()
                .copied()
                .filter(|&o| topo.cpus[o].node != node)
                .collect();
            if far.is_empty() {
                return Err(String::from(
                    "netperf: placement=cross-node needs at least two NUMA nodes",
                ));
            }
            Ok(Some((c, far[i % far.len()])))
        }
        other => Err(format!("netperf: unknown placement '{other}'")),
    }
}

impl Params {
    /// Reads the experiment's arguments (`pairs` defaults to one per CPU).
    pub fn from_args(a: &mut Args<'_>, nr_cpus: usize) -> Result<Params, String> {
        let p = Params {
            test: a.choice("test", TESTS)?,
            pairs: a.u64("pairs", nr_cpus as u64, 1..=2048)? as usize,
            duration_ns: a.u64("duration_ms", 2000, 10..=3_600_000)? * 1_000_000,
            request: a.u64("request", 1, 1..=65_536)? as usize,
            response: a.u64("response", 1, 1..=65_536)? as usize,
            send_size: a.u64("send_size", 16_384, 1..=1_048_576)? as usize,
            placement: a.choice("placement", PLACEMENTS)?,
            noise: Noise::from_args(a)?,
        };
        // A datagram is one message: it cannot exceed UDP's payload limit.
        let too_big = match p.test {
            "UDP_RR" => [("request", p.request), ("response", p.response)]
                .into_iter()
                .find(|&(_, n)| n > MAX_DATAGRAM),
            "UDP_STREAM" => Some(("send_size", p.send_size)).filter(|&(_, n)| n > MAX_DATAGRAM),
            _ => None,
        };
        if let Some((k, n)) = too_big {
            return Err(format!(
                "netperf {}: {k}={n} does not fit one UDP datagram (at most {MAX_DATAGRAM} bytes)",
                p.test
            ));
        }
        Ok(p)
    }
}

/// One pair's counts.
#[derive(Default)]
struct PairBooks {
    transactions: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    /// Datagram tests: messages sent by either side, received by either
    /// side, and dropped at either receive buffer.
    messages_sent: AtomicU64,
    messages_received: AtomicU64,
    messages_dropped: AtomicU64,
}

/// Runs netperf and emits its `netperf` record.
pub async fn run<E: Env>(env: &E, p: Params) -> Result<(), String> {
    let Params {
        test,
        pairs,
        duration_ns,
        request,
        response,
        send_size,
        placement,
        noise,
    } = p;
    env.check_threads(2 * pairs + noise.threads(env.nr_cpus()))
        .map_err(|e| format!("netperf: {pairs} pairs: {e}"))?;
    let mut pins = Vec::with_capacity(pairs);
    for i in 0..pairs {
        pins.push(pair_cpus(env.topo(), placement, i)?);
    }
    let rr = is_rr(test);
    let udp = is_udp(test);
    // Which side sends in a stream test: the server in TCP_MAERTS.
    let maerts = test == "TCP_MAERTS";
    let sendfile = test == "TCP_SENDFILE";
    if rr {
        env.log(format_args!(
            "netperf {test}: {pairs} pairs, {request}-byte requests, {response}-byte responses, {} ms",
            duration_ns / 1_000_000
        ));
    } else {
        env.log(format_args!(
            "netperf {test}: {pairs} pairs, {send_size}-byte sends, {} ms",
            duration_ns / 1_000_000
        ));
    }
    let gate = Arc::new(Gate::new(env, 2 * pairs));
    let stop = Arc::new(AtomicBool::new(false));
    let books: Vec<Arc<PairBooks>> = (0..pairs).map(|_| Arc::new(PairBooks::default())).collect();
    let mut handles = Vec::with_capacity(2 * pairs);
    for (i, b) in books.iter().enumerate() {
        let socket = |env: &E| {
            if udp {
                env.datagram_channel(SOCKET_BYTES)
            } else {
                env.channel(SOCKET_BYTES)
            }
        };
        let (to_server, mut server_rx) = socket(env);
        let (to_client, mut client_rx) = socket(env);
        // Each side's largest read: a request or a response (RR), a send
        // (the stream's receiving side).
        let (server_reads, client_reads) = if rr {
            (request, response)
        } else if maerts {
            (0, send_size)
        } else {
            (send_size, 0)
        };
        env.reserve_recv(&mut server_rx, server_reads);
        env.reserve_recv(&mut client_rx, client_reads);
        let (e, g, bk, st) = (env.clone(), gate.clone(), b.clone(), stop.clone());
        let server = async move {
            g.check_in_and_wait(&e).await;
            if rr {
                while recv_exact(&e, &mut server_rx, request).await {
                    bk.bytes_received
                        .fetch_add(request as u64, Ordering::Relaxed);
                    if udp {
                        bk.messages_received.fetch_add(1, Ordering::Relaxed);
                    }
                    if e.send(&to_client, response).await.is_err() {
                        break;
                    }
                    if udp {
                        bk.messages_sent.fetch_add(1, Ordering::Relaxed);
                    }
                }
            } else if maerts {
                let mut n = 0u64;
                while !st.load(Ordering::Relaxed) {
                    if e.send(&to_client, send_size).await.is_err() {
                        break;
                    }
                    bk.bytes_sent.fetch_add(send_size as u64, Ordering::Relaxed);
                    n += 1;
                    if n.is_multiple_of(16) {
                        e.progress();
                    }
                }
                // Closing the socket ends the client's receive loop.
                drop(to_client);
            } else {
                loop {
                    let n = e.recv(&mut server_rx, send_size).await;
                    if n == 0 {
                        break;
                    }
                    bk.bytes_received.fetch_add(n as u64, Ordering::Relaxed);
                    if udp {
                        bk.messages_received.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            if udp {
                bk.messages_dropped
                    .fetch_add(e.dropped(&server_rx), Ordering::Relaxed);
            }
        };
        let how = |name: String, cpu: Option<usize>| Spawn {
            name,
            pinned: cpu,
            space: Space::Thread,
            nice: 0,
        };
        let (server_cpu, client_cpu) = (pins[i].map(|p| p.0), pins[i].map(|p| p.1));
        handles.push(
            env.spawn(how(format!("netserver{i}"), server_cpu), server)
                .await,
        );
        let (e, g, bk, st) = (env.clone(), gate.clone(), b.clone(), stop.clone());
        let client = async move {
            g.check_in_and_wait(&e).await;
            let mut n = 0u64;
            if rr {
                while !st.load(Ordering::Relaxed) {
                    if e.send(&to_server, request).await.is_err() {
                        break;
                    }
                    if udp {
                        bk.messages_sent.fetch_add(1, Ordering::Relaxed);
                    }
                    if !recv_exact(&e, &mut client_rx, response).await {
                        break;
                    }
                    if udp {
                        bk.messages_received.fetch_add(1, Ordering::Relaxed);
                    }
                    bk.transactions.fetch_add(1, Ordering::Relaxed);
                    bk.bytes_sent.fetch_add(request as u64, Ordering::Relaxed);
                    n += 1;
                    if n.is_multiple_of(256) {
                        e.progress();
                    }
                }
            } else if maerts {
                loop {
                    let k = e.recv(&mut client_rx, send_size).await;
                    if k == 0 {
                        break;
                    }
                    bk.bytes_received.fetch_add(k as u64, Ordering::Relaxed);
                }
            } else {
                while !st.load(Ordering::Relaxed) {
                    let sent = if sendfile {
                        e.sendfile(&to_server, send_size).await
                    } else {
                        e.send(&to_server, send_size).await
                    };
                    if sent.is_err() {
                        break;
                    }
                    bk.bytes_sent.fetch_add(send_size as u64, Ordering::Relaxed);
                    if udp {
                        bk.messages_sent.fetch_add(1, Ordering::Relaxed);
                    }
                    n += 1;
                    if n.is_multiple_of(16) {
                        e.progress();
                    }
                }
            }
            if udp {
                bk.messages_dropped
                    .fetch_add(e.dropped(&client_rx), Ordering::Relaxed);
            }
            // Dropping the socket closes the server's side: it ends.
            drop(to_server);
        };
        handles.push(
            env.spawn(how(format!("netperf{i}"), client_cpu), client)
                .await,
        );
    }
    let (elapsed, end) = crate::timed::run_for(
        env,
        &gate,
        noise,
        handles,
        &stop,
        crate::timed::Phases {
            warmup_ns: 0,
            duration_ns,
        },
        || {},
    )
    .await;

    let v = |x: &AtomicU64| x.load(Ordering::Relaxed);
    let trans: u64 = books.iter().map(|b| v(&b.transactions)).sum();
    let received: u64 = books.iter().map(|b| v(&b.bytes_received)).sum();
    let sent: u64 = books.iter().map(|b| v(&b.bytes_sent)).sum();
    let msgs_sent: u64 = books.iter().map(|b| v(&b.messages_sent)).sum();
    let msgs_received: u64 = books.iter().map(|b| v(&b.messages_received)).sum();
    let dropped: u64 = books.iter().map(|b| v(&b.messages_dropped)).sum();
    let per_s = |n: u64| n * 1_000_000_000 / elapsed.max(1);
    let mbit = received * 8 * 1000 / elapsed.max(1); // bits/ns * 1000 = Mbit/s
    let send_mbit = sent * 8 * 1000 / elapsed.max(1);
    let per_pair = json_array(books.iter(), |w, b| {
        write!(
            w,
            "{{\"transactions\":{},\"bytes_received\":{}}}",
            v(&b.transactions),
            v(&b.bytes_received)
        )
    });
    let mut rec = Record::new("netperf")
        .str("test", test)
        .str("placement", placement)
        .u64("pairs", pairs as u64)
        .u64("request", request as u64)
        .u64("response", response as u64)
        .u64("send_size", send_size as u64)
        .u64("elapsed_ns", elapsed)
        .u64("transactions", trans)
        .u64("trans_per_sec", per_s(trans))
        .u64("bytes_sent", sent)
        .u64("bytes_received", received)
        .u64("mbit_per_sec", mbit);
    if udp {
        // Only the datagram tests have these, so the TCP records keep
        // their format.
        rec = rec
            .u64("send_mbit_per_sec", send_mbit)
            .u64("messages_sent", msgs_sent)
            .u64("messages_received", msgs_received)
            .u64("messages_dropped", dropped);
    }
    let rec = rec
        .raw("per_pair", &per_pair)
        .opt_u64("heap_allocs", end.heap_allocs)
        .raw("sched", &end.sched_json());
    env.emit(&rec.finish());
    if rr {
        env.log(format_args!(
            "{test}: Trans. Rate per sec {} ({trans} transactions)",
            per_s(trans)
        ));
    } else if udp {
        env.log(format_args!(
            "{test}: sent {msgs_sent} messages ({send_mbit} 10^6bits/sec), received {msgs_received} ({mbit} 10^6bits/sec), dropped {dropped}"
        ));
    } else {
        env.log(format_args!(
            "{test}: Throughput 10^6bits/sec {mbit} ({received} bytes)"
        ));
    }
    if udp && !rr {
        // Every datagram sent was received whole or dropped whole.
        let whole = received == msgs_received * send_size as u64;
        if msgs_sent != msgs_received + dropped
            || sent != received + dropped * send_size as u64
            || !whole
            || received == 0
        {
            return Err(format!(
                "netperf {test}: {msgs_sent} datagrams sent ({sent} bytes), {msgs_received} received ({received} bytes), {dropped} dropped"
            ));
        }
        return Ok(());
    }
    // Every byte a sender sent was received: RR requests are answered
    // before the next is sent; stream receivers read until end of file.
    // UDP_RR has one datagram in flight each way, so none can be dropped,
    // and each transaction is two datagrams.
    let udp_rr_books =
        !udp || (dropped == 0 && msgs_sent == msgs_received && msgs_sent == 2 * trans);
    if received != sent || (rr && trans == 0) || (!rr && received == 0) || !udp_rr_books {
        return Err(format!(
            "netperf {test}: {sent} bytes sent, {received} received, {trans} transactions; {msgs_sent} datagrams sent, {msgs_received} received, {dropped} dropped"
        ));
    }
    Ok(())
}
