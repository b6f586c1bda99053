//! The scheduler running for real: the stress experiment's books balance on
//! a small SMP machine (debug kernel, so the core's debug assertions run),
//! the latency experiment measures every placement, the calibrate experiment
//! emits every measurement a cost profile needs (and the profile built from
//! its records loads), and the watchdog catches
//! a stuck CPU and a deadlock with a readable report; threads keep their
//! x87/SSE registers across preemption and migration (`fpu-check`).

use std::time::Duration;

use schedlab_tests::Boot;
use serde_json::Value;
use xtask::machine::Machine;
use xtask::outcome::Outcome;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn small_smp() -> Machine {
    Machine {
        sockets: 2,
        cores: 1,
        threads: 2,
        numa_nodes: 2,
        memory_mib: 512,
        ..Machine::default()
    }
}

#[test]
fn stress_books_balance_and_every_cpu_switches() {
    let mut b = Boot::new("stress");
    b.machine = small_smp();
    b.args = "threads:64,duration_ms:1000,seed:7";
    b.timeout = Duration::from_secs(240);
    let r = b.expect(Outcome::Success);
    let s = r.record("stress").expect("stress record");
    assert_eq!(s["balanced"], true, "{s}");
    assert!(u(&s["threads_created"]) >= 64);
    assert_eq!(s["threads_created"], s["threads_exited"]);
    assert_eq!(s["messages_sent"], s["messages_received"]);
    assert_eq!(s["bytes_sent"], s["bytes_received"]);
    assert!(u(&s["messages_sent"]) > 0 && u(&s["barrier_rounds"]) > 0 && u(&s["forks"]) > 0);
    let per_cpu = s["per_cpu"].as_array().unwrap();
    assert_eq!(per_cpu.len(), 4);
    for c in per_cpu {
        assert!(u(&c["context_switches"]) > 0, "{c}");
    }
    // The core's own counters came along.
    assert!(u(&s["sched"]["rq"]["nr_forks"]) >= u(&s["threads_created"]));
}

#[test]
fn latency_measures_every_placement() {
    let mut b = Boot::new("latency");
    b.machine = small_smp();
    b.args = "rounds:200";
    b.timeout = Duration::from_secs(240);
    let r = b.expect(Outcome::Success);
    let l = r.record("latency").expect("latency record");
    let names: Vec<&str> = l["placements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["placement"].as_str().unwrap())
        .collect();
    // 2 sockets x 1 core x 2 threads, one node per socket: no "same LLC,
    // other core" and no "other LLC in the node" pair exists.
    assert_eq!(names, ["same_cpu", "smt_sibling", "other_node"]);
    let barrier = &l["barrier"];
    assert_eq!(barrier["placement"], "barrier", "{l}");
    assert_eq!(
        barrier["cpus"],
        serde_json::json!([0, 1]),
        "nearest CPU: {l}"
    );
    for p in l["placements"].as_array().unwrap().iter().chain([barrier]) {
        let (p50, p99, max) = (u(&p["p50_ns"]), u(&p["p99_ns"]), u(&p["max_ns"]));
        assert!(0 < p50 && p50 <= p99 && p99 <= max, "{p}");
        // Pipe writes and reads, wait queues (wake_one, and wake_all at
        // every barrier round), wakeups, blocks, switches and ticks: no
        // heap allocation on any CPU in the steady state.
        assert_eq!(u(&p["heap_allocs"]), 0, "{p}");
    }
    assert!(
        u(&barrier["wakeups"]) >= 100,
        "a barrier round wakes the first to arrive: {barrier}"
    );
    assert!(u(&l["ctx_switch_ns"]) > 0);
}

#[test]
fn calibrate_measures_every_distance_and_makes_a_profile() {
    let mut b = Boot::new("calibrate");
    b.machine = small_smp();
    b.args = "rounds:60,chase_mib:4";
    b.timeout = Duration::from_secs(300);
    let r = b.expect(Outcome::Success);
    for ty in ["boot", "smp", "topology", "calibrate", "exit"] {
        assert!(r.record(ty).is_some(), "no {ty} record");
    }
    assert_eq!(r.record("boot").unwrap()["icount"], false);
    let c = r.record("calibrate").unwrap();
    assert_eq!(c["hypervisor"], true, "{c}");
    assert_eq!(c["hypervisor_vendor"], "TCGTCGTCGTCG", "{c}");
    for key in [
        "context_switch_ns",
        "pipe_call_ns",
        "semaphore_op_ns",
        "spawn_ns",
        "compute_unit_ps",
        "smt_shared_speed_milli",
    ] {
        assert!(u(&c[key]) > 0, "{key}: {c}");
    }
    // 2 sockets x 1 core x 2 threads, one node per socket: an SMT sibling
    // and a CPU on the other node, nothing in between.
    let dists = c["distances"].as_array().unwrap();
    let names: Vec<&str> = dists
        .iter()
        .map(|d| d["distance"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["smt", "remote"]);
    for d in dists {
        for key in [
            "wake_up_ns",
            "wakeup_latency_ns",
            "ipi_busy_ns",
            "ipi_idle_ns",
            "line_ns",
        ] {
            assert!(u(&d[key]) > 0, "{key}: {d}");
        }
        let kib: Vec<u64> = d["refill"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                assert!(u(&x["cold_ns"]) > 0 && u(&x["warm_ns"]) > 0, "{x}");
                u(&x["kib"])
            })
            .collect();
        assert_eq!(kib, [32, 256, 2048]);
    }
    assert_eq!(c["same_cpu"]["refill"].as_array().unwrap().len(), 3);
    let mem = &c["memory"];
    // QEMU's SRAT: node 0 below 640 KiB and above 1 MiB, node 1.
    assert!(u(&mem["node_ranges"]) >= 2, "{mem}");
    assert_eq!(u(&mem["bytes"]), 4 << 20);
    let from = mem["from"].as_array().unwrap();
    assert_eq!(from.len(), 2, "a chase from each node: {mem}");
    assert!(from.iter().all(|f| u(&f["ns_per_hop"]) > 0), "{mem}");
    // Address spaces: the two-process pair loaded CR3 on each of its
    // switches (two per sampled yield); the bootloader's mappings are not
    // global and CR4.PGE is off, so a load flushes everything (docs/kernel.md).
    let mm = &c["mm"];
    assert!(
        u(&mm["process_switch_ns"]) > 0 && u(&mm["thread_switch_ns"]) > 0,
        "{mm}"
    );
    assert!(u(&mm["cr3_loads"]) >= 2 * 60, "{mm}");
    assert_eq!(mm["cr4_pge"], false, "{mm}");
    assert_eq!(u(&mm["global_pages"]), 0, "{mm}");
    assert!(u(&mm["pages"]) > 0, "{mm}");
    // QEMU TCG's `-cpu max` has no CPUID leaf 0x18: the TLB size is
    // unknown, and the profile keeps the built-in mm.tlb_entries.
    assert!(
        mm["tlb_4k_entries"].is_null() && mm["tlb_level"].is_null(),
        "{mm}"
    );
    // 4 MiB of 2 MiB window pages: two pages walked after a flush.
    assert_eq!(u(&mm["page_bytes"]), 2 << 20, "{mm}");
    assert_eq!(u(&mm["walk_pages"]), 2, "{mm}");
    // The timer's detour: CPU 0 spun for 60 tick periods; each tick opened
    // a gap of its own (the boundaries may lose one, and a host stall of
    // the vCPU thread longer than a tick period puts two ticks in one gap:
    // up to a tenth of them under a loaded host, seen 48 gaps for 51 ticks),
    // no IPI reached it.
    let t = &c["timer"];
    let ticks = u(&t["ticks"]);
    assert!(ticks >= 10, "{t}");
    assert!(
        u(&t["tick_gaps"]) <= ticks && u(&t["tick_gaps"]) + 2 + ticks / 10 >= ticks,
        "{t}"
    );
    assert!(u(&t["gaps"]) >= u(&t["tick_gaps"]), "{t}");
    assert_eq!(u(&t["ipis"]), 0, "{t}");
    assert!(u(&t["iteration_ps"]) > 0 && u(&t["detour_ns"]) > 0, "{t}");
    assert!(u(&t["gap_ns"]) > 10 * u(&t["iteration_ps"]) / 1000, "{t}");
    // The LLC hit: QEMU's L1d 32 KiB + L2 4 MiB, L3 16 MiB give an 8 MiB
    // chase (twice the L2, half the L3).
    let h = &c["llc_hit"];
    assert_eq!(u(&h["l2_bytes"]), 4 << 20, "{h}");
    assert_eq!(u(&h["bytes"]), 8 << 20, "{h}");
    assert!(u(&h["ns_per_hop"]) > 0, "{h}");
    // The records make a profile the simulator loads, labelled as emulation.
    let toml = xtask::calibration::profile_toml(&r.records, "test").unwrap();
    for (key, want) in [("timer_ns", &t["detour_ns"]), ("same", &h["ns_per_hop"])] {
        let line = format!("{key} = {}", u(want));
        assert!(toml.contains(&line), "{line} in {toml}");
    }
    assert!(toml.contains("Clock source: QEMU TCG"), "{toml}");
    assert!(
        toml.contains("(CPUID leaf 0x18 describes no 4 KiB TLB on this CPU"),
        "{toml}"
    );
    let line = format!("\nswitch_ns = {}\n", u(&mm["switch_ns"]));
    assert!(toml.contains(&line), "{line} in {toml}");
}

#[test]
fn watchdog_reports_a_cpu_that_stopped_ticking() {
    let mut b = Boot::new("test-stuck");
    b.timeout = Duration::from_secs(120);
    let r = b.expect(Outcome::Watchdog);
    let w = r.record("watchdog").expect("watchdog record");
    assert_eq!(w["stuck_cpu"], 1);
    assert!(
        w["reason"]
            .as_str()
            .unwrap()
            .contains("CPU 1 has not ticked"),
        "{w}"
    );
    // Confirmed by NMIs, not by the tick gap alone (which host load can
    // open): the spinning CPU answered probes at least a second apart, with
    // interrupts off, and never ticked.
    let reason = w["reason"].as_str().unwrap();
    let over_ms: u64 = reason
        .split("probe NMIs over ")
        .nth(1)
        .and_then(|r| r.split(" ms").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no probe answers in the reason: {reason}"));
    assert!(over_ms >= 1000, "answers {over_ms} ms apart: {reason}");
    assert!(
        reason.contains("without a tick, interrupts off"),
        "{reason}"
    );
    let cpus: Vec<&str> = w["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        cpus.iter()
            .any(|c| c.starts_with("CPU 1: running") && c.contains("'stuck'")),
        "{cpus:?}"
    );
    // The stuck CPU answered the NMI with where it was.
    assert!(r.records_of("cpu_dump").any(|d| d["cpu"] == 1));
    assert_eq!(r.record("exit").unwrap()["status"], "watchdog");
}

#[test]
fn watchdog_reports_a_deadlock_with_the_blocked_threads() {
    let mut b = Boot::new("test-deadlock");
    b.timeout = Duration::from_secs(120);
    let r = b.expect(Outcome::Watchdog);
    let w = r.record("watchdog").expect("watchdog record");
    assert!(w["reason"].as_str().unwrap().contains("no progress"), "{w}");
    let text = w["cpus"].to_string();
    assert!(
        text.contains("'waits-for-a'")
            && text.contains("'waits-for-b'")
            && text.contains("Blocked"),
        "{text}"
    );
}

#[test]
fn mwait_idle_and_an_alternative_policy_run_the_stress_books_balanced() {
    let mut b = Boot::new("stress");
    b.machine = small_smp();
    b.idle = "mwait";
    b.policy = "prev_idle";
    b.args = "threads:16,duration_ms:300";
    b.timeout = Duration::from_secs(240);
    let r = b.expect(Outcome::Success);
    let c = r.record("sched_config").unwrap();
    assert_eq!(
        (c["idle"].as_str(), c["policy"].as_str()),
        (Some("mwait"), Some("prev_idle"))
    );
    assert_eq!(r.record("stress").unwrap()["balanced"], true);
}

/// NOHZ_IDLE on the kernel: idle CPUs stop the scheduler's tick, busy
/// ticks kick an idle load balancer that runs, and nothing is lost.
#[test]
fn tickless_idle_runs_the_stress_books_balanced() {
    let mut b = Boot::new("stress");
    b.machine = small_smp();
    b.features = "NOHZ_IDLE";
    b.args = "threads:8,duration_ms:500,seed:3";
    b.timeout = Duration::from_secs(240);
    let r = b.expect(Outcome::Success);
    let c = r.record("sched_config").unwrap();
    assert!(
        c["features"]
            .as_str()
            .is_some_and(|f| f.split(',').any(|x| x == "NOHZ_IDLE")),
        "{c}"
    );
    let s = r.record("stress").unwrap();
    assert_eq!(s["balanced"], true, "{s}");
    let n = &s["sched"]["nohz"];
    assert!(u(&n["tick_stops"]) > 0, "{n}");
    assert!(u(&n["kicks"]) > 0 && u(&n["ilb_runs"]) > 0, "{n}");
}

/// EEVDF with every 6.12 switch (`LINUX_6_12`: delayed dequeue, tickless
/// idle, proportional newidle balance, 6.x balancing, the 0.70 ms slice)
/// on the kernel: sleepers that block ahead of V stay queued until picked
/// or woken, newly idle passes roll their die, on real threads, and
/// nothing is lost.
#[test]
fn linux_6_12_runs_the_stress_books_balanced() {
    let mut b = Boot::new("stress");
    b.machine = small_smp();
    b.pick = "eevdf";
    b.features = "LINUX_6_12";
    b.args = "threads:8,duration_ms:500,seed:3";
    b.timeout = Duration::from_secs(240);
    let r = b.expect(Outcome::Success);
    let c = r.record("sched_config").unwrap();
    let features = c["features"].as_str().unwrap_or_default();
    for f in [
        "DELAY_DEQUEUE",
        "NI_RANDOM",
        "NOHZ_IDLE",
        "BASE_SLICE_700US",
    ] {
        assert!(features.split(',').any(|x| x == f), "{f}: {c}");
    }
    // 0.70 ms x (1 + ilog2(4)) on 4 CPUs.
    assert_eq!(c["base_slice_ns"], 2_100_000, "{c}");
    let s = r.record("stress").unwrap();
    assert_eq!(s["balanced"], true, "{s}");
    let d = &s["sched"]["delay"];
    assert!(u(&d["delayed"]) > 0, "{d}");
    assert!(u(&d["picked"]) + u(&d["requeued"]) > 0, "{d}");
    let ni = &s["sched"]["ni"];
    assert!(u(&ni["ran"]) + u(&ni["skipped"]) > 0, "{ni}");
}

/// A workload with more threads than the machine's memory holds fails
/// before it creates any, naming the heap it would need (instead of a
/// panic part-way through its forks).
#[test]
fn too_many_threads_for_the_heap_is_a_clear_failure() {
    let mut b = Boot::new("hackbench");
    // 200 groups x 40 = 8,000 threads of 64 KiB stacks: ~0.5 GiB, more
    // than the 512 MiB machine's heap.
    b.args = "groups:200,loops:1";
    let r = b.expect(Outcome::Failure);
    let e = r.record("error").expect("error record");
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains("8000 threads need about")
            && m.contains("kernel heap")
            && m.contains("--memory"),
        "{e}"
    );
    assert!(r.record("hackbench").is_none(), "no run started");
}

#[test]
fn unknown_experiment_argument_is_a_clear_failure() {
    let mut b = Boot::new("latency");
    b.args = "roundz:5";
    let r = b.expect(Outcome::Failure);
    let e = r.record("error").expect("error record");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("no argument 'roundz'"),
        "{e}"
    );
}

#[test]
fn fpu_state_survives_preemption_and_migration() {
    let mut b = Boot::new("fpu-check");
    b.args = "threads:8,duration_ms:1000";
    b.timeout = Duration::from_secs(180);
    let r = b.expect(Outcome::Success);
    let f = r.record("fpu").expect("fpu record");
    assert_eq!(u(&f["threads"]), 8, "{f}");
    let fpu_threads = u(&f["fpu_threads"]);
    assert!(fpu_threads > 0 && u(&f["plain_threads"]) > 0, "{f}");
    assert_eq!(u(&f["mismatches"]), 0, "{f}");
    assert!(u(&f["checks"]) > 0, "{f}");
    // Lazy detection: one #NM per FPU thread, none for the others.
    assert_eq!(u(&f["nm_traps"]), fpu_threads, "{f}");
    assert_eq!(u(&f["plain_marked"]), 0, "{f}");
    assert_eq!(u(&f["fpu_unmarked"]), 0, "{f}");
    // Eager save: one more save than restore per FPU thread (its exit).
    assert_eq!(u(&f["fxsave"]), u(&f["fxrstor"]) + fpu_threads, "{f}");
    // The registers really travelled: threads were checked on another CPU
    // than before, and both CPUs saved and restored FPU state.
    assert!(u(&f["cpu_changes"]) > 0, "{f}");
    let per_cpu = f["per_cpu"].as_array().unwrap();
    assert_eq!(per_cpu.len(), 2, "{f}");
    for c in per_cpu {
        assert!(u(&c["fxsave"]) > 0 && u(&c["fxrstor"]) > 0, "{c}");
    }
}
