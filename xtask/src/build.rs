//! Builds the kernel ELF, the image-builder tool (`boot/`) and disk images.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{Context, Result, bail};
use bootcfg::BootConfig;

use crate::prereq::KERNEL_TARGET;
use crate::project_root;

/// A `cargo` command with the inherited `CARGO*`/`RUST*` variables removed, so
/// that the outer `cargo xtask` does not leak its settings into nested builds.
pub fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for (key, _) in std::env::vars() {
        let inherited = (key.starts_with("CARGO") && key != "CARGO_HOME")
            || (key.starts_with("RUST") && key != "RUSTUP_HOME" && key != "RUSTUP_TOOLCHAIN");
        if inherited {
            cmd.env_remove(key);
        }
    }
    cmd.current_dir(project_root());
    cmd
}

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd.status().with_context(|| format!("starting {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// [`run`] for a child that works in a run folder (the image builder): it
/// dies with xtask and is killed by a signal to xtask before the folder is
/// removed (`cleanup`), so a signal during image creation leaves no process
/// writing into a removed folder (before, the builder was neither tied nor
/// registered, and outlived a SIGTERM that came while it ran).
fn run_tied(cmd: &mut Command, what: &str) -> Result<()> {
    crate::cleanup::tie_to_xtask(cmd);
    let mut child = cmd.spawn().with_context(|| format!("starting {what}"))?;
    crate::cleanup::register_qemu(child.id());
    let status = child.wait();
    crate::cleanup::unregister_qemu(child.id());
    let status = status.with_context(|| format!("waiting for {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// Directory for build outputs.
pub fn target_dir() -> PathBuf {
    project_root().join("target")
}

/// Builds the kernel; returns the ELF's path. `max_log_level` (error, warn,
/// info, debug) compiles out more verbose log messages.
pub fn kernel(release: bool, max_log_level: Option<&str>) -> Result<PathBuf> {
    let mut cmd = cargo();
    cmd.args([
        "build",
        "--package",
        "schedlab-kernel",
        "--target",
        KERNEL_TARGET,
    ]);
    if release {
        cmd.arg("--release");
    }
    if let Some(level) = max_log_level {
        if !["error", "warn", "info", "debug"].contains(&level) {
            bail!("--max-log-level {level}: expected error, warn, info or debug");
        }
        cmd.args(["--features", &format!("max-log-{level}")]);
    }
    run(&mut cmd, "kernel build")?;
    let profile = if release { "release" } else { "debug" };
    Ok(target_dir()
        .join(KERNEL_TARGET)
        .join(profile)
        .join("schedlab-kernel"))
}

/// Builds the image builder (bootloader 0.11.15); `RUSTC_BOOTSTRAP=1` is
/// confined to this one process because the bootloader's build script compiles
/// its stages with `-Zbuild-std`. Returns the tool's path.
pub fn boot_tool() -> Result<PathBuf> {
    let dir = target_dir().join("boot");
    let mut cmd = cargo();
    // `--target-dir`, not CARGO_TARGET_DIR: the variable would be inherited by
    // the bootloader's nested `cargo install`, which would then wait forever
    // for the lock this very build holds.
    cmd.args(["build", "--release", "--manifest-path"])
        .arg(project_root().join("boot/Cargo.toml"))
        .arg("--target-dir")
        .arg(&dir)
        .env("RUSTC_BOOTSTRAP", "1");
    run(&mut cmd, "image builder build (boot/)")?;
    Ok(dir.join("release").join("schedlab-boot"))
}

/// Firmware an image is made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Firmware {
    Bios,
    Uefi,
}

static IMAGE_SEQ: AtomicU32 = AtomicU32::new(0);

/// Writes `config` as the ramdisk and builds a disk image for `firmware`.
/// Each call gets its own directory so concurrent runs never share files.
pub fn image(
    tool: &Path,
    kernel: &Path,
    config: &BootConfig,
    firmware: Firmware,
) -> Result<PathBuf> {
    let seq = IMAGE_SEQ.fetch_add(1, Ordering::Relaxed);
    let dir = target_dir()
        .join("images")
        .join(format!("run-{}-{seq}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    crate::cleanup::register_dir(&dir);
    let ramdisk = dir.join("bootcfg.txt");
    std::fs::write(&ramdisk, config.to_text())?;
    let (flag, name) = match firmware {
        Firmware::Bios => ("--bios", "bios.img"),
        Firmware::Uefi => ("--uefi", "uefi.img"),
    };
    let img = dir.join(name);
    let mut cmd = Command::new(tool);
    cmd.arg(kernel)
        .arg(flag)
        .arg(&img)
        .arg("--ramdisk")
        .arg(&ramdisk);
    run_tied(&mut cmd, "disk image creation")?;
    Ok(img)
}
