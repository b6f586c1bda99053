//! The seed threads' published numbers (`xtask/data/seeds/published-results.jsonl`,
//! a verbatim copy of `../shared/seeds/`), embedded at build time and parsed
//! with serde. Only the fields the verdict table uses are typed; the rest of
//! each row (sources, notes, spreads) stays in the file for readers.

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The JSON lines, one published baseline/variant pair each.
pub const JSONL: &str = include_str!("../../data/seeds/published-results.jsonl");

/// Which direction of the metric is better.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
}

/// One published result.
#[derive(Clone, Debug, Deserialize)]
pub struct Row {
    /// `SEED-NN`, e.g. "003-07".
    pub id: String,
    /// "000" to "004".
    pub seed: String,
    /// As printed, e.g. "hackbench", "netperf", "tbench".
    pub benchmark: String,
    /// The benchmark's knobs (free-form per seed: groups, test, placement, ...).
    pub benchmark_args: Map<String, Value>,
    pub metric: String,
    pub better: Better,
    pub baseline_label: String,
    pub baseline_value: f64,
    pub variant_label: String,
    /// None when only a relative change was printed (seed 001).
    pub variant_value: Option<f64>,
    /// The change as printed, in the thread's own sign convention.
    pub change_pct: Option<f64>,
    /// (variant − baseline) / baseline × 100, computed by the extractor.
    pub computed_raw_change_pct: Option<f64>,
    /// mmtests' `*…*` marker: Some(true) significant, None not stated.
    pub significant: Option<bool>,
    /// "better", "worse" or "same".
    pub variant_outcome: String,
    pub claim: String,
    pub contested: bool,
}

impl Row {
    /// A string argument (`benchmark_args[key]`), if present and a string.
    pub fn arg_str(&self, key: &str) -> Option<&str> {
        self.benchmark_args.get(key).and_then(Value::as_str)
    }

    /// An integer argument, if present and a number.
    pub fn arg_u64(&self, key: &str) -> Option<u64> {
        self.benchmark_args.get(key).and_then(Value::as_u64)
    }

    /// The published change in percent, signed so that positive means the
    /// variant is better: the raw change for higher-is-better metrics, its
    /// negation for lower-is-better ones. Seed 001 printed only Intel's
    /// "compare%", which is already signed that way (positive = better, as
    /// PUBLISHED-RESULTS.md assumes), so it is used as printed there.
    pub fn better_pct(&self) -> Option<f64> {
        match self.computed_raw_change_pct {
            Some(raw) => Some(match self.better {
                Better::Higher => raw,
                Better::Lower => -raw,
            }),
            None => self.change_pct,
        }
    }
}

/// Every published row, in file order.
pub fn rows() -> Result<Vec<Row>> {
    parse(JSONL)
}

/// Parses JSON lines (blank lines skipped); errors name the line.
pub fn parse(text: &str) -> Result<Vec<Row>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("published-results.jsonl line {}", i + 1))
        })
        .collect()
}

/// The rows of one seed.
pub fn for_seed(seed: &str) -> Result<Vec<Row>> {
    Ok(rows()?.into_iter().filter(|r| r.seed == seed).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_95_rows_parse_with_the_documented_counts() {
        let rows = rows().unwrap();
        assert_eq!(rows.len(), 95);
        for (seed, n) in [
            ("000", 8),
            ("001", 30),
            ("002", 13),
            ("003", 26),
            ("004", 18),
        ] {
            assert_eq!(
                rows.iter().filter(|r| r.seed == seed).count(),
                n,
                "seed {seed}"
            );
        }
        let mut ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 95, "ids are unique");
        assert!(rows.iter().all(|r| r.id.starts_with(&r.seed)));
    }

    #[test]
    fn better_pct_follows_the_metric_direction() {
        let rows = rows().unwrap();
        let get = |id: &str| rows.iter().find(|r| r.id == id).unwrap();
        // 003-15: hackbench time 7.7557 -> 5.594 s (lower is better): raw
        // (5.594 - 7.7557) / 7.7557 = -27.87 %, so +27.87 % better.
        let r = get("003-15");
        assert_eq!(r.better, Better::Lower);
        assert!((r.better_pct().unwrap() - 27.87).abs() < 1e-9);
        // 004-13: TCP_RR 200833 -> 243733 trans/s (higher is better): raw
        // 42900 / 200833 = +21.36 %, better as is.
        let r = get("004-13");
        assert_eq!(r.better, Better::Higher);
        assert!((r.better_pct().unwrap() - 21.36).abs() < 1e-9);
        assert_eq!(r.arg_str("placement"), Some("stacked"));
        // 001-07: only Intel's compare% (-15.43, positive = better) is printed.
        let r = get("001-07");
        assert_eq!(r.variant_value, None);
        assert!((r.better_pct().unwrap() + 15.43).abs() < 1e-9);
        assert_eq!(r.arg_u64("groups"), Some(2));
        // 002-03: printed "+5%" but the means give 0.057 -> 0.055 s, i.e.
        // raw -3.51 %: the computed value is used, +3.51 % better.
        let r = get("002-03");
        assert!((r.better_pct().unwrap() - 3.51).abs() < 1e-9);
        assert!(
            rows.iter().all(|r| r.better_pct().is_some()),
            "every row has a change"
        );
    }

    #[test]
    fn a_broken_line_is_named() {
        let e = parse("\n{\"id\": 1}\n").unwrap_err();
        assert!(format!("{e:#}").contains("line 2"), "{e:#}");
    }
}
