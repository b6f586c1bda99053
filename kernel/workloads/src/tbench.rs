//! tbench, dbench's network form (`tbench N` against `tbench_srv`), the
//! workload of seed 003's mmtests tbench4 rows: `clients` client/server
//! pairs, a socketpair each (208 KiB per direction, WF_SYNC wakeups).
//!
//! Each client replays a script of SMB-like operations, one outstanding at a
//! time: it sends the operation's request and waits for the whole reply.
//! Request and reply sizes are dbench's `sockio.c` ones (`do_packets`):
//!
//! | operation | request bytes | reply bytes |
//! |---|---|---|
//! | NTCreateX | 111 | 69 |
//! | QUERY_PATH_INFORMATION | 41 + name | 80 |
//! | ReadX (`size`) | 55 | size + 4 |
//! | WriteX (`size`) | 51 + size | 41 |
//! | QUERY_FILE_INFORMATION | 41 | 80 |
//! | FIND_FIRST | 41 + name | 200 |
//! | Flush | 41 | 39 |
//! | Close | 45 | 39 |
//!
//! The script is a fixed cycle of these eight with two ReadX per cycle and
//! names of [`NAME_BYTES`], standing in for the loadfile (`client.txt`),
//! whose sequence and operation frequencies are not reproduced. ReadX and
//! WriteX sizes vary: each is drawn from [`IO_SIZES`] by a per-client
//! generator seeded with the client's number, so every run replays the same
//! sequence. The server walks the same script, so it knows each request's
//! size (`tbench_srv` reads it from a 4-byte header, which this leaves
//! out), reads the request, computes `work` units, and replies.
//! `tbench_srv` itself computes nothing (`work=0`); the default of 100 units
//! (~0.2 us on the nominal profile) is the small per-request work of a
//! server that looks at what it received.
//!
//! Result, as dbench prints it: MB/sec = 10^6 bytes per second of ReadX and
//! WriteX payload (dbench's `child->bytes`), all clients summed, over the
//! measured interval. The interval follows a warmup (`warmup_ms`, dbench's
//! `--warmup`, by default a fifth of `duration_ms` as in dbench) whose
//! operations and scheduler statistics are not counted. Every request must
//! be answered: requests and replies balance per byte, warmup included. No
//! per-operation latency table.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::args::{Args, Rng};
use crate::env::{Env, Space, Spawn, recv_exact};
use crate::gate::Gate;
use crate::json::{Record, json_array};
use crate::noise::Noise;

/// A socket buffer (`net.core.wmem_default`).
pub const SOCKET_BYTES: usize = 208 * 1024;
/// Bytes of a file name in a path request (a typical `client.txt` path,
/// `\\clients\\client1\\~dmtmp\\WORD\\CHAP10.DOC`, is about 40).
pub const NAME_BYTES: usize = 40;
/// ReadX / WriteX sizes the script draws from.
pub const IO_SIZES: &[usize] = &[1024, 4096, 16_384, 65_536];
/// The largest ReadX/WriteX payload.
const IO_MAX: usize = IO_SIZES[IO_SIZES.len() - 1];
/// A WriteX request's bytes besides its payload.
const WRITEX_HEADER: usize = 51;
/// A ReadX reply's bytes besides its payload.
const READX_HEADER: usize = 4;
/// The largest request of the script (a WriteX of [`IO_MAX`]).
pub const MAX_REQUEST: usize = WRITEX_HEADER + IO_MAX;
/// The largest reply of the script (a ReadX of [`IO_MAX`]).
pub const MAX_REPLY: usize = IO_MAX + READX_HEADER;
/// Operations per script cycle.
pub const CYCLE: u64 = 9;
/// Most clients (two threads each).
pub const MAX_CLIENTS: u64 = 4096;

/// tbench's options.
#[derive(Clone, Debug)]
pub struct Params {
    /// Client/server pairs (`tbench N`).
    pub clients: usize,
    /// Test length (`-t`): the measured interval.
    pub duration_ns: u64,
    /// Unmeasured run before it (dbench's `--warmup`; its default, a fifth
    /// of `-t`, is this one's too).
    pub warmup_ns: u64,
    /// Compute units the server spends per request.
    pub work: u64,
    /// Per-CPU kworker noise.
    pub noise: Noise,
}

impl Params {
    /// Reads the experiment's arguments (`clients` defaults to one per CPU).
    pub fn from_args(a: &mut Args<'_>, nr_cpus: usize) -> Result<Params, String> {
        let clients = a.u64("clients", nr_cpus as u64, 1..=MAX_CLIENTS)? as usize;
        let duration_ms = a.u64("duration_ms", 2000, 10..=3_600_000)?;
        Ok(Params {
            clients,
            duration_ns: duration_ms * 1_000_000,
            warmup_ns: a.u64("warmup_ms", duration_ms / 5, 0..=3_600_000)? * 1_000_000,
            work: a.u64("work", 100, 0..=100_000_000)?,
            noise: Noise::from_args(a)?,
        })
    }
}

/// One operation of the script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    /// Request bytes (client to server).
    pub request: usize,
    /// Reply bytes (server to client).
    pub reply: usize,
    /// ReadX / WriteX payload counted as throughput.
    pub payload: usize,
}

/// The operation script of one client: a fixed cycle, sizes drawn by a
/// generator seeded with the client's number.
pub struct Script {
    step: u64,
    rng: Rng,
}

impl Script {
    /// Client `client`'s script from its start.
    pub fn new(client: usize) -> Script {
        Script {
            step: 0,
            rng: Rng::new(client as u64 + 1),
        }
    }

    fn io_size(&mut self) -> usize {
        IO_SIZES[self.rng.below(IO_SIZES.len() as u64) as usize]
    }

    /// The next operation (dbench `sockio.c` sizes).
    pub fn next_op(&mut self) -> Op {
        let i = self.step % CYCLE;
        self.step += 1;
        let plain = |request, reply| Op {
            request,
            reply,
            payload: 0,
        };
        match i {
            0 => plain(111, 69),             // NTCreateX
            1 => plain(41 + NAME_BYTES, 80), // QUERY_PATH_INFORMATION
            2 | 3 => {
                let size = self.io_size(); // ReadX
                Op {
                    request: 55,
                    reply: size + READX_HEADER,
                    payload: size,
                }
            }
            4 => {
                let size = self.io_size(); // WriteX
                Op {
                    request: WRITEX_HEADER + size,
                    reply: 41,
                    payload: size,
                }
            }
            5 => plain(41, 80),               // QUERY_FILE_INFORMATION
            6 => plain(41 + NAME_BYTES, 200), // FIND_FIRST
            7 => plain(41, 39),               // Flush
            _ => plain(45, 39),               // Close
        }
    }
}

/// One pair's counts.
#[derive(Default)]
struct Books {
    ops: AtomicU64,
    payload: AtomicU64,
    /// `ops` and `payload` when the warmup ended.
    warm_ops: AtomicU64,
    warm_payload: AtomicU64,
    request_bytes_sent: AtomicU64,
    request_bytes_received: AtomicU64,
    replies: AtomicU64,
    reply_bytes_sent: AtomicU64,
    reply_bytes_received: AtomicU64,
}

/// Runs tbench and emits its `tbench` record.
pub async fn run<E: Env>(env: &E, p: Params) -> Result<(), String> {
    let Params {
        clients,
        duration_ns,
        warmup_ns,
        work,
        noise,
    } = p;
    env.check_threads(2 * clients + noise.threads(env.nr_cpus()))
        .map_err(|e| format!("tbench: {clients} clients: {e}"))?;
    env.log(format_args!(
        "tbench: {clients} clients, {} ms after a {} ms warmup, server work {work} units per request",
        duration_ns / 1_000_000,
        warmup_ns / 1_000_000
    ));
    let gate = Arc::new(Gate::new(env, 2 * clients));
    let stop = Arc::new(AtomicBool::new(false));
    let books: Vec<Arc<Books>> = (0..clients).map(|_| Arc::new(Books::default())).collect();
    let mut handles = Vec::with_capacity(2 * clients);
    let how = |name: String| Spawn {
        name,
        pinned: None,
        space: Space::Thread,
        nice: 0,
    };
    for (i, b) in books.iter().enumerate() {
        let (to_server, mut server_rx) = env.channel(SOCKET_BYTES);
        let (to_client, mut client_rx) = env.channel(SOCKET_BYTES);
        env.reserve_recv(&mut server_rx, MAX_REQUEST);
        env.reserve_recv(&mut client_rx, MAX_REPLY);
        let (e, g, bk) = (env.clone(), gate.clone(), b.clone());
        let server = async move {
            g.check_in_and_wait(&e).await;
            let mut script = Script::new(i);
            loop {
                let op = script.next_op();
                if !recv_exact(&e, &mut server_rx, op.request).await {
                    break; // the client closed its socket
                }
                bk.request_bytes_received
                    .fetch_add(op.request as u64, Ordering::Relaxed);
                if work > 0 {
                    e.compute(work, 0).await;
                }
                if e.send(&to_client, op.reply).await.is_err() {
                    break;
                }
                bk.replies.fetch_add(1, Ordering::Relaxed);
                bk.reply_bytes_sent
                    .fetch_add(op.reply as u64, Ordering::Relaxed);
            }
        };
        handles.push(env.spawn(how(format!("tbench_srv{i}")), server).await);
        let (e, g, bk, st) = (env.clone(), gate.clone(), b.clone(), stop.clone());
        let client = async move {
            g.check_in_and_wait(&e).await;
            let mut script = Script::new(i);
            let mut n = 0u64;
            while !st.load(Ordering::Relaxed) {
                let op = script.next_op();
                if e.send(&to_server, op.request).await.is_err() {
                    break;
                }
                bk.request_bytes_sent
                    .fetch_add(op.request as u64, Ordering::Relaxed);
                if !recv_exact(&e, &mut client_rx, op.reply).await {
                    break;
                }
                bk.reply_bytes_received
                    .fetch_add(op.reply as u64, Ordering::Relaxed);
                bk.ops.fetch_add(1, Ordering::Relaxed);
                bk.payload.fetch_add(op.payload as u64, Ordering::Relaxed);
                n += 1;
                if n.is_multiple_of(256) {
                    e.progress();
                }
            }
            // Closing the socket ends the server.
            drop(to_server);
        };
        handles.push(env.spawn(how(format!("tbench{i}")), client).await);
    }
    let phases = crate::timed::Phases {
        warmup_ns,
        duration_ns,
    };
    let at_warm = || {
        for b in &books {
            b.warm_ops
                .store(b.ops.load(Ordering::Relaxed), Ordering::Relaxed);
            b.warm_payload
                .store(b.payload.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    };
    let (elapsed, end) =
        crate::timed::run_for(env, &gate, noise, handles, &stop, phases, at_warm).await;

    let v = |x: &AtomicU64| x.load(Ordering::Relaxed);
    let sum = |f: fn(&Books) -> &AtomicU64| books.iter().map(|b| v(f(b))).sum::<u64>();
    // Every operation, warmup included, for the books' check below.
    let all_ops = sum(|b| &b.ops);
    let replies = sum(|b| &b.replies);
    // The measured interval's: after the warmup.
    let ops = all_ops - sum(|b| &b.warm_ops);
    let payload = sum(|b| &b.payload) - sum(|b| &b.warm_payload);
    let (req_sent, req_received) = (
        sum(|b| &b.request_bytes_sent),
        sum(|b| &b.request_bytes_received),
    );
    let (rep_sent, rep_received) = (
        sum(|b| &b.reply_bytes_sent),
        sum(|b| &b.reply_bytes_received),
    );
    // 10^6 bytes per second = bytes per ns x 1000; two decimals as dbench.
    let mb_x100 = payload * 100_000 / elapsed.max(1);
    let per_client = json_array(books.iter(), |w, b| {
        write!(
            w,
            "{{\"ops\":{},\"bytes\":{}}}",
            v(&b.ops) - v(&b.warm_ops),
            v(&b.payload) - v(&b.warm_payload)
        )
    });
    let rec = Record::new("tbench")
        .u64("clients", clients as u64)
        .u64("work", work)
        .u64("warmup_ns", warmup_ns)
        .u64("elapsed_ns", elapsed)
        .u64("ops", ops)
        .u64("bytes", payload)
        .u64("mb_per_sec_x100", mb_x100)
        .u64("request_bytes", req_sent)
        .u64("reply_bytes", rep_sent)
        .raw("per_client", &per_client)
        .opt_u64("heap_allocs", end.heap_allocs)
        .raw("sched", &end.sched_json());
    env.emit(&rec.finish());
    env.log(format_args!(
        "Throughput {}.{:02} MB/sec  {clients} clients  {clients} procs  ({ops} operations)",
        mb_x100 / 100,
        mb_x100 % 100
    ));
    // Every request was answered whole: the client stops after a reply.
    if replies != all_ops || req_sent != req_received || rep_sent != rep_received || ops == 0 {
        return Err(format!(
            "tbench: {all_ops} operations ({ops} measured), {replies} replies; requests {req_sent} bytes sent, {req_received} received; replies {rep_sent} sent, {rep_received} received"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{MAX_REPLY, MAX_REQUEST, Script};

    /// The readers' buffers are sized by these bounds before the measured
    /// interval: no operation of the script may exceed them, and the
    /// largest ones reach them.
    #[test]
    fn no_operation_is_larger_than_the_reserved_reads() {
        let (mut req, mut rep) = (0, 0);
        for client in 0..4 {
            let mut s = Script::new(client);
            for _ in 0..10_000 {
                let op = s.next_op();
                req = req.max(op.request);
                rep = rep.max(op.reply);
            }
        }
        assert_eq!((req, rep), (MAX_REQUEST, MAX_REPLY));
    }
}
