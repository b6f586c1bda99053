//! `cargo xtask compare`: run one experiment several times under a baseline
//! and a variant scheduler configuration (feature switches, policy or pick
//! policy), optionally sweeping one experiment argument (the "Op" column,
//! e.g. hackbench's group count), and print the mmtests `compare-kernels`
//! table the seeds' LKML threads show.
//!
//! Runs alternate baseline / variant so slow drift of the host affects both
//! alike. With `--icount` every run is deterministic: the table then shows
//! zero variance and any difference is the configuration's effect alone.

pub mod metrics;
pub mod plot;
pub mod stats;

use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::{Context, Result, bail};

use crate::cli::{Backend, CompareArgs, Engine, RunArgs};
use crate::launch::Launcher;
use crate::sweep;
use stats::{Better, Summary};

/// One configuration's samples for one (op, metric) cell.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    pub baseline: Vec<f64>,
    pub variant: Vec<f64>,
}

/// Everything measured: per sweep value, per metric.
pub struct Table {
    pub title: String,
    pub unit: &'static str,
    /// The clock the values come from: "sim" (simulated parallel time),
    /// "icount" (summed instructions) or "host" (multi-threaded TCG).
    pub clock: &'static str,
    /// What the ops are: the sweep key, or "configuration" without a sweep.
    pub axis: String,
    /// The machine the runs ran on (preset and shape).
    pub machine: String,
    pub better: Better,
    pub decimals: usize,
    pub baseline_name: String,
    pub variant_name: String,
    /// (op label, metric name, samples), in order.
    pub cells: Vec<(String, String, Samples)>,
}

/// The clock a comparison's numbers come from.
pub fn clock(a: &CompareArgs) -> &'static str {
    run_clock(&a.run)
}

/// The clock one run's times come from: "sim", "icount" or "host".
pub fn run_clock(r: &RunArgs) -> &'static str {
    match (r.backend, r.icount) {
        (Backend::Sim, _) => "sim",
        (Backend::Qemu, Some(_)) => "icount",
        (Backend::Qemu, None) => match crate::accel::resolve_here(r.accel, false) {
            Ok(crate::accel::Accel::Kvm) => "kvm",
            _ => "host",
        },
    }
}

/// What a clock's values mean, for table headers and plot axes.
pub fn clock_meaning(clock: &str) -> &'static str {
    match clock {
        "sim" => "sim (simulated parallel time)",
        "icount" => "QEMU icount (summed instructions of all vCPUs)",
        "host" => "host (multi-threaded TCG on this host)",
        "kvm" => "kvm (real time on this host's CPUs, virtualised)",
        "tsc" => "real time (TSC, bare metal)",
        "vm" => "a virtual machine's TSC (real time, shared host cores)",
        _ => "unknown",
    }
}

/// The kernel launcher a run needs: none for the simulator; for QEMU the
/// prerequisites installed and the kernel built once.
pub fn launcher_for(run: &RunArgs) -> Result<Option<Launcher>> {
    if run.backend == Backend::Sim {
        return Ok(None);
    }
    crate::prereq::ensure_all()?;
    Ok(Some(Launcher::build(
        run.release,
        run.max_log_level.as_deref(),
    )?))
}

/// Runs the comparison (building the kernel first) as a sweep directory,
/// prints its table and the runs it lacks; `--from DIR` only renders.
/// Exit status 1 when runs are missing or failed.
pub fn run(args: &CompareArgs) -> Result<i32> {
    if !args.baseline_log.is_empty() {
        return crate::capture::compare::run(args);
    }
    if let Some(p) = &args.run.console_log {
        bail!(
            "--console-log {}: a `run` option; a sweep keeps the console of each failed run in DIR/runs/",
            p.display()
        );
    }
    if let Some(dir) = &args.from {
        let f = sweep::from_dir(dir)?;
        if let Some(seed) = &f.header.seed {
            return crate::seedrun::report(seed, f.header.full, &f, args.run.results.as_deref());
        }
        return report(&f, args);
    }
    // The baseline's arguments, memory and output paths, before any build.
    crate::preflight::check(&args.run)?;
    if let Some(p) = &args.plot {
        crate::preflight::writable("--plot", p)?;
    }
    let mut plan = sweep::plan(&sweep::Kind::Compare, &[(String::new(), args.clone())])?;
    plan.isolate = true;
    if args.engine == Engine::Slurm {
        sweep::slurm::preflight(args)?;
    }
    let launcher = launcher_for(&args.run)?;
    plan.identify_build(launcher.as_ref())?;
    let dir = args.dir.clone().unwrap_or_else(|| plan.default_dir());
    match plan.run(&dir, launcher.as_ref())? {
        Some(f) => report(&f, args),
        None => Ok(0),
    }
}

/// Prints a finished comparison: table, missing runs, `--plot`, `--results`.
fn report(f: &sweep::Finished, args: &CompareArgs) -> Result<i32> {
    let (_, table) = f.tables.first().context("the sweep has no comparison")?;
    let runs = f.header.parts[0].runs;
    print!("{}", render(table, runs));
    print!(
        "{}",
        sweep::collect::describe_missing(&f.dir, &f.tasks, &f.missing)
    );
    println!("sweep: {}", f.dir.path.display());
    if let Some(path) = &args.plot {
        std::fs::write(path, plot::svg(table)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("plot: {}", path.display());
    }
    if let Some(path) = &args.run.results {
        write_samples(path, &f.tables)?;
    }
    Ok(if f.missing.is_empty() { 0 } else { 1 })
}

/// `--results FILE`: every sample as a `compare_sample` record (with its
/// `part` when the sweep has several).
pub fn write_samples(path: &std::path::Path, tables: &[(String, Table)]) -> Result<()> {
    let mut f =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    for (part, t) in tables {
        for (op, metric, s) in &t.cells {
            for (config, xs) in [("baseline", &s.baseline), ("variant", &s.variant)] {
                for (i, v) in xs.iter().enumerate() {
                    let mut rec = serde_json::json!({"type": "compare_sample",
                        "config": config, "op": op, "metric": metric, "run": i + 1, "value": v});
                    if !part.is_empty() {
                        rec["part"] = part.as_str().into();
                    }
                    writeln!(f, "{rec}")?;
                }
            }
        }
    }
    Ok(())
}

/// Runs every run of the comparison (booting `launcher`'s kernel, or in the
/// simulator when there is none) and returns the table: the library form
/// of `compare` for tests. Without `--dir` the sweep lives in a fresh
/// temporary directory, removed when every run succeeded.
pub fn measure(args: &CompareArgs, launcher: Option<&Launcher>) -> Result<Table> {
    let mut plan = sweep::plan(&sweep::Kind::Compare, &[(String::new(), args.clone())])?;
    plan.identify_build(launcher)?;
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let temp = args.dir.is_none();
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!(
            "schedlab-sweep-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ))
    });
    let f = plan
        .run(&dir, launcher)?
        .context("the sweep was submitted without waiting (--no-wait)")?;
    if !f.missing.is_empty() {
        bail!(
            "{}",
            sweep::collect::describe_missing(&f.dir, &f.tasks, &f.missing).trim()
        );
    }
    if temp {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let (_, table) = f.tables.into_iter().next().context("no comparison")?;
    Ok(table)
}

/// `KEY=V1,V2,...` → (key, values).
pub fn parse_sweep(s: Option<&str>) -> Result<Option<(String, Vec<String>)>> {
    let Some(s) = s else { return Ok(None) };
    let (k, vs) = s
        .split_once('=')
        .with_context(|| format!("--sweep {s}: expected KEY=V1,V2,..."))?;
    let values: Vec<String> = vs
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(String::from)
        .collect();
    if k.is_empty() || values.is_empty() {
        bail!("--sweep {s}: expected KEY=V1,V2,...");
    }
    Ok(Some((k.to_string(), values)))
}

/// A table row: name, the statistic, which way is better, is the mean row.
type Row = (&'static str, fn(&Summary) -> f64, Better, bool);

/// The mmtests compare-kernels table: one block of statistic rows per
/// (op, metric), values in the metric's unit, `( x.xx%)` columns signed so
/// that positive is better, `* x.xx%*` when significant (Amean/Hmean row).
pub fn render(t: &Table, runs: u32) -> String {
    let mut out = String::new();
    let better = match t.better {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
    };
    let _ = writeln!(
        out,
        "\n{} -- {} ({better}), {runs} runs per configuration, {} clock",
        t.title,
        t.unit,
        clock_meaning(t.clock)
    );
    let _ = writeln!(out, "machine:  {}", t.machine);
    let _ = writeln!(out, "baseline: {}", t.baseline_name);
    let _ = writeln!(out, "variant:  {}", t.variant_name);
    let (mean_name, best_name) = match t.better {
        Better::Lower => ("Amean", "BAmean-95"),
        Better::Higher => ("Hmean", "BHmean-95"),
    };
    let op_w = t
        .cells
        .iter()
        .map(|(op, m, _)| op.len() + if m.is_empty() { 0 } else { m.len() + 1 })
        .max()
        .unwrap_or(1)
        .max(2);
    let col = 12 + 12;
    let _ = writeln!(
        out,
        "{:<10} {:<op_w$} {:>col$} {:>col$}",
        "", "", "baseline", "variant"
    );

    for (op, metric, s) in &t.cells {
        let opname = if metric.is_empty() {
            op.clone()
        } else if op == "-" {
            metric.clone()
        } else {
            format!("{op}/{metric}")
        };
        let b = stats::summarize(&s.baseline, t.better);
        let v = stats::summarize(&s.variant, t.better);
        let sig = stats::significant(&b, &v);
        let rows: [Row; 6] = [
            ("Min", |s| s.min, t.better, false),
            (mean_name, |s| s.mean, t.better, true),
            ("Stddev", |s| s.stddev, Better::Lower, false),
            ("CoeffVar", |s| s.coeffvar, Better::Lower, false),
            ("Max", |s| s.max, t.better, false),
            (best_name, |s| s.best95, t.better, false),
        ];
        for (name, get, dir, is_mean) in rows {
            let (bv, vv) = (get(&b), get(&v));
            let pct = stats::pct_better(bv, vv, dir);
            let cell = if is_mean && sig {
                format!(" *{pct:7.2}%*")
            } else {
                format!(" ({pct:7.2}%)")
            };
            let d = t.decimals;
            let _ = writeln!(
                out,
                "{name:<10} {opname:<op_w$} {bv:>12.d$} (   0.00%) {vv:>12.d$}{cell}"
            );
        }
        let (bi, vi) = (stats::identical(&s.baseline), stats::identical(&s.variant));
        if bi || vi {
            let side = |same: bool, n: usize| {
                if same {
                    format!("all {n} runs identical")
                } else {
                    format!("{n} runs vary")
                }
            };
            let _ = writeln!(
                out,
                "{:<10} {opname:<op_w$} baseline: {}; variant: {}{}",
                "Identical",
                side(bi, s.baseline.len()),
                side(vi, s.variant.len()),
                if bi && vi {
                    " -- no spread, so no significance: give runs different --seed values (docs/results.md)"
                } else {
                    ""
                }
            );
        }
        match stats::welch_p(&s.baseline, &s.variant) {
            Some(p) => {
                let _ = writeln!(out, "{:<10} {opname:<op_w$} {p:>12.4}", "Welch-p");
            }
            None => {
                let _ = writeln!(out, "{:<10} {opname:<op_w$} {:>12}", "Welch-p", "n/a");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[test]
    fn sweep_is_parsed_and_checked() {
        assert_eq!(
            parse_sweep(Some("groups=1,4, 8")).unwrap(),
            Some(("groups".into(), vec!["1".into(), "4".into(), "8".into()]))
        );
        assert!(parse_sweep(Some("groups")).is_err());
        assert!(parse_sweep(Some("groups=")).is_err());
        assert_eq!(parse_sweep(None).unwrap(), None);
    }

    fn compare_args(extra: &[&str]) -> CompareArgs {
        let argv = [
            "xtask",
            "compare",
            "--backend",
            "sim",
            "--experiment",
            "netperf",
        ]
        .iter()
        .chain(extra);
        match crate::cli::Cli::try_parse_from(argv).unwrap().command {
            crate::cli::Cmd::Compare(a) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn variant_arg_changes_only_the_variant() {
        let a = compare_args(&[
            "--arg",
            "pairs=1",
            "--arg",
            "duration_ms=10",
            "--arg",
            "placement=unbound",
            "--variant-arg",
            "placement=stacked",
            "--sweep",
            "test=TCP_RR,TCP_STREAM",
            "--runs",
            "1",
        ]);
        let t = measure(&a, None).unwrap();
        assert_eq!(t.baseline_name, "fair cfs placement=unbound");
        assert_eq!(t.variant_name, "fair cfs placement=stacked");
        let ops: Vec<&str> = t.cells.iter().map(|(op, _, _)| op.as_str()).collect();
        assert_eq!(ops, ["TCP_RR", "TCP_STREAM"]);
    }

    #[test]
    fn variant_arg_is_checked() {
        let e = |extra: &[&str]| match measure(&compare_args(extra), None) {
            Ok(_) => panic!("{extra:?} accepted"),
            Err(e) => format!("{e:#}"),
        };
        assert!(e(&["--variant-arg", "placement"]).contains("expected KEY=VALUE"));
        assert!(
            e(&[
                "--variant-arg",
                "test=TCP_RR",
                "--sweep",
                "test=TCP_RR,TCP_STREAM"
            ])
            .contains("also the --sweep key")
        );
        // Equal to the baseline's argument: the variant is the baseline.
        assert!(
            e(&[
                "--arg",
                "placement=stacked",
                "--variant-arg",
                "placement=stacked"
            ])
            .contains("the variant is the baseline")
        );
    }

    #[test]
    fn table_marks_a_significant_improvement() {
        let t = Table {
            title: "hackbench-thread-pipes".into(),
            unit: "seconds",
            clock: "icount",
            axis: "groups".into(),
            machine: "8 CPUs".into(),
            better: Better::Lower,
            decimals: 4,
            baseline_name: "fair cfs".into(),
            variant_name: "fair cfs NO_WA_IDLE_PREV".into(),
            cells: vec![(
                "4".into(),
                String::new(),
                Samples {
                    baseline: vec![2.03, 2.04, 2.04, 2.03],
                    variant: vec![1.96, 1.96, 1.97, 1.96],
                },
            )],
        };
        let out = render(&t, 4);
        let amean = out.lines().find(|l| l.starts_with("Amean")).unwrap();
        assert!(amean.contains("(   0.00%)"), "{amean}");
        assert!(amean.contains("*   3.56%*"), "{out}");
        let min = out.lines().find(|l| l.starts_with("Min")).unwrap();
        assert!(min.ends_with("(   3.45%)"), "{min}");
        assert!(out.contains("Welch-p"));
        assert!(!out.contains("Identical"), "{out}");
    }

    #[test]
    fn identical_runs_are_named_not_divided_by_zero() {
        let t = Table {
            title: "nas".into(),
            unit: "seconds",
            clock: "sim",
            axis: "configuration".into(),
            machine: "8 CPUs".into(),
            better: Better::Lower,
            decimals: 4,
            baseline_name: "a".into(),
            variant_name: "b".into(),
            cells: vec![(
                "-".into(),
                String::new(),
                Samples {
                    baseline: vec![0.2, 0.2, 0.2],
                    variant: vec![0.3, 0.3, 0.3],
                },
            )],
        };
        let out = render(&t, 3);
        let line = out.lines().find(|l| l.starts_with("Identical")).unwrap();
        assert!(line.contains("baseline: all 3 runs identical"), "{line}");
        assert!(line.contains("variant: all 3 runs identical"), "{line}");
        assert!(line.contains("no significance"), "{line}");
        assert!(
            !out.contains('*'),
            "no significance mark without spread: {out}"
        );
        assert!(!out.contains("NaN") && !out.contains("inf"), "{out}");
    }
}
