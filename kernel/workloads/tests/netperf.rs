//! netperf's rules, checked on a toy environment (tests/mock): who sends on
//! which socket, what a datagram socket drops, who waits, and that the
//! message and byte books balance. Expected values come from the rules
//! (and the toy's one-poll-per-round schedule), not from earlier output.

mod mock;
use mock::{Costs, Run, u};

const SEND: usize = 16_384;
/// Whole 16 KiB datagrams a 208 KiB receive buffer holds.
const QUEUED: u64 = (208 * 1024 / SEND) as u64;

fn netperf(test: &str, costs: Costs) -> Run {
    let r = mock::run(
        "netperf",
        &format!("test:{test},pairs:1,duration_ms:10,send_size:{SEND}"),
        2,
        costs,
    );
    assert!(r.result.is_ok(), "{test}: {:?}", r.result);
    r
}

/// The server reads every message in 4 polls, the client sends in 1.
fn slow_server() -> Costs {
    Costs::uniform().with("netserver", "recv", 4)
}

#[test]
fn udp_stream_with_a_slow_receiver_drops_counts_and_never_blocks_the_sender() {
    let r = netperf("UDP_STREAM", slow_server());
    let rec = r.record("netperf");
    let sends: Vec<_> = r.ops_of("netperf0", "send").collect();
    assert!(
        sends
            .iter()
            .all(|o| o.datagram && !o.waited && o.bytes == SEND)
    );
    let sent = sends.len() as u64;
    let dropped = sends.iter().filter(|o| o.dropped).count() as u64;
    let reads: Vec<_> = r
        .ops_of("netserver0", "recv")
        .filter(|o| o.bytes > 0)
        .collect();
    // A datagram is read whole, one per call.
    assert!(reads.iter().all(|o| o.bytes == SEND));
    let received = reads.len() as u64;
    assert_eq!(u(&rec, "messages_sent"), sent);
    assert_eq!(u(&rec, "messages_received"), received);
    assert_eq!(u(&rec, "messages_dropped"), dropped);
    // Every datagram sent was received or counted as dropped.
    assert_eq!(sent, received + dropped);
    assert_eq!(u(&rec, "bytes_sent"), sent * SEND as u64);
    assert_eq!(u(&rec, "bytes_received"), received * SEND as u64);
    // The sender sends once per round, the receiver reads once per 4: it
    // keeps a quarter, plus what was queued when the sender stopped.
    assert!(
        received >= sent / 4 - 1 && received <= sent / 4 + QUEUED + 1,
        "sent {sent}, received {received}"
    );
    assert!(dropped > 0);
    // The throughput is what arrived.
    let elapsed = u(&rec, "elapsed_ns");
    assert_eq!(
        u(&rec, "mbit_per_sec"),
        received * SEND as u64 * 8 * 1000 / elapsed
    );
    assert_eq!(
        u(&rec, "send_mbit_per_sec"),
        sent * SEND as u64 * 8 * 1000 / elapsed
    );
}

#[test]
fn tcp_stream_with_the_same_slow_receiver_blocks_the_sender_and_loses_nothing() {
    let r = netperf("TCP_STREAM", slow_server());
    let rec = r.record("netperf");
    let sends: Vec<_> = r.ops_of("netperf0", "send").collect();
    assert!(sends.iter().all(|o| !o.datagram && !o.dropped));
    assert!(
        sends.iter().any(|o| o.waited),
        "a full stream makes the sender wait"
    );
    let read: u64 = r.ops_of("netserver0", "recv").map(|o| o.bytes as u64).sum();
    assert_eq!(u(&rec, "bytes_sent"), sends.len() as u64 * SEND as u64);
    assert_eq!(u(&rec, "bytes_received"), read);
    assert_eq!(read, u(&rec, "bytes_sent"));
    assert!(
        rec.get("messages_dropped").is_none(),
        "TCP records keep their fields"
    );
}

#[test]
fn maerts_moves_bytes_from_server_to_client_and_stream_the_other_way() {
    for (test, sender, receiver) in [
        ("TCP_MAERTS", "netserver0", "netperf0"),
        ("TCP_STREAM", "netperf0", "netserver0"),
    ] {
        let r = netperf(test, Costs::uniform());
        let rec = r.record("netperf");
        let written: Vec<_> = r.ops_of(sender, "send").collect();
        let read: Vec<_> = r.ops_of(receiver, "recv").collect();
        assert!(!written.is_empty(), "{test}: {sender} sends");
        assert_eq!(
            r.ops_of(receiver, "send").count(),
            0,
            "{test}: {receiver} never sends"
        );
        assert_eq!(
            r.ops_of(sender, "recv").count(),
            0,
            "{test}: {sender} never reads"
        );
        // One channel carries the data, from the sender to the receiver.
        let ch = written[0].chan;
        assert!(written.iter().all(|o| o.chan == ch));
        assert!(read.iter().all(|o| o.chan == ch));
        let bytes_out: u64 = written.iter().map(|o| o.bytes as u64).sum();
        let bytes_in: u64 = read.iter().map(|o| o.bytes as u64).sum();
        assert_eq!(bytes_out, bytes_in, "{test}");
        assert_eq!(u(&rec, "bytes_sent"), bytes_out, "{test}");
        assert_eq!(u(&rec, "bytes_received"), bytes_in, "{test}");
        assert!(bytes_in > 0);
        // The receiver sees end of file after the last byte.
        assert_eq!(read.last().unwrap().bytes, 0, "{test}");
    }
}

#[test]
fn sendfile_sends_only_with_sendfile_and_stream_only_with_send() {
    let f = netperf("TCP_SENDFILE", Costs::uniform());
    assert!(f.ops_of("netperf0", "sendfile").count() > 0);
    assert_eq!(f.ops_of("netperf0", "send").count(), 0);
    let rec = f.record("netperf");
    assert_eq!(u(&rec, "bytes_sent"), u(&rec, "bytes_received"));
    let s = netperf("TCP_STREAM", Costs::uniform());
    assert_eq!(s.ops_of("netperf0", "sendfile").count(), 0);
    // sendfile is the sender's call only; nobody else uses it.
    assert_eq!(f.ops_of("netserver0", "sendfile").count(), 0);
}

#[test]
fn rr_tests_send_one_message_each_way_per_transaction() {
    for (test, datagram) in [("UDP_RR", true), ("TCP_RR", false)] {
        let r = netperf(test, Costs::uniform());
        let rec = r.record("netperf");
        let t = u(&rec, "transactions");
        assert!(t > 0);
        let requests: Vec<_> = r.ops_of("netperf0", "send").collect();
        let responses: Vec<_> = r.ops_of("netserver0", "send").collect();
        // The client stops after a whole transaction: as many requests as
        // responses as transactions.
        assert_eq!(requests.len() as u64, t, "{test}");
        assert_eq!(responses.len() as u64, t, "{test}");
        assert!(
            requests
                .iter()
                .chain(&responses)
                .all(|o| o.datagram == datagram && !o.dropped),
            "{test}"
        );
        assert_eq!(u(&rec, "bytes_sent"), t, "{test}: 1-byte requests");
        if datagram {
            assert_eq!(u(&rec, "messages_sent"), 2 * t);
            assert_eq!(u(&rec, "messages_received"), 2 * t);
            assert_eq!(u(&rec, "messages_dropped"), 0);
        }
        assert_eq!(
            u(&rec, "trans_per_sec"),
            t * 1_000_000_000 / u(&rec, "elapsed_ns"),
            "{test}"
        );
    }
}

#[test]
fn every_test_balances_its_books_with_a_slow_client_too() {
    for test in workloads::netperf::TESTS {
        for costs in [
            Costs::uniform(),
            Costs::uniform().with("netperf", "recv", 3),
            slow_server(),
        ] {
            let r = netperf(test, costs);
            let rec = r.record("netperf");
            assert_eq!(rec["test"], *test);
            if test.starts_with("UDP_") {
                assert_eq!(
                    u(&rec, "messages_sent"),
                    u(&rec, "messages_received") + u(&rec, "messages_dropped"),
                    "{test}"
                );
            } else {
                assert_eq!(u(&rec, "bytes_sent"), u(&rec, "bytes_received"), "{test}");
            }
        }
    }
}

#[test]
fn a_datagram_must_fit_udp_and_unknown_tests_are_refused() {
    let parse = |args: &str| workloads::Workload::parse("netperf", args, 2).unwrap();
    let e = parse("test:UDP_STREAM,send_size:65508").unwrap_err();
    assert!(e.contains("65507"), "{e}");
    assert!(parse("test:UDP_STREAM,send_size:65507").is_ok());
    let e = parse("test:UDP_RR,response:70000").unwrap_err();
    assert!(e.contains("response=70000"), "{e}");
    // TCP has no datagram limit.
    assert!(parse("test:TCP_STREAM,send_size:100000").is_ok());
    let e = parse("test:SCTP_STREAM").unwrap_err();
    assert!(e.contains("UDP_RR"), "{e}");
}
