//! `cargo xtask seed N`: every part of the seed's recipe as one sweep
//! (`crate::sweep`: one directory, resumable, `--jobs`, `--engine slurm`),
//! each part's compare table, then the verdict table against the seed's
//! published numbers (`published::report`). With `--results FILE`, every
//! sample (tagged with its part) and every verdict line go to FILE as JSON
//! lines. `cargo xtask compare --from DIR` renders a seed's directory the
//! same way.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::compare::{self, Table, stats};
use crate::published::{data, mapping, report, verdict};
use crate::seeds;
use crate::sweep;

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
    let first = parts[0].1.clone();
    if let Some(dir) = &first.from {
        let f = sweep::from_dir(dir)?;
        let held = (f.header.seed.as_deref(), f.header.full);
        if held != (Some(recipe.seed), full) {
            bail!(
                "{} holds {}, not seed {} ({} form)",
                dir.display(),
                match held {
                    (Some(s), fl) =>
                        format!("seed {s} ({} form)", if fl { "full" } else { "quick" }),
                    (None, _) => "a plain comparison".to_string(),
                },
                recipe.seed,
                if full { "full" } else { "quick" }
            );
        }
        return report(seed, full, &f, first.run.results.as_deref());
    }
    for (_, a) in &parts {
        crate::preflight::check(&a.run)?;
    }
    let named: Vec<(String, crate::cli::CompareArgs)> = parts
        .iter()
        .map(|(p, a)| {
            let mut a = a.clone();
            a.run.results = None;
            (p.name.to_string(), a)
        })
        .collect();
    let mut plan = sweep::plan(
        &sweep::Kind::Seed {
            seed: recipe.seed.to_string(),
            full,
        },
        &named,
    )?;
    plan.isolate = true;
    if first.engine == crate::cli::Engine::Slurm {
        sweep::slurm::preflight(&first)?;
    }
    let launcher = compare::launcher_for(&first.run)?;
    plan.identify_build(launcher.as_ref())?;
    let dir = first.dir.clone().unwrap_or_else(|| plan.default_dir());
    match plan.run(&dir, launcher.as_ref())? {
        Some(f) => report(seed, full, &f, first.run.results.as_deref()),
        None => Ok(0),
    }
}

/// Prints a seed sweep: each part's table, the runs missing, the verdicts
/// against the published numbers; `results` gets samples and verdicts.
pub fn report(seed: &str, full: bool, f: &sweep::Finished, results: Option<&Path>) -> Result<i32> {
    let recipe = seeds::recipe(seed)?;
    let form = if full { "full" } else { "quick" };
    println!("seed {}: {} ({form} form)", recipe.seed, recipe.title);
    for (name, t) in &f.tables {
        let words = recipe
            .parts
            .iter()
            .find(|p| p.name == name)
            .map(|p| seeds::part_words(recipe, p, full).join(" "))
            .unwrap_or_default();
        println!("\n== part {name}: cargo xtask compare {words}");
        let runs = f
            .header
            .parts
            .iter()
            .find(|p| &p.name == name)
            .map_or(0, |p| p.runs);
        print!("{}", compare::render(t, runs));
    }
    print!(
        "{}",
        sweep::collect::describe_missing(&f.dir, &f.tasks, &f.missing)
    );
    println!("sweep: {}", f.dir.path.display());
    let tables = &f.tables;
    let clock = f
        .header
        .parts
        .first()
        .map_or("host", |p| match p.clock.as_str() {
            "sim" => "sim",
            "icount" => "icount",
            "kvm" => "kvm",
            _ => "host",
        });
    let rows = data::for_seed(seed)?;
    let lines: Vec<report::Line> = rows
        .iter()
        .map(|r| {
            let m = match mapping::map(r, full) {
                mapping::Mapping::Cell { part, .. } if !tables.iter().any(|(p, _)| p == part) => {
                    mapping::Mapping::NotReproduced(format!("part {part} not run (--part)"))
                }
                m => m,
            };
            report::line(r, m, full, |part, op, metric| {
                judged(tables, part, op, metric, r.better_pct()?)
            })
        })
        .collect();
    print!("{}", report::render(seed, form, clock, &lines));
    if let Some(path) = results {
        compare::write_samples(path, tables)?;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        for l in &lines {
            writeln!(f, "{}", report::record(seed, form, clock, l))?;
        }
        println!("results: {}", path.display());
    }
    Ok(if f.missing.is_empty() { 0 } else { 1 })
}

/// schedlab's summaries and judgement for cell (part, op), if measured.
fn judged(
    tables: &[(String, Table)],
    part: &str,
    op: &str,
    metric: &str,
    published_pct: f64,
) -> Option<report::Cell> {
    let (_, t) = tables.iter().find(|(p, _)| p == part)?;
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
