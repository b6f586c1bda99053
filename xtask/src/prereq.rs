//! Makes sure the tools a run needs exist, installing the missing ones.
//!
//! rustup's auto-install is off on our machines (`RUSTUP_AUTO_INSTALL=0`), so
//! the kernel target and the `rust-src`/`llvm-tools` components (needed by the
//! bootloader's image builder) are added explicitly. QEMU and OVMF come from
//! apt when we run as root; otherwise we stop and print the exact command.

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::project_root;

/// The bare-metal target the kernel is built for.
pub const KERNEL_TARGET: &str = "x86_64-unknown-none";

fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .current_dir(project_root())
        .output()
        .with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn run_visible(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {cmd:?}");
    let status = cmd
        .current_dir(project_root())
        .status()
        .with_context(|| format!("running {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Adds the kernel target and the components named in `rust-toolchain.toml`.
pub fn ensure_rust() -> Result<()> {
    let targets = output(Command::new("rustup").args(["target", "list", "--installed"]))?;
    if !targets.lines().any(|l| l.trim() == KERNEL_TARGET) {
        run_visible(Command::new("rustup").args(["target", "add", KERNEL_TARGET]))?;
    }
    let components = output(Command::new("rustup").args(["component", "list", "--installed"]))?;
    for wanted in ["rust-src", "llvm-tools"] {
        if !components.lines().any(|l| l.starts_with(wanted)) {
            run_visible(Command::new("rustup").args(["component", "add", wanted]))?;
        }
    }
    Ok(())
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null 2>&1")])
        .status()
        .is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    output(Command::new("id").arg("-u")).is_ok_and(|s| s.trim() == "0")
}

/// Path of the OVMF firmware code image, if installed.
pub fn ovmf_code() -> Option<&'static str> {
    [
        "/usr/share/OVMF/OVMF_CODE.fd",
        "/usr/share/OVMF/OVMF_CODE_4M.fd",
        "/usr/share/qemu/OVMF.fd",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).is_file())
}

/// Installs `qemu-system-x86` and `ovmf` with apt-get when QEMU or OVMF is
/// missing. apt waits up to 10 minutes for another apt's lock (two xtask
/// commands started at once on a fresh machine) instead of failing.
pub fn ensure_qemu() -> Result<()> {
    if have("qemu-system-x86_64") && ovmf_code().is_some() {
        return Ok(());
    }
    let cmd = "apt-get -o DPkg::Lock::Timeout=600 update && apt-get -o DPkg::Lock::Timeout=600 install -y qemu-system-x86 ovmf";
    if !is_root() {
        bail!("QEMU or OVMF is missing and we are not root; run: sudo sh -c '{cmd}'");
    }
    run_visible(
        Command::new("sh")
            .args(["-c", cmd])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
    .context("installing QEMU and OVMF")?;
    if !have("qemu-system-x86_64") {
        bail!("apt-get finished but qemu-system-x86_64 is still not on PATH");
    }
    Ok(())
}

/// Everything a QEMU run needs.
pub fn ensure_all() -> Result<()> {
    ensure_rust()?;
    ensure_qemu()
}

/// Slurm's daemons, its client and munge, for the localhost cluster the
/// Slurm test starts ([`crate::slurmlab`]); installed with apt-get as root.
pub fn ensure_slurm() -> Result<()> {
    let tools = ["sbatch", "squeue", "sinfo", "slurmctld", "slurmd", "munged"];
    let on_path = |t: &str| have(t) || std::path::Path::new("/usr/sbin").join(t).is_file();
    if tools.iter().all(|t| on_path(t)) {
        return Ok(());
    }
    let cmd = "apt-get -o DPkg::Lock::Timeout=600 update && apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends slurmctld slurmd slurm-client munge";
    if !is_root() {
        bail!("Slurm is not installed and we are not root; run: sudo sh -c '{cmd}'");
    }
    run_visible(
        Command::new("sh")
            .args(["-c", cmd])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
    .context("installing Slurm and munge")?;
    if let Some(t) = tools.iter().find(|t| !on_path(t)) {
        bail!("apt-get finished but {t} is still missing");
    }
    Ok(())
}
