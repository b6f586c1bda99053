//! `cargo xtask`: the entry point. See `cargo xtask --help`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Parser;
use xtask::build;
use xtask::cli::{Backend, Cli, Cmd, RunArgs, TestArgs};
use xtask::launch::{ENV_BOOT_TOOL, ENV_KERNEL, Launcher};
use xtask::{prereq, report};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = xtask::cleanup::install() {
        eprintln!("xtask: error: {e:#}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        Cmd::Run(args) => run(&args),
        Cmd::Compare(args) => xtask::compare::run(&args),
        Cmd::Report(args) => {
            // `report --from LOG | head`: end quietly when the reader goes
            // away, as a Unix filter does, instead of panicking in println!
            // (report starts nothing that would need cleaning up).
            // SAFETY: restoring a signal's default disposition, before any
            // thread is started.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
            xtask::capture::report::run(&args)
        }
        Cmd::Image(args) => xtask::image::run(&args),
        Cmd::Seed { seed, full, extra } => seed_cmd(seed.as_deref(), full, &extra),
        Cmd::Test(args) => test(&args),
        Cmd::SweepTask { dir, offset, task } => xtask::sweep::slurm::task_main(&dir, offset, task),
        Cmd::Build { release } => prereq::ensure_rust()
            .and_then(|()| Launcher::build(release, None))
            .map(|l| {
                println!(
                    "kernel: {}\nimage builder: {}",
                    l.kernel.display(),
                    l.boot_tool.display()
                );
                0
            }),
        Cmd::CaptureFixtures { shapes } => prereq::ensure_qemu().and_then(|()| {
            let script = xtask::project_root().join("kernel/topology/fixtures/capture.py");
            let status = std::process::Command::new("python3")
                .arg(script)
                .args(shapes)
                .status()?;
            Ok(if status.success() { 0 } else { 1 })
        }),
        Cmd::Profile { from, out } => xtask::calibration::run(&from, out.as_deref()),
        Cmd::Bench { kernel: true } => xtask::kernel_bench::run(),
        Cmd::Bench { kernel: false } => [
            ("sched", "core"),
            ("schedsim", "sim"),
            ("topology", "build"),
        ]
        .iter()
        .try_fold(0, |rc, (package, bench)| {
            let s = build::cargo()
                .args(["bench", "--package", package, "--bench", bench])
                .status()?;
            Ok(if s.success() { rc } else { 1 })
        }),
        Cmd::List => {
            println!("experiments (--experiment NAME):");
            for e in bootcfg::EXPERIMENTS {
                let tag = if e.test_only { " (test only)" } else { "" };
                println!("  {:<16} {}{tag}", e.name, e.description);
            }
            println!("topology presets (--topology NAME):");
            for p in xtask::preset::PRESETS {
                let m = p.machine();
                println!("  {:<16} {:>3} CPUs: {}", p.name, m.cpus(), p.mirrors);
            }
            let picks: Vec<&str> = sched::PickPolicy::ALL.iter().map(|p| p.name()).collect();
            println!(
                "fair-class picks (--pick NAME): {}",
                picks.join(", ").to_lowercase()
            );
            println!(
                "policies (--policy NAME): {}",
                sched::policies::POLICIES.join(", ")
            );
            println!(
                "scheduler switches (--features NAME,NO_NAME,...; docs/scheduler.md, \"Feature switches\"):"
            );
            let names: Vec<String> = sched::features::FEATURES
                .iter()
                .map(|d| format!("{}{}", d.name, if d.default { " (on)" } else { "" }))
                .collect();
            for row in names.chunks(4) {
                let cells: Vec<String> = row.iter().map(|n| format!("{n:<30}")).collect();
                println!("  {}", cells.join("").trim_end());
            }
            println!("switch aliases:");
            for a in sched::features::ALIASES {
                let members: Vec<&str> = a
                    .feats
                    .iter()
                    .filter_map(|f| sched::features::FEATURES.iter().find(|d| d.feat == *f))
                    .map(|d| d.name)
                    .collect();
                println!("  {:<16} {}", a.name, members.join(","));
            }
            Ok(0)
        }
    };
    // A signal's exit status is the signal thread's to give, even when this
    // thread saw QEMU die of the cleanup's SIGKILL first.
    xtask::cleanup::defer_to_signal();
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &RunArgs) -> Result<i32> {
    if args.backend == Backend::Sim {
        return run_sim(args);
    }
    // Validate everything the user typed before any slow step.
    let config = args.boot_config()?;
    xtask::preflight::check(args)?;
    xtask::cleanup::set_keep(args.keep);
    prereq::ensure_all()?;
    // After the prerequisites: QEMU's version and KVM's test guest need QEMU.
    let qemu = args.qemu()?;
    // Prebuilt products named in the environment (as `cargo xtask test` sets
    // them) are used as they are; otherwise build.
    let launcher = if std::env::var_os(ENV_KERNEL).is_some() {
        Launcher::from_env()?
    } else {
        Launcher::build(args.release, args.max_log_level.as_deref())?
    };
    let m = &qemu.machine;
    eprintln!(
        "xtask: booting '{}' on {} vCPUs ({} sockets x {} dies x {} cores x {} threads, {} NUMA nodes, {} MiB), {:?}, {}",
        config.experiment,
        m.cpus(),
        m.sockets,
        m.dies,
        m.cores,
        m.threads,
        m.numa_nodes,
        m.memory_mib,
        qemu.firmware,
        match (qemu.icount_shift, qemu.accel) {
            (Some(s), _) => format!("icount shift={s}"),
            (None, xtask::accel::Accel::Kvm) => "KVM".to_string(),
            (None, xtask::accel::Accel::Tcg) => "multi-threaded TCG".to_string(),
        },
    );
    let result = launcher.boot_logged(
        &config,
        &qemu,
        Duration::from_secs(args.timeout),
        true,
        args.console_log.as_deref(),
    )?;
    if let Some(p) = &args.console_log {
        eprintln!(
            "xtask: console copied to {} (cargo xtask report --from {} gives this report again)",
            p.display(),
            p.display()
        );
    }
    Ok(finish_run(args, &result, Some(&launcher.kernel)))
}

/// `cargo xtask run --backend sim`: the same report from the host simulator.
fn run_sim(args: &RunArgs) -> Result<i32> {
    let cfg = xtask::simrun::config(args)?;
    xtask::preflight::check_on(args, cfg.topology.nr_cpus() as u32)?;
    eprintln!(
        "xtask: simulating '{}' on {} CPUs ({} NUMA nodes), profile {}, seed {}",
        cfg.experiment,
        cfg.topology.nr_cpus(),
        cfg.topology.nr_nodes,
        cfg.profile.name,
        cfg.seed
    );
    let result = xtask::simrun::run_config(&cfg, true)?;
    Ok(finish_run(args, &result, None))
}

/// Writes `--results`, prints the report, writes `--trace`. The run's
/// verdict stands: a reporting error after it is printed and turns only a
/// successful run's status into 2.
fn finish_run(
    args: &RunArgs,
    result: &xtask::runner::RunResult,
    kernel: Option<&std::path::Path>,
) -> i32 {
    let verdict = result.outcome.exit_code();
    let mut reporting_failed = false;
    if let Some(path) = &args.results
        && let Err(e) = xtask::outputs::write_results(path, &result.records)
    {
        eprintln!("xtask: error: {e:#}");
        reporting_failed = true;
    }
    report::print(result, kernel);
    println!(
        "clock: {}",
        xtask::compare::clock_meaning(xtask::compare::run_clock(args))
    );
    if let Some(path) = &args.trace
        && let Err(e) = xtask::outputs::write_trace(path, args.trace_format, &result.records)
    {
        eprintln!("xtask: error: --trace: {e:#}");
        reporting_failed = true;
    }
    if verdict == 0 && reporting_failed {
        2
    } else {
        verdict
    }
}

/// `cargo xtask seed [N]`: list the recipes, or run one and judge it
/// against the seed's published numbers.
fn seed_cmd(seed: Option<&str>, full: bool, extra: &[String]) -> Result<i32> {
    let Some(seed) = seed else {
        for r in xtask::seeds::RECIPES {
            println!("seed {}: {}", r.seed, r.title);
            for (form, full) in [("quick", false), ("full", true)] {
                for p in r.parts {
                    println!(
                        "    {form} {}: cargo xtask compare {}",
                        p.name,
                        xtask::seeds::part_words(r, p, full).join(" ")
                    );
                }
            }
        }
        return Ok(0);
    };
    xtask::seedrun::run(seed, full, extra)
}

fn test(args: &TestArgs) -> Result<i32> {
    let start = Instant::now();
    let _ = std::fs::remove_file(xtask::skips::file());
    let rc = run_tests(args, start);
    if let Ok(text) = std::fs::read_to_string(xtask::skips::file()) {
        eprintln!("xtask: tests skipped here, with the reason:");
        for l in text.lines() {
            eprintln!("  {l}");
        }
    }
    rc
}

fn run_tests(args: &TestArgs, start: Instant) -> Result<i32> {
    if !args.qemu_only {
        prereq::ensure_rust()?;
        eprintln!("xtask: host tests");
        let status = build::cargo()
            .args([
                "test",
                "--no-fail-fast",
                "--workspace",
                "--exclude",
                "schedlab-kernel",
                "--exclude",
                "schedlab-tests",
            ])
            .status()?;
        if !status.success() {
            eprintln!("xtask: host tests FAILED");
            return Ok(1);
        }
    }
    if !args.host_only {
        prereq::ensure_all()?;
        let launcher = Launcher::build(false, None)?;
        eprintln!("xtask: QEMU integration tests");
        let mut cmd = build::cargo();
        cmd.args([
            "test",
            "--no-fail-fast",
            "--package",
            "schedlab-tests",
            "--",
        ])
        .env(ENV_KERNEL, &launcher.kernel)
        .env(ENV_BOOT_TOOL, &launcher.boot_tool);
        if let Some(f) = &args.filter {
            cmd.arg(f);
        }
        if !cmd.status()?.success() {
            eprintln!("xtask: QEMU integration tests FAILED");
            return Ok(1);
        }
    }
    eprintln!(
        "xtask: all tests passed in {:.0} s",
        start.elapsed().as_secs_f64()
    );
    Ok(0)
}
