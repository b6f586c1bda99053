//! The scheduler trace (`--trace` on the host): context switches, wakeups
//! with their placement, migrations and forks, recorded per CPU into
//! preallocated buffers while the experiment runs and printed as `trace`
//! records when it ends; xtask turns them into a Chrome/Perfetto timeline.
//! Like `perf sched record`, but the buffers live in the kernel and cost a
//! few stores per event (no file I/O during the run).
//!
//! Each CPU writes only its own buffer, with interrupts off (every event
//! comes from a scheduling path that already has them off), so the per-CPU
//! lock is never contended. A full buffer keeps its first events and counts
//! the rest as dropped.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use spin::Once;

use crate::arch::{percpu, time};
use crate::record::{Emit, Record, json_array, json_string};
use crate::sync::IrqSpinLock;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// `a` = next thread (0 = idle), `b` = previous thread (0 = idle).
    Switch = 0,
    /// `a` = woken thread, `b` = CPU it was queued on, `c` = 1 if WF_SYNC.
    Wakeup = 1,
    /// `a` = thread, `b` = source CPU, `c` = destination CPU * 16 + reason.
    Migrate = 2,
    /// `a` = new thread, `b` = CPU it was placed on.
    Fork = 3,
}

#[derive(Clone, Copy)]
struct Event {
    ts: u64,
    kind: Kind,
    a: u64,
    b: u64,
    c: u64,
}

// The host's memory check (xtask `preflight`) counts this many bytes per event.
const _: () = assert!(core::mem::size_of::<Event>() <= bootcfg::TRACE_EVENT_BYTES);

struct CpuBuf {
    events: Vec<Event>,
    cap: usize,
    dropped: u64,
}

static ON: AtomicBool = AtomicBool::new(false);
static BUFS: Once<Vec<IrqSpinLock<CpuBuf>>> = Once::new();
static NAMES: IrqSpinLock<Vec<(u64, String)>> = IrqSpinLock::new(Vec::new());
/// Thread numbers in the trace: unique for the whole run (kernel thread ids
/// are reused after exit).
static NEXT_TID: AtomicU64 = AtomicU64::new(1);

/// Starts tracing with `per_cpu` events per CPU (0 = off).
pub fn init(nr_cpus: usize, per_cpu: u32) {
    if per_cpu == 0 {
        return;
    }
    BUFS.call_once(|| {
        (0..nr_cpus)
            .map(|_| {
                IrqSpinLock::new(CpuBuf {
                    events: Vec::with_capacity(per_cpu as usize),
                    cap: per_cpu as usize,
                    dropped: 0,
                })
            })
            .collect()
    });
    ON.store(true, Ordering::Release);
}

/// Whether the run is traced.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// A new run-wide thread number, remembering its name when tracing.
pub fn new_tid(name: &str) -> u64 {
    let tid = NEXT_TID.fetch_add(1, Ordering::Relaxed);
    if on() {
        NAMES.lock().push((tid, String::from(name)));
    }
    tid
}

/// Records an event on `cpu` (call with interrupts off, on `cpu`). Inline,
/// so a run without tracing pays one load and branch per call site (the
/// switch and wakeup paths call it on every message).
#[inline]
pub fn event(cpu: usize, kind: Kind, a: u64, b: u64, c: u64) {
    if on() {
        record(cpu, kind, a, b, c);
    }
}

#[inline(never)]
fn record(cpu: usize, kind: Kind, a: u64, b: u64, c: u64) {
    let Some(buf) = BUFS.get().and_then(|b| b.get(cpu)) else {
        return;
    };
    let mut buf = buf.lock();
    if buf.events.len() < buf.cap {
        let ts = time::now_ns();
        buf.events.push(Event { ts, kind, a, b, c });
    } else {
        buf.dropped += 1;
    }
}

/// Prints the trace as records: thread names, then each CPU's events in
/// chunks (`[ts_ns, kind, a, b, c]` arrays).
pub fn dump() {
    if !on() {
        return;
    }
    ON.store(false, Ordering::Release);
    const CHUNK: usize = 1000;
    let names = core::mem::take(&mut *NAMES.lock());
    for part in names.chunks(CHUNK) {
        let json = json_array(part.iter(), |w, (tid, name)| {
            write!(w, "[{tid},{}]", json_string(name))
        });
        Record::new("trace_threads").raw("threads", &json).emit();
    }
    let Some(bufs) = BUFS.get() else { return };
    for p in percpu::online() {
        let cpu = p.cpu as usize;
        let (events, dropped) = {
            let mut b = bufs[cpu].lock();
            (core::mem::take(&mut b.events), b.dropped)
        };
        let chunks = events.len().div_ceil(CHUNK).max(1);
        for (i, part) in events
            .chunks(CHUNK)
            .chain(
                // A CPU without events still says so (and its dropped count).
                core::iter::once(&[][..]).take(usize::from(events.is_empty())),
            )
            .enumerate()
        {
            let json = json_array(part.iter(), |w, e| {
                write!(w, "[{},{},{},{},{}]", e.ts, e.kind as u8, e.a, e.b, e.c)
            });
            Record::new("trace")
                .u64("cpu", cpu as u64)
                .u64("chunk", i as u64)
                .u64("chunks", chunks as u64)
                .u64("dropped", dropped)
                .raw("events", &json)
                .emit();
        }
    }
}
