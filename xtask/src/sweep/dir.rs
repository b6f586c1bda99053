//! A sweep directory: the matrix written first, one result file per run as
//! it finishes, so an interruption loses at most the runs in flight and the
//! same command resumes where it stopped.
//!
//! ```text
//! DIR/sweep.json            what the sweep is: parts, backend, build identity, command
//! DIR/matrix.jsonl          one line per run: task id, part, config, op, run, full options
//! DIR/runs/NNNNN.json       a finished run: outcome, wall time, metric values
//! DIR/runs/NNNNN.records.jsonl  every record the run printed
//! DIR/runs/NNNNN.log        the console of a run that did not succeed
//! DIR/bin/, DIR/slurm/      with --engine slurm: the binaries and the job script
//! DIR/driver.lock           held (flock) by the command driving the sweep; says its pid
//! ```
//!
//! One command drives a directory at a time: a second `compare`/`seed` on
//! the same directory stops at once, naming the first one's pid, instead of
//! running the same missing runs twice and racing on their result files.
//! The lock is the kernel's (`flock`), so it goes away with its process,
//! however that ends. Slurm tasks (`sweep-task`) write their own runs' files
//! and take no lock.
//!
//! Every file is written to a temporary name and renamed, so a file that
//! exists is whole. A run counts as done when its `NNNNN.json` says success;
//! failed and missing runs are run again on resume.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::plan::{PartSpec, Task};

/// The directory format's version (`sweep.json`'s `schedlab_sweep`).
pub const FORMAT: u32 = 1;

/// What a sweep directory holds (`sweep.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub schedlab_sweep: u32,
    /// "compare", or "seed" for `cargo xtask seed`.
    pub kind: String,
    /// With kind "seed": the seed number and whether the full form ran.
    pub seed: Option<String>,
    pub full: bool,
    /// "qemu" or "sim".
    pub backend: String,
    /// What executes the runs: the kernel ELF's hash (qemu) or the
    /// simulator's, i.e. xtask's (sim). A resume with another build is
    /// refused: one table never mixes two builds.
    pub build: String,
    pub parts: Vec<PartSpec>,
    /// The command that created the directory (information only).
    pub command: String,
}

impl Header {
    /// Whether `other` describes the same sweep (the command may differ:
    /// e.g. `--jobs`).
    fn same_sweep(&self, other: &Header) -> bool {
        Header {
            command: String::new(),
            ..self.clone()
        } == Header {
            command: String::new(),
            ..other.clone()
        }
    }
}

/// One finished run (`runs/NNNNN.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub task: usize,
    /// The outcome as `cargo xtask run` reports it (success, watchdog, ...),
    /// or "error" when the run could not be started or read.
    pub outcome: String,
    pub success: bool,
    /// Host wall time of the run in seconds.
    pub wall_s: f64,
    /// The table title the run's records give.
    pub title: String,
    /// (metric name, value) pairs; empty unless `success`.
    pub values: Vec<(String, f64)>,
    /// Why the run did not succeed.
    pub error: Option<String>,
}

/// An open sweep directory.
#[derive(Clone, Debug)]
pub struct SweepDir {
    pub path: PathBuf,
}

impl SweepDir {
    /// Creates `path` with this matrix, or reopens it if it holds the same
    /// sweep. A directory holding another sweep is an error naming the
    /// first difference.
    pub fn create_or_resume(path: &Path, header: &Header, tasks: &[Task]) -> Result<SweepDir> {
        let d = SweepDir {
            path: path.to_path_buf(),
        };
        if d.path.join("sweep.json").exists() {
            let (old, old_tasks) = d.load()?;
            if old.build != header.build {
                bail!(
                    "{}: its runs were made by another build ({} != {} now; the {} changed): give another --dir, or remove it to start over",
                    d.path.display(),
                    old.build,
                    header.build,
                    if header.backend == "sim" {
                        "simulator (xtask)"
                    } else {
                        "kernel"
                    }
                );
            }
            if !old.same_sweep(header) || old_tasks != tasks {
                let first = old_tasks
                    .iter()
                    .zip(tasks)
                    .find(|(a, b)| a != b)
                    .map(|(a, _)| format!(" (first difference: task {})", a.task))
                    .unwrap_or_default();
                bail!(
                    "{} holds another sweep{first} (created by: {}): give another --dir",
                    d.path.display(),
                    old.command
                );
            }
            return Ok(d);
        }
        std::fs::create_dir_all(d.path.join("runs"))
            .with_context(|| format!("creating {}", d.path.display()))?;
        let mut matrix = String::new();
        for t in tasks {
            matrix.push_str(&serde_json::to_string(t)?);
            matrix.push('\n');
        }
        // The matrix first: sweep.json's presence says the matrix is whole.
        d.write("matrix.jsonl", matrix.as_bytes())?;
        d.write("sweep.json", &serde_json::to_vec_pretty(header)?)?;
        Ok(d)
    }

    /// Opens an existing sweep directory.
    pub fn open(path: &Path) -> Result<(SweepDir, Header, Vec<Task>)> {
        let d = SweepDir {
            path: path.to_path_buf(),
        };
        let (h, t) = d.load()?;
        Ok((d, h, t))
    }

    fn load(&self) -> Result<(Header, Vec<Task>)> {
        let p = self.path.join("sweep.json");
        let text = std::fs::read_to_string(&p).with_context(|| {
            format!(
                "{}: not a sweep directory (no readable sweep.json)",
                self.path.display()
            )
        })?;
        let h: Header =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))?;
        if h.schedlab_sweep != FORMAT {
            bail!(
                "{}: sweep format {} (this xtask reads {FORMAT})",
                p.display(),
                h.schedlab_sweep
            );
        }
        let m = self.path.join("matrix.jsonl");
        let text =
            std::fs::read_to_string(&m).with_context(|| format!("reading {}", m.display()))?;
        let mut tasks = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let t: Task = serde_json::from_str(line)
                .with_context(|| format!("{} line {}", m.display(), i + 1))?;
            if t.task != i {
                bail!(
                    "{} line {}: task {} out of order",
                    m.display(),
                    i + 1,
                    t.task
                );
            }
            tasks.push(t);
        }
        Ok((h, tasks))
    }

    fn run_file(&self, task: usize, ext: &str) -> PathBuf {
        self.path.join("runs").join(format!("{task:05}.{ext}"))
    }

    /// Task `task`'s result, if it has one. A result file that does not
    /// parse (what a crash or a lost node can leave) counts as missing, with
    /// a warning, so the run is simply made again.
    pub fn result(&self, task: usize) -> Result<Option<TaskResult>> {
        let p = self.run_file(task, "json");
        match std::fs::read_to_string(&p) {
            Ok(text) => match serde_json::from_str(&text) {
                Ok(r) => Ok(Some(r)),
                Err(e) => {
                    eprintln!(
                        "xtask: warning: {} does not parse ({e}); task {task} counts as not run",
                        p.display()
                    );
                    Ok(None)
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
        }
    }

    /// Forgets a result that is not a success, before the run is made again
    /// (so nothing waiting for the new result mistakes the old one for it).
    pub fn clear_unsuccessful(&self, task: usize) -> Result<()> {
        let p = self.run_file(task, "json");
        if p.exists() && !self.done(task)? {
            std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
        }
        Ok(())
    }

    /// Whether task `task` has succeeded already.
    pub fn done(&self, task: usize) -> Result<bool> {
        Ok(self.result(task)?.is_some_and(|r| r.success))
    }

    /// Stores a finished run: its records and console log first, the result
    /// file (which marks the run finished) last.
    pub fn write_result(&self, r: &TaskResult, records: &[Value], log: Option<&str>) -> Result<()> {
        let mut text = Vec::new();
        for rec in records {
            writeln!(text, "{rec}")?;
        }
        self.write(&format!("runs/{:05}.records.jsonl", r.task), &text)?;
        let log_file = format!("runs/{:05}.log", r.task);
        match log {
            Some(l) => self.write(&log_file, l.as_bytes())?,
            None => {
                let _ = std::fs::remove_file(self.path.join(&log_file));
            }
        }
        self.write(&format!("runs/{:05}.json", r.task), &serde_json::to_vec(r)?)
    }

    /// The console log of a run that did not succeed.
    pub fn log_path(&self, task: usize) -> PathBuf {
        self.run_file(task, "log")
    }

    /// Takes the directory's driver lock for as long as the returned file
    /// lives; an error naming the holder's pid when another command has it.
    pub fn lock_driver(&self) -> Result<std::fs::File> {
        let p = self.path.join("driver.lock");
        let mut f = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&p)
            .with_context(|| format!("opening {}", p.display()))?;
        match f.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = std::fs::read_to_string(&p).unwrap_or_default();
                bail!(
                    "{}: another xtask ({}) is running this sweep now; wait for it to end, or \
                     give another --dir",
                    self.path.display(),
                    match holder.trim() {
                        "" => "pid unknown".to_string(),
                        pid => format!("pid {pid}"),
                    }
                );
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", p.display()));
            }
        }
        f.set_len(0)
            .and_then(|()| write!(f, "{}", std::process::id()))
            .with_context(|| format!("writing {}", p.display()))?;
        Ok(f)
    }

    /// Writes `rel` atomically and durably: a temporary file named after it
    /// and this process, flushed to disk, then renamed over it.
    pub fn write(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        let p = self.path.join(rel);
        let mut name = p.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".tmp{}", std::process::id()));
        let tmp = p.with_file_name(name);
        let mut f =
            std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        f.write_all(bytes)
            .and_then(|()| f.sync_all())
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &p).with_context(|| format!("renaming to {}", p.display()))?;
        if let Some(parent) = p.parent()
            && let Ok(d) = std::fs::File::open(parent)
        {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_driver_is_refused_with_the_first_ones_pid_until_it_ends() {
        let path = std::env::temp_dir().join(format!("sweep-lock-test-{}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        let d = SweepDir { path: path.clone() };
        let first = d.lock_driver().unwrap();
        let e = d.lock_driver().unwrap_err().to_string();
        assert!(
            e.contains(&format!("pid {}", std::process::id())) && e.contains("another --dir"),
            "{e}"
        );
        drop(first);
        let again = d.lock_driver().unwrap();
        drop(again);
        std::fs::remove_dir_all(&path).unwrap();
    }
}
