//! The verdict table of `cargo xtask seed N`: one line per published row
//! of the seed — its numbers, schedlab's numbers for the mapped cell, the
//! verdict and the ratio of the changes — or "not reproduced: <why>"; and
//! the same as `seed_verdict` JSON records for `--results`.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::data::Row;
use super::mapping::Mapping;
use super::verdict::{Judgement, Verdict};
use crate::compare::stats::Summary;

/// schedlab's side of a judged row.
#[derive(Clone, Debug)]
pub struct Measured {
    pub part: &'static str,
    pub op: String,
    /// The compare table's metric name ("" = the main one).
    pub metric: &'static str,
    pub base: Summary,
    pub var: Summary,
    /// The compare table's unit (e.g. "time in seconds").
    pub unit: &'static str,
    pub judgement: Judgement,
    pub caveat: Option<&'static str>,
    /// Every variant run gave exactly its baseline run's value: the switch
    /// changed no decision in this shape.
    pub identical: bool,
}

/// schedlab's cell as the lookup of [`line`] returns it.
pub struct Cell {
    pub base: Summary,
    pub var: Summary,
    pub unit: &'static str,
    pub judgement: Judgement,
    pub identical: bool,
}

/// One line of the verdict table.
#[derive(Clone, Debug)]
pub struct Line<'a> {
    pub row: &'a Row,
    /// Measured, or why not.
    pub outcome: Result<Measured, String>,
}

impl Line<'_> {
    /// Whether schedlab's change is significant and goes the published way.
    pub fn same_direction(&self) -> bool {
        matches!(&self.outcome, Ok(m) if m.judgement.verdict == Verdict::Same)
    }
}

/// A number with about five significant digits.
fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 10_000.0 || (a >= 100.0 && x.fract() == 0.0) {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

/// `benchmark knob knob ...` from the row's arguments.
pub fn label(row: &Row) -> String {
    let bench = match row.benchmark.as_str() {
        b if b.starts_with("NAS") => "NAS".to_string(),
        b => b.split(" (").next().unwrap_or(b).to_string(),
    };
    let mut s = bench;
    for key in [
        "kernel",
        "power_management",
        "mode",
        "ipc",
        "test",
        "placement",
        "groups",
        "instances",
        "clients",
    ] {
        let Some(v) = row.benchmark_args.get(key) else {
            continue;
        };
        let v = match v {
            Value::String(t) => t.split([' ', '(']).next().unwrap_or("").to_string(),
            Value::Number(n) => format!("{key}={n}"),
            _ => continue,
        };
        if !v.is_empty() {
            s.push(' ');
            s.push_str(&v);
        }
    }
    if row.seed == "002" {
        // 002's rows differ by machine and measured quantity.
        let _ = write!(s, " [{}]", row.metric.split(" (").next().unwrap_or(""));
    }
    s
}

/// The published column: `base→var (+x.xx%)`, `*` when mmtests marked it
/// significant; seed 001 printed only the relative change.
fn published(row: &Row) -> String {
    let pct = row.better_pct().unwrap_or(f64::NAN);
    let star = if row.significant == Some(true) {
        "*"
    } else {
        ""
    };
    match row.variant_value {
        Some(v) => format!("{}→{} ({pct:+.2}%{star})", num(row.baseline_value), num(v)),
        None => format!("rel. ({pct:+.2}%{star})"),
    }
}

/// The whole table; `clock` names the backend's clock (sim, icount, host).
pub fn render(seed: &str, form: &str, clock: &str, lines: &[Line<'_>]) -> String {
    let mut rows: Vec<[String; 6]> = vec![[
        "id".into(),
        "benchmark/args".into(),
        "published base→var (+=better)".into(),
        format!("schedlab base→var ({clock})"),
        "verdict".into(),
        "ratio".into(),
    ]];
    let mut notes: Vec<(&str, Vec<&str>)> = Vec::new();
    for l in lines {
        let (sched, verdict, ratio) = match &l.outcome {
            Ok(m) => {
                let j = &m.judgement;
                let star = if j.significant { "*" } else { "" };
                if let Some(c) = m.caveat {
                    match notes.iter_mut().find(|(n, _)| *n == c) {
                        Some((_, ids)) => ids.push(l.row.id.as_str()),
                        None => notes.push((c, vec![l.row.id.as_str()])),
                    }
                }
                (
                    format!(
                        "{}→{} ({:+.2}%{star}) [{}/{}]",
                        num(m.base.mean),
                        num(m.var.mean),
                        j.schedlab_pct,
                        m.part,
                        if m.metric.is_empty() {
                            m.op.clone()
                        } else {
                            format!("{}/{}", m.op, m.metric)
                        }
                    ),
                    match (j.verdict, j.schedlab_pct * j.published_pct) {
                        _ if m.identical => {
                            "no difference: every run identical to its baseline run".to_string()
                        }
                        (Verdict::NotSignificant, p) if p > 0.0 => {
                            "no significant difference (same sign)".to_string()
                        }
                        (Verdict::NotSignificant, p) if p < 0.0 => {
                            "no significant difference (opposite sign)".to_string()
                        }
                        (v, _) => v.text().to_string(),
                    },
                    j.ratio.map_or("-".into(), |r| format!("{r:.2}")),
                )
            }
            Err(why) => ("-".into(), format!("not reproduced: {why}"), "-".into()),
        };
        rows.push([
            l.row.id.clone(),
            label(l.row),
            published(l.row),
            sched,
            verdict,
            ratio,
        ]);
    }
    let w: Vec<usize> = (0..5)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nseed {seed}: published vs schedlab ({form} form, {clock} clock); % is the change, positive = the variant is better; * = significant"
    );
    for r in &rows {
        let pad = |c: usize| {
            let n = w[c].saturating_sub(r[c].chars().count());
            format!("{}{}", r[c], " ".repeat(n))
        };
        let _ = writeln!(
            out,
            "{}  {}  {}  {}  {:>5}  {}",
            pad(0),
            pad(1),
            pad(2),
            pad(3),
            r[5],
            r[4]
        );
    }
    let compared = lines.iter().filter(|l| l.outcome.is_ok()).count();
    let same = lines.iter().filter(|l| l.same_direction()).count();
    let opposite = lines
        .iter()
        .filter(|l| matches!(&l.outcome, Ok(m) if m.judgement.verdict == Verdict::Opposite))
        .count();
    let _ = writeln!(
        out,
        "seed {seed}: {same} of {} published rows reproduced in direction ({compared} compared: {same} same, {opposite} opposite, {} not significant or flat; {} not reproduced)",
        lines.len(),
        compared - same - opposite,
        lines.len() - compared
    );
    for (caveat, ids) in notes {
        let _ = writeln!(out, "  note ({}): {caveat}", ids.join(", "));
    }
    out
}

/// The `seed_verdict` record of a line.
pub fn record(seed: &str, form: &str, clock: &str, l: &Line<'_>) -> Value {
    let (schedlab, verdict, ratio) = match &l.outcome {
        Ok(m) => (
            json!({"part": m.part, "op": m.op, "metric": m.metric, "unit": m.unit,
                "baseline_mean": m.base.mean, "variant_mean": m.var.mean,
                "better_pct": m.judgement.schedlab_pct,
                "significant": m.judgement.significant, "caveat": m.caveat,
                "identical_runs": m.identical}),
            Value::from(m.judgement.verdict.text()),
            m.judgement.ratio.map_or(Value::Null, Value::from),
        ),
        Err(why) => (
            Value::Null,
            Value::from(format!("not reproduced: {why}")),
            Value::Null,
        ),
    };
    json!({"type": "seed_verdict", "seed": seed, "form": form, "clock": clock,
        "id": l.row.id, "benchmark": label(l.row),
        "published_baseline": l.row.baseline_value, "published_variant": l.row.variant_value,
        "published_better_pct": l.row.better_pct(), "published_significant": l.row.significant,
        "schedlab": schedlab, "verdict": verdict, "ratio": ratio})
}

/// The line of `row` given its mapping and the cell lookup `find(part, op)`
/// returning schedlab's judged cell.
pub fn line<'a>(
    row: &'a Row,
    mapping: Mapping,
    full: bool,
    find: impl Fn(&'static str, &str, &str) -> Option<Cell>,
) -> Line<'a> {
    let outcome = match mapping {
        Mapping::NotReproduced(why) => Err(why),
        Mapping::Cell {
            part,
            op,
            metric,
            caveat,
        } => match find(part, &op, metric) {
            Some(c) => Ok(Measured {
                part,
                op,
                metric,
                base: c.base,
                var: c.var,
                unit: c.unit,
                judgement: c.judgement,
                caveat,
                identical: c.identical,
            }),
            None if !full => Err(format!(
                "{part}/{op} is not swept in the quick form (--full sweeps it)"
            )),
            None => Err(format!("{part}/{op}: no such cell was measured")),
        },
    };
    Line { row, outcome }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::{Better, summarize};
    use crate::published::{data, verdict};

    #[test]
    fn lines_render_with_verdicts_and_reasons() {
        let rows = data::for_seed("004").unwrap();
        let find = |part: &'static str, op: &str, _: &str| {
            (part == "stacked" && op == "TCP_RR").then(|| {
                let b = summarize(&[100.0, 101.0], Better::Higher);
                let v = summarize(&[150.0, 151.0], Better::Higher);
                let judgement = verdict::judge(21.36, &b, &v, Better::Higher);
                Cell {
                    base: b,
                    var: v,
                    unit: "trans/s",
                    judgement,
                    identical: false,
                }
            })
        };
        let lines: Vec<Line> = rows
            .iter()
            .map(|r| line(r, super::super::mapping::map(r, false), false, find))
            .collect();
        let out = render("004", "quick", "sim", &lines);
        let rr = out.lines().find(|l| l.starts_with("004-13")).unwrap();
        // 100.5 -> 150.5 (Hmeans 100.498, 150.498): +49.75 %, ratio
        // 49.75 / 21.36 = 2.33.
        assert!(rr.contains("200833→243733 (+21.36%)"), "{rr}");
        assert!(rr.contains("same direction"), "{rr}");
        assert!(rr.contains("2.33"), "{rr}");
        let sendfile = out.lines().find(|l| l.starts_with("004-01")).unwrap();
        // Mapped to a cell now, which this fake measurement lacks.
        assert!(
            sendfile.contains("stacked/TCP_SENDFILE is not swept"),
            "{sendfile}"
        );
        let smt = out.lines().find(|l| l.starts_with("004-14")).unwrap();
        assert!(smt.contains("not swept in the quick form"), "{smt}");
        assert!(
            out.contains("1 of 18 published rows reproduced in direction (1 compared"),
            "{out}"
        );
        let rec = record("004", "quick", "sim", &lines[12]);
        assert_eq!(rec["type"], "seed_verdict");
        assert_eq!(rec["verdict"], "same direction");
        assert_eq!(rec["schedlab"]["part"], "stacked");
    }

    #[test]
    fn a_switch_that_changes_nothing_is_named() {
        let rows = data::for_seed("003").unwrap();
        let b = summarize(&[0.5, 0.6], Better::Lower);
        let find = |_: &'static str, _: &str, _: &str| {
            Some(Cell {
                base: b.clone(),
                var: b.clone(),
                unit: "s",
                judgement: verdict::judge(11.28, &b, &b, Better::Lower),
                identical: true,
            })
        };
        let l = line(
            &rows[6],
            super::super::mapping::map(&rows[6], false),
            false,
            find,
        );
        let out = render("003", "quick", "sim", &[l]);
        assert!(out.contains("003-07"), "{out}");
        assert!(
            out.contains("every run identical to its baseline run"),
            "{out}"
        );
    }
}
