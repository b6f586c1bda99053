//! What a run's end means: QEMU's exit status (from the kernel's write to the
//! `isa-debug-exit` port), a host-side timeout, or QEMU failing by itself.
//! The mapping is documented in `docs/results.md`.

use std::fmt;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Kernel wrote 0x10: the experiment passed (QEMU status 33).
    Success,
    /// Kernel wrote 0x11: the experiment failed or its configuration was bad (35).
    Failure,
    /// Kernel wrote 0x12: a Rust panic (37).
    Panic,
    /// Kernel wrote 0x13: a CPU exception (39).
    Exception,
    /// Kernel wrote 0x14: the in-kernel watchdog saw no progress (41).
    Watchdog,
    /// QEMU exited 0: with `-no-reboot` that is a reset, e.g. a triple fault.
    Reset,
    /// The run exceeded its wall-clock timeout and was killed.
    Timeout,
    /// Any other QEMU status (QEMU could not start, bad argument, ...).
    QemuError(i32),
    /// QEMU was ended by this signal from outside xtask (SIGKILL in its wait
    /// status; SIGINT/SIGTERM/SIGHUP from its "terminating on signal" message).
    Signal(i32),
    /// A captured console log ends before the run's `exit` record (the
    /// capture stopped early, or the machine hung; `report --from`).
    Truncated,
}

impl Outcome {
    /// Interprets QEMU's exit status.
    pub fn from_qemu_status(status: i32) -> Outcome {
        match status {
            33 => Outcome::Success,
            35 => Outcome::Failure,
            37 => Outcome::Panic,
            39 => Outcome::Exception,
            41 => Outcome::Watchdog,
            0 => Outcome::Reset,
            other => Outcome::QemuError(other),
        }
    }

    /// The outcome an `exit` record's `status` names (None: not a status the
    /// kernel writes).
    pub fn from_kernel_status(name: &str) -> Option<Outcome> {
        Some(match name {
            "success" => Outcome::Success,
            "failure" => Outcome::Failure,
            "panic" => Outcome::Panic,
            "exception" => Outcome::Exception,
            "watchdog" => Outcome::Watchdog,
            _ => return None,
        })
    }

    /// The `status` the kernel's `exit` record should carry for this outcome.
    pub fn kernel_status_name(self) -> Option<&'static str> {
        Some(match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Panic => "panic",
            Outcome::Exception => "exception",
            Outcome::Watchdog => "watchdog",
            _ => return None,
        })
    }

    /// Exit status of `cargo xtask run` for this outcome.
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Success => 0,
            Outcome::Failure => 1,
            Outcome::Panic => 3,
            Outcome::Exception => 4,
            Outcome::Watchdog => 5,
            Outcome::Reset => 6,
            Outcome::QemuError(_) => 7,
            Outcome::Truncated => 8,
            Outcome::Timeout => 124,
            Outcome::Signal(sig) => 128 + sig,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Success => write!(f, "success"),
            Outcome::Failure => write!(f, "FAILURE: the experiment reported failure"),
            Outcome::Panic => write!(f, "PANIC: the kernel panicked"),
            Outcome::Exception => write!(f, "EXCEPTION: an unexpected CPU exception"),
            Outcome::Watchdog => write!(f, "WATCHDOG: the kernel stopped making progress"),
            Outcome::Reset => write!(
                f,
                "RESET: the machine reset (triple fault?) before reporting"
            ),
            Outcome::Timeout => write!(
                f,
                "TIMEOUT: no exit before the wall-clock limit; QEMU killed"
            ),
            Outcome::QemuError(s) => {
                write!(f, "QEMU ERROR: qemu-system-x86_64 exited with status {s}")
            }
            Outcome::Truncated => write!(
                f,
                "TRUNCATED: the log ends before the run's end record (no `exit` record)"
            ),
            Outcome::Signal(sig) => write!(
                f,
                "KILLED: QEMU was ended by signal {sig}{} from outside xtask",
                match sig {
                    1 => " (SIGHUP)",
                    2 => " (SIGINT)",
                    9 => " (SIGKILL)",
                    15 => " (SIGTERM)",
                    _ => "",
                }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_distinct_exit_codes() {
        let all = [33, 35, 37, 39, 41, 0, 1].map(Outcome::from_qemu_status);
        let mut codes: Vec<i32> = all.iter().map(|o| o.exit_code()).collect();
        codes.push(Outcome::Timeout.exit_code());
        codes.push(Outcome::Truncated.exit_code());
        codes.push(2); // xtask's own errors
        codes.extend([1, 2, 9, 15].map(|s| Outcome::Signal(s).exit_code()));
        let n = codes.len();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), n);
        assert_eq!(Outcome::from_qemu_status(33).exit_code(), 0);
        assert_eq!(Outcome::from_qemu_status(1), Outcome::QemuError(1));
        for o in all.iter().filter_map(|o| o.kernel_status_name()) {
            assert_eq!(
                Outcome::from_kernel_status(o).and_then(Outcome::kernel_status_name),
                Some(o)
            );
        }
        assert_eq!(Outcome::from_kernel_status("reset"), None);
    }
}
