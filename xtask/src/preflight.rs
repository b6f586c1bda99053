//! Everything `cargo xtask run` can check before it builds or boots: the
//! experiment's arguments (parsed by the same `workloads` code the kernel
//! runs), the memory they need against the guest's `--memory`, and whether
//! the output files can be written. A run that would fail only after the slow
//! part fails here, with the limit in the message.

use std::fs::OpenOptions;
use std::path::Path;

use anyhow::{Result, bail};

use crate::cli::{Backend, RunArgs};

const MIB: u64 = 1 << 20;

/// Guest memory the kernel cannot use as heap, besides its frame reserve:
/// the low 1 MiB, firmware tables, the bootloader and the kernel image.
pub const NON_HEAP_MIB: u64 = 16;

/// Bytes per thread per CPU of that room: the core's
/// (`Shared::room_bytes_per_task`) and a sleeper-heap entry.
const ROOM_BYTES_PER_THREAD: u64 = (sched::core::Shared::room_bytes_per_task() + 16) as u64;

/// Bytes per thread, once: its scheduler task (`Shared::task_bytes`).
const TASK_BYTES: u64 = sched::core::Shared::task_bytes() as u64;

/// Runs every check; `Ok` means nothing known before the boot stops the run.
pub fn check(args: &RunArgs) -> Result<()> {
    let nr_cpus = match args.backend {
        Backend::Qemu => args.machine()?.cpus(),
        // The simulator checks its own machine (up to 1024 CPUs).
        Backend::Sim => crate::simrun::config(args)?.topology.nr_cpus() as u32,
    };
    check_on(args, nr_cpus)
}

/// [`check`] on a machine of `nr_cpus` CPUs already checked (the
/// simulator's, from the configuration its run uses: one build of its
/// topology instead of two).
pub fn check_on(args: &RunArgs, nr_cpus: u32) -> Result<()> {
    let cfg = args.boot_config()?;
    let footprint = experiment_args(&cfg.experiment, &cfg.args, nr_cpus as usize)?;
    let max = sched::config::DEFAULT_MAX_TASKS as u64;
    if footprint.threads > max {
        bail!(
            "--arg {}: {} threads, more than the scheduler core's {max} live tasks \
             (SchedConfig::max_tasks); lower the arguments",
            args.args.join(" --arg "),
            footprint.threads
        );
    }
    if args.backend == Backend::Qemu {
        memory(args, footprint, nr_cpus)?;
    }
    for n in eevdf_only_notes(&cfg.pick, &cfg.features) {
        eprintln!("xtask: note: {n}");
    }
    if let Some(p) = &args.results {
        writable("--results", p)?;
    }
    if let Some(p) = &args.trace {
        writable("--trace", p)?;
    }
    if let Some(p) = &args.console_log {
        if args.backend == Backend::Sim {
            bail!(
                "--console-log {}: the simulator has no console (its records are all there is: use --results)",
                p.display()
            );
        }
        writable("--console-log", p)?;
    }
    Ok(())
}

/// Switches that act only under EEVDF but were asked for (off by default)
/// with another pick: one note each, so a CFS run does not silently lack
/// what the user meant (`LINUX_6_12` under CFS keeps its balancing and
/// tickless parts, so this is a note, not an error).
pub fn eevdf_only_notes(pick: &str, features: &str) -> Vec<String> {
    use sched::features::{FEATURES, Feat, Features};
    if pick.eq_ignore_ascii_case("eevdf") {
        return Vec::new();
    }
    let Ok(f) = Features::parse(features) else {
        return Vec::new();
    };
    [Feat::DelayDequeue, Feat::BaseSlice700us]
        .iter()
        .filter(|&&x| f.has(x))
        .filter_map(|&x| FEATURES.iter().find(|d| d.feat == x))
        .map(|d| {
            format!(
                "{} acts only with --pick eevdf (this run's pick is {pick}): it changes nothing here",
                d.name
            )
        })
        .collect()
}

/// Checks the experiment's arguments exactly as the kernel will parse them.
pub fn experiment_args(
    experiment: &str,
    raw: &str,
    nr_cpus: usize,
) -> Result<workloads::Footprint> {
    if experiment == "tour" {
        // No arguments of its own; it runs the tour's hackbench.
        workloads::args::Args::new(experiment, raw)
            .finish()
            .map_err(|e| anyhow::anyhow!("--arg: {e}"))?;
        return experiment_args("hackbench", bootcfg::TOUR_HACKBENCH_ARGS, nr_cpus);
    }
    let parsed = match workloads::Workload::parse(experiment, raw, nr_cpus) {
        Some(w) => w.map(|w| w.footprint(nr_cpus)),
        None => match workloads::kernel_only::check(experiment, raw, nr_cpus) {
            Some(r) => r,
            // The rest take no argument (the kernel refuses any key).
            None => workloads::args::Args::new(experiment, raw)
                .finish()
                .map(|()| workloads::Footprint {
                    threads: 0,
                    buffer_bytes: 0,
                }),
        },
    };
    parsed.map_err(|e| anyhow::anyhow!("--arg: {e}"))
}

/// Kernel heap a run needs at least, by part (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// Thread stacks of the experiment's threads.
    pub stacks: u64,
    /// Channel buffers and working sets.
    pub buffers: u64,
    /// Per-CPU trace buffers (`--trace-events`).
    pub trace: u64,
    /// Per-CPU bring-up stacks.
    pub cpus: u64,
    /// The room every CPU keeps for every thread (the core's runqueue
    /// containers, `Shared::make_room_for_all_tasks`, and the sleeper heap),
    /// and each thread's scheduler task,
    /// made at spawn in steps of 64 threads.
    pub room: u64,
}

impl Estimate {
    /// The parts' sum.
    pub fn total(&self) -> u64 {
        self.stacks
            .saturating_add(self.buffers)
            .saturating_add(self.trace)
            .saturating_add(self.cpus)
            .saturating_add(self.room)
    }
}

/// The lower bound of the kernel heap `args` need on `nr_cpus` CPUs.
pub fn estimate(args: &RunArgs, fp: workloads::Footprint, nr_cpus: u32) -> Estimate {
    let cpus = u64::from(nr_cpus);
    let trace = if args.trace.is_some() {
        u64::from(args.trace_events.max(1))
            .saturating_mul(bootcfg::TRACE_EVENT_BYTES as u64)
            .saturating_mul(cpus)
    } else {
        0
    };
    Estimate {
        stacks: fp
            .threads
            .saturating_mul(bootcfg::THREAD_STACK_BYTES as u64),
        buffers: fp.buffer_bytes,
        trace,
        cpus: cpus.saturating_mul(bootcfg::AP_STACK_BYTES as u64),
        room: fp
            .threads
            .next_multiple_of(sched::core::ROOM_STEP as u64)
            .saturating_mul(ROOM_BYTES_PER_THREAD)
            .saturating_mul(cpus)
            .saturating_add(fp.threads.saturating_mul(TASK_BYTES)),
    }
}

/// Refuses a run whose estimated heap exceeds what `--memory` leaves.
fn memory(args: &RunArgs, fp: workloads::Footprint, nr_cpus: u32) -> Result<()> {
    let memory_mib = u64::from(args.machine()?.memory_mib);
    let heap = (memory_mib.saturating_sub(NON_HEAP_MIB) * MIB)
        .saturating_sub(bootcfg::FRAME_RESERVE_BYTES);
    let e = estimate(args, fp, nr_cpus);
    if e.total() <= heap {
        return Ok(());
    }
    let mib = |b: u64| b.div_ceil(MIB);
    let need_mib = mib(e.total()) + NON_HEAP_MIB + mib(bootcfg::FRAME_RESERVE_BYTES);
    let cause = if e.trace >= e.stacks + e.buffers {
        format!(
            "--trace-events {}: {} CPUs x {} events x {} bytes = {} MiB of trace buffers",
            args.trace_events,
            nr_cpus,
            args.trace_events,
            bootcfg::TRACE_EVENT_BYTES,
            mib(e.trace)
        )
    } else {
        format!(
            "--arg {}: {} threads x {} KiB stacks = {} MiB, plus {} MiB of buffers",
            if args.args.is_empty() {
                "(defaults)".to_string()
            } else {
                args.args.join(" --arg ")
            },
            fp.threads,
            bootcfg::THREAD_STACK_BYTES / 1024,
            mib(e.stacks),
            mib(e.buffers)
        )
    };
    bail!(
        "{cause}: the run needs at least {} MiB of kernel heap (estimate; {} CPUs add {} MiB \
         and their runqueue room {} MiB, trace {} MiB), but --memory {memory_mib} MiB leaves about {} MiB; use --memory {need_mib} \
         or more, or lower the arguments",
        mib(e.total()),
        nr_cpus,
        mib(e.cpus),
        mib(e.room),
        mib(e.trace),
        heap / MIB
    )
}

/// Checks that `path` can be written as a file, without leaving one behind.
pub fn writable(flag: &str, path: &Path) -> Result<()> {
    if path.is_dir() {
        bail!(
            "{flag} {}: is a directory; give a file name",
            path.display()
        );
    }
    let existed = path.exists();
    match OpenOptions::new().append(true).create(true).open(path) {
        Ok(_) => {
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            Ok(())
        }
        Err(e) => bail!("{flag} {}: cannot be written: {e}", path.display()),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn eevdf_only_switches_under_cfs_get_a_note() {
        assert!(super::eevdf_only_notes("eevdf", "LINUX_6_12").is_empty());
        assert!(super::eevdf_only_notes("cfs", "NOHZ_IDLE").is_empty());
        let n = super::eevdf_only_notes("cfs", "LINUX_6_12");
        assert_eq!(n.len(), 2, "{n:?}");
        assert!(
            n[0].starts_with("DELAY_DEQUEUE acts only with --pick eevdf"),
            "{n:?}"
        );
        assert!(n[1].starts_with("BASE_SLICE_700US"), "{n:?}");
        assert!(
            super::eevdf_only_notes("cfs", "LINUX_6_12,NO_DELAY_DEQUEUE,NO_BASE_SLICE_700US")
                .is_empty()
        );
    }

    use super::*;
    use crate::cli::{Cli, Cmd};
    use clap::Parser;

    fn args(extra: &[&str]) -> RunArgs {
        let mut v = vec!["cargo-xtask", "run"];
        v.extend_from_slice(extra);
        match Cli::try_parse_from(v).unwrap().command {
            Cmd::Run(a) => *a,
            _ => unreachable!(),
        }
    }

    fn err(extra: &[&str]) -> String {
        check(&args(extra)).unwrap_err().to_string()
    }

    #[test]
    fn unknown_keys_and_ranges_before_the_boot() {
        let e = err(&["--experiment", "hackbench", "--arg", "grups=2"]);
        assert!(e.contains("has no argument 'grups'"), "{e}");
        let e = err(&["--experiment", "schbench", "--arg", "messengers=65"]);
        assert!(
            e.contains("messengers=65 must be an integer in 1..=64"),
            "{e}"
        );
        let e = err(&["--experiment", "stress", "--arg", "threads=7"]);
        assert!(
            e.contains("threads=7 must be an integer in 8..=20000"),
            "{e}"
        );
        let e = err(&["--experiment", "nas", "--arg", "nice=20"]);
        assert!(e.contains("nice=20 must be an integer in -20..=19"), "{e}");
        let e = err(&["--experiment", "nas", "--arg", "nice=-21"]);
        assert!(e.contains("nice=-21 must be an integer in -20..=19"), "{e}");
        check(&args(&["--experiment", "nas", "--arg", "nice=-20"])).unwrap();
        let e = err(&["--experiment", "fpu-check", "--arg", "rounds=7"]);
        assert!(e.contains("'fpu-check' has no argument 'rounds'"), "{e}");
        let e = err(&["--experiment", "boot", "--arg", "x=1"]);
        assert!(e.contains("'boot' has no argument 'x'"), "{e}");
        check(&args(&["--experiment", "latency", "--arg", "rounds=100"])).unwrap();
        check(&args(&["--experiment", "hackbench"])).unwrap();
    }

    #[test]
    fn process_mode_on_both_backends() {
        check(&args(&[
            "--experiment",
            "hackbench",
            "--arg",
            "mode=process",
        ]))
        .unwrap();
        let e = err(&["--experiment", "hackbench", "--arg", "mode=processes"]);
        assert!(e.contains("mode"), "{e}");
        check(&args(&[
            "--experiment",
            "hackbench",
            "--arg",
            "mode=thread",
        ]))
        .unwrap();
        check(&args(&[
            "--experiment",
            "hackbench",
            "--arg",
            "mode=process",
            "--backend",
            "sim",
        ]))
        .unwrap();
    }

    #[test]
    fn more_threads_than_the_core_holds_before_the_boot() {
        // Whatever the memory: the core's live-task table (stress is the
        // one experiment whose arguments allow more).
        let e = err(&[
            "--experiment",
            "stress",
            "--arg",
            "threads=20000",
            "--memory",
            "4096",
        ]);
        assert!(
            e.contains("20000 threads, more than the scheduler core's 16384 live tasks"),
            "{e}"
        );
    }

    #[test]
    fn memory_the_arguments_need() {
        // The reported case: 100 groups x 40 threads and 2000 208 KiB sockets.
        let e = err(&[
            "--experiment",
            "hackbench",
            "--arg",
            "groups=100",
            "--arg",
            "loops=1",
        ]);
        assert!(
            e.starts_with("--arg groups=100 --arg loops=1: 4000 threads x 64 KiB"),
            "{e}"
        );
        assert!(e.contains("--memory 512 MiB leaves about 480 MiB"), "{e}");
        // 250 MiB of stacks, 407 MiB of socket buffers, 2 MiB of AP stacks,
        // 5 MiB of runqueue room (4,032 threads x (100 bytes x 8 CPUs + the
        // 328-byte task), rounded up), plus what the heap cannot use.
        assert!(e.contains("runqueue room 5 MiB"), "{e}");
        assert!(e.contains("use --memory 695"), "{e}");
        // Enough memory: accepted.
        let mut ok = vec![
            "--experiment",
            "hackbench",
            "--arg",
            "groups=100",
            "--memory",
            "1024",
        ];
        check(&args(&ok)).unwrap();
        // The trace buffers: 8 CPUs x 4 Mi events x 40 B.
        ok.truncate(2);
        let e = err(&[
            &ok[..],
            &[
                "--trace",
                "/tmp/preflight-t.json",
                "--trace-events",
                "4194304",
            ],
        ]
        .concat());
        assert!(
            e.starts_with("--trace-events 4194304: 8 CPUs x 4194304 events x 40 bytes = 1280 MiB"),
            "{e}"
        );
        // The simulator allocates no guest memory.
        check(&args(&[
            "--experiment",
            "hackbench",
            "--arg",
            "groups=100",
            "--backend",
            "sim",
        ]))
        .unwrap();
    }

    #[test]
    fn output_paths_before_the_run() {
        let dir = std::env::temp_dir().join(format!("preflight-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display().to_string();
        let e = err(&["--trace", &d]);
        assert!(e.contains("is a directory"), "{e}");
        let e = err(&["--results", &d]);
        assert!(
            e.starts_with("--results") && e.contains("is a directory"),
            "{e}"
        );
        let missing = dir.join("no/such/dir/r.jsonl").display().to_string();
        let e = err(&["--results", &missing]);
        assert!(e.contains("cannot be written"), "{e}");
        // A writable new file passes and is not left behind.
        let f = dir.join("r.jsonl");
        check(&args(&["--results", &f.display().to_string()])).unwrap();
        assert!(!f.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
