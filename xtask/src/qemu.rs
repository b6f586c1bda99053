//! Builds the `qemu-system-x86_64` command line for one run.
//!
//! Fixed parts: q35 machine, `-cpu max,vendor=GenuineIntel` (under TCG this
//! makes CPUID leaves 4 and 0xB agree with `-smp`), serial on stdio, no display,
//! no monitor, `-no-reboot` (a triple fault exits with status 0 instead of
//! looping) and the `isa-debug-exit` device the kernel uses to report status.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::accel::Accel;
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
    /// TCG or KVM (`crate::accel`); KVM excludes `icount_shift`.
    pub accel: Accel,
    /// Guest RNG seed (`-seed`), for repeatable runs.
    pub seed: Option<u64>,
    /// Extra arguments appended verbatim (`--qemu-arg`).
    pub extra_args: Vec<String>,
}

impl QemuConfig {
    /// Refuses what cannot boot, before any build: a legacy-BIOS boot with no
    /// VGA device. bootloader 0.11.15's BIOS stage 2 asks the video BIOS for
    /// VESA modes (int 0x10, AX=0x4F00) and stops when there is none, before
    /// it prints anything on the serial port; UEFI boots headless.
    pub fn validate(&self) -> Result<()> {
        // What the installed QEMU can do (not installed yet: checked again
        // when the command is built, after the prerequisites).
        if let Some(v) = crate::qemu_version::installed() {
            self.version_check(v)?;
        }
        if self.firmware == Firmware::Bios && !has_vga(&self.extra_args) {
            anyhow::bail!(
                "--qemu-arg {}: a machine without a VGA device cannot boot through legacy BIOS \
                 (bootloader 0.11.15's BIOS stage needs a VESA video BIOS and hangs silently \
                 without one); boot headless with --uefi, as a server without VGA would",
                self.extra_args.join(" ")
            );
        }
        Ok(())
    }

    /// [`crate::qemu_version::check`] for this machine: what the `-cpu`
    /// line must hide for this QEMU.
    fn version_check(
        &self,
        v: crate::qemu_version::Version,
    ) -> Result<crate::qemu_version::Workarounds> {
        let m = &self.machine;
        let max_apic =
            topology::qemu_max_apic_id(m.sockets, m.dies, m.cores, m.threads).unwrap_or(u64::MAX);
        crate::qemu_version::check(v, max_apic, m.dies, self.icount_shift.is_some(), m.cpus())
    }

    /// The full command for booting `image`. For UEFI, a private copy of the
    /// OVMF variable store is placed next to the image.
    pub fn command(&self, image: &Path) -> Result<Command> {
        let v = crate::qemu_version::installed()
            .context("qemu-system-x86_64 --version did not say its version")?;
        let w = self.version_check(v)?;
        if let Some(warning) = crate::qemu_version::icount_smp_warning(
            v,
            self.icount_shift.is_some(),
            self.machine.cpus(),
        ) {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| eprintln!("xtask: warning: {warning}"));
        }
        let mut cpu = String::from(match self.accel {
            Accel::Kvm => "host",
            Accel::Tcg => "max,vendor=GenuineIntel",
        });
        if w.hide_x2apic {
            cpu.push_str(",-x2apic");
        }
        if w.hide_leaf_1f {
            cpu.push_str(",level=0x1e");
        }
        let mut cmd = Command::new("qemu-system-x86_64");
        cmd.args(["-machine", "q35", "-cpu", &cpu]);
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
            None if self.accel == Accel::Kvm => {
                cmd.args(["-accel", "kvm"]);
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

/// Whether QEMU's extra arguments leave the machine a VGA device: q35 has
/// one unless `-nodefaults` or `-vga none`, and `-vga TYPE` or a display
/// `-device` adds one back.
pub fn has_vga(extra: &[String]) -> bool {
    let mut vga = true;
    let mut it = extra.iter().map(String::as_str).peekable();
    while let Some(a) = it.next() {
        let value = |it: &mut std::iter::Peekable<_>| it.next().unwrap_or("");
        match a {
            "-nodefaults" => vga = false,
            "-vga" => vga = value(&mut it) != "none",
            "-device" => {
                let d: &str = value(&mut it);
                let model = d.split(',').next().unwrap_or("");
                if [
                    "VGA",
                    "cirrus-vga",
                    "bochs-display",
                    "virtio-vga",
                    "qxl-vga",
                    "secondary-vga",
                    "ati-vga",
                    "vmware-svga",
                ]
                .contains(&model)
                {
                    vga = true;
                }
            }
            _ => {}
        }
    }
    vga
}

#[cfg(test)]
mod vga_tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn headless_machines_are_recognised() {
        assert!(has_vga(&v(&[])));
        assert!(!has_vga(&v(&["-nodefaults"])));
        assert!(!has_vga(&v(&["-vga", "none"])));
        assert!(has_vga(&v(&["-nodefaults", "-vga", "std"])));
        assert!(has_vga(&v(&["-nodefaults", "-device", "VGA,vgamem_mb=16"])));
        assert!(!has_vga(&v(&["-nodefaults", "-device", "e1000"])));
        let q = |firmware, extra: &[&str]| QemuConfig {
            machine: crate::machine::Machine::default(),
            firmware,
            icount_shift: None,
            accel: Accel::Tcg,
            seed: None,
            extra_args: v(extra),
        };
        let e = q(Firmware::Bios, &["-nodefaults"]).validate().unwrap_err();
        assert!(e.to_string().contains("--uefi"), "{e}");
        q(Firmware::Uefi, &["-nodefaults"]).validate().unwrap();
        q(Firmware::Bios, &[]).validate().unwrap();
    }
}
