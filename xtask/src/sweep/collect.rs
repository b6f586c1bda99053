//! A sweep directory's results as compare tables: one per part, samples in
//! matrix order, plus the runs that are missing or failed (named, so a
//! partial table is never mistaken for a whole one).

use std::fmt::Write as _;

use anyhow::Result;

use super::dir::{Header, SweepDir};
use super::plan::Task;
use crate::compare::stats::Better;
use crate::compare::{Samples, Table};

/// (part name, table) for every part, in the header's order.
pub type PartTables = Vec<(String, Table)>;

/// A run without a successful result.
#[derive(Clone, Debug, PartialEq)]
pub struct Missing {
    pub task: usize,
    /// "missing" (never finished) or the failure.
    pub why: String,
}

/// Every part's table (in the header's order) and the runs missing.
pub fn tables(
    dir: &SweepDir,
    header: &Header,
    tasks: &[Task],
) -> Result<(PartTables, Vec<Missing>)> {
    let mut missing = Vec::new();
    let mut out = Vec::new();
    for part in &header.parts {
        let mut table = Table {
            title: String::new(),
            // The directory's own description (a few strings per sweep).
            unit: Box::leak(part.unit.clone().into_boxed_str()),
            clock: match part.clock.as_str() {
                "sim" => "sim",
                "icount" => "icount",
                "kvm" => "kvm",
                _ => "host",
            },
            axis: part.axis.clone(),
            machine: part.machine.clone(),
            better: if part.better == "higher" {
                Better::Higher
            } else {
                Better::Lower
            },
            decimals: part.decimals,
            baseline_name: part.baseline.clone(),
            variant_name: part.variant.clone(),
            cells: Vec::new(),
        };
        for op in &part.ops {
            let mut per_metric: Vec<(String, Samples)> = Vec::new();
            for t in tasks.iter().filter(|t| t.part == part.name && &t.op == op) {
                let r = match dir.result(t.task)? {
                    Some(r) if r.success => r,
                    Some(r) => {
                        missing.push(Missing {
                            task: t.task,
                            why: r.error.unwrap_or(r.outcome),
                        });
                        continue;
                    }
                    None => {
                        missing.push(Missing {
                            task: t.task,
                            why: "missing".into(),
                        });
                        continue;
                    }
                };
                if table.title.is_empty() {
                    table.title = r.title.clone();
                }
                for (name, v) in r.values {
                    let slot = match per_metric.iter().position(|(n, _)| *n == name) {
                        Some(i) => i,
                        None => {
                            per_metric.push((name.clone(), Samples::default()));
                            per_metric.len() - 1
                        }
                    };
                    let s = &mut per_metric[slot].1;
                    if t.config == "baseline" {
                        s.baseline.push(v);
                    } else {
                        s.variant.push(v);
                    }
                }
            }
            // A cell needs both sides: one without is only in `missing`.
            for (name, s) in per_metric {
                if !s.baseline.is_empty() && !s.variant.is_empty() {
                    table.cells.push((op.clone(), name, s));
                }
            }
        }
        if table.title.is_empty() {
            table.title = part.experiment.clone();
        }
        out.push((part.name.clone(), table));
    }
    Ok((out, missing))
}

/// The missing runs as lines for the report (at most `shown` named).
pub fn describe_missing(dir: &SweepDir, tasks: &[Task], missing: &[Missing]) -> String {
    const SHOWN: usize = 10;
    let mut s = String::new();
    if missing.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "\n{} of {} runs have no result in {} (run the same command again to run them):",
        missing.len(),
        tasks.len(),
        dir.path.display()
    );
    for m in missing.iter().take(SHOWN) {
        let t = &tasks[m.task];
        let _ = writeln!(
            s,
            "  task {} ({}{} op {} run {}): {}",
            t.task,
            if t.part.is_empty() {
                String::new()
            } else {
                format!("{} ", t.part)
            },
            t.config,
            t.op,
            t.run,
            m.why
        );
        if m.why != "missing" && dir.log_path(t.task).exists() {
            let _ = writeln!(s, "    log: {}", dir.log_path(t.task).display());
        }
    }
    if missing.len() > SHOWN {
        let _ = writeln!(s, "  ... and {} more", missing.len() - SHOWN);
    }
    s
}
