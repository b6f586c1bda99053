//! `cargo xtask report --from LOG`: a captured console's run as the report,
//! `--results` records and `--trace` export a QEMU run prints and writes,
//! through the same code (`report::print_records`, `outputs`).
//!
//! Exit status: the run's verdict as `cargo xtask run` gives it (0 success,
//! 1 failure, 3 panic, 4 exception, 5 watchdog), 6 when the next boot cut
//! the run (the machine reset), 8 when the log ends before the run's `exit`
//! record; 2 for bad input (no such file, no run in it, `--boot` out of
//! range, an unwritable output) and for a successful run whose records
//! could not all be read or written (a malformed record line: the records
//! file lacks it).

use anyhow::{Result, ensure};

use super::{Boot, Capture, clock};
use crate::cli::ReportArgs;
use crate::outcome::Outcome;

/// Why this boot was chosen, for the header.
fn why(cap: &Capture, boot: &Boot, asked: Option<u32>) -> String {
    if asked.is_some() {
        return "--boot".into();
    }
    if boot.complete() {
        if boot.number == cap.boots.len() {
            "the last boot, complete".into()
        } else {
            format!(
                "the last complete boot; --boot {} for the later, incomplete one(s)",
                cap.boots.len()
            )
        }
    } else {
        "no boot in the log is complete: the last one".into()
    }
}

/// Runs the command; see the module documentation for the exit status.
pub fn run(args: &ReportArgs) -> Result<i32> {
    for (flag, path) in [("--results", &args.results), ("--trace", &args.trace)] {
        if let Some(p) = path {
            crate::preflight::writable(flag, p)?;
        }
    }
    if let Some(k) = &args.kernel {
        ensure!(k.is_file(), "--kernel {}: no such file", k.display());
    }
    let cap = super::read(&args.from)?;
    let boot = cap.select(args.boot)?;
    let from = args.from.display();
    println!(
        "capture: {from}: {} boot(s) in {} lines; reporting boot {} ({})",
        cap.boots.len(),
        cap.lines,
        boot.number,
        why(&cap, boot, args.boot)
    );
    for s in cap.summary() {
        println!("  {s}");
    }
    if cap.orphan_records > 0 {
        println!(
            "  {} record(s) before the first boot record (the capture began in the middle of a run): ignored",
            cap.orphan_records
        );
    }
    let result = &boot.result;
    let mut reporting_failed = false;
    if let Some(path) = &args.results
        && let Err(e) = crate::outputs::write_results(path, &result.records)
    {
        eprintln!("xtask: error: {e:#}");
        reporting_failed = true;
    }
    crate::report::print_records(result, args.kernel.as_deref());
    if args.kernel.is_none()
        && (result.record("fault").is_some() || result.record("cpu_dump").is_some())
    {
        println!(
            "       (--kernel ELF, the kernel that ran, resolves these addresses to functions and source lines)"
        );
    }
    for (line, (_, err)) in boot.bad_record_lines.iter().zip(&result.bad_records) {
        eprintln!(
            "xtask: error: {from} line {line}: malformed record ({err}); it is missing from the records"
        );
        reporting_failed = true;
    }
    println!(
        "outcome: {} (boot {} of {}, lines {}-{} of {from}, {} records)",
        result.outcome,
        boot.number,
        cap.boots.len(),
        boot.first_line,
        boot.last_line,
        result.records.len()
    );
    match result.outcome {
        Outcome::Truncated => {
            crate::report::print_tail(result);
            eprintln!(
                "xtask: error: {from} ends (line {}) before the run's end record: this report holds only what was received",
                cap.lines
            );
        }
        Outcome::Reset => {
            crate::report::print_tail(result);
            eprintln!(
                "xtask: error: boot {} has no end record: boot {} begins at line {} (the machine reset or was rebooted)",
                boot.number,
                boot.number + 1,
                cap.boots[boot.number].first_line
            );
        }
        _ => {}
    }
    println!("clock: {}", clock::of(result).sentence);
    if let Some(path) = &args.trace
        && let Err(e) = crate::outputs::write_trace(path, args.trace_format, &result.records)
    {
        eprintln!("xtask: error: --trace: {e:#}");
        reporting_failed = true;
    }
    let verdict = result.outcome.exit_code();
    Ok(if verdict == 0 && reporting_failed {
        2
    } else {
        verdict
    })
}
