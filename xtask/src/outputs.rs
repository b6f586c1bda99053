//! The files a run writes besides its report: `--results` (every record as
//! a JSON line) and `--trace` (the scheduler trace exported, plus the
//! `perf sched latency`-style table). Shared by `cargo xtask run` and
//! `cargo xtask report --from`, so a captured console gives the very files
//! the QEMU run gave.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::trace::{self, TaskLatency, TraceFormat};

/// `--results FILE`: the records as JSON lines. A finished run's records
/// are never dropped: when `path` cannot be written after all (the disk
/// filled up, the folder went away during the run; what the preflight
/// check could not know), they go to a rescue file in the system's
/// temporary folder instead, and the error names both files.
pub fn write_results(path: &Path, records: &[Value]) -> Result<()> {
    match write_lines(path, records) {
        Ok(()) => {
            eprintln!(
                "xtask: {} records written to {}",
                records.len(),
                path.display()
            );
            Ok(())
        }
        Err(e) => {
            let rescue = rescue_path();
            let partial = if path.is_file() {
                format!(" ({} is incomplete)", path.display())
            } else {
                String::new()
            };
            match write_lines_new(&rescue, records) {
                Ok(()) => Err(anyhow::anyhow!(
                    "--results: {e:#}{partial}; the run's {} records were written to {} instead",
                    records.len(),
                    rescue.display()
                )),
                Err(e2) => Err(anyhow::anyhow!(
                    "--results: {e:#}; the rescue file failed too ({e2:#}): the records are lost"
                )),
            }
        }
    }
}

fn write_lines(path: &Path, records: &[Value]) -> Result<()> {
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    write_to(f, path, records)
}

/// Like [`write_lines`] into a file that must not exist yet (the rescue
/// file in a shared temporary folder: never through someone's symlink).
fn write_lines_new(path: &Path, records: &[Value]) -> Result<()> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    write_to(f, path, records)
}

fn write_to(f: std::fs::File, path: &Path, records: &[Value]) -> Result<()> {
    let mut w = std::io::BufWriter::new(f);
    for r in records {
        writeln!(w, "{r}").with_context(|| format!("writing {}", path.display()))?;
    }
    // Flush and sync: a full disk often shows only here.
    let f = w
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(|| format!("writing {}", path.display()))?;
    f.sync_all()
        .or_else(|e| match e.raw_os_error() {
            // Character devices and pipes cannot be synced; their writes are done.
            Some(libc::EINVAL) | Some(libc::ENOTSUP) | Some(libc::ENOSYS) => Ok(()),
            _ => Err(e),
        })
        .with_context(|| format!("writing {}", path.display()))
}

/// A file of this process's own in the temporary folder.
fn rescue_path() -> std::path::PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    std::env::temp_dir().join(format!(
        "schedlab-results-{secs}-{}.jsonl",
        std::process::id()
    ))
}

/// `--trace FILE`: the run's scheduler trace in `format`, and the
/// `perf sched latency`-style table.
pub fn write_trace(path: &Path, format: TraceFormat, records: &[Value]) -> Result<()> {
    let s = trace::write(path, format, records)?;
    let dropped = match &s.cut {
        Some(c) => format!(
            ", {} dropped: raise --trace-events; the trace is {}",
            s.dropped, c.note
        ),
        None => String::new(),
    };
    println!(
        "trace: {} events on {} CPUs{dropped}, {} threads -> {} ({}; open in ui.perfetto.dev)",
        s.events,
        s.cpus,
        s.threads,
        path.display(),
        format.describe()
    );
    print_sched_latency(&trace::latency_table(records)?);
    Ok(())
}

/// The `perf sched latency`-style table of a traced run (largest delays first).
fn print_sched_latency(rows: &[TaskLatency]) {
    const SHOWN: usize = 15;
    println!(
        " {:<24} | {:>11} | {:>8} | {:>12} | {:>12} | {:>14}",
        "Task", "Runtime ms", "Switches", "Avg delay ms", "Max delay ms", "Max delay at s"
    );
    for r in rows.iter().take(SHOWN) {
        println!(
            " {:<24} | {:>11.3} | {:>8} | {:>12.3} | {:>12.3} | {:>14.6}",
            format!("{}:{}", r.name, r.tid),
            r.runtime_ns as f64 / 1e6,
            r.switches,
            r.avg_delay_ns as f64 / 1e6,
            r.max_delay_ns as f64 / 1e6,
            r.max_delay_at_ns as f64 / 1e9
        );
    }
    if rows.len() > SHOWN {
        println!(
            " ... {} more threads (all of them in the trace file)",
            rows.len() - SHOWN
        );
    }
}
