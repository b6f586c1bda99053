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

/// `--results FILE`: the records as JSON lines.
pub fn write_results(path: &Path, records: &[Value]) -> Result<()> {
    let mut f =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    for r in records {
        writeln!(f, "{r}").with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!(
        "xtask: {} records written to {}",
        records.len(),
        path.display()
    );
    Ok(())
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
