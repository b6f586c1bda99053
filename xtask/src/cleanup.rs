//! Nothing left behind: every QEMU xtask starts and every run folder it
//! creates is registered here, so that a SIGINT, SIGTERM or SIGHUP to xtask
//! (or a panic) kills those QEMUs and removes those folders before xtask
//! exits (status 128 + signal number). QEMU runs in its own process group
//! (a terminal's Ctrl-C reaches xtask only, which then reports and cleans
//! up) with `PR_SET_PDEATHSIG`, so even a SIGKILL of xtask takes QEMU along.
//! `--keep` keeps the run folders (image, boot configuration, OVMF vars).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

struct Live {
    qemu: Vec<u32>,
    dirs: Vec<PathBuf>,
}

static LIVE: Mutex<Live> = Mutex::new(Live {
    qemu: Vec::new(),
    dirs: Vec::new(),
});
static KEEP: AtomicBool = AtomicBool::new(false);

/// The signal xtask is ending on (0 = none): set by the signal thread
/// before it kills the children, so the main thread, which may see its
/// QEMU die of that SIGKILL first, leaves the exit (128 + this signal) to
/// the signal thread instead of reporting QEMU's SIGKILL as its own.
static EXITING_ON: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

fn live() -> std::sync::MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// `--keep`: leave run folders in place (their paths are printed).
pub fn set_keep(keep: bool) {
    KEEP.store(keep, Ordering::Relaxed);
}

/// Whether run folders are kept.
pub fn keep() -> bool {
    KEEP.load(Ordering::Relaxed)
}

/// Makes `cmd`'s process die with xtask however xtask ends (even SIGKILL:
/// `PR_SET_PDEATHSIG`), in its own process group so a terminal's Ctrl-C
/// reaches xtask only, which then kills it and reports. Register the
/// started process with [`register_qemu`] so signals to xtask kill it too.
pub fn tie_to_xtask(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    cmd.process_group(0);
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec and calls
    // only async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1); // xtask already gone
            }
            Ok(())
        });
    }
}

/// Records a started QEMU (or any child process xtask must not leave behind:
/// a sweep's run in its own process).
pub fn register_qemu(pid: u32) {
    live().qemu.push(pid);
}

/// Forgets a QEMU that has exited.
pub fn unregister_qemu(pid: u32) {
    live().qemu.retain(|&p| p != pid);
}

/// Records a run folder.
pub fn register_dir(dir: &Path) {
    live().dirs.push(dir.to_path_buf());
}

/// Removes a run folder (unless `--keep`) and forgets it.
pub fn finish_dir(dir: &Path) {
    live().dirs.retain(|d| d != dir);
    if keep() {
        eprintln!("xtask: run folder kept: {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Kills every registered QEMU (SIGKILL) and removes every registered run
/// folder unless `--keep`. Returns how many QEMUs were killed.
pub fn kill_all() -> usize {
    let mut l = live();
    let n = l.qemu.len();
    for pid in l.qemu.drain(..) {
        // SAFETY: kill(2) has no memory-safety preconditions; `pid` is a
        // child of this process that has not been reaped (it is unregistered
        // right after it is waited for), so the id cannot have been reused.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
    for d in l.dirs.drain(..) {
        if !keep() {
            let _ = std::fs::remove_dir_all(&d);
        }
    }
    n
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

/// Called by `main` before it returns: if a signal is being handled, wait
/// for the signal thread to finish the cleanup and exit with 128 + that
/// signal (it always does: `process::exit` ends every thread).
pub fn defer_to_signal() {
    if EXITING_ON.load(Ordering::SeqCst) != 0 {
        loop {
            std::thread::park();
        }
    }
}

/// Installs the SIGINT/SIGTERM/SIGHUP handling and a panic hook that clean
/// up before xtask ends. For `cargo xtask` itself (the tests do not need it).
pub fn install() -> Result<()> {
    let mut signals =
        Signals::new([SIGINT, SIGTERM, SIGHUP]).context("installing signal handlers")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                EXITING_ON.store(sig, Ordering::SeqCst);
                let n = kill_all();
                eprintln!(
                    "xtask: {} received: {n} child process(es) (QEMU, sweep runs) killed{}; exiting with status {}",
                    signal_name(sig),
                    if keep() { "" } else { ", run folders removed" },
                    128 + sig
                );
                std::process::exit(128 + sig);
            }
        })
        .context("starting the signal thread")?;
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        kill_all();
        default(info);
    }));
    Ok(())
}
