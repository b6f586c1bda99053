//! `--backend sim` through xtask's own option parsing, reporting and
//! record handling: every benchmark shape on every preset, records that
//! the same code reads as a QEMU run's, and a comparison table.

use clap::Parser;
use xtask::cli::{Cli, Cmd};
use xtask::preset::PRESETS;

fn run_args(extra: &[&str]) -> xtask::cli::RunArgs {
    let mut argv = vec!["xtask", "run", "--backend", "sim"];
    argv.extend_from_slice(extra);
    match Cli::parse_from(argv).command {
        Cmd::Run(r) => *r,
        _ => unreachable!(),
    }
}

const SHAPES: &[(&str, &[&str])] = &[
    (
        "hackbench",
        &["--arg", "groups=2", "--arg", "fds=2", "--arg", "loops=5"],
    ),
    (
        "schbench",
        &["--arg", "workers=2", "--arg", "duration_ms=10"],
    ),
    ("netperf", &["--arg", "pairs=2", "--arg", "duration_ms=10"]),
    (
        "nas",
        &[
            "--arg",
            "threads=8",
            "--arg",
            "phases=2",
            "--arg",
            "work=1000",
        ],
    ),
];

#[test]
fn every_shape_runs_on_every_preset_and_reports_like_the_kernel() {
    for p in PRESETS {
        for (exp, args) in SHAPES {
            let mut a = vec!["--topology", p.name, "--experiment", exp];
            a.extend_from_slice(args);
            let r = xtask::simrun::run(&run_args(&a), false)
                .unwrap_or_else(|e| panic!("{} {exp}: {e:#}", p.name));
            assert_eq!(
                r.outcome,
                xtask::outcome::Outcome::Success,
                "{} {exp}: {:?}",
                p.name,
                r.records
            );
            let rec = r.record(exp).expect("the workload's record");
            assert!(rec["sched"].is_object(), "{} {exp}", p.name);
            let sim = r.record("sim").expect("sim record");
            assert_eq!(sim["cpus"], p.machine().cpus(), "{}", p.name);
            assert_eq!(r.record("exit").unwrap()["status"], "success");
        }
    }
}

#[test]
fn the_simulator_accepts_machines_qemu_cannot_emulate() {
    let a = run_args(&[
        "--sockets",
        "4",
        "--cores",
        "64",
        "--threads",
        "2",
        "--numa-nodes",
        "4",
        "--experiment",
        "nas",
        "--arg",
        "threads=512",
        "--arg",
        "phases=2",
        "--arg",
        "work=100",
    ]);
    let r = xtask::simrun::run(&a, false).expect("512 CPUs simulate");
    assert_eq!(r.record("sim").unwrap()["cpus"], 512);
    let too_big = run_args(&["--sockets", "8", "--cores", "200", "--experiment", "nas"]);
    let e = xtask::simrun::config(&too_big).unwrap_err().to_string();
    assert!(e.contains("at most 1024"), "{e}");
}

#[test]
fn bad_input_fails_before_running() {
    let e = xtask::simrun::config(&run_args(&["--experiment", "stress"]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not run in the simulator"), "{e}");
    let e = xtask::simrun::config(&run_args(&["--experiment", "nas", "--arg", "nope=1"]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no argument 'nope'"), "{e}");
    let path = std::env::temp_dir().join(format!("schedsim-profile-{}", std::process::id()));
    std::fs::write(&path, "name = \"x\"\n").unwrap();
    let e = xtask::simrun::config(&run_args(&[
        "--experiment",
        "nas",
        "--profile",
        path.to_str().unwrap(),
    ]))
    .unwrap_err()
    .to_string();
    let _ = std::fs::remove_file(&path);
    assert!(e.contains("missing field"), "{e}");
}

#[test]
fn compare_in_the_simulator_renders_the_table() {
    let argv = [
        "xtask",
        "compare",
        "--backend",
        "sim",
        "--experiment",
        "hackbench",
        "--arg",
        "groups=2",
        "--arg",
        "fds=4",
        "--arg",
        "loops=20",
        "--runs",
        "2",
        "--variant-features",
        "WA_IDLE_PREV",
    ];
    let Cmd::Compare(c) = Cli::parse_from(argv).command else {
        unreachable!()
    };
    let t = xtask::compare::measure(&c, None).expect("comparison");
    let text = xtask::compare::render(&t, 2);
    assert!(text.contains("Amean"), "{text}");
    // Each run has its own seed, so the two runs of a configuration differ.
    let (_, _, s) = &t.cells[0];
    assert_eq!(s.baseline.len(), 2);
    assert_ne!(s.baseline[0], s.baseline[1], "{text}");
}

#[test]
fn a_simulated_run_gives_the_kernels_trace_timeline() {
    let path = std::env::temp_dir().join(format!("schedsim-trace-{}.json", std::process::id()));
    let a = run_args(&[
        "--experiment",
        "hackbench",
        "--arg",
        "groups=1",
        "--arg",
        "fds=3",
        "--arg",
        "loops=10",
        "--trace",
        path.to_str().unwrap(),
    ]);
    let r = xtask::simrun::run(&a, false).expect("runs");
    let (_, s) =
        xtask::trace::chrome_trace(&r.records).expect("the kernel's trace decoder reads it");
    assert_eq!(s.threads, 1 + 6, "main + 3 senders + 3 receivers");
    assert_eq!(s.cpus, 8);
    assert!(s.events > 6 * 10, "{s:?}");
    let lat = xtask::trace::latency_table(&r.records).expect("latency table");
    assert!(lat.iter().any(|t| t.name.starts_with("hb-recv")), "{lat:?}");
}

#[test]
fn the_default_experiment_runs_in_the_simulator_as_its_hackbench() {
    let Cmd::Run(r) = Cli::parse_from(["xtask", "run", "--backend", "sim"]).command else {
        unreachable!()
    };
    assert_eq!(r.experiment, "tour");
    let res = xtask::simrun::run(&r, false).expect("the tour simulates");
    assert_eq!(res.outcome, xtask::outcome::Outcome::Success);
    let h = res.record("hackbench").expect("a hackbench record");
    assert_eq!(
        (h["groups"].as_u64(), h["loops"].as_u64()),
        (Some(2), Some(50))
    );
    assert!(
        h["sched"]["wake"]["nr_wakeups"].as_u64().unwrap() > 0,
        "{h}"
    );
}
