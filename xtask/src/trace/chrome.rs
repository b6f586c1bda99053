//! The trace as a Chrome trace-event JSON timeline (the "JSON Array/Object
//! Format" of the Trace Event Format document; ui.perfetto.dev and
//! chrome://tracing open it). Two processes:
//!
//! - "CPUs" (pid 1): a track per CPU ("CPU n"), a slice (`cat` "sched")
//!   for every stretch a thread ran there, named after the thread; and an
//!   instant for every wakeup (`cat` "wakeup"), migration ("migration") and
//!   fork ("fork") on the CPU that recorded it (the waker's, the balancing
//!   CPU's, the parent's). A wakeup that put its thread on another CPU than
//!   the one it last ran or was queued on also has a migration instant
//!   (reason "wakeup", on the waker's CPU, just before the wakeup's), as
//!   the scheduler counts it.
//! - "threads" (pid 2): a track per thread (its run-wide thread number as
//!   tid), a slice "CPU n" for every stretch it ran (`args.cpu`), and an
//!   instant when it was woken, migrated or forked.
//!
//! Flows (v1: `ph` "s" on the waker's CPU track, bound to its wakeup
//! instant, and `ph` "f" with `bp` "e" on the wakee's thread track, bound
//! to the slice it starts) join each wakeup or fork to the first switch-in
//! of its thread after it; a wakeup the trace never sees followed by a run
//! has no flow. CPU tracks' tids are numbered after the largest thread
//! number so that every track has its own tid.
//!
//! When a CPU dropped events, the timeline stops at the cut
//! ([`super::decode::Cut`]; runs still open end there), the top-level
//! `otherData` (the format's metadata dictionary: chrome://tracing's
//! "Metadata", Perfetto's trace info) says where and why and how many
//! events are left out, and a global instant (`cat` "trace") marks it.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use serde_json::{Value, json};

use super::TraceSummary;
use super::decode::{Decoded, What, decode};
use super::timeline::{self, Step, Timeline};

const CPUS_PID: u64 = 1;
const THREADS_PID: u64 = 2;

/// Output order at equal times. Perfetto imports events stably sorted by
/// time and binds a flow event to the slice open on its track when it reads
/// it, so: run slices; then instants on CPU tracks, each followed by the
/// flow start that binds to it; then flow ends (after their start, which
/// may share the time, and bound to the run slice that starts there); then
/// instants on thread tracks (which would otherwise catch the flow end).
const META: u8 = 0;
const SLICE: u8 = 1;
const CPU_INSTANT: u8 = 2;
const FLOW_END: u8 = 3;
const THREAD_INSTANT: u8 = 4;

/// Builds the Chrome trace JSON from a run's records; errors if the run
/// carried no trace.
pub fn chrome_trace(records: &[Value]) -> Result<(Value, TraceSummary)> {
    let d = decode(records)?;
    let t = timeline::build(&d);
    let mut out = Out::default();
    let tids = thread_ids(&d);
    let cpu_base = tids.last().copied().unwrap_or(0) + 1;
    let cpu_tid = |cpu: u64| cpu_base + cpu;
    metadata(&mut out, &d, &tids, cpu_tid);
    for s in &t.slices {
        let end = s.end.unwrap_or(t.last_ts);
        out.push(
            s.start,
            SLICE,
            json!({"name": d.name(s.tid), "cat": "sched", "ph": "X",
            "pid": CPUS_PID, "tid": cpu_tid(s.cpu), "ts": us(s.start),
            "dur": us(end.saturating_sub(s.start)), "args": {"tid": s.tid}}),
        );
    }
    thread_slices(&mut out, &t);
    let mut flow_id = 0;
    for s in &t.steps {
        let cpu_track = cpu_tid(s.ev.cpu);
        let flow = s.led_to.and_then(|run| {
            let cat = match s.ev.what {
                What::Wakeup { .. } => "wakeup",
                What::Fork { .. } => "fork",
                _ => return None,
            };
            flow_id += 1;
            Some((cat, flow_id, t.steps[run].ev))
        });
        let start = flow.map(|(cat, id, _)| {
            json!({"name": cat, "cat": cat, "ph": "s", "id": id, "pid": CPUS_PID,
                "tid": cpu_track, "ts": us(s.ev.ts)})
        });
        instants(&mut out, &d, s, cpu_track, start);
        if let Some((cat, id, run)) = flow {
            out.push(
                run.ts,
                FLOW_END,
                json!({"name": cat, "cat": cat, "ph": "f", "bp": "e",
                "id": id, "pid": THREADS_PID, "tid": run.subject(), "ts": us(run.ts)}),
            );
        }
    }
    let mut trace = json!({"displayTimeUnit": "ns"});
    if let Some(c) = d.cut {
        // The trace's metadata ("otherData": chrome://tracing's Metadata
        // dialog, Perfetto's trace info), and a global instant on the
        // timeline where it stops.
        trace["otherData"] = json!({
            "trace_cut": c.describe(),
            "trace_cut_ns": c.at.to_string(),
            "events_left_out": c.left_out().to_string(),
            "events_dropped": c.dropped.to_string(),
            "events_recorded_after_cut": c.recorded_after.to_string(),
        });
        out.push(
            c.at,
            THREAD_INSTANT,
            json!({"name": "trace cut: events dropped", "cat": "trace", "ph": "i", "s": "g",
                "pid": CPUS_PID, "tid": cpu_tid(c.cpu), "ts": us(c.at),
                "args": {"note": c.describe(), "events_left_out": c.left_out()}}),
        );
    }
    trace["traceEvents"] = out.finish().into();
    Ok((trace, TraceSummary::of(&d)))
}

/// Events with their sort key (time, rank); `finish` sorts them stably.
#[derive(Default)]
struct Out(Vec<(u64, u8, Value)>);

impl Out {
    fn push(&mut self, ts: u64, rank: u8, v: Value) {
        self.0.push((ts, rank, v));
    }

    fn finish(mut self) -> Vec<Value> {
        self.0.sort_by_key(|&(ts, rank, _)| (ts, rank));
        self.0.into_iter().map(|(_, _, v)| v).collect()
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Every thread the trace names or mentions, in order.
fn thread_ids(d: &Decoded) -> Vec<u64> {
    let mut tids: BTreeSet<u64> = d.names.keys().copied().collect();
    for e in d.per_cpu.values().flatten() {
        tids.insert(e.subject());
        if let What::Switch { prev, .. } = e.what {
            tids.insert(prev);
        }
    }
    tids.remove(&0);
    tids.into_iter().collect()
}

/// Process and track names and their order.
fn metadata(out: &mut Out, d: &Decoded, tids: &[u64], cpu_tid: impl Fn(u64) -> u64) {
    let meta = |name: &str, pid: u64, tid: Option<u64>, args: Value| {
        let mut v = json!({"name": name, "ph": "M", "pid": pid, "args": args});
        if let Some(tid) = tid {
            v["tid"] = tid.into();
        }
        v
    };
    for (pid, name) in [(CPUS_PID, "CPUs"), (THREADS_PID, "threads")] {
        out.push(
            0,
            META,
            meta("process_name", pid, None, json!({"name": name})),
        );
        out.push(
            0,
            META,
            meta("process_sort_index", pid, None, json!({"sort_index": pid})),
        );
    }
    for &cpu in d.per_cpu.keys() {
        let tid = Some(cpu_tid(cpu));
        out.push(
            0,
            META,
            meta(
                "thread_name",
                CPUS_PID,
                tid,
                json!({"name": format!("CPU {cpu}")}),
            ),
        );
        out.push(
            0,
            META,
            meta(
                "thread_sort_index",
                CPUS_PID,
                tid,
                json!({"sort_index": cpu}),
            ),
        );
    }
    for &tid in tids {
        let t = Some(tid);
        out.push(
            0,
            META,
            meta("thread_name", THREADS_PID, t, json!({"name": d.name(tid)})),
        );
        out.push(
            0,
            META,
            meta(
                "thread_sort_index",
                THREADS_PID,
                t,
                json!({"sort_index": tid}),
            ),
        );
    }
}

/// Each thread's runs on its own track. A run is cut short where the
/// thread's next run starts: a CPU can record a thread's switch-in a
/// little before the CPU it leaves records its switch-out.
fn thread_slices(out: &mut Out, t: &Timeline) {
    let mut by_thread: BTreeMap<u64, Vec<(u64, u64, u64)>> = BTreeMap::new();
    for s in &t.slices {
        let end = s.end.unwrap_or(t.last_ts);
        by_thread
            .entry(s.tid)
            .or_default()
            .push((s.start, end, s.cpu));
    }
    for (tid, mut runs) in by_thread {
        runs.sort_unstable();
        for i in 0..runs.len() {
            let (start, end, cpu) = runs[i];
            let end = runs.get(i + 1).map_or(end, |n| end.min(n.0));
            out.push(
                start,
                SLICE,
                json!({"name": format!("CPU {cpu}"), "cat": "sched",
                "ph": "X", "pid": THREADS_PID, "tid": tid, "ts": us(start),
                "dur": us(end.saturating_sub(start)), "args": {"cpu": cpu, "tid": tid}}),
            );
        }
    }
}

/// A wakeup, migration or fork as an instant on the recording CPU's track
/// (followed by `flow_start`, which binds to it) and on its thread's track.
/// A wakeup that moved its thread is preceded by a migration instant
/// (reason "wakeup"), as Linux traces `sched_migrate_task` between
/// `sched_waking` and `sched_wakeup`.
fn instants(out: &mut Out, d: &Decoded, s: &Step, cpu_track: u64, flow_start: Option<Value>) {
    let e = s.ev;
    if let (What::Wakeup { tid, target, .. }, Some(from)) = (e.what, s.migrated_from) {
        let args = json!({"tid": tid, "from": from, "to": target, "reason": "wakeup",
            "by_cpu": e.cpu});
        let instant = |name: &str, pid: u64, track: u64| {
            json!({"name": name, "cat": "migration", "ph": "i", "s": "t", "pid": pid,
                "tid": track, "ts": us(e.ts), "args": args})
        };
        let name = format!("migrate {}", d.name(tid));
        out.push(e.ts, CPU_INSTANT, instant(&name, CPUS_PID, cpu_track));
        out.push(e.ts, THREAD_INSTANT, instant("migrated", THREADS_PID, tid));
    }
    let (cat, on_cpu, on_thread, args) = match e.what {
        What::Switch { .. } => return,
        What::Wakeup { tid, target, sync } => (
            "wakeup",
            format!("wakeup {}", d.name(tid)),
            "woken",
            json!({"tid": tid, "waker_tid": s.running, "waker_cpu": e.cpu,
                "target_cpu": target, "sync": sync}),
        ),
        What::Migrate {
            tid,
            from,
            to,
            reason,
        } => (
            "migration",
            format!("migrate {}", d.name(tid)),
            "migrated",
            json!({"tid": tid, "from": from, "to": to, "reason": reason, "by_cpu": e.cpu}),
        ),
        What::Fork { tid, target } => (
            "fork",
            format!("fork {}", d.name(tid)),
            "forked",
            json!({"tid": tid, "parent_tid": s.running, "parent_cpu": e.cpu,
                "placed_on": target}),
        ),
    };
    let instant = |name: &str, pid: u64, tid: u64| {
        json!({"name": name, "cat": cat, "ph": "i", "s": "t", "pid": pid, "tid": tid,
            "ts": us(e.ts), "args": args})
    };
    out.push(e.ts, CPU_INSTANT, instant(&on_cpu, CPUS_PID, cpu_track));
    if let Some(f) = flow_start {
        out.push(e.ts, CPU_INSTANT, f);
    }
    out.push(
        e.ts,
        THREAD_INSTANT,
        instant(on_thread, THREADS_PID, e.subject()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(records: &[Value]) -> Vec<Value> {
        let (t, _) = chrome_trace(records).unwrap();
        t["traceEvents"].as_array().unwrap().clone()
    }

    /// The track (pid, tid) named `name`.
    fn track(ev: &[Value], name: &str) -> (u64, u64) {
        let m = ev
            .iter()
            .find(|e| e["name"] == "thread_name" && e["args"]["name"] == name)
            .unwrap_or_else(|| panic!("no track {name}"));
        (m["pid"].as_u64().unwrap(), m["tid"].as_u64().unwrap())
    }

    fn on(ev: &[Value], (pid, tid): (u64, u64), ph: &str) -> Vec<Value> {
        ev.iter()
            .filter(|e| e["pid"] == pid && e["tid"] == tid && e["ph"] == ph)
            .cloned()
            .collect()
    }

    #[test]
    fn cpus_and_threads_get_named_tracks_slices_instants_and_flows() {
        let records = vec![
            json!({"type": "trace_threads", "threads": [[1, "main"], [2, "worker"]]}),
            json!({"type": "trace", "cpu": 0, "chunk": 0, "chunks": 1, "dropped": 0, "events": [
                [100, 3, 2, 1, 0],      // fork worker onto CPU 1
                [200, 0, 1, 0, 0],      // CPU 0: idle -> main
                [900, 0, 0, 1, 0],      // CPU 0: main -> idle
                [950, 1, 2, 1, 1],      // wakeup worker (still running) on CPU 1, sync
                [960, 2, 2, 1, 2]       // balance (reason 2) move 1 -> 0 (to * 16 + reason)
            ]}),
            json!({"type": "trace", "cpu": 1, "chunk": 0, "chunks": 1, "dropped": 0, "events": [
                [300, 0, 2, 0, 0]       // CPU 1: idle -> worker, still running at the end
            ]}),
        ];
        let (_, s) = chrome_trace(&records).unwrap();
        assert_eq!(
            s,
            TraceSummary {
                events: 6,
                dropped: 0,
                cpus: 2,
                threads: 2,
                cut: None
            }
        );
        let ev = events(&records);
        for (pid, name) in [(1, "CPUs"), (2, "threads")] {
            assert!(ev.iter().any(|e| e["name"] == "process_name"
                && e["pid"] == pid
                && e["args"]["name"] == name));
        }
        let (cpu0, cpu1) = (track(&ev, "CPU 0"), track(&ev, "CPU 1"));
        let (main, worker) = (track(&ev, "main"), track(&ev, "worker"));
        assert_eq!((cpu0.0, main.0), (1, 2));
        assert_eq!(
            (main.1, worker.1),
            (1, 2),
            "thread tracks' tids are the thread numbers"
        );
        let tids = std::collections::HashSet::from([cpu0.1, cpu1.1, main.1, worker.1]);
        assert_eq!(tids.len(), 4, "every track has its own tid");
        for e in &ev {
            assert!(e["ph"] == "M" || e["cat"].is_string(), "no category: {e}");
        }

        let x = on(&ev, cpu0, "X");
        assert_eq!(x.len(), 1);
        assert_eq!(
            (
                &x[0]["name"],
                x[0]["ts"].as_f64(),
                x[0]["dur"].as_f64(),
                &x[0]["cat"]
            ),
            (&json!("main"), Some(0.2), Some(0.7), &json!("sched"))
        );
        let x = on(&ev, cpu1, "X");
        assert_eq!(
            (&x[0]["name"], x[0]["dur"].as_f64()),
            (&json!("worker"), Some(0.66)),
            "closed at the last event"
        );
        let x = on(&ev, worker, "X");
        assert_eq!(x.len(), 1);
        assert_eq!(
            (&x[0]["name"], &x[0]["args"]["cpu"], x[0]["ts"].as_f64()),
            (&json!("CPU 1"), &json!(1), Some(0.3))
        );
        assert_eq!(on(&ev, main, "X")[0]["args"]["cpu"], 0);

        // Instants sit on the recording CPU's track and on the thread's.
        let i = on(&ev, cpu0, "i");
        let names: Vec<&str> = i.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["fork worker", "wakeup worker", "migrate worker"]);
        assert_eq!(
            (&i[0]["cat"], &i[1]["cat"], &i[2]["cat"]),
            (&json!("fork"), &json!("wakeup"), &json!("migration"))
        );
        assert_eq!(
            (&i[1]["args"]["target_cpu"], &i[1]["args"]["sync"]),
            (&json!(1), &json!(true))
        );
        assert_eq!(
            (&i[2]["args"]["reason"], &i[2]["args"]["to"]),
            (&json!("balance"), &json!(0))
        );
        let names: Vec<Value> = on(&ev, worker, "i")
            .iter()
            .map(|e| e["name"].clone())
            .collect();
        assert_eq!(names, [json!("forked"), json!("woken"), json!("migrated")]);

        // The fork flows to worker's run; the wakeup came while worker ran,
        // no run follows it, so it has no flow.
        let s = on(&ev, cpu0, "s");
        assert_eq!(s.len(), 1);
        let f = on(&ev, worker, "f");
        assert_eq!(f.len(), 1);
        assert_eq!(
            (&s[0]["id"], &s[0]["cat"], &s[0]["name"]),
            (&f[0]["id"], &f[0]["cat"], &f[0]["name"])
        );
        assert_eq!(
            (s[0]["ts"].as_f64(), f[0]["ts"].as_f64(), &f[0]["bp"]),
            (Some(0.1), Some(0.3), &json!("e"))
        );
        assert!(chrome_trace(&[json!({"type": "boot"})]).is_err());
    }

    #[test]
    fn flows_bind_in_order_and_thread_runs_do_not_overlap() {
        let records = vec![
            json!({"type": "trace", "cpu": 0, "dropped": 0, "events": [
                [100, 0, 5, 0, 0],      // idle -> 5
                [410, 0, 0, 5, 0]       // 5 -> idle, recorded after CPU 1 took 5
            ]}),
            json!({"type": "trace", "cpu": 1, "dropped": 0, "events": [
                [300, 0, 6, 0, 0],      // idle -> 6
                [350, 1, 7, 1, 0],      // 6 wakes 7 onto CPU 1
                [400, 0, 5, 6, 0],      // 6 -> 5
                [500, 0, 7, 5, 0]       // 5 -> 7 (the wakeup's run)
            ]}),
            json!({"type": "trace", "cpu": 2, "dropped": 0, "events": [
                [700, 3, 8, 2, 0],      // fork 8 onto CPU 2 ...
                [700, 0, 8, 0, 0]       // ... which runs it in the same ns
            ]}),
        ];
        let ev = events(&records);
        let five = on(&ev, track(&ev, "thread 5"), "X");
        let spans: Vec<(f64, f64)> = five
            .iter()
            .map(|e| (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap()))
            .collect();
        assert_eq!(
            spans,
            [(0.1, 0.3), (0.4, 0.1)],
            "the first run is cut at 400"
        );
        // The flow start follows its instant; the flow end follows the run
        // slice it binds to and precedes any instant at that time.
        let pos = |p: &dyn Fn(&Value) -> bool| ev.iter().position(p).unwrap();
        let s = pos(&|e| e["ph"] == "s");
        assert_eq!(ev[s - 1]["name"], "wakeup thread 7");
        assert_eq!(
            (&ev[s]["pid"], &ev[s]["tid"]),
            (&ev[s - 1]["pid"], &ev[s - 1]["tid"])
        );
        let f = pos(&|e| e["ph"] == "f");
        let run = pos(&|e| e["ph"] == "X" && e["pid"] == 2 && e["tid"] == 7);
        assert!(run < f);
        assert_eq!(ev[run]["ts"], ev[f]["ts"]);
        assert_eq!(ev[f]["ts"].as_f64(), Some(0.5));
        // Start and end at the same time: start, end, then the thread's
        // own instant.
        let s = pos(&|e| e["ph"] == "s" && e["cat"] == "fork");
        let f = pos(&|e| e["ph"] == "f" && e["cat"] == "fork");
        let run = pos(&|e| e["ph"] == "X" && e["pid"] == 2 && e["tid"] == 8);
        let forked = pos(&|e| e["name"] == "forked");
        assert!(run < s && s < f && f < forked, "{run} {s} {f} {forked}");
        assert_eq!(ev[s - 1]["name"], "fork thread 8");
    }

    #[test]
    fn wakeup_migrations_get_an_instant_and_a_cut_is_in_the_metadata() {
        let records = vec![
            json!({"type": "trace_threads", "threads": [[1, "main"], [2, "w"]]}),
            json!({"type": "trace", "cpu": 0, "dropped": 0, "events": [
                [1_000, 3, 2, 1, 0],      // main forks w onto CPU 1
                [9_000, 1, 2, 0, 0],      // main wakes w onto CPU 0: moved from CPU 1
                [9_500, 0, 2, 0, 0],      // idle -> w, running at the cut
                [20_000, 0, 0, 2, 0]      // past the cut
            ]}),
            json!({"type": "trace", "cpu": 1, "dropped": 2, "events": [
                [2_000, 0, 2, 0, 0],      // idle -> w
                [3_000, 0, 0, 2, 0],      // w -> idle
                [12_000, 1, 1, 1, 0]      // CPU 1 (an interrupt) wakes main: its last kept event, the cut
            ]}),
        ];
        let (trace, s) = chrome_trace(&records).unwrap();
        let ev = trace["traceEvents"].as_array().unwrap().clone();
        let cpu0 = track(&ev, "CPU 0");
        let i = on(&ev, cpu0, "i");
        let names: Vec<&str> = i.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["fork w", "migrate w", "wakeup w"]);
        assert_eq!(
            (
                &i[1]["cat"],
                &i[1]["args"]["reason"],
                &i[1]["args"]["from"],
                &i[1]["args"]["to"]
            ),
            (&json!("migration"), &json!("wakeup"), &json!(1), &json!(0))
        );
        let names: Vec<Value> = on(&ev, track(&ev, "w"), "i")
            .iter()
            .map(|e| e["name"].clone())
            .collect();
        assert_eq!(names, [json!("forked"), json!("migrated"), json!("woken")]);
        // The wakeup's flow still starts right after its own instant.
        let f = ev
            .iter()
            .position(|e| e["ph"] == "s" && e["cat"] == "wakeup")
            .unwrap();
        assert_eq!(ev[f - 1]["name"], "wakeup w");

        let cut = s.cut.unwrap();
        assert_eq!(
            (cut.at_ns, cut.recorded_after, cut.left_out),
            (12_000, 2, 4)
        );
        let meta = &trace["otherData"];
        assert_eq!(meta["trace_cut"], json!(cut.note));
        assert_eq!(meta["trace_cut_ns"], "12000");
        assert_eq!(meta["events_left_out"], "4");
        assert!(ev.iter().all(|e| e["ts"].as_f64().unwrap_or(0.0) <= 12.0));
        let g: Vec<&Value> = ev.iter().filter(|e| e["s"] == "g").collect();
        assert_eq!(
            (g.len(), g[0]["ts"].as_f64(), &g[0]["cat"]),
            (1, Some(12.0), &json!("trace"))
        );
        let x = on(&ev, cpu0, "X");
        assert_eq!(
            (x[0]["ts"].as_f64(), x[0]["dur"].as_f64()),
            (Some(9.5), Some(2.5)),
            "a run open at the cut ends there"
        );
        let (complete, _) = chrome_trace(&records[..2]).unwrap();
        assert!(complete.get("otherData").is_none());
    }
}
