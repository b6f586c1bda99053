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

/// Builds the Chrome trace JSON from a run's records; errors if the run
/// carried no trace.
pub fn chrome_trace(records: &[Value]) -> Result<(Value, TraceSummary)> {
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut events = Vec::new();
    let mut dropped: HashMap<u64, u64> = HashMap::new();
    for r in records {
        match r["type"].as_str() {
            Some("trace_threads") => {
                for t in r["threads"].as_array().into_iter().flatten() {
                    let tid = t[0].as_u64().context("trace_threads entry without tid")?;
                    names.insert(tid, t[1].as_str().unwrap_or("?").to_string());
                }
            }
            Some("trace") => {
                let cpu = r["cpu"].as_u64().context("trace record without cpu")?;
                dropped.insert(cpu, r["dropped"].as_u64().unwrap_or(0));
                for e in r["events"].as_array().into_iter().flatten() {
                    let f = |i: usize| e[i].as_u64().unwrap_or(0);
                    events.push(Event {
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
    if dropped.is_empty() {
        bail!("the run has no trace records (was the kernel told to trace?)");
    }
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
}
