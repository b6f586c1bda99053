//! What `cargo xtask compare` measures for each experiment: the value(s) a
//! run yields, their unit and which direction is better, as the seeds'
//! tables report them.

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::stats::Better;
use crate::runner::RunResult;

/// (metric name, value) pairs read from one run.
pub type Values = Vec<(String, f64)>;

/// How to read one experiment's result.
pub struct Metric {
    pub unit: &'static str,
    pub better: Better,
    pub decimals: usize,
    /// (metric name, value) pairs from one run; an empty name when the
    /// experiment has a single metric.
    pub extract: fn(&RunResult) -> Result<Values>,
    /// The table title, from a run's records.
    pub title: fn(&RunResult) -> String,
}

fn record<'a>(r: &'a RunResult, kind: &str) -> Result<&'a Value> {
    r.record(kind)
        .with_context(|| format!("the run produced no '{kind}' record"))
}

/// The metric of `experiment`, or an error naming the ones that have one.
pub fn for_experiment(experiment: &str) -> Result<Metric> {
    Ok(match experiment {
        "hackbench" => Metric {
            unit: "time in seconds",
            better: Better::Lower,
            decimals: 4,
            extract: |r| {
                let h = record(r, "hackbench")?;
                let ns = h["time_ns"]
                    .as_u64()
                    .context("hackbench record without time_ns")?;
                Ok(vec![(String::new(), ns as f64 / 1e9)])
            },
            title: |r| {
                let h = r.record("hackbench");
                let f = |k: &str| h.and_then(|h| h[k].as_str()).unwrap_or("?").to_string();
                format!("hackbench-{}-{}s", f("mode"), f("transport"))
            },
        },
        "latency" => Metric {
            unit: "pipe round trip p50 in microseconds",
            better: Better::Lower,
            decimals: 2,
            extract: |r| {
                let l = record(r, "latency")?;
                let mut v: Vec<(String, f64)> = l["placements"]
                    .as_array()
                    .context("latency record without placements")?
                    .iter()
                    .map(|p| {
                        (
                            p["placement"].as_str().unwrap_or("?").to_string(),
                            p["p50_ns"].as_u64().unwrap_or(0) as f64 / 1e3,
                        )
                    })
                    .collect();
                if let Some(c) = l["ctx_switch_ns"].as_u64() {
                    v.push(("ctx_switch".into(), c as f64 / 1e3));
                }
                Ok(v)
            },
            title: |_| "latency".into(),
        },
        "schbench" => Metric {
            unit: "wakeup latency percentiles in microseconds",
            better: Better::Lower,
            decimals: 1,
            extract: |r| {
                let s = record(r, "schbench")?;
                let w = &s["wakeup_latency_ns"];
                Ok(["p50", "p90", "p99", "p99_9"]
                    .iter()
                    .map(|k| {
                        (
                            format!("wakeup-{}", k.replace('_', ".")),
                            w[k].as_u64().unwrap_or(0) as f64 / 1e3,
                        )
                    })
                    .collect())
            },
            title: |_| "schbench".into(),
        },
        "netperf" => Metric {
            unit: "TCP_RR transactions/s or TCP_STREAM Mbit/s",
            better: Better::Higher,
            decimals: 1,
            extract: |r| {
                let n = record(r, "netperf")?;
                let key = if n["test"] == "TCP_RR" {
                    "trans_per_sec"
                } else {
                    "mbit_per_sec"
                };
                let v = n[key]
                    .as_u64()
                    .with_context(|| format!("netperf record without {key}"))?;
                Ok(vec![(String::new(), v as f64)])
            },
            title: |r| {
                let t = r
                    .record("netperf")
                    .and_then(|n| n["test"].as_str())
                    .unwrap_or("?")
                    .to_lowercase()
                    .replace('_', "-");
                format!("netperf-{t}")
            },
        },
        "nas" => Metric {
            unit: "time in seconds",
            better: Better::Lower,
            decimals: 4,
            extract: |r| {
                let n = record(r, "nas")?;
                let ns = n["time_ns"]
                    .as_u64()
                    .context("nas record without time_ns")?;
                Ok(vec![(String::new(), ns as f64 / 1e9)])
            },
            title: |_| "nas".into(),
        },
        "stress" => Metric {
            unit: "pipe and socket messages",
            better: Better::Higher,
            decimals: 0,
            extract: |r| {
                let s = record(r, "stress")?;
                let n = s["messages_sent"]
                    .as_u64()
                    .context("stress record without messages_sent")?;
                Ok(vec![(String::new(), n as f64)])
            },
            title: |_| "stress".into(),
        },
        other => bail!(
            "experiment '{other}' has no comparison metric (compare supports hackbench, schbench, netperf, nas, latency, stress)"
        ),
    })
}
