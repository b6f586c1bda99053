//! `perf sched latency` from the trace: per thread, its runtime, switch-ins
//! and the delay from each wakeup (or fork) to it running.

use std::collections::HashMap;

use anyhow::Result;
use serde_json::Value;

use super::decode::decode;
use super::timeline;

/// One thread's line of the `perf sched latency`-style table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskLatency {
    pub name: String,
    pub tid: u64,
    /// Time it ran (ns), in stretches that ended within the trace.
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

/// The table, largest delays first. A switch-in after several wakeups
/// counts the delay from the first.
pub fn latency_table(records: &[Value]) -> Result<Vec<TaskLatency>> {
    let d = decode(records)?;
    let t = timeline::build(&d);
    let mut rows: HashMap<u64, TaskLatency> = HashMap::new();
    for s in &t.slices {
        let r = rows.entry(s.tid).or_insert_with(|| TaskLatency {
            name: d.name(s.tid),
            tid: s.tid,
            runtime_ns: 0,
            switches: 0,
            delays: 0,
            avg_delay_ns: 0,
            max_delay_ns: 0,
            max_delay_at_ns: 0,
        });
        r.switches += 1;
        if let Some(end) = s.end {
            r.runtime_ns += end.saturating_sub(s.start);
        }
    }
    // The earliest wakeup or fork before each switch-in.
    let mut woke_at: HashMap<usize, u64> = HashMap::new();
    for s in &t.steps {
        if let Some(run) = s.led_to {
            woke_at.entry(run).or_insert(s.ev.ts);
        }
    }
    let mut runs: Vec<(usize, u64)> = woke_at.into_iter().collect();
    runs.sort_unstable();
    let mut delay_sum: HashMap<u64, u64> = HashMap::new();
    for (run, woke) in runs {
        let ev = t.steps[run].ev;
        let tid = ev.subject();
        let d = ev.ts.saturating_sub(woke);
        let r = rows.get_mut(&tid).expect("every switch-in has a slice");
        r.delays += 1;
        *delay_sum.entry(tid).or_default() += d;
        if d >= r.max_delay_ns {
            r.max_delay_ns = d;
            r.max_delay_at_ns = ev.ts;
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
