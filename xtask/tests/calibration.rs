//! `cargo xtask profile --from LOG` end to end: the profile made from a
//! captured QEMU `calibrate` console log is written, loads through
//! `--profile`, and drives a short simulation.

use clap::Parser;
use xtask::cli::{Cli, Cmd};

#[test]
fn a_profile_from_a_captured_log_runs_a_simulation() {
    profile_runs_a_simulation("calibrate-qemu-tcg.log");
}

#[test]
fn a_profile_with_the_timer_and_llc_hit_measured_runs_a_simulation() {
    let toml = profile_runs_a_simulation("calibrate-qemu-tcg-timer.log");
    assert!(
        toml.contains("# measured: median gap a periodic LAPIC tick"),
        "{toml}"
    );
    assert!(toml.contains("# line_ns.same: measured: "), "{toml}");
}

/// Writes the profile of fixture `name` with `cargo xtask profile`, runs a
/// short simulated hackbench with it and returns the profile's text.
fn profile_runs_a_simulation(name: &str) -> String {
    let log = xtask::project_root()
        .join("xtask/tests/fixtures")
        .join(name);
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.toml"));
    let argv = [
        "xtask",
        "profile",
        "--from",
        log.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let Cmd::Profile { from, out: dest } = Cli::parse_from(argv).command else {
        unreachable!()
    };
    assert_eq!(xtask::calibration::run(&from, dest.as_deref()).unwrap(), 0);
    let argv = [
        "xtask",
        "run",
        "--backend",
        "sim",
        "--profile",
        out.to_str().unwrap(),
        "--sockets",
        "2",
        "--cores",
        "2",
        "--threads",
        "2",
        "--numa-nodes",
        "2",
        "--experiment",
        "hackbench",
        "--arg",
        "groups=2",
        "--arg",
        "fds=2",
        "--arg",
        "loops=10",
    ];
    let Cmd::Run(args) = Cli::parse_from(argv).command else {
        unreachable!()
    };
    let r = xtask::simrun::run(&args, false).unwrap();
    assert_eq!(
        r.outcome,
        xtask::outcome::Outcome::Success,
        "{:?}",
        r.records
    );
    assert_eq!(r.record("sim").unwrap()["profile"], "calibrated-qemu-tcg");
    let hb = r.record("hackbench").unwrap();
    assert!(hb["time_ns"].as_u64().is_some_and(|t| t > 0), "{hb}");
    std::fs::read_to_string(&out).unwrap()
}
