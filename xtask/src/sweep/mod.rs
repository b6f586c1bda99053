//! Sweeps: a `compare` or `seed` run as a matrix in a directory, executed
//! locally (`--jobs`) or as a Slurm job array, and rendered from the
//! directory (`cargo xtask compare --from DIR`). See docs/sweeps.md.
//!
//! - [`plan`]: the matrix, validated before anything is built or booted
//! - [`argv`]: a run's configuration as stored `cargo xtask run` options
//! - [`dir`]: the directory layout, atomic result files, resume identity
//! - [`exec`]: one run, stored
//! - [`local`]: the local engine (parallel runs, progress)
//! - [`slurm`]: the Slurm engine (`sbatch --array`) and the array task
//! - [`collect`]: results back into compare tables

pub mod argv;
pub mod collect;
pub mod dir;
pub mod exec;
pub mod local;
pub mod plan;
pub mod progress;
pub mod slurm;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::cli::{Backend, CompareArgs, Engine};
use crate::compare::Table;
use crate::launch::Launcher;
use dir::{Header, SweepDir};
use plan::Task;

/// What the sweep is for: a plain comparison or a seed recipe.
#[derive(Clone, Debug)]
pub enum Kind {
    Compare,
    Seed { seed: String, full: bool },
}

/// A planned sweep: every part's matrix, validated.
pub struct Plan {
    pub header: Header,
    pub tasks: Vec<Task>,
    /// The options of the engine (from the first part's compare options).
    pub opts: CompareArgs,
    /// Run each simulator run in a child process (`xtask sweep-task`), so a
    /// panic fails one run instead of the sweep. Set by the command line
    /// (the running executable is xtask); library callers run in-process.
    pub isolate: bool,
}

/// A sweep after running: its directory and tables.
pub struct Finished {
    pub dir: SweepDir,
    pub header: Header,
    pub tasks: Vec<Task>,
    /// (part name, table), in the header's order.
    pub tables: Vec<(String, Table)>,
    pub missing: Vec<collect::Missing>,
}

/// Plans every part (`(part name, compare options)`; one part named "" for
/// a plain comparison). Nothing is built or booted.
pub fn plan(kind: &Kind, parts: &[(String, CompareArgs)]) -> Result<Plan> {
    let mut specs = Vec::new();
    let mut tasks = Vec::new();
    for (name, a) in parts {
        let (spec, t) = plan::compare_part(a, name, tasks.len())?;
        specs.push(spec);
        tasks.extend(t);
    }
    let first = &parts.first().context("a sweep needs a comparison")?.1;
    let (kind_name, seed, full) = match kind {
        Kind::Compare => ("compare", None, false),
        Kind::Seed { seed, full } => ("seed", Some(seed.clone()), *full),
    };
    Ok(Plan {
        header: Header {
            schedlab_sweep: dir::FORMAT,
            kind: kind_name.into(),
            seed,
            full,
            backend: match first.run.backend {
                Backend::Qemu => "qemu",
                Backend::Sim => "sim",
            }
            .into(),
            build: String::new(),
            parts: specs,
            command: std::env::args().collect::<Vec<_>>().join(" "),
        },
        tasks,
        opts: first.clone(),
        isolate: false,
    })
}

impl Plan {
    /// The default directory: `target/sweeps/<what>-<hash of the matrix and
    /// the build>`, so the same command on the same build resumes and a
    /// changed one starts afresh.
    pub fn default_dir(&self) -> PathBuf {
        // Everything that makes the sweep what it is (not the command line).
        let header = Header {
            command: String::new(),
            ..self.header.clone()
        };
        let mut key = serde_json::to_string(&self.tasks).unwrap_or_default();
        key.push_str(&serde_json::to_string(&header).unwrap_or_default());
        let hash = twox_hash::XxHash64::oneshot(0, key.as_bytes());
        let what = match (&self.header.seed, self.header.full) {
            (Some(s), false) => format!("seed{s}"),
            (Some(s), true) => format!("seed{s}-full"),
            (None, _) => format!("compare-{}", self.header.parts[0].experiment),
        };
        crate::build::target_dir()
            .join("sweeps")
            .join(format!("{what}-{:08x}", hash >> 32))
    }

    /// Sets the build identity: the kernel the runs boot, or for the
    /// simulator the executable that runs them.
    pub fn identify_build(&mut self, launcher: Option<&Launcher>) -> Result<()> {
        let exe = match launcher {
            Some(l) => l.kernel.clone(),
            None => std::env::current_exe().context("locating the running executable")?,
        };
        self.header.build = file_hash(&exe)?;
        Ok(())
    }

    /// Creates or resumes the directory `dir`, runs what is not done yet with
    /// the engine the options name, and collects the tables.
    /// `None` when the runs were submitted without waiting (`--no-wait`).
    pub fn run(&self, dir: &Path, launcher: Option<&Launcher>) -> Result<Option<Finished>> {
        anyhow::ensure!(!self.header.build.is_empty(), "identify_build first");
        let d = SweepDir::create_or_resume(dir, &self.header, &self.tasks)?;
        // Held until this command returns: one driver per directory.
        let _driver = d.lock_driver()?;
        let mut todo = Vec::new();
        for t in &self.tasks {
            if !d.done(t.task)? {
                // A failed run is made again: its old result must not be
                // taken for the new one.
                d.clear_unsuccessful(t.task)?;
                todo.push(t.clone());
            }
        }
        let before = self.tasks.len() - todo.len();
        let jobs = self.opts.jobs.unwrap_or_else(host_cores);
        eprintln!(
            "xtask: sweep {}: {} runs, {before} done before, {} to run{}",
            d.path.display(),
            self.tasks.len(),
            todo.len(),
            match self.opts.engine {
                Engine::Local => format!(" here, up to {jobs} host cores busy"),
                Engine::Slurm => " as a Slurm job array".to_string(),
            }
        );
        let progress = progress::Progress::new(self.tasks.len(), before);
        match self.opts.engine {
            Engine::Local => {
                let exe = if self.isolate && launcher.is_none() {
                    Some(std::env::current_exe().context("locating xtask")?)
                } else {
                    None
                };
                local::run(
                    &d,
                    &self.header,
                    &todo,
                    launcher,
                    jobs,
                    exe.as_deref(),
                    progress,
                )?;
            }
            Engine::Slurm => {
                let waited = slurm::submit(
                    &d,
                    &self.header,
                    &todo,
                    launcher,
                    &slurm::Options::from_args(&self.opts)?,
                    progress,
                )?;
                if !waited {
                    return Ok(None);
                }
            }
        }
        finished(d, self.header.clone(), self.tasks.clone()).map(Some)
    }
}

/// Reads a directory's tables (`--from DIR`).
pub fn from_dir(path: &Path) -> Result<Finished> {
    let (d, header, tasks) = SweepDir::open(path)?;
    finished(d, header, tasks)
}

fn finished(dir: SweepDir, header: Header, tasks: Vec<Task>) -> Result<Finished> {
    let (tables, missing) = collect::tables(&dir, &header, &tasks)?;
    Ok(Finished {
        dir,
        header,
        tasks,
        tables,
        missing,
    })
}

/// Host cores (the default `--jobs`).
pub fn host_cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// A file's xxHash64 as 16 hex digits.
pub fn file_hash(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(format!("{:016x}", twox_hash::XxHash64::oneshot(0, &bytes)))
}
