//! The kernel's scheduler trace (`trace` and `trace_threads` records, from
//! the kernel or the simulator) turned into timelines and a table:
//!
//! - [`chrome_trace`]: Chrome trace-event JSON (ui.perfetto.dev,
//!   chrome://tracing): a track per CPU and per thread, categories, and
//!   flows from each wakeup to the run it caused;
//! - [`ftrace_text`]: the `sched_*` events in the text layout of
//!   `/sys/kernel/tracing/trace` (`nop` tracer), which ui.perfetto.dev
//!   reads (not trace-cmd's `trace.dat`);
//! - [`latency_table`]: `perf sched latency`.
//!
//! [`decode`] reads the records (and, when a CPU dropped events, cuts them
//! where every CPU's events are still complete), [`timeline`] walks them
//! once in a global order; the three outputs render that walk.

mod chrome;
mod decode;
mod ftrace;
mod latency;
mod timeline;

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

pub use chrome::chrome_trace;
pub use ftrace::ftrace_text;
pub use latency::{TaskLatency, latency_table};

/// What `--trace FILE` holds (`--trace-format`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// Chrome trace-event JSON ([`chrome_trace`]).
    Chrome,
    /// ftrace text, as `/sys/kernel/tracing/trace` prints it ([`ftrace_text`]).
    Ftrace,
}

impl TraceFormat {
    pub fn describe(self) -> &'static str {
        match self {
            TraceFormat::Chrome => "Chrome trace-event JSON",
            TraceFormat::Ftrace => "ftrace text",
        }
    }
}

/// Writes the run's trace to `path` in `format`.
pub fn write(path: &Path, format: TraceFormat, records: &[Value]) -> Result<TraceSummary> {
    let (bytes, summary) = match format {
        TraceFormat::Chrome => {
            let (trace, s) = chrome_trace(records)?;
            (serde_json::to_vec(&trace)?, s)
        }
        TraceFormat::Ftrace => {
            let (text, s) = ftrace_text(records)?;
            (text.into_bytes(), s)
        }
    };
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
    Ok(summary)
}

/// Summary of a converted trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSummary {
    /// Events in the export (those before the cut, if there is one).
    pub events: usize,
    /// Events the recorder dropped (past `--trace-events`).
    pub dropped: u64,
    pub cpus: usize,
    pub threads: usize,
    /// Where the export stops because a CPU dropped events.
    pub cut: Option<TraceCut>,
}

/// The export stops at `at_ns`: the earliest time, over the CPUs that
/// dropped events, of their last kept event, so that every CPU's events
/// before it are all there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceCut {
    pub at_ns: u64,
    /// Recorded events at or after the cut, left out too.
    pub recorded_after: u64,
    /// [`Self::recorded_after`] plus the dropped events.
    pub left_out: u64,
    /// The cut in a sentence, as the exports state it.
    pub note: String,
}

impl TraceSummary {
    fn of(d: &decode::Decoded) -> TraceSummary {
        TraceSummary {
            events: d.event_count(),
            dropped: d.dropped.values().sum(),
            cpus: d.per_cpu.len(),
            threads: d.names.len(),
            cut: d.cut.map(|c| TraceCut {
                at_ns: c.at,
                recorded_after: c.recorded_after,
                left_out: c.left_out(),
                note: c.describe(),
            }),
        }
    }
}
