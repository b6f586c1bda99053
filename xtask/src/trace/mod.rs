//! The kernel's scheduler trace (`trace` and `trace_threads` records, from
//! the kernel or the simulator) turned into timelines and a table:
//!
//! - [`chrome_trace`]: Chrome trace-event JSON (ui.perfetto.dev,
//!   chrome://tracing): a track per CPU and per thread, categories, and
//!   flows from each wakeup to the run it caused;
//! - [`ftrace_text`]: the `sched_*` lines `trace-cmd report` prints
//!   (ui.perfetto.dev opens them too);
//! - [`latency_table`]: `perf sched latency`.
//!
//! [`decode`] reads the records, [`timeline`] walks them once in a global
//! order; the three outputs render that walk.

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
    /// ftrace text, as `trace-cmd report` prints it ([`ftrace_text`]).
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
    pub events: usize,
    pub dropped: u64,
    pub cpus: usize,
    pub threads: usize,
}
