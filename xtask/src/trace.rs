//! Turns the kernel's `trace` records into a Chrome trace-event JSON
//! timeline (open it in ui.perfetto.dev or chrome://tracing): one track per
//! CPU with a slice for every stretch a thread ran there, and instant
//! events for wakeups (on the CPU the wakee was queued on, with the waker's
//! CPU and WF_SYNC), migrations (balance/newidle/active/exec, with source
//! and destination) and forks (with the CPU fork placement chose).

use std::collections::HashMap;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// Migration reasons, in the kernel's `MigrationReason` order.
const REASONS: [&str; 6] = ["wakeup", "fork", "balance", "newidle", "active", "exec"];

/// One decoded event: `[ts_ns, kind, a, b, c]` on `cpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Event {
    cpu: u64,
    ts: u64,
    kind: u64,
    a: u64,
    b: u64,
    c: u64,
}

/// Summary of a converted trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSummary {
    pub events: usize,
    pub dropped: u64,
    pub cpus: usize,
    pub threads: usize,
}

/// A run's trace records, decoded.
struct Decoded {
    names: HashMap<u64, String>,
    /// Per CPU in time order, CPUs one after the other.
    events: Vec<Event>,
    /// Dropped events per CPU (every traced CPU has an entry).
    dropped: HashMap<u64, u64>,
}

fn decode(records: &[Value]) -> Result<Decoded> {
    let mut d = Decoded {
        names: HashMap::new(),
        events: Vec::new(),
        dropped: HashMap::new(),
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
                d.dropped.insert(cpu, r["dropped"].as_u64().unwrap_or(0));
                for e in r["events"].as_array().into_iter().flatten() {
                    let f = |i: usize| e[i].as_u64().unwrap_or(0);
                    d.events.push(Event {
                        cpu,
                        ts: f(0),
                        kind: f(1),
                        a: f(2),
                        b: f(3),
                        c: f(4),
                    });
                }
            }
            _ => {}
        }
    }
    if d.dropped.is_empty() {
        bail!("the run has no trace records (was the kernel told to trace?)");
    }
    Ok(d)
}

/// Builds the Chrome trace JSON from a run's records; errors if the run
/// carried no trace.
pub fn chrome_trace(records: &[Value]) -> Result<(Value, TraceSummary)> {
    let Decoded {
        names,
        events,
        dropped,
    } = decode(records)?;
    let name = |tid: u64| {
        names
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| format!("thread {tid}"))
    };
    let us = |ns: u64| ns as f64 / 1000.0;
    let mut out = Vec::new();
    let mut cpus: Vec<u64> = dropped.keys().copied().collect();
    cpus.sort_unstable();
    for &cpu in &cpus {
        out.push(json!({"name": "process_name", "ph": "M", "pid": cpu,
            "args": {"name": format!("CPU {cpu}")}}));
        out.push(json!({"name": "process_sort_index", "ph": "M", "pid": cpu,
            "args": {"sort_index": cpu}}));
    }
    // Events of each CPU are in time order; slices run from one switch to
    // the next on the same CPU.
    let mut running: HashMap<u64, (u64, u64)> = HashMap::new(); // cpu -> (tid, since)
    let mut last_ts = 0;
    for e in &events {
        last_ts = last_ts.max(e.ts);
        match e.kind {
            0 => {
                if let Some((tid, since)) = running.remove(&e.cpu) {
                    out.push(
                        json!({"name": name(tid), "ph": "X", "pid": e.cpu, "tid": e.cpu,
                        "ts": us(since), "dur": us(e.ts.saturating_sub(since)),
                        "args": {"tid": tid}}),
                    );
                }
                if e.a != 0 {
                    running.insert(e.cpu, (e.a, e.ts));
                }
            }
            1 => out.push(
                json!({"name": format!("wakeup {}", name(e.a)), "ph": "i", "s": "t",
                "pid": e.b, "tid": e.b, "ts": us(e.ts),
                "args": {"tid": e.a, "waker_cpu": e.cpu, "sync": e.c == 1}}),
            ),
            2 => {
                let (to, reason) = (e.c >> 4, (e.c & 15) as usize);
                out.push(
                    json!({"name": format!("migrate {}", name(e.a)), "ph": "i", "s": "t",
                    "pid": to, "tid": to, "ts": us(e.ts),
                    "args": {"tid": e.a, "from": e.b, "to": to,
                        "reason": REASONS.get(reason).copied().unwrap_or("?")}}),
                );
            }
            3 => out.push(
                json!({"name": format!("fork {}", name(e.a)), "ph": "i", "s": "t",
                "pid": e.b, "tid": e.b, "ts": us(e.ts),
                "args": {"tid": e.a, "parent_cpu": e.cpu, "placed_on": e.b}}),
            ),
            k => bail!("unknown trace event kind {k}"),
        }
    }
    // Close what still runs at the end of the trace.
    for (cpu, (tid, since)) in running {
        out.push(json!({"name": name(tid), "ph": "X", "pid": cpu, "tid": cpu,
            "ts": us(since), "dur": us(last_ts.saturating_sub(since)), "args": {"tid": tid}}));
    }
    let summary = TraceSummary {
        events: events.len(),
        dropped: dropped.values().sum(),
        cpus: cpus.len(),
        threads: names.len(),
    };
    Ok((
        json!({"traceEvents": out, "displayTimeUnit": "ns"}),
        summary,
    ))
}

/// One thread's line of the `perf sched latency`-style table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskLatency {
    pub name: String,
    pub tid: u64,
    /// Time it ran (ns).
    pub runtime_ns: u64,
    /// Times it was switched in.
    pub switches: u64,
    /// Wakeups/forks followed by a switch-in.
    pub delays: u64,
    /// Mean and largest wakeup (or fork) → running delay (ns).
    pub avg_delay_ns: u64,
    pub max_delay_ns: u64,
    /// When the largest delay ended (ns since boot).
    pub max_delay_at_ns: u64,
}

/// `perf sched latency` from the trace: per thread, its runtime, switch-ins
/// and the delay from each wakeup (or fork) to it running, largest first.
pub fn latency_table(records: &[Value]) -> Result<Vec<TaskLatency>> {
    let Decoded {
        names, mut events, ..
    } = decode(records)?;
    // One clock for all CPUs (the TSC, or the simulator's), so a global
    // order is meaningful. At equal times a wakeup or fork goes before a
    // switch: the simulator can wake a task and switch to it in the same
    // nanosecond, and a thread is only woken while it is not running.
    events.sort_by_key(|e| (e.ts, e.kind == 0));
    let mut rows: HashMap<u64, TaskLatency> = HashMap::new();
    let mut pending: HashMap<u64, u64> = HashMap::new();
    let mut running: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut delay_sum: HashMap<u64, u64> = HashMap::new();
    for e in &events {
        match e.kind {
            1 | 3 => {
                pending.entry(e.a).or_insert(e.ts);
            }
            0 => {
                if let Some((prev, since)) = running.remove(&e.cpu) {
                    entry(&mut rows, &names, prev).runtime_ns += e.ts.saturating_sub(since);
                }
                if e.a != 0 {
                    running.insert(e.cpu, (e.a, e.ts));
                    let r = entry(&mut rows, &names, e.a);
                    r.switches += 1;
                    if let Some(w) = pending.remove(&e.a) {
                        let d = e.ts.saturating_sub(w);
                        r.delays += 1;
                        *delay_sum.entry(e.a).or_default() += d;
                        if d >= r.max_delay_ns {
                            r.max_delay_ns = d;
                            r.max_delay_at_ns = e.ts;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut out: Vec<TaskLatency> = rows
        .into_values()
        .map(|mut r| {
            r.avg_delay_ns = delay_sum
                .get(&r.tid)
                .copied()
                .unwrap_or(0)
                .checked_div(r.delays)
                .unwrap_or(0);
            r
        })
        .collect();
    out.sort_by(|a, b| b.max_delay_ns.cmp(&a.max_delay_ns).then(a.tid.cmp(&b.tid)));
    Ok(out)
}

fn entry<'a>(
    rows: &'a mut HashMap<u64, TaskLatency>,
    names: &HashMap<u64, String>,
    tid: u64,
) -> &'a mut TaskLatency {
    rows.entry(tid).or_insert_with(|| TaskLatency {
        name: names
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| format!("thread {tid}")),
        tid,
        runtime_ns: 0,
        switches: 0,
        delays: 0,
        avg_delay_ns: 0,
        max_delay_ns: 0,
        max_delay_at_ns: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_become_slices_and_other_events_instants() {
        let records = vec![
            json!({"type": "trace_threads", "threads": [[1, "main"], [2, "worker"]]}),
            json!({"type": "trace", "cpu": 0, "chunk": 0, "chunks": 1, "dropped": 0, "events": [
                [100, 3, 2, 1, 0],      // fork worker onto CPU 1
                [200, 0, 1, 0, 0],      // CPU 0: idle -> main
                [900, 0, 0, 1, 0],      // CPU 0: main -> idle
                [950, 1, 2, 1, 1],      // wakeup worker on CPU 1, sync
                [960, 2, 2, 1, 2]       // balance (reason 2) move 1 -> 0 (to * 16 + reason)
            ]}),
            json!({"type": "trace", "cpu": 1, "chunk": 0, "chunks": 1, "dropped": 3, "events": [
                [300, 0, 2, 0, 0]       // CPU 1: idle -> worker, still running at the end
            ]}),
        ];
        let (t, s) = chrome_trace(&records).unwrap();
        assert_eq!(
            s,
            TraceSummary {
                events: 6,
                dropped: 3,
                cpus: 2,
                threads: 2
            }
        );
        let ev = t["traceEvents"].as_array().unwrap();
        let slices: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(slices.len(), 2);
        let main = slices.iter().find(|e| e["name"] == "main").unwrap();
        assert_eq!(
            (
                main["pid"].as_u64(),
                main["ts"].as_f64(),
                main["dur"].as_f64()
            ),
            (Some(0), Some(0.2), Some(0.7))
        );
        let worker = slices.iter().find(|e| e["name"] == "worker").unwrap();
        assert_eq!(
            worker["dur"].as_f64(),
            Some(0.66),
            "closed at the last event"
        );
        let wake = ev.iter().find(|e| e["name"] == "wakeup worker").unwrap();
        assert_eq!(
            (wake["pid"].as_u64(), wake["args"]["sync"].as_bool()),
            (Some(1), Some(true))
        );
        let mig = ev.iter().find(|e| e["name"] == "migrate worker").unwrap();
        assert_eq!(mig["args"]["reason"], "balance");
        assert_eq!(mig["args"]["to"], 0);
        assert!(
            ev.iter()
                .any(|e| e["name"] == "fork worker" && e["pid"] == 1)
        );
        assert!(chrome_trace(&[json!({"type": "boot"})]).is_err());
    }

    #[test]
    fn latency_table_measures_wakeup_to_run() {
        let records = vec![
            json!({"type": "trace_threads", "threads": [[1, "a"], [2, "b"]]}),
            json!({"type": "trace", "cpu": 0, "dropped": 0, "events": [
                [100, 3, 1, 0, 0],   // fork a onto CPU 0
                [150, 0, 1, 0, 0],   // a runs (delay 50)
                [400, 1, 2, 1, 1],   // a wakes b onto CPU 1
                [500, 0, 0, 1, 0]    // a stops (ran 350)
            ]}),
            json!({"type": "trace", "cpu": 1, "dropped": 0, "events": [
                [700, 0, 2, 0, 0],   // b runs (delay 300)
                [800, 0, 0, 2, 0]    // b stops (ran 100)
            ]}),
        ];
        let t = latency_table(&records).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].name.as_str(), t[0].max_delay_ns, t[0].max_delay_at_ns),
            ("b", 300, 700)
        );
        assert_eq!((t[0].runtime_ns, t[0].switches, t[0].delays), (100, 1, 1));
        assert_eq!(
            (t[1].name.as_str(), t[1].avg_delay_ns, t[1].runtime_ns),
            ("a", 50, 350)
        );
    }
}
