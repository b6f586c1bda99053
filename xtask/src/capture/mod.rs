//! A captured serial console as runs: the log a bare-metal server sends over
//! IPMI serial-over-LAN or a serial cable, or `cargo xtask run
//! --console-log FILE`, split into the boots it holds, each parsed by the
//! same line parser a live QEMU run uses (`runner::parse_line`) into the
//! same [`RunResult`], so the report, `--results` and `--trace` come out of
//! the same code.
//!
//! Real captures are messier than QEMU's stdout: CRLF line endings,
//! firmware and BMC output (with terminal escape sequences) before the
//! kernel, bytes that are not UTF-8, several boots one after the other (the
//! server was rebooted while the capture ran), and a last run the capture
//! stopped in the middle of. A boot starts at its `boot` record; a boot
//! whose `exit` record is missing ended either with the next boot (the
//! machine reset: [`Outcome::Reset`]) or with the log
//! ([`Outcome::Truncated`]).
//!
//! - [`report`]: `cargo xtask report --from LOG`
//! - [`clock`]: which clock a captured run's times come from
//! - [`compare`]: `cargo xtask compare --baseline-log A --variant-log B`

pub mod clock;
pub mod compare;
pub mod report;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::outcome::Outcome;
use crate::runner::{self, RunResult};

/// One boot found in a capture.
#[derive(Debug)]
pub struct Boot {
    /// 1 = the first boot in the log.
    pub number: usize,
    /// Line of its `boot` record (1-based).
    pub first_line: usize,
    /// Its last line: its `exit` record, or the line before the next boot's
    /// console, or the log's last line.
    pub last_line: usize,
    /// Its console and records, as a live run's; `wall` is zero (a capture
    /// holds no host time) and `outcome` comes from the `exit` record.
    pub result: RunResult,
    /// 1-based line numbers of its malformed records, in the order of
    /// `result.bad_records`.
    pub bad_record_lines: Vec<usize>,
}

impl Boot {
    /// Whether the run reached its `exit` record.
    pub fn complete(&self) -> bool {
        self.result.record("exit").is_some()
    }
}

/// Everything a console log holds.
#[derive(Debug)]
pub struct Capture {
    pub boots: Vec<Boot>,
    /// Records before the first `boot` record (the capture began in the
    /// middle of a run): not part of any boot.
    pub orphan_records: usize,
    /// Lines in the log.
    pub lines: usize,
}

fn empty_result() -> RunResult {
    RunResult {
        outcome: Outcome::Truncated,
        records: Vec::new(),
        log: Vec::new(),
        bad_records: Vec::new(),
        stderr: String::new(),
        wall: Duration::ZERO,
    }
}

/// Reads and splits the log at `path`.
pub fn read(path: &Path) -> Result<Capture> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&bytes).with_context(|| format!("{}", path.display()))
}

/// Splits a console log into boots. Errors name the line: an `exit` record
/// whose `status` the kernel never writes. A log without any `boot` record
/// is an error too: it holds no run (or is not a schedlab console).
pub fn parse(bytes: &[u8]) -> Result<Capture> {
    let mut boots: Vec<Boot> = Vec::new();
    // Lines after the last boot's exit record (or before the first boot):
    // the next boot's firmware output, given to it when it starts.
    let mut pending: Vec<String> = Vec::new();
    let mut orphan_records = 0;
    let mut lines = 0;
    for (i, raw) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        let n = i + 1;
        lines = n;
        let line = runner::parse_line(&String::from_utf8_lossy(raw));
        let is_boot = matches!(&line.record, Some(Ok(v)) if v["type"] == "boot");
        if is_boot {
            let mut result = empty_result();
            result.log = std::mem::take(&mut pending);
            if let Some(prev) = boots.last_mut()
                && !prev.complete()
            {
                prev.result.outcome = Outcome::Reset;
            }
            boots.push(Boot {
                number: boots.len() + 1,
                first_line: n,
                last_line: n,
                result,
                bad_record_lines: Vec::new(),
            });
        }
        match boots.last_mut() {
            Some(b) if !b.complete() => {
                if matches!(line.record, Some(Err(_))) {
                    b.bad_record_lines.push(n);
                }
                runner::add_line(&mut b.result, line, false);
                b.last_line = n;
                if let Some(exit) = b.result.record("exit") {
                    let status = exit["status"].as_str().unwrap_or("");
                    b.result.outcome = Outcome::from_kernel_status(status).with_context(|| {
                        format!(
                            "line {n}: exit record with status {}, which the kernel never writes (success, failure, panic, exception, watchdog)",
                            exit["status"]
                        )
                    })?;
                }
            }
            _ => {
                if line.record.is_some() && boots.is_empty() {
                    orphan_records += 1;
                }
                if let Some(l) = line.log {
                    pending.push(l);
                }
            }
        }
    }
    if boots.is_empty() {
        bail!(
            "no boot record in {lines} lines: no schedlab run starts in this log (a run starts with a line `@@SCHEDLAB {{\"type\":\"boot\",...}}`{})",
            if orphan_records > 0 {
                format!(
                    "; {orphan_records} records of a run whose start the capture missed were found"
                )
            } else {
                String::new()
            }
        );
    }
    Ok(Capture {
        boots,
        orphan_records,
        lines,
    })
}

impl Capture {
    /// The boot to report: `--boot N`, else the last complete one, else the
    /// last one (which then reports how it ended).
    pub fn select(&self, boot: Option<u32>) -> Result<&Boot> {
        if let Some(n) = boot {
            return self.boots.get(n as usize - 1).with_context(|| {
                format!("--boot {n}: the log holds {} boot(s)", self.boots.len())
            });
        }
        Ok(self
            .boots
            .iter()
            .rev()
            .find(|b| b.complete())
            .unwrap_or_else(|| self.boots.last().expect("parse guarantees a boot")))
    }

    /// One line per boot: where it is, how it ended.
    pub fn summary(&self) -> Vec<String> {
        self.boots
            .iter()
            .map(|b| {
                let experiment = b
                    .result
                    .record("boot")
                    .and_then(|r| r["experiment"].as_str())
                    .unwrap_or("?");
                let end = match b.result.outcome {
                    Outcome::Reset => {
                        "no exit record: the next boot began (the machine reset)".to_string()
                    }
                    Outcome::Truncated => "no exit record: the log ends".to_string(),
                    o => format!("exit {}", o.kernel_status_name().unwrap_or("?")),
                };
                format!(
                    "boot {}: lines {}-{}, experiment '{experiment}', {} records, {end}",
                    b.number,
                    b.first_line,
                    b.last_line,
                    b.result.records.len()
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOOT: &str = "@@SCHEDLAB {\"type\":\"boot\",\"experiment\":\"boot\"}";
    const EXIT: &str = "@@SCHEDLAB {\"type\":\"exit\",\"status\":\"success\"}";

    #[test]
    fn splits_boots_and_picks_the_last_complete_one() {
        let log = format!(
            "BIOS noise\r\n{BOOT}\r\nlog a\r\n{EXIT}\r\nreboot noise\r\n{BOOT}\r\nlog b\r\n{EXIT}\r\n{BOOT}\r\nlog c"
        );
        let c = parse(log.as_bytes()).unwrap();
        assert_eq!(c.boots.len(), 3);
        assert_eq!(c.boots[0].result.log, ["BIOS noise", "log a"]);
        assert_eq!(c.boots[1].result.log, ["reboot noise", "log b"]);
        assert_eq!((c.boots[1].first_line, c.boots[1].last_line), (6, 8));
        assert_eq!(c.boots[2].result.outcome, Outcome::Truncated);
        assert_eq!(c.select(None).unwrap().number, 2);
        assert_eq!(c.select(Some(3)).unwrap().number, 3);
        let e = c.select(Some(4)).unwrap_err().to_string();
        assert_eq!(e, "--boot 4: the log holds 3 boot(s)");
    }

    #[test]
    fn a_boot_cut_by_the_next_is_a_reset() {
        let log = format!("{BOOT}\nhalf a run\n{BOOT}\n{EXIT}\n");
        let c = parse(log.as_bytes()).unwrap();
        assert_eq!(c.boots[0].result.outcome, Outcome::Reset);
        assert_eq!(c.boots[1].result.outcome, Outcome::Success);
        assert!(
            c.summary()[0].contains("the machine reset"),
            "{:?}",
            c.summary()
        );
    }

    #[test]
    fn bad_input_names_the_line() {
        let e = parse(b"firmware\n@@SCHEDLAB {\"type\":\"stress\"}\n").unwrap_err();
        let e = format!("{e:#}");
        assert!(e.starts_with("no boot record in 2 lines"), "{e}");
        assert!(e.contains("1 records of a run whose start"), "{e}");
        let log = format!("{BOOT}\n@@SCHEDLAB {{\"type\":\"exit\",\"status\":\"done\"}}\n");
        let e = format!("{:#}", parse(log.as_bytes()).unwrap_err());
        assert!(
            e.starts_with("line 2: exit record with status \"done\""),
            "{e}"
        );
        let log = format!("{BOOT}\n@@SCHEDLAB {{\"type\":\"x\",\x01\n{EXIT}\n");
        let c = parse(log.as_bytes()).unwrap();
        assert_eq!(c.boots[0].bad_record_lines, [2]);
        assert_eq!(c.boots[0].result.records.len(), 2);
    }

    #[test]
    fn invalid_utf8_and_escapes_do_not_hide_records() {
        let mut log = b"\x1b[2J\x1b[01;01H\xff\xfe UEFI shell\r\n".to_vec();
        log.extend_from_slice(format!("\x1b[0m{BOOT}\r\n{EXIT}").as_bytes());
        let c = parse(&log).unwrap();
        assert_eq!(c.boots.len(), 1);
        assert!(c.boots[0].complete());
        assert_eq!(c.boots[0].result.records.len(), 2);
    }
}
