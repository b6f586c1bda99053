//! `cargo xtask seed N`: run every part of the seed's recipe as a
//! comparison (`compare::measure`), print each part's compare table, then
//! the verdict table against the seed's published numbers
//! (`published::report`). With `--results FILE`, every sample (tagged with
//! its part) and every verdict line go to FILE as JSON lines.

use std::io::Write as _;

use anyhow::{Context, Result, bail};

use crate::compare::{self, Table, stats};
use crate::published::{data, mapping, report, verdict};
use crate::seeds;

pub use crate::compare::clock;

/// Runs seed `seed` (quick or `full`) with the user's `extra` compare
/// options; returns the exit code.
pub fn run(seed: &str, full: bool, extra: &[String]) -> Result<i32> {
    let (only, extra) = split_parts(extra)?;
    let (recipe, mut parts) = seeds::compare_args(seed, full, &extra)?;
    if !only.is_empty() {
        for name in &only {
            if !parts.iter().any(|(p, _)| p.name == name) {
                let known: Vec<&str> = parts.iter().map(|(p, _)| p.name).collect();
                bail!(
                    "seed {seed} has no part '{name}' (parts: {})",
                    known.join(", ")
                );
            }
        }
        parts.retain(|(p, _)| only.iter().any(|n| n == p.name));
    }
    let form = if full { "full" } else { "quick" };
    println!("seed {}: {} ({form} form)", recipe.seed, recipe.title);
    let results = parts.first().and_then(|(_, a)| a.run.results.clone());
    for (_, a) in &parts {
        crate::preflight::check(&a.run)?;
    }
    let first = &parts[0].1;
    let launcher = compare::launcher_for(&first.run)?;
    let mut tables: Vec<(&'static str, Table)> = Vec::new();
    for (p, a) in &parts {
        let mut a = a.clone();
        a.run.results = None;
        println!(
            "\n== part {}: cargo xtask compare {}",
            p.name,
            seeds::part_words(recipe, p, full).join(" ")
        );
        let t = compare::measure(&a, launcher.as_ref())?;
        print!("{}", compare::render(&t, a.runs));
        tables.push((p.name, t));
    }
    let clock = clock(first);
    let rows = data::for_seed(seed)?;
    let lines: Vec<report::Line> = rows
        .iter()
        .map(|r| {
            let m = match mapping::map(r, full) {
                mapping::Mapping::Cell { part, .. } if !tables.iter().any(|(p, _)| *p == part) => {
                    mapping::Mapping::NotReproduced(format!("part {part} not run (--part)"))
                }
                m => m,
            };
            report::line(r, m, full, |part, op, metric| {
                judged(&tables, part, op, metric, r.better_pct()?)
            })
        })
        .collect();
    print!("{}", report::render(seed, form, clock, &lines));
    if let Some(path) = results {
        let mut f =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        for (part, t) in &tables {
            for (op, metric, s) in &t.cells {
                for (config, xs) in [("baseline", &s.baseline), ("variant", &s.variant)] {
                    for (i, v) in xs.iter().enumerate() {
                        writeln!(
                            f,
                            "{}",
                            serde_json::json!({"type": "compare_sample", "part": part,
                                "config": config, "op": op, "metric": metric,
                                "run": i + 1, "value": v})
                        )?;
                    }
                }
            }
        }
        for l in &lines {
            writeln!(f, "{}", report::record(seed, form, clock, l))?;
        }
        println!("results: {}", path.display());
    }
    Ok(0)
}

/// schedlab's summaries and judgement for cell (part, op), if measured.
fn judged(
    tables: &[(&'static str, Table)],
    part: &str,
    op: &str,
    metric: &str,
    published_pct: f64,
) -> Option<report::Cell> {
    let (_, t) = tables.iter().find(|(p, _)| *p == part)?;
    let (_, _, s) = t.cells.iter().find(|(o, m, _)| o == op && m == metric)?;
    let base = stats::summarize(&s.baseline, t.better);
    let var = stats::summarize(&s.variant, t.better);
    Some(report::Cell {
        judgement: verdict::judge(published_pct, &base, &var, t.better),
        base,
        var,
        unit: t.unit,
        identical: s.baseline == s.variant,
    })
}

/// Takes `--part NAME` / `--part=NAME` out of the extra options: (the part
/// names, the remaining `compare` options).
pub fn split_parts(extra: &[String]) -> Result<(Vec<String>, Vec<String>)> {
    let (mut parts, mut rest) = (Vec::new(), Vec::new());
    let mut it = extra.iter();
    while let Some(a) = it.next() {
        if a == "--part" {
            match it.next() {
                Some(n) => parts.push(n.clone()),
                None => bail!("--part needs a part name"),
            }
        } else if let Some(n) = a.strip_prefix("--part=") {
            parts.push(n.to_string());
        } else {
            rest.push(a.clone());
        }
    }
    Ok((parts, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_options_are_taken_out() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (p, r) = split_parts(&v(&[
            "--runs",
            "2",
            "--part",
            "TCP_RR",
            "--part=threads-pipe",
        ]))
        .unwrap();
        assert_eq!(p, ["TCP_RR", "threads-pipe"]);
        assert_eq!(r, ["--runs", "2"]);
        assert!(split_parts(&v(&["--part"])).is_err());
        assert!(run("001", false, &v(&["--part", "nope"])).is_err());
    }
}
