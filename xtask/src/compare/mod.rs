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
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::cli::{Backend, CompareArgs, RunArgs};
use crate::launch::Launcher;
use crate::outcome::Outcome;
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
    pub better: Better,
    pub decimals: usize,
    pub baseline_name: String,
    pub variant_name: String,
    /// (op label, metric name, samples), in order.
    pub cells: Vec<(String, String, Samples)>,
}

/// The clock a comparison's numbers come from.
pub fn clock(a: &CompareArgs) -> &'static str {
    match (a.run.backend, a.run.icount) {
        (Backend::Sim, _) => "sim",
        (Backend::Qemu, Some(_)) => "icount",
        (Backend::Qemu, None) => "host",
    }
}

/// What a clock's values mean, for table headers and plot axes.
pub fn clock_meaning(clock: &str) -> &'static str {
    match clock {
        "sim" => "sim (simulated parallel time)",
        "icount" => "QEMU icount (summed instructions of all vCPUs)",
        "host" => "host (multi-threaded TCG on this host)",
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

/// Runs the comparison (building the kernel first) and prints its table.
pub fn run(args: &CompareArgs) -> Result<i32> {
    // The baseline's arguments, memory and output paths, before any build.
    crate::preflight::check(&args.run)?;
    let launcher = launcher_for(&args.run)?;
    let table = measure(args, launcher.as_ref())?;
    print!("{}", render(&table, args.runs));
    if let Some(path) = &args.plot {
        std::fs::write(path, plot::svg(&table)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("plot: {}", path.display());
    }
    Ok(0)
}

/// Runs every run of the comparison (booting `launcher`'s kernel, or in the
/// simulator when there is none) and collects the samples.
pub fn measure(args: &CompareArgs, launcher: Option<&Launcher>) -> Result<Table> {
    if args.run.trace.is_some() {
        bail!("--trace records one run: use it with `cargo xtask run`, not compare");
    }
    let metric = metrics::for_experiment_metric(&args.run.experiment, args.metric.as_deref())?;
    let base_run = args.run.clone();
    let mut var_run = args.run.clone();
    if let Some(f) = &args.variant_features {
        var_run.features = f.clone();
    }
    if let Some(p) = &args.variant_policy {
        var_run.policy = p.clone();
    }
    if let Some(p) = &args.variant_pick {
        var_run.pick = p.clone();
    }
    let sweep = parse_sweep(args.sweep.as_deref())?;
    for a in &args.variant_args {
        let Some((k, v)) = a.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            bail!("--variant-arg {a}: expected KEY=VALUE");
        };
        if sweep.as_ref().is_some_and(|(s, _)| s == k) {
            bail!("--variant-arg {a}: {k} is also the --sweep key, which sets it for both");
        }
        var_run = with_arg(&var_run, k, v);
    }
    let (bname, vname) = (describe(&base_run, &var_run), describe(&var_run, &base_run));
    if bname == vname {
        bail!(
            "the variant is the baseline: give --variant-features, --variant-policy, --variant-pick or --variant-arg"
        );
    }
    // Validate every configuration before the first slow boot.
    if let Some((key, values)) = &sweep {
        for v in values {
            for r in [&base_run, &var_run] {
                with_arg(r, key, v).boot_config()?;
            }
        }
    }
    base_run.boot_config()?;
    var_run.boot_config()?;
    if launcher.is_none() {
        crate::simrun::config(&base_run)?;
        crate::simrun::config(&var_run)?;
    }
    let qemu = args.run.qemu()?;

    let ops: Vec<(String, Option<(String, String)>)> = match &sweep {
        None => vec![("-".to_string(), None)],
        Some((k, vs)) => vs
            .iter()
            .map(|v| (v.clone(), Some((k.clone(), v.clone()))))
            .collect(),
    };
    let mut table = Table {
        title: String::new(),
        unit: metric.unit,
        clock: clock(args),
        axis: sweep
            .as_ref()
            .map_or_else(|| "configuration".to_string(), |(k, _)| k.clone()),
        better: metric.better,
        decimals: metric.decimals,
        baseline_name: bname,
        variant_name: vname,
        cells: Vec::new(),
    };
    let mut log = match &args.run.results {
        Some(p) => {
            Some(std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?)
        }
        None => None,
    };
    let total = ops.len() * args.runs as usize * 2;
    let mut done = 0;
    for (label, arg) in &ops {
        let mut per_metric: Vec<(String, Samples)> = Vec::new();
        for i in 0..args.runs {
            for (which, r) in [("baseline", &base_run), ("variant", &var_run)] {
                let mut r = match arg {
                    Some((k, v)) => with_arg(r, k, v),
                    None => r.clone(),
                };
                let mut qemu = qemu.clone();
                if launcher.is_none() {
                    // The simulator is deterministic per seed: run i of both
                    // configurations uses seed + i, so the runs sample the
                    // seed's perturbation (docs/simulator.md) and baseline
                    // and variant see the same perturbations.
                    r.seed = Some(args.run.seed.unwrap_or(0) + u64::from(i));
                } else if r.icount.is_some() {
                    // Under --icount a run is a function of its seed: run i of
                    // both configurations gets seed S+i (S = --seed, else 1), so
                    // the spread is the result's sensitivity to start jitter.
                    let seed = args.run.seed.unwrap_or(1).wrapping_add(u64::from(i));
                    r.seed = Some(seed);
                    qemu.seed = Some(seed);
                }
                done += 1;
                eprintln!(
                    "xtask: compare run {done}/{total}: {which} ({}), op {label}, run {}",
                    if which == "baseline" {
                        &table.baseline_name
                    } else {
                        &table.variant_name
                    },
                    i + 1
                );
                let result = match launcher {
                    Some(l) => l.boot(
                        &r.boot_config()?,
                        &qemu,
                        Duration::from_secs(args.run.timeout),
                        false,
                    )?,
                    None => crate::simrun::run(&r, false)?,
                };
                if result.outcome != Outcome::Success {
                    crate::report::print(&result, launcher.map(|l| l.kernel.as_path()));
                    bail!(
                        "{which} run {} (op {label}) failed: {}",
                        i + 1,
                        result.outcome
                    );
                }
                let values = (metric.extract)(&result)?;
                if table.title.is_empty() {
                    table.title = (metric.title)(&result);
                }
                for (name, v) in values {
                    let slot = match per_metric.iter().position(|(n, _)| *n == name) {
                        Some(i) => i,
                        None => {
                            per_metric.push((name.clone(), Samples::default()));
                            per_metric.len() - 1
                        }
                    };
                    let s = &mut per_metric[slot].1;
                    if which == "baseline" {
                        s.baseline.push(v);
                    } else {
                        s.variant.push(v);
                    }
                    if let Some(f) = log.as_mut() {
                        writeln!(
                            f,
                            "{}",
                            serde_json::json!({"type": "compare_sample", "config": which,
                                "op": label, "metric": name, "run": i + 1, "value": v})
                        )?;
                    }
                }
            }
        }
        for (name, s) in per_metric {
            table.cells.push((label.clone(), name, s));
        }
    }
    Ok(table)
}

/// A configuration's name: policy, pick, features, and the experiment
/// arguments it does not share with `other` (so a `--variant-arg` shows).
fn describe(r: &crate::cli::RunArgs, other: &crate::cli::RunArgs) -> String {
    let mut s = format!("{} {}", r.policy, r.pick);
    if !r.features.is_empty() {
        s.push(' ');
        s.push_str(&r.features);
    }
    for a in r.args.iter().filter(|a| !other.args.contains(a)) {
        s.push(' ');
        s.push_str(a);
    }
    s
}

fn with_arg(r: &crate::cli::RunArgs, key: &str, value: &str) -> crate::cli::RunArgs {
    let mut r = r.clone();
    r.args
        .retain(|a| a.split_once('=').is_none_or(|(k, _)| k != key));
    r.args.push(format!("{key}={value}"));
    r
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
