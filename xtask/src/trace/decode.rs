//! The kernel's `trace_threads` and `trace` records (`kernel/src/trace.rs`,
//! `docs/results.md`; the simulator writes the same), decoded into typed
//! events, and the one global order every export uses.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Migration reasons, in the kernel's `MigrationReason` order.
pub(crate) const REASONS: [&str; 6] = ["wakeup", "fork", "balance", "newidle", "active", "exec"];

/// What an event says (thread numbers are run-wide, 0 = idle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum What {
    /// Kind 0: the CPU switched from `prev` to `next`.
    Switch { next: u64, prev: u64 },
    /// Kind 1: `tid` was woken and queued on `target` (`sync`: WF_SYNC);
    /// recorded on the waker's CPU.
    Wakeup { tid: u64, target: u64, sync: bool },
    /// Kind 2: the balancer or exec moved `tid` from `from` to `to`;
    /// recorded on the CPU that moved it.
    Migrate {
        tid: u64,
        from: u64,
        to: u64,
        reason: &'static str,
    },
    /// Kind 3: `tid` was created and placed on `target`; recorded on the
    /// parent's CPU.
    Fork { tid: u64, target: u64 },
}

/// One event: what happened on `cpu` at `ts` (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub cpu: u64,
    pub ts: u64,
    pub what: What,
}

impl Event {
    /// The thread the event is about (a switch: the one switched in).
    pub fn subject(&self) -> u64 {
        match self.what {
            What::Switch { next, .. } => next,
            What::Wakeup { tid, .. } | What::Migrate { tid, .. } | What::Fork { tid, .. } => tid,
        }
    }
}

/// A run's trace records, decoded.
pub(crate) struct Decoded {
    pub names: HashMap<u64, String>,
    /// Each traced CPU's events in its own (time) order; when a CPU
    /// dropped events, only those before the [`Cut`].
    pub per_cpu: BTreeMap<u64, Vec<Event>>,
    /// Events dropped per CPU (past `--trace-events`).
    pub dropped: BTreeMap<u64, u64>,
    /// Where the trace stops being complete, if a CPU dropped events.
    pub cut: Option<Cut>,
    /// The recorded events at or after the cut, per CPU (not exported;
    /// only read to tell what a thread switched out before the cut did
    /// next).
    pub past_cut: BTreeMap<u64, Vec<Event>>,
}

/// A CPU whose buffer filled kept its first events and dropped the rest,
/// so after its last kept event the trace misses whatever that CPU did.
/// The exports stop at the earliest such time over the CPUs that dropped
/// events: before it, every CPU's events are all there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cut {
    /// Only events before this time (ns) are exported.
    pub at: u64,
    /// The CPU whose last kept event is at `at`.
    pub cpu: u64,
    /// How many CPUs dropped events.
    pub cpus_dropped: usize,
    /// Recorded events at or after `at` (all CPUs), left out.
    pub recorded_after: u64,
    /// Events the recorder dropped (all CPUs).
    pub dropped: u64,
}

impl Cut {
    /// Every event the exports leave out.
    pub fn left_out(&self) -> u64 {
        self.recorded_after + self.dropped
    }

    /// What the cut is, in a sentence (the ftrace header, the Chrome
    /// metadata, the run's report).
    pub fn describe(&self) -> String {
        format!(
            "cut at {}.{:09} s because events were dropped: CPU {} (of {} CPUs that dropped events past --trace-events) kept none after then; \
             every CPU's events before the cut are here, {} events are left out ({} dropped by the recorder, {} recorded at or after the cut)",
            self.at / 1_000_000_000,
            self.at % 1_000_000_000,
            self.cpu,
            self.cpus_dropped,
            self.left_out(),
            self.dropped,
            self.recorded_after
        )
    }
}

impl Decoded {
    /// The thread's name, or `thread N` when the trace did not name it.
    pub fn name(&self, tid: u64) -> String {
        self.names
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| format!("thread {tid}"))
    }

    pub fn event_count(&self) -> usize {
        self.per_cpu.values().map(Vec::len).sum()
    }

    /// All events in one order: by time, a wakeup or fork before a switch at
    /// the same time (the simulator wakes a task and switches to it in the
    /// same nanosecond; a thread is only woken while it is not running),
    /// then by CPU — and each CPU's events always in their recorded order.
    /// One clock serves all CPUs (the TSC, or the simulator's), so the
    /// order across CPUs is meaningful.
    pub fn merged(&self) -> Vec<Event> {
        merge(&self.per_cpu)
    }

    /// The events past the cut, in the same order.
    pub fn merged_past_cut(&self) -> Vec<Event> {
        merge(&self.past_cut)
    }
}

/// Per-CPU streams in [`Decoded::merged`]'s order.
fn merge(per_cpu: &BTreeMap<u64, Vec<Event>>) -> Vec<Event> {
    let key = |e: &Event| (e.ts, matches!(e.what, What::Switch { .. }), e.cpu);
    let streams: Vec<&Vec<Event>> = per_cpu.values().collect();
    let mut heads = BinaryHeap::new();
    for (s, events) in streams.iter().enumerate() {
        if let Some(e) = events.first() {
            heads.push(Reverse((key(e), s, 0usize)));
        }
    }
    let mut out = Vec::with_capacity(streams.iter().map(|s| s.len()).sum());
    while let Some(Reverse((_, s, i))) = heads.pop() {
        out.push(streams[s][i]);
        if let Some(e) = streams[s].get(i + 1) {
            heads.push(Reverse((key(e), s, i + 1)));
        }
    }
    out
}

/// Decodes a run's records; errors if the run carried no trace or an event
/// is malformed.
pub(crate) fn decode(records: &[Value]) -> Result<Decoded> {
    let mut d = Decoded {
        names: HashMap::new(),
        per_cpu: BTreeMap::new(),
        dropped: BTreeMap::new(),
        cut: None,
        past_cut: BTreeMap::new(),
    };
    for r in records {
        match r["type"].as_str() {
            Some("trace_threads") => {
                for t in r["threads"].as_array().into_iter().flatten() {
                    let tid = t[0].as_u64().context("trace_threads entry without tid")?;
                    d.names
                        .insert(tid, t[1].as_str().unwrap_or("?").to_string());
                }
            }
            Some("trace") => {
                let cpu = r["cpu"].as_u64().context("trace record without cpu")?;
                // Every chunk of a CPU carries the CPU's count.
                d.dropped.insert(cpu, r["dropped"].as_u64().unwrap_or(0));
                let events = d.per_cpu.entry(cpu).or_default();
                for e in r["events"].as_array().into_iter().flatten() {
                    events.push(event(cpu, e)?);
                }
            }
            _ => {}
        }
    }
    if d.dropped.is_empty() {
        bail!("the run has no trace records (was the kernel told to trace?)");
    }
    cut(&mut d);
    Ok(d)
}

/// Applies the [`Cut`] if a CPU dropped events: each CPU's buffer keeps
/// its first events in time order, so a CPU that dropped some has all of
/// its events before its last kept one (not necessarily all at that
/// nanosecond), and the earliest of these times over the CPUs that
/// dropped is where the whole trace stops being complete.
fn cut(d: &mut Decoded) {
    let at = d
        .dropped
        .iter()
        .filter(|&(_, &n)| n > 0)
        .map(|(&cpu, _)| {
            let last = d
                .per_cpu
                .get(&cpu)
                .and_then(|e| e.last())
                .map_or(0, |e| e.ts);
            (last, cpu)
        })
        .min();
    let Some((at, cpu)) = at else { return };
    let mut recorded_after = 0;
    for (&c, events) in &mut d.per_cpu {
        let keep = events.partition_point(|e| e.ts < at);
        let past = events.split_off(keep);
        recorded_after += past.len() as u64;
        d.past_cut.insert(c, past);
    }
    d.cut = Some(Cut {
        at,
        cpu,
        cpus_dropped: d.dropped.values().filter(|&&n| n > 0).count(),
        recorded_after,
        dropped: d.dropped.values().sum(),
    });
}

/// One `[ts_ns, kind, a, b, c]` array.
fn event(cpu: u64, e: &Value) -> Result<Event> {
    let f = |i: usize| {
        e[i].as_u64()
            .with_context(|| format!("trace event {e} on CPU {cpu}: field {i} is not a number"))
    };
    let (ts, kind, a, b, c) = (f(0)?, f(1)?, f(2)?, f(3)?, f(4)?);
    let what = match kind {
        0 => What::Switch { next: a, prev: b },
        1 => What::Wakeup {
            tid: a,
            target: b,
            sync: c == 1,
        },
        2 => What::Migrate {
            tid: a,
            from: b,
            to: c >> 4,
            reason: REASONS.get((c & 15) as usize).copied().unwrap_or("?"),
        },
        3 => What::Fork { tid: a, target: b },
        k => bail!("unknown trace event kind {k} on CPU {cpu}"),
    };
    Ok(Event { cpu, ts, what })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_orders_by_time_wakeups_first_and_keeps_each_cpus_order() {
        let records = vec![
            json!({"type": "trace", "cpu": 0, "dropped": 0, "events": [
                [100, 0, 1, 0, 0],   // idle -> 1
                [100, 1, 2, 1, 0],   // wakes 2 onto CPU 1, same ns, after the switch
                [300, 2, 2, 1, 3]    // newidle moves 2 from CPU 1 to CPU 0
            ]}),
            json!({"type": "trace", "cpu": 1, "dropped": 0, "events": [
                [100, 3, 3, 1, 0],   // fork 3 onto CPU 1
                [100, 0, 3, 0, 0],   // idle -> 3
                [200, 0, 2, 3, 0]    // 3 -> 2
            ]}),
        ];
        let d = decode(&records).unwrap();
        assert_eq!(d.cut, None);
        let order: Vec<(u64, u64)> = d.merged().iter().map(|e| (e.cpu, e.ts)).collect();
        // At 100: CPU 1's fork goes before CPU 0's switch; CPU 0's wakeup
        // stays behind CPU 0's own switch but goes before CPU 1's switch.
        assert_eq!(
            order,
            vec![(1, 100), (0, 100), (0, 100), (1, 100), (1, 200), (0, 300)]
        );
        let m = d.merged();
        assert_eq!(m[0].what, What::Fork { tid: 3, target: 1 });
        assert_eq!(
            m[2].what,
            What::Wakeup {
                tid: 2,
                target: 1,
                sync: false
            }
        );
        assert_eq!(
            m[5].what,
            What::Migrate {
                tid: 2,
                from: 1,
                to: 0,
                reason: "newidle"
            }
        );
        assert!(
            decode(&[json!({"type": "trace", "cpu": 0, "events": [[1, 9, 0, 0, 0]]})]).is_err()
        );
        assert!(
            decode(&[json!({"type": "trace", "cpu": 0, "events": [[1, 0, "x", 0, 0]]})]).is_err()
        );
    }

    #[test]
    fn a_cpu_that_dropped_events_cuts_the_trace_where_it_stops() {
        let records = vec![
            json!({"type": "trace", "cpu": 0, "dropped": 0, "events": [
                [100, 0, 1, 0, 0], [200, 0, 0, 1, 0], [300, 0, 1, 0, 0], [400, 0, 0, 1, 0]
            ]}),
            json!({"type": "trace", "cpu": 1, "dropped": 3, "events": [
                [150, 0, 2, 0, 0], [250, 0, 0, 2, 0]
            ]}),
            json!({"type": "trace", "cpu": 2, "dropped": 1, "events": [
                [120, 0, 3, 0, 0], [260, 0, 0, 3, 0], [260, 1, 3, 2, 0]
            ]}),
        ];
        let d = decode(&records).unwrap();
        assert_eq!(
            d.cut,
            Some(Cut {
                at: 250,
                cpu: 1,
                cpus_dropped: 2,
                recorded_after: 5,
                dropped: 4
            })
        );
        assert_eq!(d.cut.unwrap().left_out(), 9);
        let kept: Vec<(u64, u64)> = d.merged().iter().map(|e| (e.cpu, e.ts)).collect();
        assert_eq!(kept, [(0, 100), (2, 120), (1, 150), (0, 200)]);
        let past: Vec<(u64, u64)> = d.merged_past_cut().iter().map(|e| (e.cpu, e.ts)).collect();
        assert_eq!(past, [(1, 250), (2, 260), (2, 260), (0, 300), (0, 400)]);
        assert_eq!(d.event_count(), 4);
    }
}
