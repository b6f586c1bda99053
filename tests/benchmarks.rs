//! The seeds' benchmark shapes running in the kernel: hackbench delivers
//! every message of every group over both transports, times the run like
//! hackbench, and reports the scheduler's decisions during the timed
//! interval; in process mode each worker has its own page tables, so
//! switches between workers load CR3, and every page table is freed at the
//! end; schbench measures a wakeup and a request latency per request;
//! `compare` runs a baseline and a variant and renders the mmtests table.

use std::time::Duration;

use schedlab_tests::Boot;
use serde_json::Value;
use xtask::machine::Machine;
use xtask::outcome::Outcome;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Boots hackbench with `args` on `machine`: its record, and the
/// `address_spaces` record if the run made processes.
fn run_hackbench(machine: Machine, args: &'static str, timeout_s: u64) -> (Value, Option<Value>) {
    let mut b = Boot::new("hackbench");
    b.machine = machine;
    b.args = args;
    b.timeout = Duration::from_secs(timeout_s);
    let r = b.expect(Outcome::Success);
    let h = r.record("hackbench").expect("hackbench record").clone();
    (h, r.record("address_spaces").cloned())
}

fn hackbench(transport: &'static str, args: &'static str) -> Value {
    let machine = Machine {
        sockets: 2,
        cores: 2,
        threads: 1,
        numa_nodes: 2,
        memory_mib: 512,
        ..Machine::default()
    };
    let (h, _) = run_hackbench(machine, args, 240);
    assert_eq!(h["transport"], transport);
    h
}

#[test]
fn hackbench_delivers_every_message_over_sockets_and_pipes() {
    for (transport, args) in [
        ("socket", "groups:2,fds:5,loops:20"),
        ("pipe", "groups:2,fds:5,loops:20,transport:pipe,datasize:64"),
    ] {
        let h = hackbench(transport, args);
        let size = u(&h["datasize"]);
        // 2 groups x 5 senders x 5 receivers x 20 loops.
        assert_eq!(u(&h["messages"]), 2 * 5 * 5 * 20, "{h}");
        assert_eq!(u(&h["bytes"]), 2 * 5 * 5 * 20 * size, "{h}");
        assert_eq!(u(&h["tasks"]), 20);
        assert!(u(&h["time_ns"]) > 0);
        let s = &h["sched"];
        // Receivers and senders block and wake each other during the run;
        // pipes and sockets both wake with WF_SYNC (the start gate and the
        // joins are the only plain wakeups).
        let (all, sync) = (
            u(&s["wake"]["nr_wakeups"]),
            u(&s["wake"]["nr_wakeups_sync"]),
        );
        assert!(sync > 0 && sync + 20 + 21 >= all, "{s}");
        assert!(u(&s["rq"]["nr_switches"]) > 0);
        // Only the timed interval is counted: setup forks are not in it.
        assert_eq!(u(&s["rq"]["nr_forks"]), 0, "{s}");
        // Nothing in it allocates: not the messages, the five writers
        // queued on one pipe (intrusive wait queues), the wakeups, blocks,
        // switches, ticks and balance passes (room for every task made at
        // spawn), nor the exits and joins.
        assert_eq!(u(&h["heap_allocs"]), 0, "{transport}: {h}");
        let switches: u64 = h["per_cpu"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| u(&c["context_switches"]))
            .sum();
        assert!(switches > 0);
    }
}

/// A small hackbench on 2 vCPUs in `mode`: its record, and the
/// `address_spaces` record if the run made processes.
fn hackbench_mode(mode: &'static str, args: &'static str) -> (Value, Option<Value>) {
    let machine = Machine {
        sockets: 1,
        cores: 2,
        threads: 1,
        numa_nodes: 1,
        ..Boot::new("hackbench").machine
    };
    let (h, spaces) = run_hackbench(machine, args, 180);
    assert_eq!(h["mode"], mode);
    (h, spaces)
}

fn per_cpu_sum(h: &Value, key: &str) -> u64 {
    h["per_cpu"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| u(&c[key]))
        .sum()
}

#[test]
fn hackbench_process_mode_switches_page_tables_and_frees_them() {
    let (h, spaces) = hackbench_mode("process", "groups:2,fds:2,loops:20,mode:process");
    // 2 groups x 2 senders x 2 receivers x 20 loops.
    assert_eq!(u(&h["messages"]), 2 * 2 * 2 * 20, "{h}");
    let (mm, switches) = (
        per_cpu_sum(&h, "mm_switches"),
        per_cpu_sum(&h, "context_switches"),
    );
    // Eight processes on two CPUs: switching between workers loads CR3,
    // never more often than the CPUs switch.
    assert!(mm > 0 && mm <= switches, "{h}");
    let spaces = spaces.expect("address_spaces record after a process-mode run");
    assert_eq!(u(&spaces["created"]), 8, "{spaces}");
    assert_eq!(u(&spaces["freed"]), 8, "{spaces}");

    let (h, spaces) = hackbench_mode("thread", "groups:2,fds:2,loops:20");
    assert_eq!(u(&h["messages"]), 2 * 2 * 2 * 20, "{h}");
    assert!(per_cpu_sum(&h, "context_switches") > 0, "{h}");
    // Threads of one process: no switch loads page tables.
    assert_eq!(per_cpu_sum(&h, "mm_switches"), 0, "{h}");
    assert!(spaces.is_none(), "{spaces:?}");
}

#[test]
fn compare_runs_both_configurations_and_renders_the_table() {
    use clap::Parser;
    use xtask::cli::{Cli, Cmd};
    let cli = Cli::try_parse_from([
        "cargo xtask",
        "compare",
        "--experiment",
        "hackbench",
        "--smp",
        "2",
        "--arg",
        "fds=3",
        "--arg",
        "loops=10",
        "--sweep",
        "groups=1,2",
        "--runs",
        "1",
        "--variant-features",
        "WAKEE_STACKED",
    ])
    .expect("compare options");
    let Cmd::Compare(args) = cli.command else {
        panic!("not a compare command")
    };
    let launcher = xtask::launch::Launcher::from_env().expect("kernel build products");
    let table = xtask::compare::measure(&args, Some(&launcher)).expect("comparison");
    assert_eq!(table.title, "hackbench-thread-sockets");
    let ops: Vec<&str> = table.cells.iter().map(|(op, _, _)| op.as_str()).collect();
    assert_eq!(ops, ["1", "2"]);
    for (_, _, s) in &table.cells {
        assert_eq!((s.baseline.len(), s.variant.len()), (1, 1));
        assert!(s.baseline[0] > 0.0 && s.variant[0] > 0.0);
    }
    let out = xtask::compare::render(&table, 1);
    assert!(out.contains("fair cfs WAKEE_STACKED"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("Amean")).count(),
        2,
        "{out}"
    );
}

#[test]
fn schbench_measures_every_request() {
    let mut b = Boot::new("schbench");
    b.machine = Machine {
        sockets: 1,
        cores: 2,
        threads: 2,
        memory_mib: 512,
        ..Machine::default()
    };
    b.args = "workers:6,duration_ms:500,ops:2,work:500";
    b.timeout = Duration::from_secs(240);
    let r = b.expect(Outcome::Success);
    let s = r.record("schbench").expect("schbench record");
    let n = u(&s["requests"]);
    assert!(n > 0, "{s}");
    for key in ["wakeup_latency_ns", "request_latency_ns"] {
        let h = &s[key];
        assert_eq!(u(&h["count"]), n, "one sample per request: {s}");
        let (p50, p99, p999, max) = (u(&h["p50"]), u(&h["p99"]), u(&h["p99_9"]), u(&h["max"]));
        assert!(
            u(&h["min"]) <= p50 && p50 <= p99 && p99 <= p999 && p999 <= max,
            "{h}"
        );
    }
    assert!(u(&s["rps"]) > 0);
    assert!(
        u(&s["sched"]["wake"]["nr_wakeups"]) >= n,
        "every request is a wakeup: {s}"
    );
}

#[test]
fn netperf_rr_answers_every_request_and_stream_delivers_every_byte() {
    for (test, args) in [
        ("TCP_RR", "pairs:3,duration_ms:300"),
        (
            "TCP_STREAM",
            "test:TCP_STREAM,pairs:2,duration_ms:300,send_size:4096",
        ),
    ] {
        let mut b = Boot::new("netperf");
        b.args = args;
        b.timeout = Duration::from_secs(240);
        let r = b.expect(Outcome::Success);
        let n = r.record("netperf").expect("netperf record");
        assert_eq!(n["test"], test);
        assert_eq!(n["bytes_sent"], n["bytes_received"], "{n}");
        // The measured interval (no forks in it) allocates nothing: sends,
        // receives, wakeups, the main thread's sleeps (every CPU's sleeper
        // heap has room for every thread), the stop and the joins.
        assert_eq!(u(&n["heap_allocs"]), 0, "{test}: {n}");
        let pairs = n["per_pair"].as_array().unwrap();
        if test == "TCP_RR" {
            assert_eq!(pairs.len(), 3);
            let sum: u64 = pairs.iter().map(|p| u(&p["transactions"])).sum();
            assert_eq!(sum, u(&n["transactions"]));
            assert!(u(&n["trans_per_sec"]) > 0);
            // 1-byte requests: bytes equal transactions.
            assert_eq!(u(&n["bytes_received"]), u(&n["transactions"]));
        } else {
            assert!(
                u(&n["bytes_received"]) >= 4096 && u(&n["mbit_per_sec"]) > 0,
                "{n}"
            );
        }
    }
}

/// tbench in the kernel: client/server pairs over socketpairs, a warmup,
/// then the measured interval. The workload itself fails the run if any
/// operation went unanswered or a byte was lost (its books); here the
/// record must add up and the interval, with no fork in it, allocate
/// nothing.
#[test]
fn tbench_answers_every_operation_and_its_interval_allocates_nothing() {
    let mut b = Boot::new("tbench");
    b.args = "clients:3,duration_ms:200,warmup_ms:50";
    b.timeout = Duration::from_secs(240);
    let r = b.expect(Outcome::Success);
    let t = r.record("tbench").expect("tbench record");
    assert_eq!(u(&t["clients"]), 3);
    let per: Vec<&Value> = t["per_client"].as_array().unwrap().iter().collect();
    assert_eq!(per.len(), 3);
    assert_eq!(
        per.iter().map(|c| u(&c["ops"])).sum::<u64>(),
        u(&t["ops"]),
        "{t}"
    );
    assert_eq!(
        per.iter().map(|c| u(&c["bytes"])).sum::<u64>(),
        u(&t["bytes"]),
        "{t}"
    );
    assert!(u(&t["ops"]) > 0 && u(&t["mb_per_sec_x100"]) > 0, "{t}");
    assert_eq!(
        u(&t["mb_per_sec_x100"]),
        u(&t["bytes"]) * 100_000 / u(&t["elapsed_ns"]),
        "{t}"
    );
    assert_eq!(u(&t["heap_allocs"]), 0, "{t}");
}

#[test]
fn nas_team_runs_every_phase_and_reports_its_fork_spread() {
    let mut b = Boot::new("nas");
    b.machine = Machine {
        sockets: 2,
        cores: 2,
        threads: 1,
        numa_nodes: 2,
        memory_mib: 512,
        ..Machine::default()
    };
    b.args = "threads:4,phases:10,work:2000,imbalance_pct:50";
    b.timeout = Duration::from_secs(240);
    let r = b.expect(Outcome::Success);
    let n = r.record("nas").expect("nas record");
    // 2 threads x 2000 + 2 threads x 3000, 10 phases.
    assert_eq!(u(&n["work_units"]), 10 * (2 * 2000 + 2 * 3000), "{n}");
    let targets: Vec<u64> = n["fork_targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .collect();
    assert_eq!(targets.len(), 4);
    assert_eq!(
        targets.iter().sum::<u64>(),
        4,
        "every worker's fork is counted: {n}"
    );
    let per_node: Vec<u64> = n["fork_targets_per_node"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .collect();
    assert_eq!(per_node.iter().sum::<u64>(), 4);
    assert_eq!(u(&n["fork_max_on_one_cpu"]), *targets.iter().max().unwrap());
    assert!(u(&n["time_ns"]) > 0);
}

#[test]
fn nas_barrier_spinners_are_released_without_a_wakeup() {
    let nas = |args: &'static str| {
        let mut b = Boot::new("nas");
        b.machine = Machine {
            sockets: 1,
            cores: 4,
            threads: 1,
            numa_nodes: 1,
            memory_mib: 256,
            ..Machine::default()
        };
        b.args = args;
        b.timeout = Duration::from_secs(240);
        let r = b.expect(Outcome::Success);
        r.record("nas").expect("nas record").clone()
    };
    // Odd threads do 4x the work: the even ones wait at every barrier.
    let sleep = nas("threads:4,phases:10,work:2000,imbalance_pct:300");
    let spin = nas("threads:4,phases:10,work:2000,imbalance_pct:300,spin_us:5000000");
    assert_eq!(u(&spin["spin_us"]), 5_000_000, "{spin}");
    for n in [&sleep, &spin] {
        assert_eq!(u(&n["work_units"]), 10 * (2 * 2000 + 2 * 8000), "{n}");
    }
    let wakeups = |n: &Value| u(&n["sched"]["wake"]["nr_wakeups"]);
    assert!(
        wakeups(&sleep) >= 10,
        "sleeping waiters are woken at every barrier: {sleep}"
    );
    // A 5 s spin outlasts every wait: only the main thread's joins wake.
    assert!(wakeups(&spin) <= 4, "spinners need no wakeup: {spin}");
    // ... and a release ends it: spinners that used up their budget in
    // each of the 10 rounds would take at least 50 s.
    assert!(
        u(&spin["time_ns"]) < 5_000_000_000,
        "a release ends the spin: {spin}"
    );
}

#[test]
fn trace_becomes_a_timeline_with_every_fork_and_switch() {
    let mut b = Boot::new("hackbench");
    b.args = "groups:1,fds:3,loops:10";
    b.trace = 8192;
    b.timeout = Duration::from_secs(240);
    let r = b.expect(Outcome::Success);
    let (t, s) = xtask::trace::chrome_trace(&r.records).expect("trace records");
    assert_eq!(s.dropped, 0);
    assert_eq!(s.cpus, 2);
    // main + 6 hackbench workers.
    assert!(s.threads >= 7, "{s:?}");
    let ev = t["traceEvents"].as_array().unwrap();
    let forks = ev
        .iter()
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("fork hb-"))
        })
        .count();
    assert_eq!(forks, 6, "one fork event per worker");
    let wakeups = ev
        .iter()
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("wakeup hb-"))
        })
        .count();
    let h = r.record("hackbench").unwrap();
    assert!(
        wakeups as u64 >= u(&h["sched"]["wake"]["nr_wakeups"]) / 2,
        "{wakeups}"
    );
    // Every worker ran somewhere.
    for i in 0..3 {
        for role in ["recv", "send"] {
            let name = format!("hb-{role}0.{i}");
            assert!(
                ev.iter()
                    .any(|e| e["ph"] == "X" && e["name"] == name.as_str()),
                "{name} never ran"
            );
        }
    }
}
