//! Builds the `qemu-system-x86_64` command line for one run.
//!
//! Fixed parts: q35 machine, `-cpu max,vendor=GenuineIntel` (under TCG this
//! makes CPUID leaves 4 and 0xB agree with `-smp`), serial on stdio, no display,
//! no monitor, `-no-reboot` (a triple fault exits with status 0 instead of
//! looping) and the `isa-debug-exit` device the kernel uses to report status.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::build::Firmware;
use crate::machine::Machine;
use crate::prereq;

/// Everything that decides the QEMU command line.
#[derive(Clone, Debug)]
pub struct QemuConfig {
    pub machine: Machine,
    pub firmware: Firmware,
    /// `-icount shift=N,sleep=off`: deterministic virtual time (single-threaded TCG).
    pub icount_shift: Option<u32>,
    /// Guest RNG seed (`-seed`), for repeatable runs.
    pub seed: Option<u64>,
    /// Extra arguments appended verbatim (`--qemu-arg`).
    pub extra_args: Vec<String>,
}

impl QemuConfig {
    /// The full command for booting `image`. For UEFI, a private copy of the
    /// OVMF variable store is placed next to the image.
    pub fn command(&self, image: &Path) -> Result<Command> {
        let mut cmd = Command::new("qemu-system-x86_64");
        cmd.args(["-machine", "q35", "-cpu", "max,vendor=GenuineIntel"]);
        cmd.args(self.machine.qemu_args());
        cmd.arg("-drive")
            .arg(format!("format=raw,file={}", image.display()));
        cmd.args([
            "-serial",
            "stdio",
            "-display",
            "none",
            "-monitor",
            "none",
            "-no-reboot",
        ]);
        cmd.args(["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]);
        if self.firmware == Firmware::Uefi {
            let code =
                prereq::ovmf_code().context("OVMF is not installed (apt-get install ovmf)")?;
            let vars = ovmf_vars_copy(image, code)?;
            cmd.arg("-drive")
                .arg(format!("if=pflash,format=raw,readonly=on,file={code}"));
            cmd.arg("-drive")
                .arg(format!("if=pflash,format=raw,file={}", vars.display()));
        }
        match self.icount_shift {
            Some(shift) => {
                cmd.args(["-icount", &format!("shift={shift},sleep=off")]);
                cmd.args([
                    "-accel",
                    "tcg,thread=single",
                    "-rtc",
                    "base=2020-01-01T00:00:00,clock=vm",
                ]);
            }
            None => {
                cmd.args(["-accel", "tcg,thread=multi"]);
            }
        }
        if let Some(seed) = self.seed {
            cmd.args(["-seed", &seed.to_string()]);
        }
        cmd.args(&self.extra_args);
        Ok(cmd)
    }
}

/// OVMF needs a writable variable store; each run gets its own copy.
fn ovmf_vars_copy(image: &Path, code: &str) -> Result<PathBuf> {
    let src = Path::new(code).with_file_name(if code.ends_with("_4M.fd") {
        "OVMF_VARS_4M.fd"
    } else {
        "OVMF_VARS.fd"
    });
    let dst = image.with_file_name("OVMF_VARS.fd");
    std::fs::copy(&src, &dst)
        .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
    Ok(dst)
}

/// Renders a command for display (`$ qemu-system-x86_64 ...`).
pub fn display(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}
