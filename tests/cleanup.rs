//! Nothing left behind: SIGTERM to `xtask run` kills its QEMU, removes the
//! run folder and exits 128 + 15; a QEMU ended by a signal is reported as
//! that signal.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use schedlab_tests::Boot;
use xtask::outcome::Outcome;

/// Pids of processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd).contains(needle)
        {
            pids.push(pid);
        }
    }
    pids
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts `xtask run` on the hanging experiment; returns it and the run folder.
fn start_hanging_run() -> (Child, PathBuf) {
    let root = xtask::project_root();
    let bin = root.join("target/debug/xtask");
    assert!(
        bin.is_file(),
        "{} missing (built by cargo xtask)",
        bin.display()
    );
    // SCHEDLAB_KERNEL / SCHEDLAB_BOOT_TOOL come from `cargo xtask test`: no build.
    let child = Command::new(&bin)
        .args(["run", "--experiment", "test-hang", "--smp", "1"])
        .args(["--memory", "256", "--timeout", "600"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting xtask");
    let dir = root
        .join("target/images")
        .join(format!("run-{}-0", child.id()));
    (child, dir)
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} {pid}");
}

fn qemu_of(dir: &Path) -> Vec<u32> {
    processes_with(&dir.to_string_lossy())
}

#[test]
fn sigterm_to_xtask_kills_qemu_and_removes_the_run_folder() {
    let (mut xtask, dir) = start_hanging_run();
    wait_for("QEMU to start", Duration::from_secs(60), || {
        !qemu_of(&dir).is_empty()
    });
    let qemu = qemu_of(&dir);
    assert!(dir.is_dir(), "run folder {} should exist", dir.display());
    signal(xtask.id(), "-TERM");
    let status = xtask.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15), "xtask exit status");
    wait_for("QEMU to be gone", Duration::from_secs(10), || {
        qemu.iter()
            .all(|p| !Path::new(&format!("/proc/{p}")).exists())
    });
    // Any other process of the run (the image builder, if the signal came
    // during image creation) was killed too; a killed one may take a moment
    // to be reaped, a survivor would stay.
    wait_for(
        "every process of the run to be gone",
        Duration::from_secs(10),
        || qemu_of(&dir).is_empty(),
    );
    assert!(!dir.exists(), "run folder {} left behind", dir.display());
}

#[test]
fn sigterm_to_qemu_is_reported_as_sigterm() {
    let mut b = Boot::new("test-hang");
    b.machine = xtask::machine::Machine {
        sockets: 1,
        cores: 1,
        threads: 1,
        numa_nodes: 1,
        memory_mib: 256,
        ..xtask::machine::Machine::default()
    };
    let h = std::thread::spawn(move || b.run());
    // Find this run's QEMU: the newest one booting test-hang from our images.
    let images = xtask::project_root().join("target/images");
    let needle = format!("{}/run-{}-", images.display(), std::process::id());
    wait_for("QEMU to start", Duration::from_secs(60), || {
        !processes_with(&needle).is_empty()
    });
    std::thread::sleep(Duration::from_secs(1));
    for pid in processes_with(&needle) {
        signal(pid, "-TERM");
    }
    let r = h.join().unwrap();
    assert_eq!(r.outcome, Outcome::Signal(15), "console:\n{}", r.console());
    assert_eq!(r.outcome.exit_code(), 143);
}
