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

/// Runs `task` in a child process (`exe sweep-task DIR --task N`), so a
/// panic in the simulator (the scheduler core's asserts abort: the
/// workspace builds with `panic = "abort"`) ends that run, not the sweep: a
/// child that ends without writing a result gets a failed one, with its
/// stderr as the log.
pub fn execute_in_child(dir: &SweepDir, task: &Task, exe: &std::path::Path) -> Result<TaskResult> {
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("sweep-task")
        .arg(&dir.path)
        .arg("--task")
        .arg(task.task.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    crate::cleanup::tie_to_xtask(&mut cmd);
    let t0 = Instant::now();
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let pid = child.id();
    crate::cleanup::register_qemu(pid);
    let out = child.wait_with_output();
    crate::cleanup::unregister_qemu(pid);
    let out = out.context("waiting for a sweep run")?;
    if let Some(r) = dir.result(task.task)? {
        return Ok(r);
    }
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let res = TaskResult {
        task: task.task,
        outcome: "crashed".into(),
        success: false,
        wall_s: t0.elapsed().as_secs_f64(),
        title: String::new(),
        values: Vec::new(),
        error: Some(format!(
            "the run's process ended with {} and wrote no result",
            out.status
        )),
    };
    dir.write_result(&res, &[], Some(&stderr))?;
    Ok(res)
}
