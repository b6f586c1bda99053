//! The host side of schedlab, as a library so that the QEMU integration tests
//! in `tests/` drive the kernel exactly the way `cargo xtask run` does.
//!
//! - [`prereq`]: install what is missing (rustup parts, QEMU, OVMF)
//! - [`calibration`]: `cargo xtask profile`: a `calibrate` log -> a simulator cost profile
//! - [`build`]: build the kernel ELF, the image builder and disk images
//! - [`image`]: a disk image with a run's boot configuration, for real hardware
//! - [`machine`]: the emulated machine's shape (CPUs, sockets, NUMA, memory)
//! - [`preflight`]: argument, memory and output-path checks before any build or boot
//! - [`qemu`]: turn a machine + image into a QEMU command line
//! - [`qemu_version`]: what the installed QEMU can do (x2APIC from 9; 10.0's icount and dies bugs)
//! - [`cleanup`]: kill QEMU and remove run folders on signals and exit
//! - [`runner`]: run QEMU with a timeout, split log lines from result records
//! - [`outcome`]: what a run's exit status means
//! - [`outputs`]: the files a run writes: `--results` records, `--trace` exports
//! - [`capture`]: a captured serial console (bare metal, `run --console-log`) as a run: `report --from`, compare of captures
//! - [`symbolize`]: map a faulting RIP back to a function and source line
//! - [`trace`]: the kernel's scheduler trace as a Chrome/Perfetto timeline or ftrace text
//! - [`seeds`]: the seed threads' comparisons as one command each
//! - [`compare`]: baseline-vs-variant runs and the mmtests compare-kernels table
//! - [`published`]: the seeds' published numbers, their mapping and verdicts
//! - [`sweep`]: a comparison's runs as a directory, run locally or on Slurm, resumable
//! - [`skips`]: why a test could not run here, reported by `cargo xtask test`
//! - [`slurmlab`]: a one-node Slurm cluster on localhost, for the Slurm engine's test
//! - [`seedrun`]: `cargo xtask seed N`: the recipe's comparisons and the verdict table

pub mod accel;
pub mod build;
pub mod calibration;
pub mod capture;
pub mod cleanup;
pub mod cli;
pub mod compare;
pub mod image;
pub mod kernel_bench;
pub mod launch;
pub mod machine;
pub mod outcome;
pub mod outputs;
pub mod preflight;
pub mod prereq;
pub mod preset;
pub mod published;
pub mod qemu;
pub mod qemu_version;
pub mod report;
pub mod runner;
pub mod seedrun;
pub mod seeds;
pub mod simrun;
pub mod skips;
pub mod slurmlab;
pub mod sweep;
pub mod symbolize;
pub mod topology_record;
pub mod trace;

use std::path::PathBuf;

/// The repository root (the parent of this crate's directory).
pub fn project_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// Prefix of result-record lines on the kernel console (see `kernel/src/record.rs`).
pub const RECORD_PREFIX: &str = "@@SCHEDLAB ";
