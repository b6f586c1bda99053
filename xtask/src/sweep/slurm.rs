//! `--engine slurm`: the sweep's missing runs submitted as one Slurm job
//! array (`sbatch --array`), each array task one run of the matrix
//! (`xtask sweep-task DIR`), on a filesystem the nodes share. The build is
//! done once, up front, here: the binaries are copied into `DIR/bin`, so a
//! rebuild while the array runs cannot change what later tasks boot.
//!
//! sbatch options come from `--slurm KEY=VALUE` (repeatable, any sbatch long
//! option, e.g. `partition=debug`, `time=00:30:00`, `mem=4G`) and a
//! `--slurm-config FILE` of `KEY=VALUE` lines; the flags win. Each array task
//! asks for the cores its run occupies (`--cpus-per-task`). Array indices are
//! task ids minus an offset passed to the script, in chunks below Slurm's
//! default `MaxArraySize` (1001).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::dir::{Header, SweepDir};
use super::plan::Task;
use super::progress::{HEARTBEAT, Progress};
use crate::cli::CompareArgs;
use crate::launch::{ENV_BOOT_TOOL, ENV_KERNEL, Launcher};

/// Array indices per submission (below Slurm's default MaxArraySize 1001).
const CHUNK: usize = 1000;
/// How often the directory is polled while waiting.
const POLL: Duration = Duration::from_secs(2);
/// squeue failures in a row (at [`POLL`] intervals) before waiting gives up.
const SQUEUE_ERRORS: u32 = 150;

/// The arrays submitted for this directory: (job id, task offset), from
/// `DIR/slurm/jobs.txt`.
fn submitted(d: &SweepDir) -> Vec<(String, usize)> {
    std::fs::read_to_string(d.path.join("slurm/jobs.txt"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let job = w.next()?.to_string();
            let offset = w.next().and_then(|o| o.parse().ok()).unwrap_or(0);
            Some((job, offset))
        })
        .collect()
}

/// Task ids of `jobs` that Slurm still has queued or running.
fn queued_tasks(jobs: &[(String, usize)]) -> Result<std::collections::BTreeSet<usize>> {
    let ids: Vec<&str> = jobs.iter().map(|(j, _)| j.as_str()).collect();
    let out = Command::new("squeue")
        .args(["--noheader", "--array", "--format=%i", "--jobs"])
        .arg(ids.join(","))
        .output()
        .context("running squeue")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("Invalid job id") {
            return Ok(Default::default());
        }
        bail!("squeue failed ({}): {}", out.status, err.trim());
    }
    Ok(parse_queued(&String::from_utf8_lossy(&out.stdout), jobs))
}

/// `JOB_INDEX` lines of `squeue --array --format=%i` as task ids.
fn parse_queued(text: &str, jobs: &[(String, usize)]) -> std::collections::BTreeSet<usize> {
    text.lines()
        .filter_map(|l| {
            let (job, idx) = l.trim().split_once('_')?;
            let offset = jobs.iter().find(|(j, _)| j == job)?.1;
            Some(offset + idx.parse::<usize>().ok()?)
        })
        .collect()
}

/// The engine's options.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// sbatch long options (without the dashes) and values.
    pub sbatch: Vec<(String, String)>,
    /// Wait for the array and show progress (not `--no-wait`).
    pub wait: bool,
    /// `--jobs` given: at most this many array tasks at once (`%N`).
    pub throttle: Option<u32>,
}

impl Options {
    /// Reads `--slurm`, `--slurm-config`, `--no-wait` and `--jobs`.
    pub fn from_args(a: &CompareArgs) -> Result<Options> {
        let mut sbatch: Vec<(String, String)> = Vec::new();
        let mut set = |k: &str, v: &str, origin: &str| -> Result<()> {
            let valid = !k.is_empty()
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !k.starts_with('-');
            if !valid {
                bail!(
                    "{origin}: '{k}' is not an sbatch long option name (e.g. partition, time, mem)"
                );
            }
            for reserved in ["array", "output", "chdir", "parsable", "wrap"] {
                if k == reserved {
                    bail!("{origin}: --{k} is set by xtask for the sweep's job array");
                }
            }
            sbatch.retain(|(x, _)| x != k);
            sbatch.push((k.to_string(), v.to_string()));
            Ok(())
        };
        if let Some(p) = &a.slurm_config {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("--slurm-config {}", p.display()))?;
            for (i, line) in text.lines().enumerate() {
                let line = line.split('#').next().unwrap_or("").trim();
                if line.is_empty() {
                    continue;
                }
                let origin = format!("--slurm-config {} line {}", p.display(), i + 1);
                let (k, v) = line.split_once('=').unwrap_or((line, ""));
                set(k.trim(), v.trim(), &origin)?;
            }
        }
        for o in &a.slurm {
            // KEY=VALUE, or a bare KEY for a flag (requeue, exclusive, hold).
            let (k, v) = o.split_once('=').unwrap_or((o.as_str(), ""));
            set(k, v, &format!("--slurm {o}"))?;
        }
        Ok(Options {
            sbatch,
            wait: !a.no_wait,
            throttle: a.jobs,
        })
    }
}

/// Checks, before any build, that Slurm's client is here and the options
/// read.
pub fn preflight(a: &CompareArgs) -> Result<Options> {
    let o = Options::from_args(a)?;
    for tool in ["sbatch", "squeue"] {
        if which(tool).is_none() {
            bail!(
                "--engine slurm: `{tool}` is not on PATH (install Slurm's client, or run with --engine local)"
            );
        }
    }
    Ok(o)
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// `0-5,7,9-12`.
pub fn ranges(ids: &[usize]) -> String {
    let mut s = String::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        if !s.is_empty() {
            s.push(',');
        }
        if i == j {
            let _ = write!(s, "{}", ids[i]);
        } else {
            let _ = write!(s, "{}-{}", ids[i], ids[j]);
        }
        i = j + 1;
    }
    s
}

/// Copies `from` to `to` atomically (array tasks may be reading `to`).
fn install(from: &Path, to: &Path) -> Result<()> {
    let tmp = to.with_extension("new");
    std::fs::copy(from, &tmp)
        .with_context(|| format!("copying {} to {}", from.display(), tmp.display()))?;
    std::fs::rename(&tmp, to).with_context(|| format!("renaming to {}", to.display()))
}

/// Submits `todo` as job arrays. Returns whether it waited for them (false
/// with `--no-wait`: the tables are then rendered later with `--from DIR`).
pub fn submit(
    d: &SweepDir,
    header: &Header,
    todo: &[Task],
    launcher: Option<&Launcher>,
    opts: &Options,
    mut progress: Progress,
) -> Result<bool> {
    if todo.is_empty() {
        return Ok(true);
    }
    // Runs still queued or running from an earlier submission of this
    // directory are waited for, not submitted again.
    let earlier = submitted(d);
    let queued: std::collections::BTreeSet<usize> = if earlier.is_empty() {
        Default::default()
    } else {
        queued_tasks(&earlier)?
    };
    // The earlier arrays are waited for too while some of their runs are
    // still in the queue.
    let mut jobs: Vec<String> = Vec::new();
    if !queued.is_empty() {
        jobs = earlier.iter().map(|(j, _)| j.clone()).collect();
        eprintln!(
            "xtask: {} runs are still queued or running from job(s) {}: not submitted again",
            queued.len(),
            jobs.join(",")
        );
    }
    let fresh: Vec<&Task> = todo.iter().filter(|t| !queued.contains(&t.task)).collect();
    if fresh.is_empty() {
        if !opts.wait {
            return Ok(false);
        }
        wait(d, todo, &jobs, &mut progress)?;
        return Ok(true);
    }
    let dir = std::path::absolute(&d.path)?;
    let bin = dir.join("bin");
    let sl = dir.join("slurm");
    std::fs::create_dir_all(&bin)?;
    std::fs::create_dir_all(&sl)?;
    let exe = std::env::current_exe().context("locating xtask")?;
    install(&exe, &bin.join("xtask"))?;
    let mut env = String::new();
    if let Some(l) = launcher {
        install(&l.kernel, &bin.join("schedlab-kernel"))?;
        install(&l.boot_tool, &bin.join("schedlab-boot"))?;
        let _ = writeln!(
            env,
            "export {ENV_KERNEL}='{}'\nexport {ENV_BOOT_TOOL}='{}'",
            bin.join("schedlab-kernel").display(),
            bin.join("schedlab-boot").display()
        );
    }
    let script = sl.join("task.sh");
    let text = format!(
        "#!/bin/sh\n# One run of the schedlab sweep in {dir}: array task i runs matrix task OFFSET + i.\n{env}exec '{xtask}' sweep-task '{dir}' --offset \"$1\"\n",
        dir = dir.display(),
        xtask = bin.join("xtask").display(),
    );
    d.write("slurm/task.sh", text.as_bytes())?;
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    }
    let cpus = fresh
        .iter()
        .map(|t| super::argv::from_words(&t.args).map(|r| super::plan::weight(&r)))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .max()
        .unwrap_or(1);
    let ids: Vec<usize> = fresh.iter().map(|t| t.task).collect();
    let mut log = std::fs::read_to_string(sl.join("jobs.txt")).unwrap_or_default();
    for chunk in ids.chunk_by(|a, b| b / CHUNK == a / CHUNK) {
        let offset = chunk[0] / CHUNK * CHUNK;
        let idx: Vec<usize> = chunk.iter().map(|i| i - offset).collect();
        let mut array = ranges(&idx);
        if let Some(n) = opts.throttle {
            let _ = write!(array, "%{n}");
        }
        let mut cmd = Command::new("sbatch");
        cmd.arg("--parsable")
            .arg(format!("--job-name=schedlab-{}", header.kind))
            .arg(format!("--array={array}"))
            .arg(format!("--chdir={}", dir.display()))
            .arg(format!("--output={}/%A_%a.out", sl.display()))
            .arg(format!("--cpus-per-task={cpus}"));
        for (k, v) in &opts.sbatch {
            if v.is_empty() {
                cmd.arg(format!("--{k}"));
            } else {
                cmd.arg(format!("--{k}={v}"));
            }
        }
        cmd.arg(&script).arg(offset.to_string());
        let out = cmd.output().context("running sbatch")?;
        if !out.status.success() {
            bail!(
                "sbatch failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let id = String::from_utf8_lossy(&out.stdout)
            .trim()
            .split(';')
            .next()
            .unwrap_or("")
            .to_string();
        anyhow::ensure!(
            !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()),
            "sbatch printed no job id: {:?}",
            String::from_utf8_lossy(&out.stdout)
        );
        eprintln!(
            "xtask: submitted job array {id}: {} runs (tasks {}), output in {}",
            chunk.len(),
            ranges(chunk),
            sl.display()
        );
        // Recorded at once, so an interrupted xtask still knows the array.
        let _ = writeln!(log, "{id} {offset}");
        d.write("slurm/jobs.txt", log.as_bytes())?;
        jobs.push(id);
    }
    if !opts.wait {
        eprintln!(
            "xtask: not waiting (--no-wait): `cargo xtask compare --from {}` renders the table and lists the runs not finished yet",
            d.path.display()
        );
        return Ok(false);
    }
    wait(d, todo, &jobs, &mut progress)?;
    Ok(true)
}

/// Polls the directory until every submitted run has a result or the
/// arrays have left Slurm's queue.
fn wait(d: &SweepDir, todo: &[Task], jobs: &[String], progress: &mut Progress) -> Result<()> {
    let mut last_line = Instant::now();
    let mut seen = (usize::MAX, usize::MAX, usize::MAX);
    let mut errors = 0u32;
    loop {
        let (mut ok, mut failed) = (0, 0);
        for t in todo {
            match d.result(t.task)? {
                Some(r) if r.success => ok += 1,
                Some(_) => failed += 1,
                None => {}
            }
        }
        // Slurm's controller can be slow or briefly away: keep polling the
        // directory through squeue errors for a while.
        let (queued, running) = match (squeue(jobs, false), squeue(jobs, true)) {
            (Ok(q), Ok(r)) => {
                errors = 0;
                (q, r)
            }
            (Err(e), _) | (_, Err(e)) => {
                errors += 1;
                if errors == 1 || errors.is_multiple_of(30) {
                    eprintln!("xtask: warning: {e:#} (retrying)");
                }
                if errors > SQUEUE_ERRORS {
                    return Err(e.context(format!(
                        "squeue failed {errors} times in a row; the array may still be running: `cargo xtask compare --from {}` shows what is in",
                        d.path.display()
                    )));
                }
                std::thread::sleep(POLL);
                continue;
            }
        };
        progress.ok = ok;
        progress.failed = failed;
        progress.running = running;
        let now = (ok, failed, progress.running);
        if now != seen || last_line.elapsed() >= HEARTBEAT {
            eprintln!("xtask: {} (Slurm)", progress.line());
            seen = now;
            last_line = Instant::now();
        }
        if ok + failed == todo.len() {
            return Ok(());
        }
        if queued == 0 {
            // Gone from the queue: one last look for results written just
            // before the task ended.
            std::thread::sleep(POLL);
            let left = todo
                .iter()
                .filter(|t| matches!(d.result(t.task), Ok(None)))
                .count();
            if left > 0 {
                eprintln!(
                    "xtask: the job array left the queue with {left} runs unfinished (see {}/slurm/*.out)",
                    d.path.display()
                );
            }
            return Ok(());
        }
        std::thread::sleep(POLL);
    }
}

/// Array tasks of `jobs` still queued (or only the running ones).
fn squeue(jobs: &[String], running_only: bool) -> Result<usize> {
    let mut cmd = Command::new("squeue");
    cmd.args(["--noheader", "--array", "--format=%i", "--jobs"])
        .arg(jobs.join(","));
    if running_only {
        cmd.arg("--states=RUNNING");
    }
    let out = cmd.output().context("running squeue")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        // Finished jobs drop out of squeue; it then says "Invalid job id".
        if err.contains("Invalid job id") {
            return Ok(0);
        }
        bail!("squeue failed ({}): {}", out.status, err.trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count())
}

/// `xtask sweep-task DIR --offset K`: the array task's run (task id K +
/// `SLURM_ARRAY_TASK_ID`, or `--task N`). Exit status 0 when the run
/// succeeded, 1 when it failed (so `sacct` shows it), 2 on an error.
pub fn task_main(dir: &Path, offset: usize, task: Option<usize>) -> Result<i32> {
    let id = match task {
        Some(t) => t,
        None => {
            let v = std::env::var("SLURM_ARRAY_TASK_ID")
                .context("no --task and no SLURM_ARRAY_TASK_ID: not a Slurm array task")?;
            offset
                + v.parse::<usize>()
                    .with_context(|| format!("SLURM_ARRAY_TASK_ID={v}"))?
        }
    };
    let (d, header, tasks) = SweepDir::open(dir)?;
    let t = tasks.get(id).with_context(|| {
        format!(
            "{}: no task {id} (matrix has {})",
            dir.display(),
            tasks.len()
        )
    })?;
    let launcher = if header.backend == "qemu" {
        let l = Launcher::from_env()?;
        let build = super::file_hash(&l.kernel)?;
        anyhow::ensure!(
            build == header.build,
            "{}: built {} but sweep.json names build {}",
            l.kernel.display(),
            build,
            header.build
        );
        Some(l)
    } else {
        None
    };
    let r = super::exec::execute(&d, &header, t, launcher.as_ref())?;
    eprintln!(
        "xtask: sweep task {id} ({} op {} run {}): {}{}",
        t.config,
        t.op,
        t.run,
        r.outcome,
        r.error.map(|e| format!(": {e}")).unwrap_or_default()
    );
    Ok(if r.success { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_compress_runs_of_ids() {
        assert_eq!(ranges(&[0, 1, 2, 3, 5, 7, 8, 9]), "0-3,5,7-9");
        assert_eq!(ranges(&[4]), "4");
        assert_eq!(ranges(&[]), "");
    }

    #[test]
    fn queued_array_tasks_map_back_to_task_ids() {
        let jobs = vec![("25".to_string(), 0), ("26".to_string(), 1000)];
        let q = parse_queued("25_4\n25_7\n26_3\n99_1\n\n", &jobs);
        assert_eq!(q.into_iter().collect::<Vec<_>>(), [4, 7, 1003]);
    }
}
