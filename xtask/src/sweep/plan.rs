//! A comparison as a matrix of runs: every (part, op, run, configuration)
//! with its full `cargo xtask run` options, in the order `compare` has always
//! run them (ops outer; per run index, baseline then variant, so slow drift of
//! the host affects both alike). Everything is validated here, before any
//! build or boot.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::cli::{Backend, CompareArgs, RunArgs};
use crate::compare::{self, metrics};

/// One comparison (a `compare` command, or one part of a seed recipe).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartSpec {
    /// The seed recipe's part name; empty for a plain `compare`.
    pub name: String,
    pub experiment: String,
    /// `--metric` (None: the experiment's main metric).
    pub metric: Option<String>,
    pub runs: u32,
    /// What the ops are: the sweep key, or "configuration".
    pub axis: String,
    /// The op labels in order ("-" without a sweep).
    pub ops: Vec<String>,
    /// The configurations' names as the table prints them.
    pub baseline: String,
    pub variant: String,
    /// The clock the values come from (`compare::clock`).
    pub clock: String,
    /// The machine: preset name (if any) and shape.
    pub machine: String,
    /// The metric's unit, "lower" or "higher" (which is better) and
    /// decimals, so the directory renders without today's code.
    pub unit: String,
    pub better: String,
    pub decimals: usize,
    /// xxHash64 of the simulator's `--profile` file: a resume with another
    /// profile is another sweep.
    pub profile: Option<String>,
}

/// One run of the matrix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Index in the matrix (also the Slurm array index).
    pub task: usize,
    pub part: String,
    /// "baseline" or "variant".
    pub config: String,
    pub op: String,
    /// 1-based run index within (part, op, config).
    pub run: u32,
    /// The run's whole configuration as `cargo xtask run` options.
    pub args: Vec<String>,
}

/// The matrix of one `compare` (or one seed part); task ids start at `first_id`.
pub fn compare_part(
    args: &CompareArgs,
    part: &str,
    first_id: usize,
) -> Result<(PartSpec, Vec<Task>)> {
    if args.run.trace.is_some() {
        bail!("--trace records one run: use it with `cargo xtask run`, not compare");
    }
    let metric = metrics::for_experiment_metric(&args.run.experiment, args.metric.as_deref())?;
    let mut base_run = args.run.clone();
    let mut var_run = args.run.clone();
    if let Some(f) = &args.variant_features {
        var_run.features = f.clone();
    }
    if let Some(c) = &args.common_features {
        sched::Features::parse(c).map_err(|e| anyhow::anyhow!("--common-features {c}: {e}"))?;
        for r in [&mut base_run, &mut var_run] {
            r.features = if r.features.is_empty() {
                c.clone()
            } else {
                format!("{},{c}", r.features)
            };
        }
    }
    if let Some(p) = &args.variant_policy {
        var_run.policy = p.clone();
    }
    if let Some(p) = &args.variant_pick {
        var_run.pick = p.clone();
    }
    let sweep = compare::parse_sweep(args.sweep.as_deref())?;
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
    let ops: Vec<(String, Option<(String, String)>)> = match &sweep {
        None => vec![("-".to_string(), None)],
        Some((k, vs)) => vs
            .iter()
            .map(|v| (v.clone(), Some((k.clone(), v.clone()))))
            .collect(),
    };
    let mut tasks = Vec::new();
    for (label, arg) in &ops {
        for i in 0..args.runs {
            for (which, r) in [("baseline", &base_run), ("variant", &var_run)] {
                let mut r = match arg {
                    Some((k, v)) => with_arg(r, k, v),
                    None => r.clone(),
                };
                if r.backend == Backend::Sim {
                    // The simulator is deterministic per seed: run i of both
                    // configurations uses seed + i, so the runs sample the
                    // seed's perturbation (docs/simulator.md) and baseline
                    // and variant see the same perturbations.
                    r.seed = Some(args.run.seed.unwrap_or(0) + u64::from(i));
                } else if r.icount.is_some() {
                    // Under --icount a run is a function of its seed: run i of
                    // both configurations gets seed S+i (S = --seed, else 1), so
                    // the spread is the result's sensitivity to start jitter.
                    r.seed = Some(args.run.seed.unwrap_or(1).wrapping_add(u64::from(i)));
                }
                if i == 0 {
                    // Later runs differ only in their seed.
                    validate(&r)?;
                }
                tasks.push(Task {
                    task: first_id + tasks.len(),
                    part: part.to_string(),
                    config: which.to_string(),
                    op: label.clone(),
                    run: i + 1,
                    args: super::argv::to_words(&r)?,
                });
            }
        }
    }
    let spec = PartSpec {
        name: part.to_string(),
        experiment: args.run.experiment.clone(),
        metric: args.metric.clone(),
        runs: args.runs,
        axis: sweep
            .as_ref()
            .map_or_else(|| "configuration".to_string(), |(k, _)| k.clone()),
        ops: ops.into_iter().map(|(l, _)| l).collect(),
        baseline: bname,
        variant: vname,
        clock: compare::clock(args).to_string(),
        machine: format!(
            "{}{}",
            args.run
                .topology
                .as_deref()
                .map_or(String::new(), |t| format!("{t}: ")),
            args.run.machine()?.shape()
        ),
        unit: metric.unit.to_string(),
        better: match metric.better {
            crate::compare::stats::Better::Lower => "lower",
            crate::compare::stats::Better::Higher => "higher",
        }
        .to_string(),
        decimals: metric.decimals,
        profile: match &args.run.profile {
            Some(p) => Some(super::file_hash(p)?),
            None => None,
        },
    };
    Ok((spec, tasks))
}

/// Everything about one run that can be checked without running it.
/// (Arguments, memory against the guest's, the simulator's configuration.)
fn validate(r: &RunArgs) -> Result<()> {
    crate::preflight::check(r)?;
    r.qemu()?;
    Ok(())
}

/// How many host cores a run occupies: a multi-threaded TCG QEMU runs one
/// host thread per vCPU; an `--icount` QEMU and a simulator run use one.
pub fn weight(r: &RunArgs) -> u32 {
    match (r.backend, r.icount) {
        (Backend::Qemu, None) => r.machine().map_or(1, |m| m.cpus()).max(1),
        _ => 1,
    }
}

/// A configuration's name: policy, pick, features, and the experiment
/// arguments it does not share with `other` (so a `--variant-arg` shows).
fn describe(r: &RunArgs, other: &RunArgs) -> String {
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

fn with_arg(r: &RunArgs, key: &str, value: &str) -> RunArgs {
    let mut r = r.clone();
    r.args
        .retain(|a| a.split_once('=').is_none_or(|(k, _)| k != key));
    r.args.push(format!("{key}={value}"));
    r
}
