//! Command-line options of `cargo xtask` (clap derive).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};

use crate::accel::{Accel, AccelChoice};
use crate::build::Firmware;
use crate::machine::Machine;
use crate::preset::{self, PRESETS};
use crate::qemu::QemuConfig;
use crate::trace::TraceFormat;

/// schedlab's build, run and test driver.
#[derive(Parser, Debug)]
#[command(name = "cargo xtask", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Build the kernel and a disk image, boot it in QEMU, print the report.
    Run(Box<RunArgs>),
    /// Run an experiment several times with a baseline and a variant scheduler
    /// configuration and print an mmtests compare-kernels table.
    Compare(Box<CompareArgs>),
    /// Re-run a seed LKML thread's argument as comparisons (its benchmark
    /// shapes, the heuristic off vs on) and print the thread's published
    /// numbers next to schedlab's with a verdict per row. No seed: list
    /// them. Extra options go to `compare` (e.g. --runs 10 --icount 3).
    Seed {
        /// Seed number (000-004).
        seed: Option<String>,
        /// On the seed's own machine (larger, slower) instead of a small one.
        #[arg(long)]
        full: bool,
        /// Further `compare` options; `--part NAME` (repeatable) runs only
        /// those parts of the recipe (`cargo xtask seed` lists them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        extra: Vec<String>,
    },
    /// Turn a captured serial console (bare metal over IPMI SOL or a serial
    /// cable, or `run --console-log`) into the report, records and trace a
    /// QEMU run gives (docs/bare-metal.md).
    Report(ReportArgs),
    /// Build a disk image for a real machine (USB stick, boot disk, PXE)
    /// with the run's boot configuration (docs/bare-metal.md).
    Image(Box<crate::image::ImageArgs>),
    /// Run every test: host unit/property tests, then QEMU integration tests.
    Test(TestArgs),
    /// Build the kernel ELF and the image builder only.
    Build {
        /// Build the kernel with optimisations.
        #[arg(long)]
        release: bool,
    },
    /// List the experiments, topology presets, picks, policies and scheduler switches.
    List,
    /// Turn the log of a `calibrate` run (a bare-metal serial capture, or a
    /// QEMU run's `--results` file) into a simulator cost profile (TOML for
    /// `--backend sim --profile FILE`); unmeasured parameters keep the
    /// built-in profile's values, each commented as such.
    Profile {
        /// The console log or results file of `--experiment calibrate`.
        #[arg(long, value_name = "LOG")]
        from: PathBuf,
        /// Where to write the profile (default: standard output).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Host benchmarks of the scheduler core (enqueue/pick/dequeue vs a naive
    /// baseline, select_task_rq on the 160-CPU topology), side by side, of the
    /// simulator, and of topology and domain building up to 1,024 CPUs.
    Bench {
        /// Instead: the kernel's wakeup path under QEMU `--icount 0` on the
        /// default preset (latency round trips and hackbench g4 l500 under
        /// CFS and EEVDF: instructions, switches, migrations), next to Linux
        /// 6.12 on the same VM. Boots QEMU three times; several minutes.
        #[arg(long)]
        kernel: bool,
    },
    /// One run of a sweep directory (what a Slurm array task executes).
    #[command(hide = true)]
    SweepTask {
        /// The sweep directory.
        dir: PathBuf,
        /// Added to SLURM_ARRAY_TASK_ID to give the task id.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// The task id (instead of SLURM_ARRAY_TASK_ID).
        #[arg(long)]
        task: Option<usize>,
    },
    /// Re-capture the ACPI/CPUID fixtures of the topology tests from QEMU
    /// (runs kernel/topology/fixtures/capture.py).
    CaptureFixtures {
        /// Shapes to capture (default: all the script knows).
        shapes: Vec<String>,
    },
}

/// Options of `cargo xtask run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Experiment to run (see `cargo xtask list`).
    #[arg(long, default_value = bootcfg::DEFAULT_EXPERIMENT)]
    pub experiment: String,
    /// Machine shape preset (see `cargo xtask list`): default, xeon-e7-8870v4,
    /// 2n48-llc24, 4n192-llc48, 2s48-smt, 2s8-nosmt, 2s384-smt, 2s2d224-llc56.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["smp", "sockets", "dies", "cores", "threads"])]
    pub topology: Option<String>,
    /// Total vCPUs; with no topology flags: one socket of N single-thread cores.
    #[arg(long)]
    pub smp: Option<u32>,
    /// Sockets (packages). Default machine: 2 sockets x 2 cores x 2 threads, 2 nodes.
    #[arg(long)]
    pub sockets: Option<u32>,
    /// Dies per socket.
    #[arg(long)]
    pub dies: Option<u32>,
    /// Cores per die.
    #[arg(long)]
    pub cores: Option<u32>,
    /// Threads (SMT siblings) per core.
    #[arg(long)]
    pub threads: Option<u32>,
    /// NUMA nodes; CPUs are split evenly, in CPU order; memory in MiB, the
    /// remainder one MiB at a time over the first nodes.
    #[arg(long)]
    pub numa_nodes: Option<u32>,
    /// Guest memory in MiB (default: the preset's, else 512).
    #[arg(long)]
    pub memory: Option<u32>,
    /// Boot through UEFI (OVMF) instead of legacy BIOS.
    #[arg(long)]
    pub uefi: bool,
    /// Deterministic virtual time: `-icount shift=N,sleep=off` (N defaults to 0).
    #[arg(long, num_args = 0..=1, default_missing_value = "0", value_name = "SHIFT")]
    pub icount: Option<u32>,
    /// QEMU accelerator: auto (KVM when /dev/kvm is usable and --icount is
    /// not given, else TCG), tcg, or kvm (`-cpu host`; an error when /dev/kvm
    /// is not usable).
    #[arg(long, value_enum, default_value_t = AccelChoice::Auto)]
    pub accel: AccelChoice,
    /// Perturbation seed: each kernel thread starts after a seed-derived
    /// 0-20 us spin (docs/results.md, "Determinism"); also QEMU's `-seed`.
    /// With --icount, the same seed repeats the run exactly.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Wall-clock limit in seconds; QEMU is killed and the run reported as a timeout.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Build the kernel with optimisations.
    #[arg(long)]
    pub release: bool,
    /// Keep the run folder (disk image, boot configuration, OVMF variables)
    /// instead of removing it when the run ends.
    #[arg(long)]
    pub keep: bool,
    /// Write the run's result records to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub results: Option<PathBuf>,
    /// Copy the raw serial console (bytes as QEMU sends them) to FILE: a
    /// capture `cargo xtask report --from FILE` turns back into this report.
    #[arg(long, value_name = "FILE")]
    pub console_log: Option<PathBuf>,
    /// Extra argument passed to QEMU verbatim (repeatable).
    #[arg(long = "qemu-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub qemu_args: Vec<String>,
    /// Build-time ceiling of the kernel's log level (error, warn, info, debug):
    /// more verbose messages are compiled out. Default: none (trace possible).
    #[arg(long, value_name = "LEVEL")]
    pub max_log_level: Option<String>,
    /// Kernel console log level: error, warn, info, debug, trace.
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// Label copied into the boot record (e.g. "baseline", "variant").
    #[arg(long, default_value = "")]
    pub label: String,
    /// Scheduler tick rate per CPU (CONFIG_HZ).
    #[arg(long, default_value_t = bootcfg::DEFAULT_HZ)]
    pub hz: u32,
    /// Fair-class pick policy: cfs or eevdf.
    #[arg(long, default_value = "cfs")]
    pub pick: String,
    /// Scheduler feature switches, e.g. WA_IDLE,NO_SIS_UTIL (see docs/scheduler.md).
    #[arg(long, default_value = "")]
    pub features: String,
    /// Scheduling policy: fair (Linux-faithful, default) or another policy
    /// registered in kernel/sched/src/policies (see docs/policies.md).
    #[arg(long, default_value = "fair")]
    pub policy: String,
    /// How idle CPUs wait: hlt, or mwait (real hardware; under multi-vCPU TCG
    /// mwait does not sleep, so idle vCPUs spin).
    #[arg(long, default_value = "hlt")]
    pub idle: String,
    /// Experiment argument KEY=VALUE (repeatable), e.g. --arg threads=512.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub args: Vec<String>,
    /// Record a scheduler trace (switches, wakeups, migrations, forks) and
    /// write it to FILE as a timeline for ui.perfetto.dev (see --trace-format).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// What --trace writes: chrome (trace-event JSON: a track per CPU and
    /// per thread, wakeup-to-run flows) or ftrace (the sched_* events as
    /// /sys/kernel/tracing/trace prints them with the nop tracer; not
    /// trace-cmd's trace.dat). Both open in ui.perfetto.dev.
    #[arg(long, value_enum, default_value_t = TraceFormat::Chrome, requires = "trace")]
    pub trace_format: TraceFormat,
    /// Trace events kept per CPU (the first ones; later ones are counted as
    /// dropped, and the exports then stop where the first full CPU did).
    #[arg(long, default_value_t = 65_536, value_name = "N")]
    pub trace_events: u32,
    /// Where the run happens: qemu (the kernel in QEMU) or sim (the host
    /// simulator: same scheduler core and workloads, simulated parallel time).
    #[arg(long, value_enum, default_value_t = Backend::Qemu)]
    pub backend: Backend,
    /// The simulator's cost profile (TOML; default: the built-in
    /// nominal-x86-server profile, see docs/simulator.md).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
}

/// Where a run happens, and so what its clock means.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The kernel in QEMU (icount: summed instructions; otherwise host time).
    Qemu,
    /// The host simulator (simulated parallel time from a cost profile).
    Sim,
}

/// Options of `cargo xtask compare`: every `run` option describes the
/// baseline; the `--variant-*` options say what differs in the variant.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Feature switches of the variant (replacing --features).
    #[arg(long, value_name = "FEATURES")]
    pub variant_features: Option<String>,
    /// Feature switches added to both configurations, after --features and
    /// --variant-features (e.g. a seed recipe with tickless idle:
    /// `cargo xtask seed 001 --common-features NOHZ_IDLE`).
    #[arg(long, value_name = "FEATURES")]
    pub common_features: Option<String>,
    /// Scheduling policy of the variant (replacing --policy).
    #[arg(long, value_name = "POLICY")]
    pub variant_policy: Option<String>,
    /// Pick policy of the variant, cfs or eevdf (replacing --pick).
    #[arg(long, value_name = "PICK")]
    pub variant_pick: Option<String>,
    /// Experiment argument of the variant, KEY=VALUE (repeatable; replaces the
    /// baseline's --arg KEY), e.g. --arg placement=unbound --variant-arg
    /// placement=stacked.
    #[arg(long = "variant-arg", value_name = "KEY=VALUE")]
    pub variant_args: Vec<String>,
    /// What to compare instead of the experiment's main metric (hackbench:
    /// `migrations`, total / within a package / across packages).
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
    /// Runs per configuration (and per sweep value).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Sweep one experiment argument, KEY=V1,V2,... (the table's op column,
    /// e.g. groups=1,4,8 for hackbench).
    #[arg(long, value_name = "KEY=V1,V2")]
    pub sweep: Option<String>,
    /// Also draw the comparison as an SVG bar chart (means, ±σ, samples).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// The sweep directory: the matrix, one result file per run; the same
    /// command again resumes it (docs/sweeps.md). Default:
    /// target/sweeps/<what>-<hash of the matrix and the build>.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Run nothing: render the table(s) of an existing sweep directory and
    /// list the runs it lacks.
    #[arg(long, value_name = "DIR", conflicts_with = "dir")]
    pub from: Option<PathBuf>,
    /// Host cores kept busy at once (default: all of them); an --icount or
    /// simulator run takes one, a multi-threaded TCG run one per vCPU. With
    /// --engine slurm: at most this many array tasks at once.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub jobs: Option<u32>,
    /// Where the runs happen: local (this host) or slurm (a job array).
    #[arg(long, value_enum, default_value_t = Engine::Local)]
    pub engine: Engine,
    /// sbatch option KEY=VALUE for --engine slurm (repeatable), e.g.
    /// partition=debug, time=00:30:00, mem=4G.
    #[arg(long = "slurm", value_name = "KEY=VALUE")]
    pub slurm: Vec<String>,
    /// File of sbatch options, one KEY=VALUE per line ('#' comments);
    /// --slurm options win.
    #[arg(long, value_name = "FILE")]
    pub slurm_config: Option<PathBuf>,
    /// With --engine slurm: submit and return; render later with --from DIR.
    #[arg(long)]
    pub no_wait: bool,
    /// Run nothing: the baseline's runs are the successful boots of this
    /// captured console log (repeatable; `report --from` reads the same
    /// logs). Needs --variant-log. The experiment and configuration are the
    /// captures' own: `run` options other than --results are not used.
    #[arg(long = "baseline-log", value_name = "LOG", requires = "variant_log",
        conflicts_with_all = ["from", "sweep", "variant_features", "variant_policy", "variant_pick", "variant_args"])]
    pub baseline_log: Vec<PathBuf>,
    /// The variant's captured console log(s), as --baseline-log.
    #[arg(long = "variant-log", value_name = "LOG", requires = "baseline_log")]
    pub variant_log: Vec<PathBuf>,
}

/// Where a sweep's runs happen.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// This host, `--jobs` runs at a time.
    Local,
    /// A Slurm job array, one array task per run.
    Slurm,
}

/// Options of `cargo xtask report`.
#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// The captured console log (CRLF, escape sequences and firmware output
    /// before the kernel are fine; several boots: the last complete one).
    #[arg(long, value_name = "LOG")]
    pub from: PathBuf,
    /// Report boot N of the log (1 = the first; the report says how many
    /// there are) instead of the last complete one.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub boot: Option<u32>,
    /// Write the run's result records to FILE as JSON lines (as `run --results`).
    #[arg(long, value_name = "FILE")]
    pub results: Option<PathBuf>,
    /// Write the run's scheduler trace to FILE (the run must have recorded
    /// one: an image built with `image --traced`, a `run --trace`).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// What --trace writes: chrome or ftrace (as `run --trace-format`).
    #[arg(long, value_enum, default_value_t = TraceFormat::Chrome, requires = "trace")]
    pub trace_format: TraceFormat,
    /// The kernel ELF that ran, to resolve a fault's RIP to a source line.
    #[arg(long, value_name = "ELF")]
    pub kernel: Option<PathBuf>,
}

/// Options of `cargo xtask test`.
#[derive(Args, Debug, Clone)]
pub struct TestArgs {
    /// Only the host tests (no QEMU).
    #[arg(long, conflicts_with = "qemu_only")]
    pub host_only: bool,
    /// Only the QEMU integration tests.
    #[arg(long)]
    pub qemu_only: bool,
    /// Only QEMU tests whose name contains this string.
    #[arg(long)]
    pub filter: Option<String>,
}

impl RunArgs {
    /// The machine these flags describe.
    pub fn machine(&self) -> Result<Machine> {
        if self.smp == Some(0) {
            bail!("--smp must be at least 1");
        }
        let topo_given = self.sockets.is_some()
            || self.dies.is_some()
            || self.cores.is_some()
            || self.threads.is_some();
        let mut m = match (&self.topology, self.smp, topo_given) {
            (Some(name), _, _) => preset::find(name)
                .with_context(|| {
                    format!(
                        "unknown topology preset '{name}' (known: {})",
                        preset::names()
                    )
                })?
                .machine(),
            (None, Some(n), false) => Machine {
                sockets: 1,
                dies: 1,
                cores: n,
                threads: 1,
                ..Machine::default()
            },
            (None, _, true) => Machine {
                sockets: self.sockets.unwrap_or(1),
                dies: self.dies.unwrap_or(1),
                cores: self.cores.unwrap_or(1),
                threads: self.threads.unwrap_or(1),
                ..Machine::default()
            },
            (None, None, false) => PRESETS[0].machine(),
        };
        if let (Some(n), true) = (self.smp, topo_given)
            && m.checked_cpus() != Some(n)
        {
            let product = u128::from(m.sockets)
                * u128::from(m.dies)
                * u128::from(m.cores)
                * u128::from(m.threads);
            bail!(
                "--smp {n} disagrees with --sockets {} x --dies {} x --cores {} x --threads {} = {product}",
                m.sockets,
                m.dies,
                m.cores,
                m.threads,
            );
        }
        if let Some(n) = self.numa_nodes
            && n != m.numa_nodes
        {
            m.numa_nodes = n;
            m.distances = None;
        }
        if let Some(mib) = self.memory {
            m.memory_mib = mib;
        }
        if self.backend == Backend::Qemu {
            m.validate()?;
        }
        Ok(m)
    }

    /// The boot configuration (validated against the shared catalogue).
    pub fn boot_config(&self) -> Result<bootcfg::BootConfig> {
        // The boot configuration is `key=value` lines where `#` starts a comment:
        // a `#` or a line break in a value would silently cut it or add a key.
        for (flag, value) in [
            ("--experiment", self.experiment.as_str()),
            ("--log-level", &self.log_level),
            ("--label", &self.label),
            ("--pick", &self.pick),
            ("--features", &self.features),
            ("--policy", &self.policy),
            ("--idle", &self.idle),
        ]
        .into_iter()
        .chain(self.args.iter().map(|a| ("--arg", a.as_str())))
        {
            let bad = |c: &char| matches!(c, '#' | '\n' | '\r') || (*c == ',' && flag == "--arg");
            if let Some(c) = value.chars().find(bad) {
                let what = match c {
                    '#' => "'#' (the boot configuration reads it as the start of a comment)",
                    ',' => {
                        "',' (it separates the pairs in the boot configuration; give one --arg per pair)"
                    }
                    _ => "a line break",
                };
                bail!("{flag} {value:?}: contains {what}; not allowed");
            }
        }
        let mut pairs = Vec::new();
        for a in &self.args {
            let (k, v) = a
                .split_once('=')
                .with_context(|| format!("--arg {a}: expected KEY=VALUE"))?;
            pairs.push(format!("{k}:{v}"));
        }
        sched::policies::by_name(&self.policy).map_err(|e| anyhow::anyhow!("--policy: {e}"))?;
        if !self.features.is_empty() {
            sched::Features::parse(&self.features)
                .map_err(|e| anyhow::anyhow!("--features {}: {e}", self.features))?;
        }
        let trace = if self.trace.is_some() {
            self.trace_events.max(1)
        } else {
            0
        };
        let text = format!(
            "experiment={}\nlog={}\nlabel={}\nhz={}\npick={}\nfeatures={}\nargs={}\nidle={}\npolicy={}\ntrace={trace}\n",
            self.experiment,
            self.log_level,
            self.label,
            self.hz,
            self.pick,
            self.features,
            pairs.join(","),
            self.idle,
            self.policy
        );
        let mut text = text;
        if let Some(seed) = self.seed {
            text.push_str(&format!("seed={seed}\n"));
        }
        bootcfg::BootConfig::parse(text.as_bytes()).map_err(|e| {
            // Report in terms of flags rather than config-file lines.
            let msg = e.to_string();
            let msg = msg
                .split_once(": ")
                .map_or(msg.as_str(), |(_, m)| m)
                .to_string();
            anyhow::anyhow!("{msg}")
        })
    }

    /// The QEMU configuration (validated: see [`QemuConfig::validate`]).
    pub fn qemu(&self) -> Result<QemuConfig> {
        let q = QemuConfig {
            machine: self.machine()?,
            firmware: if self.uefi {
                Firmware::Uefi
            } else {
                Firmware::Bios
            },
            icount_shift: self.icount,
            accel: match self.backend {
                Backend::Qemu => crate::accel::resolve_here(self.accel, self.icount.is_some())?,
                Backend::Sim => Accel::Tcg,
            },
            seed: self.seed,
            extra_args: self.qemu_args.clone(),
        };
        if self.backend == Backend::Qemu {
            q.validate()?;
        }
        Ok(q)
    }
}
