//! The human-readable end of a run: what ran, what the kernel reported, how it
//! ended, and for faults where it happened. Later experiments add their tables.

use std::path::Path;

use serde_json::Value;

use crate::outcome::Outcome;
use crate::runner::RunResult;
use crate::symbolize;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Prints the report of one run to stdout.
pub fn print(result: &RunResult, kernel_elf: Option<&Path>) {
    print_records(result, kernel_elf);
    let exit = result.record("exit").and_then(|e| e["status"].as_str());
    if let (Some(said), Some(expected)) = (exit, result.outcome.kernel_status_name())
        && said != expected
    {
        println!(
            "warning: kernel's exit record says '{said}' but QEMU's status means '{expected}'"
        );
    }
    println!(
        "outcome: {} after {:.1} s wall ({} records)",
        result.outcome,
        result.wall.as_secs_f64(),
        result.records.len()
    );
    if result.outcome == Outcome::Timeout || matches!(result.outcome, Outcome::QemuError(_)) {
        print_tail(result);
        if !result.stderr.trim().is_empty() {
            println!("qemu stderr:\n{}", result.stderr.trim());
        }
    }
}

/// The last console lines (when a run ended without saying why).
pub fn print_tail(result: &RunResult) {
    let tail: Vec<&String> = result.log.iter().rev().take(15).collect();
    println!("last console lines:");
    for l in tail.into_iter().rev() {
        println!("  | {l}");
    }
}

/// The report's body: the header and what every record says, without the
/// outcome line (a live run and a captured console end differently).
pub fn print_records(result: &RunResult, kernel_elf: Option<&Path>) {
    println!();
    println!("== schedlab report ==");
    if let Some(b) = result.record("boot") {
        println!(
            "boot: firmware {}, memory {} MiB, {} CPUs in ACPI MADT, experiment '{}'",
            b["firmware"].as_str().unwrap_or("?"),
            u(&b["memory_bytes"]) >> 20,
            u(&b["madt_cpus"]),
            b["experiment"].as_str().unwrap_or("?"),
        );
    } else if let Some(s) = result.record("sim") {
        println!(
            "sim: {} simulated CPUs ({} NUMA nodes), profile {}, seed {}, experiment '{}'; times are simulated parallel time",
            u(&s["cpus"]),
            u(&s["nodes"]),
            s["profile"].as_str().unwrap_or("?"),
            u(&s["seed"]),
            s["experiment"].as_str().unwrap_or("?"),
        );
    } else {
        println!("boot: no boot record (the kernel did not get that far)");
    }
    for err in result.records_of("error") {
        println!("error: {}", err["message"].as_str().unwrap_or("?"));
    }
    if let Some(f) = result.record("fault") {
        print_fault(result, f, kernel_elf);
    }
    for stuck in result.records_of("cpu_dump") {
        print_stuck(result, stuck, kernel_elf);
    }
    for v in result.records_of("sim_violation") {
        println!(
            "invariant violated at {} ns: {}",
            u(&v["t_ns"]),
            v["message"].as_str().unwrap_or("?")
        );
    }
    for hb in result.records_of("hackbench") {
        print_hackbench(hb);
    }
    for a in result.records_of("address_spaces") {
        println!(
            "address spaces: {} created, {} freed at the end ({} CPUs left one they kept loaded)",
            u(&a["created"]),
            u(&a["freed"]),
            u(&a["lazy_cpus"])
        );
    }
    for sb in result.records_of("schbench") {
        print_schbench(sb);
    }
    for n in result.records_of("nas") {
        let t = u(&n["time_ns"]);
        println!(
            "nas: {} threads x {} phases: Time in seconds = {}.{:03}, Mop/s total = {}; forked onto {} CPUs (at most {} on one), per node {}",
            u(&n["threads"]),
            u(&n["phases"]),
            t / 1_000_000_000,
            t / 1_000_000 % 1000,
            u(&n["mops"]),
            u(&n["fork_cpus_used"]),
            u(&n["fork_max_on_one_cpu"]),
            n["fork_targets_per_node"]
        );
    }
    for n in result.records_of("netperf") {
        println!("{}", netperf_line(n));
    }
    for t in result.records_of("tbench") {
        let x = u(&t["mb_per_sec_x100"]);
        println!(
            "tbench: Throughput {}.{:02} MB/sec  {} clients ({} operations)",
            x / 100,
            x % 100,
            u(&t["clients"]),
            u(&t["ops"])
        );
    }
    for (line, err) in &result.bad_records {
        println!("malformed record ({err}): {line}");
    }
}

/// Seconds as hackbench prints them (3 decimals), with 6 below 0.1 s so a
/// short simulated run does not read "0.000".
fn seconds(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    if s >= 0.1 {
        format!("{s:.3}")
    } else {
        format!("{s:.6}")
    }
}

/// hackbench's `Time:` line plus the scheduler's decisions during the run.
fn print_hackbench(h: &Value) {
    let t = u(&h["time_ns"]);
    println!(
        "hackbench: {} groups x {} fds, {} loops of {} B over {}s ({} mode): Time: {}",
        u(&h["groups"]),
        u(&h["fds"]),
        u(&h["loops"]),
        u(&h["datasize"]),
        h["transport"].as_str().unwrap_or("?"),
        h["mode"].as_str().unwrap_or("?"),
        seconds(t)
    );
    let s = &h["sched"];
    let w = &s["wake"];
    println!(
        "  wakeups {} (sync {}, local {}, remote {} of which {} via wake lists, migrated {}); wake_affine {} of {}; wake_wide {}",
        u(&w["nr_wakeups"]),
        u(&w["nr_wakeups_sync"]),
        u(&w["nr_wakeups_local"]),
        u(&w["nr_wakeups_remote"]),
        u(&w["ttwu_queued"]),
        u(&w["nr_wakeups_migrate"]),
        u(&w["wake_affine_success"]),
        u(&w["wake_affine_attempts"]),
        u(&w["wake_wide_hits"])
    );
    let m = &s["migrations"];
    let dist = [
        "same_cpu",
        "smt_sibling",
        "same_llc",
        "other_llc_same_package",
        "other_package_same_node",
        "other_node",
    ];
    let by: Vec<String> = dist[1..]
        .iter()
        .map(|d| {
            let n: u64 = ["wakeup", "fork", "balance", "newidle", "active", "exec"]
                .iter()
                .map(|r| u(&m[r][d]))
                .sum();
            format!("{d} {n}")
        })
        .collect();
    println!("  migrations {}: {}", u(&m["total"]), by.join(", "));
    let q = &s["wait_ns"];
    println!(
        "  runqueue wait (ns, within 1/64): mean {} p50 {} p90 {} p99 {} max {} over {} picks",
        u(&q["mean"]),
        u(&q["p50"]),
        u(&q["p90"]),
        u(&q["p99"]),
        u(&q["max"]),
        u(&q["count"])
    );
    if h["mode"] == "process" {
        let cpus = h["per_cpu"].as_array().map_or(&[][..], |v| &v[..]);
        let sum = |k: &str| cpus.iter().map(|c| u(&c[k])).sum::<u64>();
        println!(
            "  address-space switches (page tables loaded) {} of {} context switches",
            sum("mm_switches"),
            sum("context_switches")
        );
    }
}

/// schbench's percentile lines (µs) and RPS.
fn print_schbench(s: &Value) {
    println!(
        "schbench: {} message thread(s) x {} workers, {} requests, average rps {}",
        u(&s["messengers"]),
        u(&s["workers"]),
        u(&s["requests"]),
        u(&s["rps"])
    );
    for (name, key) in [
        ("Wakeup", "wakeup_latency_ns"),
        ("Request", "request_latency_ns"),
    ] {
        let h = &s[key];
        println!(
            "  {name} latencies (usec): 50.0th {} 90.0th {} * 99.0th {} 99.9th {} max {}",
            u(&h["p50"]) / 1000,
            u(&h["p90"]) / 1000,
            u(&h["p99"]) / 1000,
            u(&h["p99_9"]) / 1000,
            u(&h["max"]) / 1000
        );
    }
}

/// Where `addr` is in the kernel, when its ELF is known.
fn locate(kernel_elf: Option<&Path>, addr: u64, offset: u64) -> Option<String> {
    symbolize::locate(kernel_elf?, addr, offset)
}

fn print_fault(result: &RunResult, f: &Value, kernel_elf: Option<&Path>) {
    match f["kind"].as_str() {
        Some("panic") => println!(
            "fault: PANIC on CPU {} at {}:{}: {}",
            u(&f["cpu"]),
            f["file"].as_str().unwrap_or("?"),
            u(&f["line"]),
            f["message"].as_str().unwrap_or("?")
        ),
        _ => {
            let rip = u(&f["rip"]);
            println!(
                "fault: CPU {} {} {} (vector {}) at RIP {rip:#x}{}",
                u(&f["cpu"]),
                f["mnemonic"].as_str().unwrap_or(""),
                f["name"].as_str().unwrap_or("unexpected interrupt"),
                u(&f["vector"]),
                f.get("cr2")
                    .map_or(String::new(), |c| format!(", CR2 {:#x}", u(c)))
            );
            let offset = result
                .record("boot")
                .map_or(0, |b| u(&b["kernel_image_offset"]));
            if let Some(place) = locate(kernel_elf, rip, offset) {
                println!("       in {place}");
            }
            if let Some(reason) = f.get("reason").and_then(|r| r.as_str()) {
                println!("       {reason}");
            }
        }
    }
}

/// A CPU the watchdog found stuck: its RIP, and the stack words that are
/// kernel code addresses (most likely return addresses, innermost first).
fn print_stuck(result: &RunResult, s: &Value, kernel_elf: Option<&Path>) {
    let offset = result
        .record("boot")
        .map_or(0, |b| u(&b["kernel_image_offset"]));
    let rip = u(&s["rip"]);
    println!("CPU {} was at RIP {rip:#x}", u(&s["cpu"]));
    if let Some(place) = locate(kernel_elf, rip, offset) {
        println!("       in {place}");
    }
    let words = s["stack"].as_array().cloned().unwrap_or_default();
    for w in words.iter().filter_map(Value::as_u64) {
        if let Some(place) = locate(kernel_elf, w, offset) {
            println!("    called from {place}");
        }
    }
}

/// A netperf record as netperf prints its result: Trans. Rate per sec for
/// the `_RR` tests, 10^6 bits/s for the streams; UDP_STREAM also gives the
/// send rate and the datagrams dropped (netperf's two lines).
fn netperf_line(n: &Value) -> String {
    let test = n["test"].as_str().unwrap_or("?");
    let pairs = u(&n["pairs"]);
    if test.ends_with("_RR") {
        format!(
            "netperf {test}: {pairs} pairs, Trans. Rate per sec {} ({} transactions)",
            u(&n["trans_per_sec"]),
            u(&n["transactions"])
        )
    } else if test == "UDP_STREAM" {
        format!(
            "netperf {test}: {pairs} pairs, Throughput 10^6bits/sec {} received, {} sent; {} of {} datagrams dropped",
            u(&n["mbit_per_sec"]),
            u(&n["send_mbit_per_sec"]),
            u(&n["messages_dropped"]),
            u(&n["messages_sent"])
        )
    } else {
        format!(
            "netperf {test}: {pairs} pairs, Throughput 10^6bits/sec {}",
            u(&n["mbit_per_sec"])
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netperf_lines_name_the_test_and_its_metric() {
        let rr = serde_json::json!({"test": "UDP_RR", "pairs": 1, "trans_per_sec": 250000,
            "transactions": 125000, "mbit_per_sec": 2});
        assert_eq!(
            netperf_line(&rr),
            "netperf UDP_RR: 1 pairs, Trans. Rate per sec 250000 (125000 transactions)"
        );
        let maerts = serde_json::json!({"test": "TCP_MAERTS", "pairs": 2, "mbit_per_sec": 60000,
            "trans_per_sec": 0, "transactions": 0});
        assert_eq!(
            netperf_line(&maerts),
            "netperf TCP_MAERTS: 2 pairs, Throughput 10^6bits/sec 60000"
        );
        let udp = serde_json::json!({"test": "UDP_STREAM", "pairs": 1, "mbit_per_sec": 70000,
            "send_mbit_per_sec": 100000, "messages_sent": 80, "messages_dropped": 24});
        assert_eq!(
            netperf_line(&udp),
            "netperf UDP_STREAM: 1 pairs, Throughput 10^6bits/sec 70000 received, 100000 sent; 24 of 80 datagrams dropped"
        );
    }
}
