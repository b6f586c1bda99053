//! `cargo xtask image --out FILE [run options]`: the disk image a real
//! machine boots (USB stick, boot disk, PXE/iPXE `sanboot`), with the run's
//! boot configuration in its ramdisk. The options are `run`'s and are
//! checked the same way (experiment, arguments, switches, policy), so a typo
//! fails here, not on the server after flashing. Options that describe the
//! emulated machine or QEMU (`--smp`, `--topology`, `--icount`, ...) mean
//! nothing to hardware and are refused rather than silently dropped.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::accel::AccelChoice;
use crate::build::{self, Firmware};
use crate::cli::{Backend, RunArgs};
use crate::launch::Launcher;

/// Options of `cargo xtask image`.
#[derive(Args, Debug, Clone)]
pub struct ImageArgs {
    /// Where to write the disk image (raw; `dd` it to a USB stick or disk).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Record the scheduler trace (--trace-events per CPU) in the run's
    /// console; `cargo xtask report --from LOG --trace FILE` exports it.
    #[arg(long)]
    pub traced: bool,
    /// The run: experiment, --arg, --features, --policy, --pick, --idle,
    /// --hz, --log-level, --label, --seed, --trace-events (with --traced),
    /// --release, --uefi (else legacy BIOS).
    #[command(flatten)]
    pub run: RunArgs,
}

/// `run` options that describe QEMU's machine, not the boot configuration.
fn refused(r: &RunArgs) -> Option<&'static str> {
    let machine = r.topology.is_some()
        || r.smp.is_some()
        || r.sockets.is_some()
        || r.dies.is_some()
        || r.cores.is_some()
        || r.threads.is_some()
        || r.numa_nodes.is_some()
        || r.memory.is_some();
    if machine {
        return Some(
            "--topology/--smp/--sockets/--dies/--cores/--threads/--numa-nodes/--memory (the hardware is the machine)",
        );
    }
    if r.icount.is_some() {
        return Some("--icount (QEMU's virtual clock; hardware runs on real time)");
    }
    if !r.qemu_args.is_empty() || r.accel != AccelChoice::Auto {
        return Some("--qemu-arg/--accel");
    }
    if r.backend == Backend::Sim || r.profile.is_some() {
        return Some("--backend sim/--profile (the simulator boots nothing)");
    }
    if r.results.is_some() || r.console_log.is_some() || r.keep || r.trace.is_some() {
        return Some(
            "--results/--trace/--console-log/--keep (--traced records the trace; capture the console, then `cargo xtask report --from LOG --results FILE --trace FILE`)",
        );
    }
    None
}

/// Builds the kernel and writes the image; returns the exit status.
pub fn run(args: &ImageArgs) -> Result<i32> {
    if let Some(what) = refused(&args.run) {
        bail!("{what}: not an image option");
    }
    let mut run = args.run.clone();
    if args.traced {
        // boot_config() turns the trace on when a trace file is named.
        run.trace = Some(PathBuf::from("console"));
    }
    let config = run.boot_config()?;
    crate::preflight::writable("--out", &args.out)?;
    crate::prereq::ensure_rust()?;
    let launcher = Launcher::build(args.run.release, args.run.max_log_level.as_deref())?;
    let firmware = if args.run.uefi {
        Firmware::Uefi
    } else {
        Firmware::Bios
    };
    let img = build::image(&launcher.boot_tool, &launcher.kernel, &config, firmware)?;
    let copied = std::fs::copy(&img, &args.out)
        .with_context(|| format!("--out: writing {}", args.out.display()));
    if let Some(dir) = img.parent() {
        crate::cleanup::finish_dir(dir);
    }
    copied?;
    println!(
        "image: {} ({firmware:?}, kernel {})\nboot configuration (its ramdisk):",
        args.out.display(),
        launcher.kernel.display()
    );
    for line in config.to_text().lines() {
        println!("  {line}");
    }
    println!(
        "write it with: dd if={} of=/dev/sdX bs=1M conv=fsync   (docs/bare-metal.md)",
        args.out.display()
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Cmd};
    use clap::Parser as _;

    fn image_args(extra: &[&str]) -> ImageArgs {
        let argv = ["xtask", "image", "--out", "x.img"].iter().chain(extra);
        match Cli::try_parse_from(argv).unwrap().command {
            Cmd::Image(a) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn qemu_and_output_options_are_refused_before_any_build() {
        for (opt, says) in [
            (&["--smp", "4"][..], "the hardware is the machine"),
            (&["--topology", "2s48-smt"], "the hardware is the machine"),
            (&["--icount"], "real time"),
            (&["--qemu-arg", "-s"], "--qemu-arg"),
            (&["--accel", "tcg"], "--accel"),
            (&["--backend", "sim"], "boots nothing"),
            (&["--results", "r.jsonl"], "report --from"),
            (&["--trace", "t.json"], "--traced"),
        ] {
            let e = run(&image_args(opt)).unwrap_err().to_string();
            assert!(
                e.contains(says) && e.ends_with("not an image option"),
                "{opt:?}: {e}"
            );
        }
        let e = run(&image_args(&["--experiment", "nope"]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("unknown experiment 'nope'"), "{e}");
        assert_eq!(
            refused(&image_args(&["--uefi", "--release", "--seed", "3"]).run),
            None
        );
    }
}
