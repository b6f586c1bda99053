//! tbench's rules on the toy environment (tests/mock): dbench's request and
//! reply sizes per operation, one operation outstanding, the server's compute
//! between request and reply, MB/sec from ReadX/WriteX payload, and the books.

mod mock;
use mock::{Costs, Op, Run, u};

/// dbench sockio.c: request and reply bytes of the nine operations of a
/// cycle (NTCreateX, QPathInfo, ReadX, ReadX, WriteX, QFileInfo,
/// FindFirst, Flush, Close), with 40-byte names; None = sized by the I/O.
const SHAPE: [(Option<usize>, Option<usize>); 9] = [
    (Some(111), Some(69)),
    (Some(81), Some(80)),
    (Some(55), None),
    (Some(55), None),
    (None, Some(41)),
    (Some(41), Some(80)),
    (Some(81), Some(200)),
    (Some(41), Some(39)),
    (Some(45), Some(39)),
];
const IO: [usize; 4] = [1024, 4096, 16384, 65536];

/// A run with no warmup, so the trace's operations are the record's.
fn tbench(args: &str, costs: Costs) -> Run {
    let r = mock::run(
        "tbench",
        &format!("duration_ms:10,warmup_ms:0,{args}"),
        2,
        costs,
    );
    assert!(r.result.is_ok(), "{:?}", r.result);
    r
}

fn sizes<'a>(r: &'a Run, task: &'a str, kind: &'a str) -> Vec<usize> {
    r.ops
        .iter()
        .filter(|o: &&Op| o.task == task && o.kind == kind && o.bytes > 0)
        .map(|o| o.bytes)
        .collect()
}

#[test]
fn requests_and_replies_have_dbench_sizes_and_payload_is_the_throughput() {
    let r = tbench("clients:1,work:0", Costs::uniform());
    let rec = r.record("tbench");
    let requests = sizes(&r, "tbench0", "send");
    let replies = sizes(&r, "tbench_srv0", "send");
    let ops = u(&rec, "ops") as usize;
    assert!(
        ops > 2 * SHAPE.len(),
        "{ops} operations: more than two cycles"
    );
    assert_eq!(requests.len(), ops);
    assert_eq!(replies.len(), ops);
    let mut payload = 0;
    let mut io_seen = std::collections::BTreeSet::new();
    for (k, (&req, &rep)) in requests.iter().zip(&replies).enumerate() {
        let (want_req, want_rep) = SHAPE[k % SHAPE.len()];
        match (want_req, want_rep) {
            (Some(q), Some(p)) => assert_eq!((req, rep), (q, p), "op {k}"),
            (Some(q), None) => {
                // ReadX: the reply carries the data and a 4-byte header.
                assert_eq!(req, q, "op {k}");
                assert!(IO.contains(&(rep - 4)), "op {k}: reply {rep}");
                payload += rep - 4;
                io_seen.insert(rep - 4);
            }
            (None, Some(p)) => {
                // WriteX: the request carries the data after 51 bytes.
                assert_eq!(rep, p, "op {k}");
                assert!(IO.contains(&(req - 51)), "op {k}: request {req}");
                payload += req - 51;
                io_seen.insert(req - 51);
            }
            (None, None) => unreachable!(),
        }
    }
    assert!(io_seen.len() > 1, "I/O sizes vary: {io_seen:?}");
    assert_eq!(u(&rec, "bytes"), payload as u64);
    assert_eq!(
        u(&rec, "mb_per_sec_x100"),
        payload as u64 * 100_000 / u(&rec, "elapsed_ns")
    );
    assert_eq!(
        u(&rec, "request_bytes"),
        requests.iter().sum::<usize>() as u64
    );
    assert_eq!(u(&rec, "reply_bytes"), replies.iter().sum::<usize>() as u64);
}

#[test]
fn the_server_computes_between_each_request_and_its_reply() {
    let r = tbench("clients:1,work:250", Costs::uniform());
    let server: Vec<&Op> = r.ops.iter().filter(|o| o.task == "tbench_srv0").collect();
    // recv (possibly in parts), compute 250, send; the last recv is EOF.
    let mut k = 0;
    let mut answered = 0;
    while k < server.len() {
        let mut got = 0;
        while k < server.len() && server[k].kind == "recv" && server[k].bytes > 0 {
            got += server[k].bytes;
            k += 1;
        }
        if k == server.len() || (server[k].kind == "recv" && server[k].bytes == 0) {
            break;
        }
        assert!(got > 0, "a request before the work");
        assert_eq!((server[k].kind, server[k].bytes), ("compute", 250));
        assert_eq!(server[k + 1].kind, "send");
        k += 2;
        answered += 1;
    }
    assert_eq!(answered as u64, u(&r.record("tbench"), "ops"));
    // work=0: no compute at all, as tbench_srv.
    let r = tbench("clients:1,work:0", Costs::uniform());
    assert_eq!(r.ops.iter().filter(|o| o.kind == "compute").count(), 0);
}

#[test]
fn one_operation_is_outstanding_per_client() {
    let r = tbench(
        "clients:2,work:0",
        Costs::uniform().with("tbench_srv", "recv", 3),
    );
    for c in ["tbench0", "tbench1"] {
        let mut outstanding = 0i64;
        for o in r.ops.iter().filter(|o| o.task == c) {
            match o.kind {
                "send" => outstanding += 1,
                "recv" if o.bytes > 0 => outstanding = 0,
                _ => {}
            }
            assert!(outstanding <= 1, "{c}: a second request before the reply");
        }
    }
}

#[test]
fn clients_draw_different_sizes_and_a_run_replays_exactly() {
    let a = tbench("clients:2,work:0", Costs::uniform());
    let b = tbench("clients:2,work:0", Costs::uniform());
    assert_eq!(a.ops, b.ops);
    assert_eq!(a.records, b.records);
    let (c0, c1) = (sizes(&a, "tbench0", "send"), sizes(&a, "tbench1", "send"));
    let n = c0.len().min(c1.len());
    assert_ne!(c0[..n], c1[..n], "per-client generators differ");
}

#[test]
fn books_balance_with_slow_servers_or_clients() {
    for costs in [
        Costs::uniform(),
        Costs::uniform().with("tbench_srv", "recv", 5),
        Costs::uniform().with("tbench", "recv", 4),
    ] {
        let r = tbench("clients:3,work:10", costs);
        let rec = r.record("tbench");
        let sent: usize = r
            .ops
            .iter()
            .filter(|o| {
                o.task.starts_with("tbench")
                    && !o.task.starts_with("tbench_srv")
                    && o.kind == "send"
            })
            .map(|o| o.bytes)
            .sum();
        let read: usize = r
            .ops
            .iter()
            .filter(|o| o.task.starts_with("tbench_srv") && o.kind == "recv")
            .map(|o| o.bytes)
            .sum();
        assert_eq!(sent, read);
        assert_eq!(u(&rec, "request_bytes"), sent as u64);
        let per: u64 = rec["per_client"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| u(c, "ops"))
            .sum();
        assert_eq!(per, u(&rec, "ops"));
    }
}

#[test]
fn the_warmup_is_run_but_not_counted() {
    // dbench's --warmup: the clients run through it, the record counts only
    // the measured interval after it; the books (every request answered)
    // still cover the whole run.
    let r = mock::run(
        "tbench",
        "duration_ms:10,warmup_ms:10,clients:1,work:0",
        2,
        Costs::uniform(),
    );
    assert!(r.result.is_ok(), "{:?}", r.result);
    let rec = r.record("tbench");
    let sent = sizes(&r, "tbench0", "send").len() as u64;
    let ops = u(&rec, "ops");
    assert_eq!(u(&rec, "warmup_ns"), 10_000_000);
    assert!(ops > 0 && ops < sent, "{ops} measured of {sent} sent");
    // Half the run is warmup: about half the operations are measured.
    assert!(
        (2 * ops).abs_diff(sent) <= sent / 10 + 2,
        "{ops} measured of {sent}"
    );
    let e = u(&rec, "elapsed_ns");
    assert!((10_000_000..11_000_000).contains(&e), "elapsed {e}");
    // The default warmup is a fifth of the run, as dbench's.
    let r = mock::run("tbench", "duration_ms:10,clients:1", 2, Costs::uniform());
    assert_eq!(u(&r.record("tbench"), "warmup_ns"), 2_000_000);
}
