//! Machine-readable result records: one JSON object per line, prefixed with
//! [`PREFIX`] so the host can separate them from log lines and firmware noise.
//! The JSON builder is shared with the host simulator (`workloads::json`);
//! this module adds the console side. The format of every record type is
//! documented in `docs/results.md`.
//!
//! ```text
//! @@SCHEDLAB {"type":"boot","firmware":"bios","memory_bytes":268435456,...}
//! ```

pub use workloads::json::{Escaper, Record, json_array, json_string};

use crate::arch::serial;

/// Marks a result record on the console. Must match xtask's parser.
pub const PREFIX: &str = "@@SCHEDLAB ";

/// Prints a finished record (one JSON object) as one console line.
pub fn emit_json(json: &str) {
    serial::with_port(|w| writeln!(w, "{PREFIX}{json}"));
}

/// `Record::emit()`: prints the record as one console line.
pub trait Emit {
    /// Prints the record.
    fn emit(self);
}

impl Emit for Record {
    fn emit(self) {
        emit_json(&self.finish());
    }
}
