//! The scheduler trace of a simulated run, in the kernel's record format
//! (`trace_threads`, then `trace` per CPU in chunks of 1,000 events of
//! `[ts_ns, kind, a, b, c]`; kinds and fields as in `kernel/src/trace.rs`),
//! so `--trace FILE` gives the same Chrome/Perfetto timeline and
//! `perf sched latency`-style table from either backend. Thread numbers are
//! the simulator's serial numbers plus one (0 = idle).

use std::fmt::Write as _;

use workloads::json::{Record, json_array, json_string};

/// Events per record (as the kernel).
const CHUNK: usize = 1000;

/// Event kinds (the kernel's `trace::Kind`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// `a` = next thread, `b` = previous thread.
    Switch = 0,
    /// `a` = woken thread, `b` = CPU it was queued on, `c` = WF_SYNC.
    Wakeup = 1,
    /// `a` = thread, `b` = source CPU, `c` = destination CPU * 16 + reason.
    Migrate = 2,
    /// `a` = new thread, `b` = CPU it was placed on.
    Fork = 3,
}

/// Per-CPU event buffers that keep their first `cap` events.
pub(crate) struct Trace {
    cap: usize,
    bufs: Vec<Vec<[u64; 5]>>,
    dropped: Vec<u64>,
    names: Vec<(u64, String)>,
}

impl Trace {
    pub fn new(nr_cpus: usize, cap: u32) -> Trace {
        Trace {
            cap: cap as usize,
            bufs: vec![Vec::new(); nr_cpus],
            dropped: vec![0; nr_cpus],
            names: Vec::new(),
        }
    }

    pub fn name(&mut self, tid: u64, name: &str) {
        self.names.push((tid, name.to_string()));
    }

    pub fn event(&mut self, cpu: usize, ts: u64, kind: Kind, a: u64, b: u64, c: u64) {
        let buf = &mut self.bufs[cpu];
        if buf.len() < self.cap {
            buf.push([ts, kind as u64, a, b, c]);
        } else {
            self.dropped[cpu] += 1;
        }
    }

    pub fn records(&self) -> Vec<String> {
        let mut out = Vec::new();
        for part in self.names.chunks(CHUNK) {
            let json = json_array(part.iter(), |w, (tid, name)| {
                write!(w, "[{tid},{}]", json_string(name))
            });
            out.push(Record::new("trace_threads").raw("threads", &json).finish());
        }
        for (cpu, events) in self.bufs.iter().enumerate() {
            let chunks = events.len().div_ceil(CHUNK).max(1);
            let parts: Vec<&[[u64; 5]]> = if events.is_empty() {
                vec![&[]]
            } else {
                events.chunks(CHUNK).collect()
            };
            for (i, part) in parts.into_iter().enumerate() {
                let json = json_array(part.iter(), |w, e| {
                    write!(w, "[{},{},{},{},{}]", e[0], e[1], e[2], e[3], e[4])
                });
                out.push(
                    Record::new("trace")
                        .u64("cpu", cpu as u64)
                        .u64("chunk", i as u64)
                        .u64("chunks", chunks as u64)
                        .u64("dropped", self.dropped[cpu])
                        .raw("events", &json)
                        .finish(),
                );
            }
        }
        out
    }
}
