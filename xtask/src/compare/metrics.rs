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

/// Migration counts of a hackbench run's timed interval, summed over every
/// reason (wakeup, balance, newidle, active, fork, exec), split as Fleming
/// split them in seed 002: within a package (`cross-MC`: SMT siblings,
/// same LLC, other LLC of the package) and across packages (`cross-DIE`).
fn hackbench_migrations(r: &RunResult) -> Result<Values> {
    let h = record(r, "hackbench")?;
    let m = &h["sched"]["migrations"];
    let reasons = m
        .as_object()
        .context("hackbench record without sched.migrations")?;
    let sum = |keys: &[&str]| -> f64 {
        reasons
            .values()
            .filter(|v| v.is_object())
            .map(|v| {
                keys.iter()
                    .map(|k| v[*k].as_u64().unwrap_or(0))
                    .sum::<u64>()
            })
            .sum::<u64>() as f64
    };
    let within = sum(&["smt_sibling", "same_llc", "other_llc_same_package"]);
    let across = sum(&["other_package_same_node", "other_node"]);
    Ok(vec![
        ("total".into(), within + across),
        ("cross-MC".into(), within),
        ("cross-DIE".into(), across),
    ])
}

/// The runqueue latency of a hackbench run's timed interval (the waits
/// that end in it, every task's, from enqueue or a preemption's put-back
/// to its switch-in: bcc's `runqlat` interval, except that a
/// delayed-dequeue task's wait starts at its block), in ns: the mean
/// exactly, the percentiles and the maximum within 1/64 (the record's
/// log-linear histogram), named as Fleming named them in seed 002 ("max9*
/// are percentiles").
fn hackbench_runqlat(r: &RunResult) -> Result<Values> {
    let h = record(r, "hackbench")?;
    let w = &h["sched"]["wait_ns"];
    let f = |k: &str| -> Result<f64> {
        w[k].as_u64()
            .map(|v| v as f64)
            .with_context(|| format!("hackbench record without sched.wait_ns.{k}"))
    };
    Ok(vec![
        ("mean".into(), f("mean")?),
        ("max90".into(), f("p90")?),
        ("max95".into(), f("p95")?),
        ("max99".into(), f("p99")?),
        ("max".into(), f("max")?),
    ])
}

/// The metric `name` of `experiment` (None: its main metric, see
/// [`for_experiment`]); `hackbench` also has `migrations` and `runqlat`.
pub fn for_experiment_metric(experiment: &str, name: Option<&str>) -> Result<Metric> {
    match (experiment, name) {
        (_, None) => for_experiment(experiment),
        ("hackbench", Some("migrations")) => Ok(Metric {
            unit: "migrations in the timed interval",
            better: Better::Lower,
            decimals: 0,
            extract: hackbench_migrations,
            title: |_| "hackbench-migrations".into(),
        }),
        ("hackbench", Some("runqlat")) => Ok(Metric {
            unit: "runqueue latency in ns",
            better: Better::Lower,
            decimals: 0,
            extract: hackbench_runqlat,
            title: |_| "hackbench-runqlat".into(),
        }),
        (e, Some(n)) => bail!(
            "--metric {n}: experiment '{e}' has no such metric (hackbench: migrations, runqlat; default: the experiment's main metric)"
        ),
    }
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
            unit: "transactions/s (TCP_RR, UDP_RR) or 10^6 bits/s received (TCP_STREAM, TCP_MAERTS, TCP_SENDFILE, UDP_STREAM)",
            better: Better::Higher,
            decimals: 1,
            extract: |r| {
                let n = record(r, "netperf")?;
                // What netperf prints: Trans. Rate per sec for the _RR tests,
                // Throughput 10^6bits/sec (received, for UDP_STREAM) else.
                let rr = n["test"].as_str().is_some_and(|t| t.ends_with("_RR"));
                let key = if rr { "trans_per_sec" } else { "mbit_per_sec" };
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
        "tbench" => Metric {
            unit: "MB/sec (10^6 bytes/s of ReadX and WriteX payload)",
            better: Better::Higher,
            decimals: 2,
            extract: |r| {
                let t = record(r, "tbench")?;
                let bytes = t["bytes"].as_u64().context("tbench record without bytes")?;
                let ns = t["elapsed_ns"]
                    .as_u64()
                    .context("tbench record without elapsed_ns")?;
                Ok(vec![(String::new(), bytes as f64 * 1e3 / ns.max(1) as f64)])
            },
            title: |_| "tbench".into(),
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
            "experiment '{other}' has no comparison metric (compare supports hackbench, schbench, netperf, tbench, nas, latency, stress)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Outcome;

    #[test]
    fn hackbench_migrations_split_by_package() {
        // wakeup: 3 same_llc + 2 other_package_same_node; balance: 1
        // smt_sibling + 4 other_node; same_cpu is not a migration. By hand:
        // within = 3 + 1 = 4, across = 2 + 4 = 6, total 10.
        let z = serde_json::json!({"same_cpu": 7, "smt_sibling": 0, "same_llc": 0,
            "other_llc_same_package": 0, "other_package_same_node": 0, "other_node": 0});
        let mut wakeup = z.clone();
        wakeup["same_llc"] = 3.into();
        wakeup["other_package_same_node"] = 2.into();
        let mut balance = z.clone();
        balance["smt_sibling"] = 1.into();
        balance["other_node"] = 4.into();
        let rec = serde_json::json!({"type": "hackbench", "sched": {"migrations": {
            "total": 10, "wakeup": wakeup, "balance": balance, "newidle": z}}});
        let r = result_of(rec);
        let m = for_experiment_metric("hackbench", Some("migrations")).unwrap();
        assert_eq!(m.better, Better::Lower);
        let v = (m.extract)(&r).unwrap();
        assert_eq!(
            v,
            vec![
                ("total".to_string(), 10.0),
                ("cross-MC".to_string(), 4.0),
                ("cross-DIE".to_string(), 6.0)
            ]
        );
        assert!(for_experiment_metric("netperf", Some("migrations")).is_err());
        assert!(for_experiment_metric("hackbench", None).is_ok());
    }

    #[test]
    fn hackbench_runqlat_reads_the_wait_histogram() {
        let rec = serde_json::json!({"type": "hackbench", "sched": {"wait_ns": {
            "count": 4, "min": 1, "mean": 616, "p50": 40, "p90": 900, "p95": 1_800,
            "p99": 5_900, "p99_9": 6_000, "max": 7_000}}});
        let r = result_of(rec);
        let m = for_experiment_metric("hackbench", Some("runqlat")).unwrap();
        assert_eq!(m.better, Better::Lower);
        let names: Vec<(String, f64)> = (m.extract)(&r).unwrap();
        assert_eq!(
            names,
            vec![
                ("mean".to_string(), 616.0),
                ("max90".to_string(), 900.0),
                ("max95".to_string(), 1_800.0),
                ("max99".to_string(), 5_900.0),
                ("max".to_string(), 7_000.0)
            ]
        );
        // A record without the histogram is an error, not a zero.
        let bare = result_of(serde_json::json!({"type": "hackbench", "sched": {}}));
        assert!((m.extract)(&bare).is_err());
    }

    fn result_of(rec: serde_json::Value) -> RunResult {
        RunResult {
            outcome: Outcome::Success,
            records: vec![rec],
            log: vec![],
            bad_records: vec![],
            stderr: String::new(),
            wall: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn tbench_is_payload_megabytes_per_second() {
        // 3,000,000 bytes in 2 ms = 1.5e9 bytes/s = 1500 MB/sec.
        let r = result_of(serde_json::json!({"type": "tbench", "bytes": 3_000_000u64,
            "elapsed_ns": 2_000_000u64, "mb_per_sec_x100": 150_000u64}));
        let m = for_experiment("tbench").unwrap();
        assert_eq!(m.better, Better::Higher);
        assert_eq!((m.extract)(&r).unwrap(), vec![(String::new(), 1500.0)]);
    }

    #[test]
    fn netperf_reads_transactions_for_rr_and_received_bits_for_streams() {
        let m = for_experiment("netperf").unwrap();
        assert_eq!(m.better, Better::Higher);
        // Each record carries both fields; the test decides which is read.
        for (test, want) in [
            ("TCP_RR", 111.0),
            ("UDP_RR", 111.0),
            ("TCP_STREAM", 222.0),
            ("TCP_MAERTS", 222.0),
            ("TCP_SENDFILE", 222.0),
            ("UDP_STREAM", 222.0),
        ] {
            let r = result_of(serde_json::json!({"type": "netperf", "test": test,
                "trans_per_sec": 111, "mbit_per_sec": 222, "send_mbit_per_sec": 333}));
            assert_eq!(
                (m.extract)(&r).unwrap(),
                vec![(String::new(), want)],
                "{test}"
            );
            let title = (m.title)(&r);
            assert_eq!(
                title,
                format!("netperf-{}", test.to_lowercase().replace('_', "-"))
            );
        }
    }
}
