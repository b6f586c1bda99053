//! Runs QEMU to completion (or timeout) and separates the kernel's console
//! output into log lines and result records.
//!
//! QEMU's stdout (the serial port) is read line by line on a helper thread;
//! the main thread enforces the wall-clock limit and kills QEMU when it passes.
//! Nothing is lost: every line is kept, and every record line is parsed (a
//! malformed record is reported, not dropped silently).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::RECORD_PREFIX;
use crate::outcome::Outcome;

/// Everything a run produced.
#[derive(Debug)]
pub struct RunResult {
    pub outcome: Outcome,
    /// Parsed result records, in order.
    pub records: Vec<Value>,
    /// Console lines that were not records (ANSI escapes removed).
    pub log: Vec<String>,
    /// Record lines that were not valid JSON, with the parse error.
    pub bad_records: Vec<(String, String)>,
    /// QEMU's own stderr.
    pub stderr: String,
    /// Wall time from QEMU start to exit.
    pub wall: Duration,
}

impl RunResult {
    /// Records of the given `type`.
    pub fn records_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.records.iter().filter(move |r| r["type"] == kind)
    }

    /// The first record of the given `type`.
    pub fn record(&self, kind: &str) -> Option<&Value> {
        self.records.iter().find(|r| r["type"] == kind)
    }

    /// The whole console output (log and records) as one string, for failure messages.
    pub fn console(&self) -> String {
        let mut s = self.log.join("\n");
        s.push_str("\n--- qemu stderr ---\n");
        s.push_str(&self.stderr);
        s
    }
}

/// Removes ANSI/VT100 escape sequences (OVMF paints the serial console with them).
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // CSI: parameters then one final byte in '@'..='~'.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
        } else if c != '\r' && (c >= ' ' || c == '\t') {
            out.push(c);
        }
    }
    out
}

/// Starts `cmd`, streams its console (echoing it when `echo`), stops it after
/// `timeout`.
pub fn run(cmd: Command, timeout: Duration, echo: bool) -> Result<RunResult> {
    run_logged(cmd, timeout, echo, None)
}

/// [`run`], also copying the console's raw bytes, exactly as they arrive
/// (escape sequences, carriage returns and all), to `console` (`run
/// --console-log FILE`): the same capture a serial cable gives, which
/// `cargo xtask report --from` turns back into this run's report.
pub fn run_logged(
    mut cmd: Command,
    timeout: Duration,
    echo: bool,
    console: Option<std::fs::File>,
) -> Result<RunResult> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Own process group: a terminal's Ctrl-C reaches xtask, which kills QEMU
    // and reports (`cleanup`), instead of QEMU exiting by itself; and QEMU
    // dies with xtask, however xtask ends.
    crate::cleanup::tie_to_xtask(&mut cmd);
    let start = Instant::now();
    let mut child = cmd.spawn().context("starting qemu-system-x86_64")?;
    crate::cleanup::register_qemu(child.id());
    let stdout = child.stdout.take().context("qemu stdout")?;
    let mut stderr_pipe = child.stderr.take().context("qemu stderr")?;
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut buf = Vec::new();
        let mut console = console;
        while r.read_until(b'\n', &mut buf).is_ok_and(|n| n > 0) {
            if let Some(f) = &mut console
                && let Err(e) = f.write_all(&buf)
            {
                eprintln!("xtask: error: --console-log: {e}; no longer copying the console");
                console = None;
            }
            if tx.send(String::from_utf8_lossy(&buf).into_owned()).is_err() {
                break;
            }
            buf.clear();
        }
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr_pipe.read_to_string(&mut s);
        s
    });

    let mut result = RunResult {
        outcome: Outcome::Timeout,
        records: Vec::new(),
        log: Vec::new(),
        bad_records: Vec::new(),
        stderr: String::new(),
        wall: Duration::ZERO,
    };
    let deadline = start + timeout;
    let status = loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(raw) => take_line(&mut result, &raw, echo),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // stdout closed: QEMU is exiting.
                let remaining = deadline.saturating_duration_since(Instant::now());
                break wait_until(&mut child, remaining)?;
            }
        }
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
    };
    let (status, timed_out) = match status {
        Some(s) => (s, false),
        None => {
            let _ = child.kill();
            (child.wait()?, true)
        }
    };
    crate::cleanup::unregister_qemu(child.id());
    let _ = reader.join();
    // Drain lines that arrived after the exit was noticed.
    while let Ok(raw) = rx.try_recv() {
        take_line(&mut result, &raw, echo);
    }
    result.stderr = err_reader.join().unwrap_or_default();
    result.wall = start.elapsed();
    result.outcome = outcome_of(timed_out, status, &result.stderr);
    Ok(result)
}

/// What QEMU's end means. A signal from outside is reported as that signal:
/// SIGKILL shows in the wait status; QEMU catches SIGINT, SIGTERM and SIGHUP,
/// says "terminating on signal N" on stderr and exits 0, which would
/// otherwise read as a reset under `-no-reboot`.
pub fn outcome_of(timed_out: bool, status: std::process::ExitStatus, stderr: &str) -> Outcome {
    if timed_out {
        return Outcome::Timeout;
    }
    match (status.code(), status.signal()) {
        (Some(0), _) => match terminating_signal(stderr) {
            Some(sig) => Outcome::Signal(sig),
            None => Outcome::Reset,
        },
        (Some(c), _) => Outcome::from_qemu_status(c),
        (None, Some(sig)) => Outcome::Signal(sig),
        (None, None) => Outcome::QemuError(-1),
    }
}

/// The N of QEMU's "terminating on signal N" message.
fn terminating_signal(stderr: &str) -> Option<i32> {
    let rest = stderr.split("terminating on signal ").nth(1)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn wait_until(
    child: &mut std::process::Child,
    limit: Duration,
) -> Result<Option<std::process::ExitStatus>> {
    let end = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait()? {
            return Ok(Some(s));
        }
        if Instant::now() >= end {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One console line, separated: the log text (ANSI escapes and carriage
/// returns removed; for a record line, what came before the prefix) and the
/// record it carries, parsed, or the record text and its JSON error.
#[derive(Debug, PartialEq)]
pub struct ConsoleLine {
    pub log: Option<String>,
    pub record: Option<Result<Value, (String, String)>>,
}

/// Separates one raw console line (with or without its line ending) into
/// log text and record: the one parser of the kernel's console, shared by
/// live QEMU runs and captured logs (`capture`).
pub fn parse_line(raw: &str) -> ConsoleLine {
    let line = strip_ansi(raw.trim_end_matches(['\n', '\r']));
    // The prefix may follow firmware noise on the same line; records start at the prefix.
    if let Some(pos) = line.find(RECORD_PREFIX) {
        let json = &line[pos + RECORD_PREFIX.len()..];
        let record =
            serde_json::from_str::<Value>(json).map_err(|e| (json.to_string(), e.to_string()));
        let log = (pos > 0).then(|| line[..pos].to_string());
        return ConsoleLine {
            log,
            record: Some(record),
        };
    }
    ConsoleLine {
        log: Some(line),
        record: None,
    }
}

/// Adds one parsed console line to `result` (echoing it when `echo`).
pub fn add_line(result: &mut RunResult, line: ConsoleLine, echo: bool) {
    match line.record {
        Some(Ok(v)) => result.records.push(v),
        Some(Err((json, e))) => {
            if echo {
                eprintln!("xtask: malformed record ({e}): {json}");
            }
            result.bad_records.push((json, e));
        }
        None => {
            if let (true, Some(l)) = (echo, &line.log) {
                println!("{l}");
            }
        }
    }
    if let Some(l) = line.log {
        result.log.push(l);
    }
}

fn take_line(result: &mut RunResult, raw: &str, echo: bool) {
    add_line(result, parse_line(raw), echo);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escapes_and_carriage_returns() {
        assert_eq!(strip_ansi("\u{1b}[2J\u{1b}[01;01Hhello\r"), "hello");
        assert_eq!(strip_ansi("a\u{1b}[0mb"), "ab");
    }

    #[test]
    fn signals_are_reported_as_signals() {
        let exit = |code: i32| std::process::ExitStatus::from_raw(code << 8);
        let msg = "qemu-system-x86_64: terminating on signal 15 from pid 42 (bash)\n";
        assert_eq!(outcome_of(false, exit(0), msg), Outcome::Signal(15));
        assert_eq!(outcome_of(false, exit(0), ""), Outcome::Reset);
        assert_eq!(outcome_of(false, exit(37), ""), Outcome::Panic);
        let killed = std::process::ExitStatus::from_raw(9);
        assert_eq!(outcome_of(false, killed, ""), Outcome::Signal(9));
        assert_eq!(outcome_of(true, killed, ""), Outcome::Timeout);
        assert_eq!(Outcome::Signal(15).exit_code(), 143);
        assert_eq!(Outcome::Signal(9).exit_code(), 137);
    }

    #[test]
    fn separates_records_from_log() {
        let mut r = RunResult {
            outcome: Outcome::Success,
            records: vec![],
            log: vec![],
            bad_records: vec![],
            stderr: String::new(),
            wall: Duration::ZERO,
        };
        take_line(&mut r, "[cpu0 INFO  kernel] hi\n", false);
        take_line(
            &mut r,
            "@@SCHEDLAB {\"type\":\"boot\",\"madt_cpus\":2}\n",
            false,
        );
        take_line(&mut r, "noise@@SCHEDLAB {\"type\":\"exit\"}\n", false);
        take_line(&mut r, "@@SCHEDLAB {broken\n", false);
        assert_eq!(r.records.len(), 2);
        assert_eq!(r.record("boot").unwrap()["madt_cpus"], 2);
        assert_eq!(
            r.log,
            vec!["[cpu0 INFO  kernel] hi".to_string(), "noise".to_string()]
        );
        assert_eq!(r.bad_records.len(), 1);
    }
}
