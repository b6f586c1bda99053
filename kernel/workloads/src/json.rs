//! JSON for result records: a small builder for one-line objects, string
//! escaping and arrays. Shared by the kernel (which prints each record on the
//! serial console after a prefix) and the host simulator (which writes the
//! same lines), so both backends produce byte-identical record formats.
//! The format of every record type is documented in `docs/results.md`.

use alloc::string::String;
use core::fmt::{self, Write};

/// Writes `s` as the body of a JSON string (without quotes), escaping as RFC 8259 requires.
pub fn escape_into(w: &mut dyn Write, s: &str) -> fmt::Result {
    for c in s.chars() {
        match c {
            '"' => w.write_str("\\\"")?,
            '\\' => w.write_str("\\\\")?,
            '\n' => w.write_str("\\n")?,
            '\r' => w.write_str("\\r")?,
            '\t' => w.write_str("\\t")?,
            c if (c as u32) < 0x20 => write!(w, "\\u{:04x}", c as u32)?,
            c => w.write_char(c)?,
        }
    }
    Ok(())
}

/// A JSON array whose elements `f` writes (already valid JSON each):
/// `json_array(xs, |w, x| write!(w, "{x}"))`.
pub fn json_array<T>(
    items: impl IntoIterator<Item = T>,
    mut f: impl FnMut(&mut String, T) -> fmt::Result,
) -> String {
    let mut out = String::from("[");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        // Writing into a String cannot fail.
        let _ = f(&mut out, item);
    }
    out.push(']');
    out
}

/// A JSON string literal (quoted and escaped).
pub fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    let _ = escape_into(&mut out, s);
    out.push('"');
    out
}

/// Adapter that JSON-escapes everything written through it.
pub struct Escaper<'a>(pub &'a mut dyn Write);

impl Write for Escaper<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        escape_into(self.0, s)
    }
}

/// Builder for one record: `Record::new("boot").str("firmware", "bios").emit()`.
pub struct Record {
    buf: String,
}

impl Record {
    /// Starts a record of the given `type`.
    pub fn new(kind: &str) -> Record {
        let mut r = Record {
            buf: String::with_capacity(256),
        };
        r.buf.push('{');
        r.key("type");
        r.push_string(kind);
        r
    }

    fn key(&mut self, k: &str) {
        if self.buf.len() > 1 {
            self.buf.push(',');
        }
        self.push_string(k);
        self.buf.push(':');
    }

    fn push_string(&mut self, s: &str) {
        self.buf.push('"');
        // Writing into a String cannot fail.
        let _ = escape_into(&mut self.buf, s);
        self.buf.push('"');
    }

    /// Adds a string field.
    pub fn str(mut self, k: &str, v: &str) -> Record {
        self.key(k);
        self.push_string(v);
        self
    }

    /// Adds an unsigned integer field.
    pub fn u64(mut self, k: &str, v: u64) -> Record {
        self.key(k);
        let _ = write!(self.buf, "{v}");
        self
    }

    /// Adds an unsigned integer field if there is a value (a field one
    /// backend measures and the other has no such thing for).
    pub fn opt_u64(self, k: &str, v: Option<u64>) -> Record {
        match v {
            Some(v) => self.u64(k, v),
            None => self,
        }
    }

    /// Adds a boolean field.
    pub fn bool(mut self, k: &str, v: bool) -> Record {
        self.key(k);
        self.buf.push_str(if v { "true" } else { "false" });
        self
    }

    /// Adds a field whose value is already valid JSON (array or object).
    pub fn raw(mut self, k: &str, json: &str) -> Record {
        self.key(k);
        self.buf.push_str(json);
        self
    }

    /// The finished JSON object.
    pub fn finish(mut self) -> String {
        self.buf.push('}');
        self.buf
    }
}

/// The `sched_config` record: what produced a run (policy, pick, switches,
/// tunables, how idle CPUs wait). Emitted by the kernel and the simulator.
pub fn sched_config_record(policy: &str, sc: &sched::SchedConfig, idle: &str) -> Record {
    Record::new("sched_config")
        .str("policy", policy)
        .str("pick", sc.pick.name())
        .str("features", &alloc::format!("{}", sc.features))
        .u64("tick_ns", sc.tunables.tick_ns)
        .u64("sched_latency_ns", sc.tunables.sched_latency_ns)
        .u64("min_granularity_ns", sc.tunables.min_granularity_ns)
        .u64("wakeup_granularity_ns", sc.tunables.wakeup_granularity_ns)
        .u64("base_slice_ns", sc.tunables.base_slice_ns)
        .str("idle", idle)
}
