//! netperf's new tests in the simulator, against the cost rules: with the
//! scheduling costs (switch, wakeup, IPI, idle exit, timer, jitter) set to
//! zero, each message's time is the sum of the profile's terms for the
//! operations on it, so the rates follow from the profile by hand.

mod common;
use common::*;

const SEND: u64 = 16_384;

fn u(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

/// One pair on 4 cores without SMT, 20 ms, under `calls_only`.
fn netperf(test: &str, placement: &str) -> serde_json::Value {
    let args = format!("test:{test},pairs:1,duration_ms:20,placement:{placement},send_size:{SEND}");
    let mut c = config(machine(1, 4, 1), "netperf", &args);
    c.profile = calls_only();
    record(&run(&c), "netperf")
}

/// ns per message of a stream record.
fn ns_per_message(r: &serde_json::Value) -> f64 {
    u(r, "elapsed_ns") as f64 * SEND as f64 / u(r, "bytes_received") as f64
}

fn close(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= tol * want,
        "{what}: {got:.1}, expected {want:.1} (within {:.0} %)",
        tol * 100.0
    );
}

#[test]
fn udp_stream_sender_never_waits_and_the_slower_receiver_drops_the_rest() {
    let p = calls_only();
    let k = &p.kernel;
    let copy = SEND as f64 * k.copy_ns_per_byte;
    // Lines of the message, from the sender's core (same LLC).
    let transfer =
        SEND.div_ceil(p.cache.line_bytes).div_ceil(p.cache.mlp) as f64 * p.cache.line_ns.llc;
    let send = k.datagram_syscall_ns + copy;
    let recv = k.datagram_syscall_ns + copy + transfer;
    assert!(recv > send, "the receiver is the slower side here");
    let r = netperf("UDP_STREAM", "cross-core");
    let (sent, got, dropped) = (
        u(&r, "messages_sent"),
        u(&r, "messages_received"),
        u(&r, "messages_dropped"),
    );
    assert_eq!(sent, got + dropped);
    let elapsed = u(&r, "elapsed_ns") as f64;
    // Never blocked, alone on its core: one datagram per `send` ns.
    close(elapsed / sent as f64, send, 0.01, "sender ns per datagram");
    // The receiver keeps what it can read; the rest is dropped.
    close(elapsed / got as f64, recv, 0.01, "receiver ns per datagram");
    close(
        dropped as f64 / sent as f64,
        1.0 - send / recv,
        0.03,
        "dropped share",
    );
    // TCP_STREAM under the same costs loses nothing: its sender waits.
    let t = netperf("TCP_STREAM", "cross-core");
    assert_eq!(u(&t, "bytes_sent"), u(&t, "bytes_received"));
    close(
        ns_per_message(&t),
        k.syscall_ns + copy + transfer,
        0.01,
        "TCP_STREAM receiver ns per message",
    );
}

#[test]
fn sendfile_drops_the_senders_copy_and_the_receivers_line_transfer() {
    let p = calls_only();
    let k = &p.kernel;
    let copy = SEND as f64 * k.copy_ns_per_byte;
    let transfer =
        SEND.div_ceil(p.cache.line_bytes).div_ceil(p.cache.mlp) as f64 * p.cache.line_ns.llc;
    // One CPU runs both sides: a message costs its send plus its receive.
    close(
        ns_per_message(&netperf("TCP_STREAM", "stacked")),
        (k.syscall_ns + copy) + (k.syscall_ns + copy),
        0.01,
        "TCP_STREAM stacked",
    );
    close(
        ns_per_message(&netperf("TCP_SENDFILE", "stacked")),
        k.syscall_ns + (k.syscall_ns + copy),
        0.01,
        "TCP_SENDFILE stacked",
    );
    // On two cores the receiver is the bottleneck; only the stream's
    // receiver brings the lines over from the sender's core.
    close(
        ns_per_message(&netperf("TCP_STREAM", "cross-core")),
        k.syscall_ns + copy + transfer,
        0.01,
        "TCP_STREAM cross-core",
    );
    close(
        ns_per_message(&netperf("TCP_SENDFILE", "cross-core")),
        k.syscall_ns + copy,
        0.01,
        "TCP_SENDFILE cross-core",
    );
}

#[test]
fn udp_rr_saves_the_datagram_difference_on_each_of_four_calls() {
    let k = calls_only().kernel;
    // Stacked, a transaction is two sends and two receives of 1 byte on
    // one CPU, nothing overlapping.
    let per_trans = |entry: f64| 4.0 * entry + 4.0 * k.copy_ns_per_byte;
    for (test, entry) in [("TCP_RR", k.syscall_ns), ("UDP_RR", k.datagram_syscall_ns)] {
        let r = netperf(test, "stacked");
        let t = u(&r, "transactions");
        close(
            u(&r, "elapsed_ns") as f64 / t as f64,
            per_trans(entry),
            0.01,
            &format!("{test} ns per transaction"),
        );
        if test == "UDP_RR" {
            assert_eq!(u(&r, "messages_sent"), 2 * t);
            assert_eq!(u(&r, "messages_dropped"), 0);
        }
    }
}

#[test]
fn maerts_is_stream_mirrored_and_every_new_test_runs_with_default_costs() {
    // The same two cores with the roles swapped: the pinned pair's rate is
    // the stream's, since the cost rules are the same both ways.
    let s = netperf("TCP_STREAM", "cross-core");
    let m = netperf("TCP_MAERTS", "cross-core");
    close(
        ns_per_message(&m),
        ns_per_message(&s),
        0.01,
        "MAERTS vs STREAM",
    );
    for test in ["TCP_MAERTS", "TCP_SENDFILE", "UDP_STREAM", "UDP_RR"] {
        for placement in ["unbound", "stacked", "cross-smt"] {
            let args = format!("test:{test},pairs:2,duration_ms:10,placement:{placement}");
            let o = run(&config(machine(1, 2, 2), "netperf", &args));
            let r = record(&o, "netperf");
            assert_eq!(r["test"], test);
            assert_eq!(record(&o, "sim_stats")["violations"], 0);
        }
    }
}
