//! `cargo xtask bench --kernel`: what the kernel's own wakeup path costs, in
//! instructions, and what it decides, next to Linux 6.12 on the same virtual
//! machine (issue 12).
//!
//! Boots the release kernel under `--icount 0` (1 ns of QEMU's virtual clock
//! = 1 instruction, all vCPUs summed) on the default preset and runs the
//! `latency` experiment (pipe round trips, same CPU and across CPUs) and
//! `hackbench` threads/pipes g4 l500 under CFS and EEVDF (and EEVDF with
//! the 52 inherited wakee flips of the Linux rig's workers, with and without
//! `IMB_PCT_117`, and with both 6.x balancing switches), then prints one
//! table. The latency experiment runs [`LAT_RUNS`] times (the same-CPU
//! row is reported per mode: with the woken task preempting the waker, and
//! without). Each hackbench row is run [`HB_RUNS`] times: unseeded and with
//! `--seed 1`, `--seed 2` (the kernel's start-up jitter), since under icount
//! a run's switch count can change several-fold with small timing
//! differences; the table gives the median and the range. Each run is this
//! crate's own `run` command in a child process, so
//! the records are exactly what a user's run produces. The Linux column is
//! the reference measured with `../shared/linux-rig` (docs/benchmarks.md); it
//! is printed from that doc's numbers, not measured here.

use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Linux 6.12 on the same VM (`linux-rig`, icount 0): same-CPU
/// `perf bench sched pipe` round trip, hackbench time, switches, migrations.
const LINUX_PIPE_SAME_NS: f64 = 11_560.0;
const LINUX_PIPE_CROSS_NS: f64 = 17_590.0;
const LINUX_HB: [(&str, f64, f64, f64); 1] = [("6.12 (EEVDF)", 2.414, 81_200.0, 2_508.0)];

/// Runs per hackbench row: no seed, then seeds 1, 2, ...
const HB_RUNS: usize = 3;
/// Runs of the latency experiment: no seed, then seeds 1, 2, 3. Under
/// icount the same-CPU pair either preempts at (nearly) every wakeup or at
/// none, as start-up timing left their vruntimes; the seeds' jitter shows
/// both, and the table gives each mode's cost apart.
const LAT_RUNS: usize = 4;

/// One child `run` with `--results`; returns its records.
fn run_records(dir: &Path, tag: &str, args: &[&str]) -> Result<Vec<Value>> {
    let out = dir.join(format!("{tag}.jsonl"));
    let exe = std::env::current_exe().context("xtask's own path")?;
    eprintln!("xtask bench --kernel: {tag}: xtask run {}", args.join(" "));
    let status = Command::new(exe)
        .arg("run")
        .args(["--release", "--icount", "0", "--timeout", "1800"])
        .args(args)
        .arg("--results")
        .arg(&out)
        .status()
        .with_context(|| format!("running {tag}"))?;
    if !status.success() {
        bail!("{tag}: the run failed ({status}); its report is above");
    }
    let text =
        std::fs::read_to_string(&out).with_context(|| format!("reading {}", out.display()))?;
    text.lines()
        .map(|l| serde_json::from_str(l).with_context(|| format!("{}: a record", out.display())))
        .collect()
}

fn record<'a>(recs: &'a [Value], kind: &str) -> Result<&'a Value> {
    recs.iter()
        .find(|r| r["type"] == kind)
        .with_context(|| format!("no '{kind}' record"))
}

fn num(v: &Value, path: &[&str]) -> Result<f64> {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_f64()
        .with_context(|| format!("record field {} is not a number", path.join(".")))
}

/// The benchmark: runs, then the table.
pub fn run() -> Result<i32> {
    let dir: PathBuf = crate::project_root().join("target/bench-kernel");
    std::fs::create_dir_all(&dir)?;
    let mut lat = Vec::new();
    for r in 0..LAT_RUNS {
        let seed = r.to_string();
        let mut args = vec!["--experiment", "latency"];
        if r > 0 {
            args.extend(["--seed", &seed]);
        }
        lat.push(run_records(&dir, &format!("latency-run{r}"), &args)?);
    }
    let mut hb = Vec::new();
    // The last four rows start hackbench with the wakee_flips the Linux
    // rig's shell passes on to its workers (docs/benchmarks.md, "Inherited
    // wakee flips"); the last three also build the domains with 6.x's
    // imbalance_pct (IMB_PCT_117), the last two also take 6.x's
    // active-balance rule (IMBALANCED_ACTIVE_BALANCE), and the last one
    // also 6.12's delayed dequeue, tickless idle, base slice, proportional
    // newidle balance, idle re-entry fast path, root-group task_h_load and
    // SMT group balancing (LINUX_6_12, all nine): the closest to the rig's
    // Linux.
    for (name, pick, flips, features) in [
        ("cfs", "cfs", "0", ""),
        ("eevdf", "eevdf", "0", ""),
        ("eevdf flips=52", "eevdf", "52", ""),
        ("eevdf flips=52 imb117", "eevdf", "52", "IMB_PCT_117"),
        (
            "eevdf flips=52 6.x lb",
            "eevdf",
            "52",
            "IMB_PCT_117,IMBALANCED_ACTIVE_BALANCE",
        ),
        ("eevdf flips=52 6.12", "eevdf", "52", "LINUX_6_12"),
    ] {
        let flips_arg = format!("launch_wakee_flips={flips}");
        let mut runs = Vec::new();
        for r in 0..HB_RUNS {
            let seed = r.to_string();
            let mut args = vec![
                "--experiment",
                "hackbench",
                "--pick",
                pick,
                "--features",
                features,
                "--arg",
                "groups=4",
                "--arg",
                "loops=500",
                "--arg",
                "transport=pipe",
                "--arg",
                &flips_arg,
            ];
            if r > 0 {
                args.extend(["--seed", &seed]);
            }
            let recs = run_records(
                &dir,
                &format!(
                    "hackbench-{pick}-flips{flips}{}-run{r}",
                    features.to_lowercase().replace(',', "+")
                ),
                &args,
            )?;
            let h = record(&recs, "hackbench")?;
            runs.push(HbRun {
                secs: num(h, &["time_ns"])? / 1e9,
                switches: num(h, &["sched", "rq", "nr_switches"])?,
                migrations: num(h, &["sched", "migrations", "total"])?,
                messages: num(h, &["messages"])?.max(1.0),
                allocs: num(h, &["heap_allocs"])?,
            });
        }
        hb.push((name, runs));
    }
    println!();
    println!("kernel wakeup path under QEMU --icount 0 (1 ns = 1 instruction, all vCPUs summed),");
    println!("default preset (8 vCPUs: 2 sockets x 2 cores x 2 threads, 2 nodes), release kernel");
    println!();
    println!(
        "pipe round trip                 {:>12} {:>8} {:>9} {:>14} {:>7}",
        "instructions", "sw/rt", "preempt", "Linux 6.12", "allocs"
    );
    let lats: Vec<&Value> = lat
        .iter()
        .map(|recs| record(recs, "latency"))
        .collect::<Result<_>>()?;
    // Per placement, every run's (p50, switches/rt, preempts/rt, allocs).
    let mut rows: Vec<(String, Vec<[f64; 4]>)> = Vec::new();
    let mut barrier = Vec::new();
    for l in &lats {
        let rounds = num(l, &["rounds"])?.max(1.0);
        for p in l["placements"].as_array().context("latency placements")? {
            let name = p["placement"].as_str().unwrap_or("?").to_string();
            let v = [
                num(p, &["p50_ns"])?,
                num(p, &["switches"])? / rounds,
                num(p, &["wakeup_preempts"])? / rounds,
                num(p, &["heap_allocs"])?,
            ];
            match rows.iter_mut().find(|(n, _)| *n == name) {
                Some((_, runs)) => runs.push(v),
                None => rows.push((name, vec![v])),
            }
        }
        let b = &l["barrier"];
        barrier.push([
            num(b, &["mean_ns"])?,
            num(b, &["switches"])? / rounds,
            num(b, &["wakeup_preempts"])? / rounds,
            num(b, &["heap_allocs"])?,
        ]);
    }
    let line = |name: &str, runs: &[[f64; 4]], linux: String| {
        if runs.is_empty() {
            println!(
                "  {name:<30}{:>12} {:>8} {:>9} {linux:>14} {:>7}",
                "-", "-", "-", "-"
            );
            return;
        }
        let med = |i: usize| {
            let mut v: Vec<f64> = runs.iter().map(|r| r[i]).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let allocs = runs.iter().map(|r| r[3]).fold(0.0, f64::max);
        println!(
            "  {name:<30}{:>12.0} {:>8.2} {:>9.2} {linux:>14} {allocs:>7.0}",
            med(0),
            med(1),
            med(2)
        );
    };
    for (name, runs) in &rows {
        if name == "same_cpu" {
            // The two modes apart: most wakeups preempt the waker, or none.
            let (pre, not): (Vec<[f64; 4]>, Vec<[f64; 4]>) = runs.iter().partition(|r| r[2] >= 0.5);
            let linux = format!("{LINUX_PIPE_SAME_NS:.0}");
            let n = runs.len();
            line(
                &format!("same_cpu, preempting ({} of {n})", pre.len()),
                &pre,
                linux.clone(),
            );
            line(
                &format!("same_cpu, not ({} of {n})", not.len()),
                &not,
                linux,
            );
        } else {
            line(name, runs, format!("{LINUX_PIPE_CROSS_NS:.0}"));
        }
    }
    line("barrier (mean)", &barrier, "-".to_string());
    println!("  (medians over {LAT_RUNS} runs, unseeded and --seed 1..; same_cpu split by whether");
    println!(
        "   the woken task preempts at most wakeups, as start-up timing decides under icount;"
    );
    println!("   p50 of the round trips; sw/rt and preempt: context switches and wakeup");
    println!("   preemptions per round trip; Linux: perf bench sched pipe, same CPU pinned");
    println!("   and unpinned, docs/benchmarks.md; barrier: a two-thread barrier round between");
    println!("   CPU 0 and its SMT sibling, mean; allocs: the most heap allocations on any CPU");
    println!("   over the last three quarters of a run's rounds)");
    println!();
    println!(
        "hackbench threads pipes g4 l500  {:>8} {:>12} {:>11} {:>11} {:>10} {:>7}",
        "time (s)", "switches", "migrations", "sw/msg", "migr/msg", "allocs"
    );
    for (pick, runs) in &hb {
        let msgs = runs[0].messages;
        let (t, sw, mg) = (
            spread(runs, |r| r.secs),
            spread(runs, |r| r.switches),
            spread(runs, |r| r.migrations),
        );
        let allocs = runs.iter().map(|r| r.allocs).fold(0.0, f64::max);
        println!(
            "  schedlab {:<23}{:>8.3} {:>12.0} {:>11.0} {:>11.3} {:>10.4} {:>7.0}",
            pick,
            t.1,
            sw.1,
            mg.1,
            sw.1 / msgs,
            mg.1 / msgs,
            allocs
        );
        println!(
            "    range of {HB_RUNS} runs{:>15} {:>12} {:>11}",
            format!("{:.3}-{:.3}", t.0, t.2),
            format!("{:.0}-{:.0}", sw.0, sw.2),
            format!("{:.0}-{:.0}", mg.0, mg.2),
        );
    }
    for (name, secs, sw, mg) in LINUX_HB {
        println!(
            "  Linux {:<26}{:>8.3} {:>12.0} {:>11.0} {:>11.3} {:>10.4}",
            name,
            secs,
            sw,
            mg,
            sw / 800_000.0,
            mg / 800_000.0
        );
    }
    println!("  (schedlab: median of {HB_RUNS} runs, unseeded and --seed 1..; allocs: the most");
    println!("   heap allocations of any run's timed phase; Linux: linux-rig on the same VM,");
    println!("   mean of 5 seeds; its runs spread 3,400-10,600 migrations at one seed,");
    println!("   docs/benchmarks.md)");
    println!("records: {}", dir.display());
    Ok(0)
}

/// One hackbench run's figures.
struct HbRun {
    secs: f64,
    switches: f64,
    migrations: f64,
    messages: f64,
    /// Heap allocations in the timed phase.
    allocs: f64,
}

/// (min, median, max) of a figure over the runs.
fn spread(runs: &[HbRun], f: impl Fn(&HbRun) -> f64) -> (f64, f64, f64) {
    let mut v: Vec<f64> = runs.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2], v[v.len() - 1])
}
