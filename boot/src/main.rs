//! `schedlab-boot`: turns the kernel ELF into bootable disk images.
//!
//! Usage: `schedlab-boot <kernel-elf> (--bios OUT | --uefi OUT)... [--ramdisk FILE]`
//!
//! The ramdisk carries the run's boot configuration (experiment, log level, ...)
//! so that changing an option does not rebuild the kernel, only the image.
//! This crate is deliberately tiny: all policy lives in `xtask`.

use std::path::PathBuf;
use std::process::ExitCode;

use bootloader::{BiosBoot, BootConfig, UefiBoot};

struct Args {
    kernel: PathBuf,
    bios: Option<PathBuf>,
    uefi: Option<PathBuf>,
    ramdisk: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args_os().skip(1);
    let kernel = it.next().ok_or("missing <kernel-elf>")?.into();
    let (mut bios, mut uefi, mut ramdisk) = (None, None, None);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .map(PathBuf::from)
                .ok_or(format!("{flag:?} needs a value"))
        };
        match flag.to_str() {
            Some("--bios") => bios = Some(value()?),
            Some("--uefi") => uefi = Some(value()?),
            Some("--ramdisk") => ramdisk = Some(value()?),
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    if bios.is_none() && uefi.is_none() {
        return Err("nothing to do: give --bios OUT and/or --uefi OUT".into());
    }
    Ok(Args {
        kernel,
        bios,
        uefi,
        ramdisk,
    })
}

fn boot_config() -> BootConfig {
    let mut cfg = BootConfig::default();
    // The bootloader's own log goes to the framebuffer only; serial carries the
    // kernel's log and result records.
    cfg.serial_logging = false;
    cfg.frame_buffer_logging = true;
    cfg
}

fn run(args: Args) -> Result<(), String> {
    if !args.kernel.is_file() {
        return Err(format!(
            "kernel ELF {} does not exist",
            args.kernel.display()
        ));
    }
    if let Some(out) = &args.bios {
        let mut b = BiosBoot::new(&args.kernel);
        if let Some(rd) = &args.ramdisk {
            b.set_ramdisk(rd);
        }
        b.set_boot_config(&boot_config());
        b.create_disk_image(out)
            .map_err(|e| format!("BIOS image {}: {e:#}", out.display()))?;
    }
    if let Some(out) = &args.uefi {
        let mut b = UefiBoot::new(&args.kernel);
        if let Some(rd) = &args.ramdisk {
            b.set_ramdisk(rd);
        }
        b.set_boot_config(&boot_config());
        b.create_disk_image(out)
            .map_err(|e| format!("UEFI image {}: {e:#}", out.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match parse_args().and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("schedlab-boot: {e}");
            ExitCode::FAILURE
        }
    }
}
