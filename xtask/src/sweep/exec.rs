//! One run of a sweep: boot (or simulate) the task's configuration, read the
//! part's metric from its records and store the result in the directory.
//! The same code serves local workers and a Slurm array task.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::dir::{Header, SweepDir, TaskResult};
use super::plan::Task;
use crate::compare::metrics;
use crate::launch::Launcher;
use crate::outcome::Outcome;

/// Runs `task` and stores its result; a run that fails is a result
/// (`success: false`, console kept), not an error. Errors are for what
/// stops the sweep itself: an unreadable matrix, an unwritable directory.
pub fn execute(
    dir: &SweepDir,
    header: &Header,
    task: &Task,
    launcher: Option<&Launcher>,
) -> Result<TaskResult> {
    let part = header
        .parts
        .iter()
        .find(|p| p.name == task.part)
        .with_context(|| format!("task {}: no part '{}' in sweep.json", task.task, task.part))?;
    let metric = metrics::for_experiment_metric(&part.experiment, part.metric.as_deref())?;
    let r = super::argv::from_words(&task.args)?;
    let t0 = Instant::now();
    let run = match launcher {
        Some(l) => r
            .boot_config()
            .and_then(|c| l.boot(&c, &r.qemu()?, Duration::from_secs(r.timeout), false)),
        None => crate::simrun::run(&r, false),
    };
    let mut res = TaskResult {
        task: task.task,
        outcome: "error".into(),
        success: false,
        wall_s: t0.elapsed().as_secs_f64(),
        title: String::new(),
        values: Vec::new(),
        error: None,
    };
    let (records, log) = match run {
        Err(e) => {
            res.error = Some(format!("{e:#}"));
            (Vec::new(), Some(format!("{e:#}\n")))
        }
        Ok(run) => {
            res.wall_s = run.wall.as_secs_f64();
            res.outcome = run.outcome.to_string();
            if run.outcome != Outcome::Success {
                res.error = Some(format!("the run ended with {}", run.outcome));
            } else {
                match (metric.extract)(&run) {
                    Ok(values) => {
                        res.values = values;
                        res.title = (metric.title)(&run);
                        res.success = true;
                    }
                    Err(e) => res.error = Some(format!("reading the metric: {e:#}")),
                }
            }
            let log = (!res.success).then(|| run.console());
            (run.records, log)
        }
    };
    dir.write_result(&res, &records, log.as_deref())?;
    Ok(res)
}
