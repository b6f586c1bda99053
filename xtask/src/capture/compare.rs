//! `cargo xtask compare --baseline-log A.log --variant-log B.log`: the
//! mmtests compare-kernels table from captured consoles instead of runs
//! xtask starts. Every complete, successful boot in a log is one run (a
//! capture of a server rebooted five times gives five samples); both sides
//! must run the same experiment on the same clock. The table, `--plot` and
//! `--results` come from `compare`'s own code, the values from its metrics.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::clock;
use crate::cli::CompareArgs;
use crate::compare::{self, Samples, Table, metrics};
use crate::outcome::Outcome;
use crate::runner::RunResult;

/// One side's runs: the successful boots of its logs.
struct Side {
    runs: Vec<(PathBuf, usize, RunResult)>,
}

/// Reads `logs`; boots that did not succeed are named and left out.
fn read_side(flag: &str, logs: &[PathBuf]) -> Result<Side> {
    let mut runs = Vec::new();
    for path in logs {
        let cap = super::read(path)?;
        for b in cap.boots {
            if b.result.outcome == Outcome::Success {
                runs.push((path.clone(), b.number, b.result));
            } else {
                println!(
                    "{flag} {}: boot {} (lines {}-{}) left out: {}",
                    path.display(),
                    b.number,
                    b.first_line,
                    b.last_line,
                    b.result.outcome
                );
            }
        }
    }
    if runs.is_empty() {
        bail!("{flag}: no successful run in {}", names(logs));
    }
    Ok(Side { runs })
}

fn names(logs: &[PathBuf]) -> String {
    logs.iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn where_(path: &Path, boot: usize) -> String {
    format!("{} boot {boot}", path.display())
}

/// The configuration a run says it ran: its label, else policy and pick.
fn config_name(r: &RunResult) -> String {
    let label = r
        .record("boot")
        .and_then(|b| b["label"].as_str())
        .unwrap_or("");
    if !label.is_empty() {
        return label.to_string();
    }
    let s = r.record("sched_config");
    let f = |k: &str| {
        s.and_then(|s| s[k].as_str())
            .unwrap_or("?")
            .to_ascii_lowercase()
    };
    format!("{} {}", f("policy"), f("pick"))
}

/// The machine a run ran on: CPUs, nodes, CPU model.
fn machine(r: &RunResult) -> String {
    let t = r.record("topology");
    let n = |k: &str| t.and_then(|t| t[k].as_u64()).unwrap_or(0);
    let brand = r
        .record("boot")
        .and_then(|b| b["cpu_brand"].as_str())
        .filter(|b| !b.is_empty())
        .unwrap_or("CPU model not recorded");
    format!("{} CPUs, {} NUMA nodes, {brand}", n("nr_cpus"), n("nodes"))
}

/// Builds the table from the logs.
pub fn table(args: &CompareArgs) -> Result<Table> {
    let base = read_side("--baseline-log", &args.baseline_log)?;
    let var = read_side("--variant-log", &args.variant_log)?;
    let (first_path, first_boot, first) = &base.runs[0];
    let experiment = first
        .record("boot")
        .and_then(|b| b["experiment"].as_str())
        .unwrap_or("?")
        .to_string();
    let clock = clock::of(first).key;
    let m = metrics::for_experiment_metric(&experiment, args.metric.as_deref())
        .with_context(|| where_(first_path, *first_boot))?;
    let mut cells: Vec<(String, String, Samples)> = Vec::new();
    for (is_variant, side) in [(false, &base), (true, &var)] {
        for (path, boot, r) in &side.runs {
            let at = where_(path, *boot);
            let e = r
                .record("boot")
                .and_then(|b| b["experiment"].as_str())
                .unwrap_or("?");
            if e != experiment {
                bail!(
                    "{at} ran experiment '{e}', but {} ran '{experiment}': a table compares one experiment",
                    where_(first_path, *first_boot)
                );
            }
            let c = clock::of(r).key;
            if c != clock {
                bail!(
                    "{at} has the {} clock, but {} has the {}: a table compares one clock",
                    compare::clock_meaning(c),
                    where_(first_path, *first_boot),
                    compare::clock_meaning(clock)
                );
            }
            if machine(r) != machine(first) {
                println!(
                    "warning: {at} ran on {}, {} on {}",
                    machine(r),
                    where_(first_path, *first_boot),
                    machine(first)
                );
            }
            for (name, v) in (m.extract)(r).with_context(|| at.clone())? {
                let i = match cells.iter().position(|(_, n, _)| *n == name) {
                    Some(i) => i,
                    None => {
                        cells.push(("-".into(), name, Samples::default()));
                        cells.len() - 1
                    }
                };
                let s = &mut cells[i].2;
                if is_variant {
                    s.variant.push(v);
                } else {
                    s.baseline.push(v);
                }
            }
        }
    }
    for (_, name, s) in &cells {
        let side = match (s.baseline.is_empty(), s.variant.is_empty()) {
            (true, _) => "the baseline",
            (_, true) => "the variant",
            _ => continue,
        };
        bail!(
            "metric '{name}' has no value in {side}'s runs: the two sides measured different things"
        );
    }
    let name = |side: &Side, logs: &[PathBuf]| {
        format!(
            "{} ({} run(s) from {})",
            config_name(&side.runs[0].2),
            side.runs.len(),
            names(logs)
        )
    };
    Ok(Table {
        title: (m.title)(first),
        unit: m.unit,
        clock,
        axis: "configuration".into(),
        machine: machine(first),
        better: m.better,
        decimals: m.decimals,
        baseline_name: name(&base, &args.baseline_log),
        variant_name: name(&var, &args.variant_log),
        cells,
    })
}

/// Prints the table; writes `--plot` and `--results` as `compare` does.
pub fn run(args: &CompareArgs) -> Result<i32> {
    for (flag, p) in [("--plot", &args.plot), ("--results", &args.run.results)] {
        if let Some(p) = p {
            crate::preflight::writable(flag, p)?;
        }
    }
    let t = table(args)?;
    let runs = t
        .cells
        .iter()
        .map(|(_, _, s)| s.baseline.len().min(s.variant.len()))
        .min()
        .unwrap_or(0);
    print!("{}", compare::render(&t, runs as u32));
    if let Some(path) = &args.plot {
        std::fs::write(path, compare::plot::svg(&t)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("plot: {}", path.display());
    }
    if let Some(path) = &args.run.results {
        compare::write_samples(path, &[(String::new(), t)])?;
    }
    Ok(0)
}
