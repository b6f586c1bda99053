//! Which QEMU accelerator a run uses: TCG (the emulator) or KVM (the host's
//! CPUs, virtualised).
//!
//! KVM is the fast path on a developer's Linux workstation: vCPUs run at
//! host speed, with the host's caches, so a time means real (virtualised)
//! time, unlike TCG's emulated one. It cannot count instructions, so
//! `--icount` (deterministic virtual time) needs TCG. `--accel auto` (the
//! default) takes KVM when `/dev/kvm` can be opened for reading and writing
//! and no `--icount` is asked for, TCG otherwise. Under KVM the guest sees
//! `-cpu host`: the host's vendor, model and features, with QEMU's `-smp`
//! topology in CPUID leaves 0xB/0x1F and 4, so the topology options mean
//! the same on both accelerators.

use std::path::Path;

use anyhow::{Result, bail};

/// What the user asked for (`--accel`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AccelChoice {
    /// KVM when /dev/kvm is usable and --icount is not given, else TCG.
    #[default]
    Auto,
    /// QEMU's emulator (multi-threaded, or single-threaded under --icount).
    Tcg,
    /// Hardware virtualisation; an error when /dev/kvm is not usable.
    Kvm,
}

/// The accelerator a run actually uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    Tcg,
    Kvm,
}

/// Why `/dev/kvm` at `dev` cannot be used, or `None` when it can.
pub fn kvm_unusable(dev: &Path) -> Option<String> {
    match std::fs::OpenOptions::new().read(true).write(true).open(dev) {
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(format!(
            "{} does not exist: the CPU has no VT-x/AMD-V, it is disabled in the firmware, \
             the kvm_intel/kvm_amd module is not loaded, or this is a VM without nested \
             virtualisation",
            dev.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Some(format!(
            "{} is not readable and writable by this user (add the user to the 'kvm' group: \
             sudo adduser $USER kvm, then log in again)",
            dev.display()
        )),
        Err(e) => Some(format!("{} cannot be opened: {e}", dev.display())),
    }
}

/// Resolves `choice` for a run with or without `--icount`, probing `dev`
/// (`/dev/kvm`). An explicit `kvm` that cannot work is an error naming why.
pub fn resolve(choice: AccelChoice, icount: bool, dev: &Path) -> Result<Accel> {
    match choice {
        AccelChoice::Tcg => Ok(Accel::Tcg),
        AccelChoice::Auto if icount => Ok(Accel::Tcg),
        AccelChoice::Auto => Ok(match kvm_unusable(dev) {
            None => Accel::Kvm,
            Some(_) => Accel::Tcg,
        }),
        AccelChoice::Kvm if icount => bail!(
            "--accel kvm with --icount: instruction counting (deterministic virtual time) is a \
             TCG feature; drop --icount for KVM's real time, or use --accel tcg"
        ),
        AccelChoice::Kvm => match kvm_unusable(dev) {
            None => Ok(Accel::Kvm),
            Some(why) => bail!("--accel kvm: {why}; or use --accel tcg"),
        },
    }
}

/// The accelerator on this machine's `/dev/kvm`.
pub fn resolve_here(choice: AccelChoice, icount: bool) -> Result<Accel> {
    resolve(choice, icount, Path::new("/dev/kvm"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcg_is_taken_when_asked_for_or_when_kvm_cannot_be_opened() {
        let missing = Path::new("/nonexistent/kvm");
        assert_eq!(
            resolve(AccelChoice::Tcg, false, missing).unwrap(),
            Accel::Tcg
        );
        assert_eq!(
            resolve(AccelChoice::Auto, false, missing).unwrap(),
            Accel::Tcg
        );
        assert_eq!(
            resolve(AccelChoice::Auto, true, missing).unwrap(),
            Accel::Tcg
        );
    }

    #[test]
    fn auto_takes_kvm_when_the_device_opens_read_write_and_not_under_icount() {
        // Any read-write openable file stands for the device: the probe is
        // the open, as QEMU's own is.
        let dir = std::env::temp_dir().join(format!("accel-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dev = dir.join("kvm");
        std::fs::write(&dev, b"").unwrap();
        assert_eq!(resolve(AccelChoice::Auto, false, &dev).unwrap(), Accel::Kvm);
        assert_eq!(resolve(AccelChoice::Kvm, false, &dev).unwrap(), Accel::Kvm);
        assert_eq!(resolve(AccelChoice::Auto, true, &dev).unwrap(), Accel::Tcg);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn explicit_kvm_errors_name_the_reason() {
        let e = resolve(AccelChoice::Kvm, false, Path::new("/nonexistent/kvm"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/kvm does not exist"), "{e}");
        assert!(e.contains("--accel tcg"), "{e}");
        let e = resolve(AccelChoice::Kvm, true, Path::new("/dev/null"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--icount"), "{e}");
    }
}
