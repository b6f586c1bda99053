//! The simulator's model, end to end: parallel time, placement costs,
//! determinism, configuration errors.

mod common;
use common::*;

fn u(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

#[test]
fn n_tasks_on_n_cpus_finish_n_times_sooner_than_on_one() {
    let args = "threads:4,phases:4,work:500000,working_set_kib:0";
    let one = run(&config(machine(1, 1, 1), "nas", args));
    let four = run(&config(machine(1, 4, 1), "nas", args));
    let (t1, t4) = (
        u(&record(&one, "nas"), "time_ns"),
        u(&record(&four, "nas"), "time_ns"),
    );
    let speedup = t1 as f64 / t4 as f64;
    assert!(
        (3.5..=4.1).contains(&speedup),
        "1 CPU {t1} ns, 4 CPUs {t4} ns: speed-up {speedup:.2}, expected about 4"
    );
}

fn netperf(test: &str, placement: &str, extra: &str) -> serde_json::Value {
    let args = format!("test:{test},pairs:1,duration_ms:50,placement:{placement}{extra}");
    record(&run(&config(machine(1, 4, 2), "netperf", &args)), "netperf")
}

#[test]
fn stacked_pair_avoids_wakeup_latency_in_rr_but_loses_streams() {
    let rr_stacked = u(&netperf("TCP_RR", "stacked", ""), "trans_per_sec");
    let rr_cross = u(&netperf("TCP_RR", "cross-core", ""), "trans_per_sec");
    assert!(
        rr_stacked > rr_cross,
        "TCP_RR: stacked {rr_stacked}/s should beat cross-core {rr_cross}/s (no IPI, no idle exit)"
    );
    let st_stacked = u(&netperf("TCP_STREAM", "stacked", ""), "mbit_per_sec");
    let st_cross = u(&netperf("TCP_STREAM", "cross-core", ""), "mbit_per_sec");
    assert!(
        st_cross > st_stacked,
        "TCP_STREAM: cross-core {st_cross} Mbit/s should beat stacked {st_stacked} (sender and receiver in parallel)"
    );
}

#[test]
fn smt_siblings_share_their_core() {
    // Two CPU-bound threads: on two cores they run at full speed, on two
    // SMT siblings of one core at the profile's shared speed.
    let args = "threads:2,phases:2,work:1000000,working_set_kib:0";
    let apart = run(&config(machine(1, 2, 1), "nas", args));
    let siblings = run(&config(machine(1, 1, 2), "nas", args));
    let (ta, ts) = (
        u(&record(&apart, "nas"), "time_ns"),
        u(&record(&siblings, "nas"), "time_ns"),
    );
    let ratio = ts as f64 / ta as f64;
    let want = 1.0 / schedsim::Profile::default_profile().cpu.smt_shared_speed;
    assert!(
        (ratio - want).abs() < 0.1,
        "siblings {ts} ns vs cores {ta} ns: ratio {ratio:.2}, expected {want:.2}"
    );
}

#[test]
fn same_seed_repeats_bit_for_bit_and_seeds_differ() {
    let mut c = config(machine(2, 2, 2), "hackbench", "groups:2,fds:4,loops:30");
    let a = run(&c);
    let b = run(&c);
    assert_eq!(a.records, b.records, "same seed, different records");
    c.seed = 2;
    let d = run(&c);
    assert_ne!(
        record(&a, "hackbench")["time_ns"],
        record(&d, "hackbench")["time_ns"],
        "another seed should perturb the timings"
    );
}

#[test]
fn every_workload_balances_its_books() {
    for (exp, args) in [
        ("hackbench", "groups:2,fds:3,loops:10,transport:pipe"),
        ("schbench", "workers:4,duration_ms:20,sleep_us:50"),
        ("netperf", "test:TCP_RR,pairs:3,duration_ms:10"),
        (
            "netperf",
            "test:TCP_STREAM,pairs:2,duration_ms:10,placement:cross-smt",
        ),
        ("nas", "threads:6,phases:3,work:1000,imbalance_pct:50"),
    ] {
        let o = run(&config(machine(2, 2, 2), exp, args));
        let r = record(&o, exp);
        assert!(r.is_object(), "{exp}");
        let stats = record(&o, "sim_stats");
        assert_eq!(stats["violations"], 0, "{exp}: {:?}", o.records);
        assert!(u(&stats, "invariant_checks") > 0, "{exp}");
    }
}

#[test]
fn configuration_errors_name_what_is_wrong_before_running() {
    let bad = |exp: &str, args: &str, f: &dyn Fn(&mut schedsim::Config)| {
        let mut c = config(machine(1, 2, 1), exp, args);
        f(&mut c);
        schedsim::run(&c).expect_err("should not start")
    };
    let e = bad("stress", "", &|_| {});
    assert!(e.contains("does not run in the simulator"), "{e}");
    let e = bad("hackbench", "groups:0", &|_| {});
    assert!(e.contains("groups=0"), "{e}");
    let e = bad("hackbench", "bogus:1", &|_| {});
    assert!(e.contains("no argument 'bogus'"), "{e}");
    let e = bad("nas", "", &|c| c.features = "NO_SUCH_FEATURE".into());
    assert!(e.contains("NO_SUCH_FEATURE"), "{e}");
    let e = bad("nas", "", &|c| c.policy = "nope".into());
    assert!(e.contains("unknown policy"), "{e}");
}

#[test]
fn a_pinned_placement_that_the_machine_lacks_fails_the_run_with_a_reason() {
    let c = config(
        machine(1, 2, 1),
        "netperf",
        "pairs:1,duration_ms:10,placement:cross-smt",
    );
    let o = schedsim::run(&c).expect("starts");
    assert!(!o.success);
    let e = record(&o, "error");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("needs SMT siblings"),
        "{e}"
    );
}

#[test]
fn kworker_noise_runs_on_every_cpu_and_costs_the_team_time() {
    let quiet = run(&config(
        machine(1, 4, 1),
        "nas",
        "threads:4,phases:20,work:100000",
    ));
    let noisy = run(&config(
        machine(1, 4, 1),
        "nas",
        "threads:4,phases:20,work:100000,kworker_period_us:100,kworker_work:5000",
    ));
    let (tq, tn) = (
        u(&record(&quiet, "nas"), "time_ns"),
        u(&record(&noisy, "nas"), "time_ns"),
    );
    assert!(
        tn > tq,
        "noise should delay the barrier phases: quiet {tq} ns, noisy {tn} ns"
    );
    assert_eq!(u(&record(&noisy, "nas"), "kworker_period_us"), 100);
    // Each CPU's worker woke repeatedly: more wakeups than the team's own.
    let wq = u(&record(&quiet, "nas")["sched"]["wake"], "nr_wakeups");
    let wn = u(&record(&noisy, "nas")["sched"]["wake"], "nr_wakeups");
    assert!(wn > wq + 4 * 10, "quiet {wq} wakeups, noisy {wn}");
}

#[test]
fn a_short_sleep_wakes_on_time_not_at_the_next_tick() {
    // schbench workers sleep 50 us twice per request; hrtimer-exact
    // sleeps keep a request far below one 4 ms tick.
    let o = run(&config(
        machine(1, 2, 1),
        "schbench",
        "workers:2,duration_ms:50,sleep_us:50,ops:1,work:100",
    ));
    let p50 = u(&record(&o, "schbench")["request_latency_ns"], "p50");
    assert!(
        (100_000..1_000_000).contains(&p50),
        "request p50 {p50} ns: two 50 us sleeps should take ~0.1 ms, not a tick"
    );
}

#[test]
fn working_sets_cost_memory_time_the_first_time_and_beyond_the_llc() {
    let t = |ws_kib: u64, phases: u64| {
        let args = format!("threads:1,phases:{phases},work:100000,working_set_kib:{ws_kib}");
        u(
            &record(&run(&config(machine(1, 1, 1), "nas", &args)), "nas"),
            "time_ns",
        )
    };
    let none = t(0, 4);
    let small = t(512, 4);
    let huge = t(64 * 1024, 4);
    assert!(
        small > none,
        "first touch of 512 KiB is free: {small} vs {none}"
    );
    // 512 KiB fits the caches: only the first phase pays, so more phases
    // cost the same extra; 64 MiB streams from memory every phase.
    assert_eq!(
        t(512, 8) - t(0, 8),
        small - none,
        "a cached working set is paid once"
    );
    assert!(
        t(64 * 1024, 8) - t(0, 8) > huge - none,
        "a working set beyond the LLC streams"
    );
}

#[test]
fn processes_pay_for_address_space_switches_and_lose_tlb_entries_past_six() {
    // One CPU, so every switch between two workers is a switch on it.
    let hb = |mode: &str, fds: u32| {
        let args = format!("groups:1,fds:{fds},loops:40,datasize:4096,transport:pipe,mode:{mode}");
        let o = run(&config(machine(1, 1, 1), "hackbench", &args));
        let h = record(&o, "hackbench");
        // The record's per-CPU address-space switches (timed interval only).
        let per_cpu: u64 = h["per_cpu"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["mm_switches"].as_u64().unwrap())
            .sum();
        (u(&h, "time_ns"), record(&o, "sim_stats"), per_cpu)
    };
    // Threads of one process load their page tables once per CPU (the
    // first task to run there), never again.
    let (t_thread, s, per_cpu) = hb("thread", 8);
    assert_eq!(u(&s, "mm_switches"), 1);
    assert_eq!(per_cpu, 0, "the one load happens before the timed interval");
    // 16 processes and the parent: every switch between two of them loads
    // page tables, and with more than TLB_NR_DYN_ASIDS = 6 of them cycling
    // through the CPU most find their TLB entries gone.
    let (t_proc, s, per_cpu) = hb("process", 8);
    let (sw, refills) = (u(&s, "mm_switches"), u(&s, "tlb_refills"));
    assert!(sw > 100, "{s}");
    assert!(per_cpu > 100 && per_cpu <= sw, "{per_cpu} of {sw}");
    assert!(refills * 2 > sw, "16 processes, 6 ASIDs: {refills} of {sw}");
    assert!(
        t_proc > t_thread,
        "process mode {t_proc} ns should be slower than thread mode {t_thread} ns"
    );
    // 4 processes and the parent fit in 6 ASID slots: each takes a slot
    // (a cold TLB) once, when it first runs there, and keeps it.
    let (_, s, _) = hb("process", 2);
    let (sw, refills) = (u(&s, "mm_switches"), u(&s, "tlb_refills"));
    assert!(sw > 20, "{s}");
    assert!(
        refills <= 5,
        "5 address spaces, 6 ASIDs: {refills} refills in {sw} switches"
    );
}

#[test]
fn workers_inherit_the_launching_threads_wakee_flips() {
    // Linux copies wakee_flips at fork, so hackbench workers launched with
    // 52 flips (as from the 6.12 rig's shell) start with slave >= llc_size
    // (4 here) and wake_wide spreads more of their wakeups back to prev
    // (no wake_affine pull) than workers starting at 0.
    let go = |flips: u32| {
        let args = format!("groups:4,fds:20,loops:50,transport:pipe,launch_wakee_flips:{flips}");
        let mut c = config(machine(2, 2, 2), "hackbench", &args);
        c.pick = "eevdf".into();
        let r = record(&run(&c), "hackbench");
        assert_eq!(u(&r, "launch_wakee_flips"), u64::from(flips));
        (
            u(&r["sched"]["wake"], "wake_wide_hits"),
            u(&r["sched"]["wake"], "wake_affine_attempts"),
            u(&r["sched"]["wake"], "nr_wakeups"),
        )
    };
    let (wide0, att0, n0) = go(0);
    let (wide52, att52, n52) = go(52);
    eprintln!(
        "0: wide {wide0} attempts {att0} of {n0}; 52: wide {wide52} attempts {att52} of {n52}"
    );
    assert!(
        wide52 * n0 > wide0 * n52,
        "wide share: {wide52}/{n52} with 52 flips, {wide0}/{n0} with 0"
    );
    assert!(
        att52 * n0 < att0 * n52,
        "wake_affine share: {att52}/{n52} with 52 flips, {att0}/{n0} with 0"
    );
}

#[test]
fn a_thread_away_from_its_memory_streams_it_from_the_remote_node() {
    // Two nodes of one CPU each and three threads with working sets beyond
    // the caches: one CPU runs two, and balancing moves threads between
    // the nodes after their first touch. From then on a moved thread's
    // beyond-cache part streams from the other node's memory.
    let args = "threads:3,phases:20,work:100000,working_set_kib:8192";
    let go = |topology, remote_dram_ns: f64| {
        let mut c = config(topology, "nas", args);
        c.profile.cache.remote_dram_ns = remote_dram_ns;
        let o = run(&c);
        (
            u(&record(&o, "nas"), "time_ns"),
            u(&record(&o, "sim_stats"), "remote_memory_computes"),
        )
    };
    let dram = schedsim::Profile::default_profile().cache.dram_ns;
    let (t_flat, n_flat) = go(machine(2, 1, 1), dram);
    let (t_numa, n_numa) = go(machine(2, 1, 1), 4.0 * dram);
    assert!(
        n_flat > 0 && n_numa > 0,
        "threads ran away from their memory: {n_flat} / {n_numa} computes"
    );
    assert!(
        t_numa > t_flat,
        "remote memory at 4x local must slow the run: {t_numa} ns vs {t_flat} ns"
    );
    // One node: no memory is ever remote, whatever remote memory costs.
    let (t1, n1) = go(machine(1, 2, 1), dram);
    let (t4, n4) = go(machine(1, 2, 1), 4.0 * dram);
    assert_eq!((n1, n4), (0, 0));
    assert_eq!(t1, t4);
}

#[test]
fn barrier_spinners_released_within_their_spin_need_no_wakeup() {
    // Four threads on four cores; odd threads do twice the work, so the
    // even ones reach every barrier `gap` early.
    let (phases, work) = (20u64, 100_000u64);
    let prof = schedsim::Profile::default_profile();
    let gap_ns = work as f64 * prof.cpu.compute_unit_ns;
    let nas = |spin_us: u64| {
        let args = format!(
            "threads:4,phases:{phases},work:{work},imbalance_pct:100,working_set_kib:0,spin_us:{spin_us}"
        );
        let r = record(&run(&config(machine(1, 4, 1), "nas", &args)), "nas");
        (u(&r, "time_ns"), u(&r["sched"]["wake"], "nr_wakeups"))
    };
    let (t_sleep, w_sleep) = nas(0);
    // Sleeping at once: both early threads are woken at every barrier.
    assert!(
        w_sleep >= 2 * phases,
        "{w_sleep} wakeups in {phases} phases"
    );
    // Spinning twice the gap: released while spinning, never woken at a
    // barrier (what is left: the main thread's join).
    let long = (2.0 * gap_ns / 1000.0).ceil() as u64;
    let (t_spin, w_spin) = nas(long);
    assert!(w_spin <= 2, "spin {long} us: {w_spin} wakeups");
    // The releaser (a late odd thread) no longer pays a wakeup for each of
    // the two early threads before its next phase: at least one of those
    // per phase comes off the critical path (the rest is the release's
    // line transfer, a fraction of a wakeup).
    let saved = phases as f64 * prof.kernel.wakeup_ns;
    assert!(
        (t_spin as f64) <= t_sleep as f64 - saved,
        "spinning {t_spin} ns should beat sleeping {t_sleep} ns by {saved} ns (no wakeups to pay)"
    );
    // Spinning a quarter of the gap: the spin runs out, they sleep anyway.
    let short = ((gap_ns / 4.0) / 1000.0).floor().max(1.0) as u64;
    let (_, w_short) = nas(short);
    assert!(
        w_short >= 2 * phases,
        "spin {short} us of a {gap_ns} ns gap: {w_short} wakeups"
    );
}

#[test]
fn a_pause_loop_spinner_leaves_its_core_to_the_sibling() {
    // Two threads on the two SMT threads of one core; the odd one does
    // twice the work. Both compute at `smt_shared_speed` s until the even
    // one reaches the barrier after W / s; it then spins (its budget covers
    // the rest of the phase), and the odd one finishes its remaining W at
    // `smt_spin_speed` (full in the profile: a pause loop takes a few per
    // cent of the core's issue slots). A phase takes W (1 / s + 1); were the
    // spinner a running thread, 2 W / s.
    let (phases, work) = (10u64, 200_000u64);
    let prof = schedsim::Profile::default_profile();
    let (s, spin) = (prof.cpu.smt_shared_speed, prof.cpu.smt_spin_speed);
    assert_eq!(spin, 1.0, "the profile's pause-loop sibling speed");
    let w_ns = work as f64 * prof.cpu.compute_unit_ns;
    let spin_us = (2.0 * w_ns / s / 1000.0).ceil() as u64;
    let args = format!(
        "threads:2,phases:{phases},work:{work},imbalance_pct:100,working_set_kib:0,spin_us:{spin_us}"
    );
    let r = record(&run(&config(machine(1, 1, 2), "nas", &args)), "nas");
    let t = u(&r, "time_ns") as f64;
    let want = phases as f64 * w_ns * (1.0 / s + 1.0 / spin);
    let as_running = phases as f64 * 2.0 * w_ns / s;
    assert!(
        (t - want).abs() / want < 0.05,
        "{t} ns, expected about {want} ns (a spinner sharing the core like a running thread: {as_running} ns)"
    );
    assert!(
        u(&r["sched"]["wake"], "nr_wakeups") <= 2,
        "released while spinning: no barrier wakeups"
    );
}

/// A run with more threads than the scheduler core's live-task table fails
/// before it creates any (`Env::check_threads`), naming the limit: here
/// hackbench's largest run, 15,360 threads, plus one kworker per CPU on
/// 1,024 CPUs and the launching thread, one past the 16,384 live tasks.
#[test]
fn more_threads_than_the_core_holds_fail_before_any_starts() {
    let spec = topology::SyntheticSpec::simple(4, 128, 2);
    let topo = topology::Topology::synthetic(&spec).expect("1,024 CPUs");
    let c = config(
        topo,
        "hackbench",
        "groups:384,fds:20,loops:1,kworker_period_us:4000",
    );
    let o = schedsim::run(&c).expect("configuration starts");
    assert!(!o.success);
    let e = record(&o, "error");
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains("16384 threads with 1 alive exceed the scheduler core's 16384 live tasks"),
        "{e}"
    );
    assert!(
        !o.records
            .iter()
            .any(|r| r.contains("\"type\":\"hackbench\"")),
        "no run started"
    );
}

#[test]
fn tickless_idle_cpus_stop_ticking_and_are_balanced_for() {
    // 2 threads on 4 CPUs for 20 ms: two CPUs idle nearly all the time.
    let args = "threads:2,phases:40,work:250000,working_set_kib:0";
    let ticking = run(&config(machine(1, 4, 1), "nas", args));
    let tickless = run(&schedsim::Config {
        features: "NOHZ_IDLE".into(),
        ..config(machine(1, 4, 1), "nas", args)
    });
    let (a, b) = (record(&ticking, "nas"), record(&tickless, "nas"));
    let (ta, tb) = (
        u(&a["sched"]["rq"], "nr_ticks"),
        u(&b["sched"]["rq"], "nr_ticks"),
    );
    // Ticking, every CPU ticks every 4 ms (HZ=250); tickless, the idle
    // CPUs stop.
    let periods = u(&a, "time_ns") / 4_000_000;
    assert!(
        ta >= 4 * periods,
        "{ta} ticks in {periods} periods on 4 CPUs"
    );
    assert!(tb < ta * 3 / 4, "tickless {tb} ticks, ticking {ta}");
    // The two busy CPUs keep (or restart) their ticks.
    assert!(tb >= periods, "tickless {tb} ticks in {periods} periods");
    assert!(
        a["sched"].get("nohz").is_none(),
        "no nohz counters without the switch"
    );
    let n = &b["sched"]["nohz"];
    assert!(u(n, "tick_stops") >= 2, "{n}");
    // Two busy CPUs in the LLC: their ticks kick an idle balancer, which runs.
    assert!(u(n, "balance_kicks") >= 1 && u(n, "ilb_runs") >= 1, "{n}");
    let cfg = record(&tickless, "sched_config");
    assert!(
        cfg["features"]
            .as_str()
            .is_some_and(|f| f.split(',').any(|x| x == "NOHZ_IDLE")),
        "{cfg}"
    );
}

#[test]
fn a_niced_team_weighs_what_linuxs_weight_table_gives_its_nice() {
    // Two sockets, so barrier wakeups cross LLCs and go through
    // wake_affine_weight, which sums the wakee's load at every test; LLCs
    // of 10 CPUs, so 8 threads' wakee flips never make wake_wide spread them.
    let mean_task_load = |nice: i32| {
        let o = run(&schedsim::Config {
            // Without seed 000's rule an idle prev goes to the weight test.
            features: "NO_WA_IDLE_PREV".into(),
            ..config(
                machine(2, 10, 1),
                "nas",
                &format!("threads:8,phases:200,work:20000,nice:{nice}"),
            )
        });
        let rec = record(&o, "nas");
        let wake = &rec["sched"]["wake"];
        let tests = u(wake, "wa_weight_tests");
        assert!(tests > 50, "nice {nice}: only {tests} weight tests");
        (
            u(wake, "wa_weight_sum_task_load") as f64 / tests as f64,
            rec,
        )
    };
    let (nice0, rec0) = mean_task_load(0);
    let (nice19, rec19) = mean_task_load(19);
    // sched_prio_to_weight: nice 0 = 1024, nice 19 = 15, so a thread's
    // load_avg (weight x runnable fraction) is 68 times smaller.
    let ratio = nice0 / nice19;
    assert!(
        (60.0..=80.0).contains(&ratio),
        "mean task load nice 0 {nice0:.1}, nice 19 {nice19:.1}: ratio {ratio:.1}, expected about 1024/15 = 68"
    );
    assert_eq!(rec19["nice"], 19);
    assert!(rec0.get("nice").is_none(), "nice 0 is not written");
}

#[test]
fn every_delayed_dequeue_ends_once_at_a_pick_or_a_wakeup() {
    // hackbench under EEVDF with 6.12's delayed dequeue: receivers that
    // block ahead of V stay queued. Each such delay ends exactly once,
    // when the pick dequeues the task or a wakeup finds it still queued
    // (a balancer move does not end it), and by the end every task has
    // exited, so none is left delayed. The core's invariants are checked
    // every tick period (a violation fails the run).
    let args = "groups:2,loops:200,transport:pipe";
    let delayed = run(&schedsim::Config {
        pick: "eevdf".into(),
        features: "DELAY_DEQUEUE".into(),
        ..config(machine(1, 4, 1), "hackbench", args)
    });
    let plain = run(&schedsim::Config {
        pick: "eevdf".into(),
        ..config(machine(1, 4, 1), "hackbench", args)
    });
    let d = &record(&delayed, "hackbench")["sched"]["delay"];
    assert!(u(d, "delayed") > 0, "{d}");
    // The record covers the measured interval: a delay that began during
    // the set-up (the start gate) ends inside it, so the ends exceed the
    // starts by the tasks delayed when the interval began, at most one per
    // task (2 groups of 40); none is delayed at the end (all exited).
    let ends = u(d, "picked") + u(d, "requeued");
    assert!(
        (u(d, "delayed")..=u(d, "delayed") + 80).contains(&ends),
        "each delay ends once: {d}"
    );
    assert!(u(d, "requeued_replaced") <= u(d, "requeued"), "{d}");
    // Every block a delay was possible for shared its queue; there are no
    // more of them than sleeps, and each sleep was woken (all exited).
    let wakeups = u(
        &record(&delayed, "hackbench")["sched"]["wake"],
        "nr_wakeups",
    );
    assert!(u(d, "eligible_shared") > 0, "{d}");
    assert!(
        u(d, "delayed") + u(d, "eligible_shared") <= wakeups,
        "{d} against {wakeups} wakeups"
    );
    // The lag at each of those blocks: negative exactly for the delayed.
    let lag = &record(&delayed, "hackbench")["sched"]["block_lag"];
    assert_eq!(u(&lag["delayed"], "count"), u(d, "delayed"), "{lag}");
    assert_eq!(
        u(&lag["eligible"], "count"),
        u(d, "eligible_shared"),
        "{lag}"
    );
    assert!(
        u(&lag["delayed"], "max") > 0,
        "a delayed lag is below 0: {lag}"
    );
    for section in ["delay", "block_lag"] {
        assert!(
            record(&plain, "hackbench")["sched"].get(section).is_none(),
            "no {section} section without the switch"
        );
    }
}
