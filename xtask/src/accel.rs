//! Which QEMU accelerator a run uses: TCG (the emulator) or KVM (the host's
//! CPUs, virtualised).
//!
//! KVM is the fast path on a developer's Linux workstation: vCPUs run at
//! host speed, with the host's caches, so a time means real (virtualised)
//! time, unlike TCG's emulated one. It cannot count instructions, so
//! `--icount` (deterministic virtual time) needs TCG. Under KVM the guest
//! sees `-cpu host`: the host's vendor, model and features, with QEMU's
//! `-smp` topology in CPUID leaves 0xB/0x1F and 4, so the topology options
//! mean the same on both accelerators.
//!
//! A `/dev/kvm` that opens is not enough: on the machine this project is
//! developed on it opens, yet QEMU aborts with `-cpu host` ("failed to set
//! MSR 0x10a") and a guest never runs with `-cpu host,-arch-capabilities`.
//! So KVM counts as usable only when a test guest runs under it: a 5-byte
//! boot sector that writes to QEMU's `isa-debug-exit` port, booted by
//! SeaBIOS with the same `-cpu host` a run uses, must end QEMU with that
//! port's status within [`PROBE_TIMEOUT`]. The answer is kept in
//! `target/kvm-probe.txt` for the host's boot and QEMU version, so only
//! the first run after a reboot or a QEMU upgrade pays for the probe.
//!
//! Working is not enough for `auto` either: under nested virtualisation
//! (KVM inside a VM) every VM exit goes through the outer hypervisor, and
//! the kernel's boot makes many (firmware disk reads, APIC accesses, IPIs,
//! HLT). On a cloud VM where this project is developed the test guest took
//! 3.08 s under KVM and 0.07 s under TCG, and the kernel's `boot`
//! experiment 263 s under KVM against about 25 s under TCG; a hackbench
//! there ended in WATCHDOG. So the probe also boots the same guest under
//! TCG, and KVM counts as *slow* when its guest took more than
//! [`SLOW_FACTOR`] times TCG's plus [`SLOW_SLACK`] (on a workstation KVM's
//! test guest takes a fraction of a second).
//! `--accel auto` (the default) takes KVM when the probe found it usable
//! and fast and no `--icount` is asked for, TCG otherwise (saying so when
//! KVM was slow); `--accel kvm` is an error naming the probe's failure, and
//! takes a slow KVM with a warning.

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

/// What the probe found out about KVM here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvmProbe {
    /// It runs guests, at least about as fast as TCG.
    Usable,
    /// It runs guests, but slower than TCG by the reason's measure
    /// (nested virtualisation): `auto` keeps TCG, `--accel kvm` warns.
    Slow(String),
    /// It cannot run a guest here; the reason.
    Broken(String),
}

/// Resolves `choice` for a run with or without `--icount`; `kvm` says what
/// KVM is here ([`KvmProbe`]). An explicit `kvm` that cannot work is an
/// error naming why.
pub fn resolve(choice: AccelChoice, icount: bool, kvm: impl FnOnce() -> KvmProbe) -> Result<Accel> {
    match choice {
        AccelChoice::Tcg => Ok(Accel::Tcg),
        AccelChoice::Auto if icount => Ok(Accel::Tcg),
        AccelChoice::Auto => Ok(match kvm() {
            KvmProbe::Usable => Accel::Kvm,
            KvmProbe::Slow(why) => {
                warn_once(&format!("KVM not used: {why}; --accel kvm takes it anyway"));
                Accel::Tcg
            }
            KvmProbe::Broken(_) => Accel::Tcg,
        }),
        AccelChoice::Kvm if icount => bail!(
            "--accel kvm with --icount: instruction counting (deterministic virtual time) is a \
             TCG feature; drop --icount for KVM's real time, or use --accel tcg"
        ),
        AccelChoice::Kvm => match kvm() {
            KvmProbe::Usable => Ok(Accel::Kvm),
            KvmProbe::Slow(why) => {
                warn_once(&format!("--accel kvm: {why}"));
                Ok(Accel::Kvm)
            }
            KvmProbe::Broken(why) => bail!("--accel kvm: {why}; or use --accel tcg"),
        },
    }
}

/// A warning printed once per xtask process (compare and sweeps resolve
/// the accelerator for every run).
fn warn_once(msg: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| eprintln!("xtask: warning: {msg}"));
}

/// The accelerator on this machine: `/dev/kvm` and, when it opens, the
/// test guest ([`kvm_usable`]).
pub fn resolve_here(choice: AccelChoice, icount: bool) -> Result<Accel> {
    resolve(choice, icount, kvm_usable)
}

/// KVM is slow when its test guest takes more than this many times TCG's...
pub const SLOW_FACTOR: u32 = 3;
/// ... plus this (QEMU's start-up varies by tens of milliseconds).
pub const SLOW_SLACK: std::time::Duration = std::time::Duration::from_millis(500);

/// Whether KVM's test guest time `kvm` is slow next to TCG's `tcg`:
/// the reason when it is.
pub fn slow_kvm(kvm: std::time::Duration, tcg: std::time::Duration) -> Option<String> {
    (kvm > tcg * SLOW_FACTOR + SLOW_SLACK).then(|| {
        format!(
            "KVM runs guests here but slowly (a test guest took {:.2} s under KVM and {:.2} s \
             under TCG; nested virtualisation?), and the kernel's boot makes many VM exits \
             (answer kept in target/kvm-probe.txt until the host reboots; delete it to probe again)",
            kvm.as_secs_f64(),
            tcg.as_secs_f64()
        )
    })
}

/// How long the test guest may take under KVM (SeaBIOS reaches the boot
/// sector in well under a second on hardware virtualisation).
pub const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// A boot sector: `mov al, 0x31; out 0xf4, al; hlt; jmp $-1`, then the
/// 0x55AA signature. QEMU's `isa-debug-exit` ends with status
/// `(0x31 << 1) | 1` = 99. The disk image is padded to [`PROBE_DISK`]:
/// SeaBIOS finds no bootable device on a 512-byte disk.
const PROBE_DISK: u64 = 1 << 20;

fn probe_sector() -> Vec<u8> {
    let mut s = vec![0xB0, 0x31, 0xE6, 0xF4, 0xF4, 0xEB, 0xFD];
    s.resize(510, 0);
    s.extend_from_slice(&[0x55, 0xAA]);
    s
}

/// What KVM is here: `/dev/kvm` opens read-write, the test guest runs, and
/// how fast next to TCG (cached per host boot and QEMU version).
pub fn kvm_usable() -> KvmProbe {
    if let Some(why) = kvm_unusable(Path::new("/dev/kvm")) {
        return KvmProbe::Broken(why);
    }
    let Some(version) = crate::qemu_version::installed() else {
        return KvmProbe::Broken("QEMU is not installed yet, so KVM was not tried".into());
    };
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let key = format!("{} qemu {version} v2", boot_id.trim());
    let cache = crate::build::target_dir().join("kvm-probe.txt");
    if let Ok(text) = std::fs::read_to_string(&cache)
        && let Some((k, answer)) = text.split_once('\n')
        && k == key
    {
        let answer = answer.trim_end();
        return match answer.strip_prefix("slow: ") {
            _ if answer == "ok" => KvmProbe::Usable,
            Some(why) => KvmProbe::Slow(why.to_string()),
            None => KvmProbe::Broken(answer.to_string()),
        };
    }
    let answer = probe();
    let _ = std::fs::create_dir_all(crate::build::target_dir());
    let tmp = cache.with_extension(format!("tmp{}", std::process::id()));
    let line = match &answer {
        KvmProbe::Usable => "ok".to_string(),
        KvmProbe::Slow(why) => format!("slow: {why}"),
        KvmProbe::Broken(why) => why.clone(),
    };
    if std::fs::write(&tmp, format!("{key}\n{line}\n")).is_ok() {
        let _ = std::fs::rename(&tmp, &cache);
    }
    answer
}

/// Boots [`probe_sector`] under TCG, then under KVM with `-cpu host` (twice
/// when the first looks slow, keeping the faster), and compares their wall
/// times ([`slow_kvm`]). TCG goes first so that the
/// first QEMU start after a reboot (binary and libraries read from disk)
/// is not charged to KVM.
fn probe() -> KvmProbe {
    let start = std::time::Instant::now();
    let tcg = run_test_guest(&["-accel", "tcg", "-cpu", "max"]).map(|()| start.elapsed());
    let kvm_guest = || {
        let start = std::time::Instant::now();
        run_test_guest(&["-accel", "kvm", "-cpu", "host"]).map(|()| start.elapsed())
    };
    let mut kvm = match kvm_guest() {
        Ok(t) => t,
        Err(why) => return KvmProbe::Broken(why),
    };
    if let Ok(tcg) = tcg
        && slow_kvm(kvm, tcg).is_some()
    {
        // Once more before calling it slow: the faster of two boots.
        kvm = kvm.min(kvm_guest().unwrap_or(kvm));
    }
    match tcg.ok().and_then(|tcg| slow_kvm(kvm, tcg)) {
        Some(why) => KvmProbe::Slow(why),
        // Fast, or no TCG time to compare with: KVM ran, so take it.
        None => KvmProbe::Usable,
    }
}

/// Boots [`probe_sector`] with `accel` (QEMU arguments choosing the
/// accelerator and CPU); `Ok` when it ends QEMU with status 99.
fn run_test_guest(accel: &[&str]) -> std::result::Result<(), String> {
    use std::io::Read as _;
    let dir = std::env::temp_dir().join(format!("schedlab-kvm-probe-{}", std::process::id()));
    let img = dir.join("probe.img");
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&img, probe_sector()))
        .and_then(|()| std::fs::File::options().write(true).open(&img))
        .and_then(|f| f.set_len(PROBE_DISK))
        .map_err(|e| format!("writing the KVM test guest to {}: {e}", img.display()))?;
    let mut cmd = std::process::Command::new("qemu-system-x86_64");
    cmd.args(["-machine", "q35", "-m", "64M"])
        .args(accel)
        .args(["-nodefaults", "-display", "none", "-no-reboot"])
        .arg("-drive")
        .arg(format!("format=raw,file={}", img.display()))
        .args(["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    crate::cleanup::tie_to_xtask(&mut cmd);
    let answer = match cmd.spawn() {
        Err(e) => Err(format!(
            "starting qemu-system-x86_64 for the KVM test guest: {e}"
        )),
        Ok(mut child) => {
            crate::cleanup::register_qemu(child.id());
            let start = std::time::Instant::now();
            let status = loop {
                match child.try_wait() {
                    Ok(Some(st)) => break Some(st),
                    Ok(None) if start.elapsed() < PROBE_TIMEOUT => {
                        std::thread::sleep(std::time::Duration::from_millis(50))
                    }
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break None;
                    }
                }
            };
            crate::cleanup::unregister_qemu(child.id());
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let last = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
            match status.and_then(|s| s.code()) {
                Some(99) => Ok(()),
                _ if status.is_none() => Err(format!(
                    "/dev/kvm opens, but a test guest did not run under KVM within {} s \
                     (QEMU {})",
                    PROBE_TIMEOUT.as_secs(),
                    accel.join(" ")
                )),
                _ => Err(format!(
                    "/dev/kvm opens, but QEMU could not run a test guest under KVM \
                     ({}, {}): {last}",
                    accel.join(" "),
                    status.map_or("no status".into(), |s| s.to_string())
                )),
            }
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn works() -> KvmProbe {
        KvmProbe::Usable
    }
    fn broken() -> KvmProbe {
        KvmProbe::Broken("no KVM here".into())
    }
    fn slow() -> KvmProbe {
        KvmProbe::Slow("slow here".into())
    }

    #[test]
    fn a_slow_kvm_is_left_to_an_explicit_choice() {
        assert_eq!(resolve(AccelChoice::Auto, false, slow).unwrap(), Accel::Tcg);
        assert_eq!(resolve(AccelChoice::Kvm, false, slow).unwrap(), Accel::Kvm);
        let ms = std::time::Duration::from_millis;
        // This cloud VM: 3.08 s under nested KVM, 0.07 s under TCG.
        let why = slow_kvm(ms(3080), ms(70)).expect("nested KVM is slow");
        assert!(
            why.contains("3.08 s under KVM") && why.contains("0.07 s"),
            "{why}"
        );
        // A workstation: KVM's guest in a fraction of a second.
        assert_eq!(slow_kvm(ms(150), ms(70)), None);
        assert_eq!(slow_kvm(ms(700), ms(70)), None);
        assert!(slow_kvm(ms(800), ms(70)).is_some());
    }

    #[test]
    fn tcg_is_taken_when_asked_for_under_icount_or_when_kvm_does_not_work() {
        assert_eq!(resolve(AccelChoice::Tcg, false, works).unwrap(), Accel::Tcg);
        assert_eq!(
            resolve(AccelChoice::Auto, false, broken).unwrap(),
            Accel::Tcg
        );
        assert_eq!(resolve(AccelChoice::Auto, true, works).unwrap(), Accel::Tcg);
    }

    #[test]
    fn auto_takes_kvm_when_it_works_and_not_under_icount() {
        assert_eq!(
            resolve(AccelChoice::Auto, false, works).unwrap(),
            Accel::Kvm
        );
        assert_eq!(resolve(AccelChoice::Kvm, false, works).unwrap(), Accel::Kvm);
    }

    #[test]
    fn explicit_kvm_errors_name_the_reason() {
        let e = resolve(AccelChoice::Kvm, false, broken)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no KVM here") && e.contains("--accel tcg"),
            "{e}"
        );
        let e = resolve(AccelChoice::Kvm, true, works)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--icount"), "{e}");
    }

    #[test]
    fn a_device_that_cannot_be_opened_says_why() {
        let e = kvm_unusable(Path::new("/nonexistent/kvm")).unwrap();
        assert!(e.contains("/nonexistent/kvm does not exist"), "{e}");
        assert!(kvm_unusable(Path::new("/dev/null")).is_none());
    }

    #[test]
    fn the_test_guest_is_one_boot_sector_that_writes_the_exit_port() {
        let s = probe_sector();
        assert_eq!(s.len(), 512);
        assert_eq!(&s[510..], &[0x55, 0xAA]);
        // out 0xf4, al with al = 0x31: QEMU exits with (0x31 << 1) | 1.
        assert_eq!(&s[..4], &[0xB0, 0x31, 0xE6, 0xF4]);
        assert_eq!((0x31 << 1) | 1, 99);
    }

    /// The same guest under TCG: proves the probe can pass (a probe that
    /// always failed would silently keep every workstation on TCG).
    #[test]
    fn the_test_guest_ends_qemu_with_99_under_tcg() {
        if crate::qemu_version::installed().is_none() {
            crate::skips::record(
                "accel::the_test_guest_ends_qemu_with_99_under_tcg",
                "QEMU is not installed",
            );
            return;
        }
        run_test_guest(&["-accel", "tcg", "-cpu", "max"]).unwrap();
    }
}
