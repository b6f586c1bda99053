//! `cargo xtask`: the entry point. See `cargo xtask --help`.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
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
        Cmd::Bench => {
            [("sched", "core"), ("schedsim", "sim")]
                .iter()
                .try_fold(0, |rc, (package, bench)| {
                    let s = build::cargo()
                        .args(["bench", "--package", package, "--bench", bench])
                        .status()?;
                    Ok(if s.success() { rc } else { 1 })
                })
        }
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
            Ok(0)
        }
    };
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
    let qemu = args.qemu()?;
    xtask::preflight::check(args)?;
    xtask::cleanup::set_keep(args.keep);
    prereq::ensure_all()?;
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
        qemu.icount_shift
            .map_or("multi-threaded TCG".to_string(), |s| format!(
                "icount shift={s}"
            )),
    );
    let result = launcher.boot(&config, &qemu, Duration::from_secs(args.timeout), true)?;
    Ok(finish_run(args, &result, Some(&launcher.kernel)))
}

/// `cargo xtask run --backend sim`: the same report from the host simulator.
fn run_sim(args: &RunArgs) -> Result<i32> {
    xtask::preflight::check(args)?;
    let cfg = xtask::simrun::config(args)?;
    eprintln!(
        "xtask: simulating '{}' on {} CPUs ({} NUMA nodes), profile {}, seed {}",
        cfg.experiment,
        cfg.topology.nr_cpus(),
        cfg.topology.nr_nodes,
        cfg.profile.name,
        cfg.seed
    );
    let result = xtask::simrun::run(args, true)?;
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
        && let Err(e) = write_results(path, &result.records)
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
        && let Err(e) = write_trace(args, path, &result.records)
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

fn write_results(path: &std::path::Path, records: &[serde_json::Value]) -> Result<()> {
    let mut f =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    for r in records {
        writeln!(f, "{r}").with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!(
        "xtask: {} records written to {}",
        records.len(),
        path.display()
    );
    Ok(())
}

/// `--trace FILE`: the run's scheduler trace in `--trace-format`, and the
/// `perf sched latency`-style table.
fn write_trace(
    args: &RunArgs,
    path: &std::path::Path,
    records: &[serde_json::Value],
) -> Result<()> {
    let s = xtask::trace::write(path, args.trace_format, records)?;
    let dropped = match &s.cut {
        Some(c) => format!(
            ", {} dropped: raise --trace-events; the trace is {}",
            s.dropped, c.note
        ),
        None => String::new(),
    };
    println!(
        "trace: {} events on {} CPUs{dropped}, {} threads -> {} ({}; open in ui.perfetto.dev)",
        s.events,
        s.cpus,
        s.threads,
        path.display(),
        args.trace_format.describe()
    );
    print_sched_latency(&xtask::trace::latency_table(records)?);
    Ok(())
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

/// The `perf sched latency`-style table of a traced run (largest delays first).
fn print_sched_latency(rows: &[xtask::trace::TaskLatency]) {
    const SHOWN: usize = 15;
    println!(
        " {:<24} | {:>11} | {:>8} | {:>12} | {:>12} | {:>14}",
        "Task", "Runtime ms", "Switches", "Avg delay ms", "Max delay ms", "Max delay at s"
    );
    for r in rows.iter().take(SHOWN) {
        println!(
            " {:<24} | {:>11.3} | {:>8} | {:>12.3} | {:>12.3} | {:>14.6}",
            format!("{}:{}", r.name, r.tid),
            r.runtime_ns as f64 / 1e6,
            r.switches,
            r.avg_delay_ns as f64 / 1e6,
            r.max_delay_ns as f64 / 1e6,
            r.max_delay_at_ns as f64 / 1e9
        );
    }
    if rows.len() > SHOWN {
        println!(
            " ... {} more threads (all of them in the trace file)",
            rows.len() - SHOWN
        );
    }
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
