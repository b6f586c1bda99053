//! `cargo xtask seed N`: re-run the argument of one of the seed LKML threads
//! (`../shared/seeds/`) as schedlab comparisons — the thread's benchmark
//! shapes, the heuristic off (baseline) and on (variant), or for seed 004
//! the placements Galbraith pinned against the unbound one — on a small
//! machine by default or on the seed's own machine with `--full`.
//!
//! A recipe has one or more parts; each part is a `cargo xtask compare`
//! command line, so it goes through exactly the same validation and code as
//! a hand-typed comparison. Parts exist because `compare` sweeps one
//! argument and a seed's table varies two (hackbench transport × groups,
//! netperf test × placement). `crate::published::mapping` names, for each
//! published row, the part and sweep value that reproduce it.

use anyhow::{Result, bail};
use clap::Parser;

use crate::cli::{Cli, Cmd, CompareArgs};

/// One `compare` command line of a recipe.
pub struct Part {
    /// The part's name, as the mapping refers to it (e.g. "threads-pipe").
    pub name: &'static str,
    /// `compare` arguments of both forms.
    pub args: &'static [&'static str],
    /// Added in the quick form (e.g. the sweep scaled to the small machine).
    pub quick: &'static [&'static str],
    /// Added in the full form.
    pub full: &'static [&'static str],
}

/// One seed's comparisons.
pub struct Recipe {
    pub seed: &'static str,
    pub title: &'static str,
    pub parts: &'static [Part],
    /// Machine of the quick form.
    pub quick: &'static [&'static str],
    /// The machine the seed's numbers come from (or its closest preset).
    pub full: &'static [&'static str],
}

/// Seed 001's hackbench: 48 tasks per group as Aubrey Li ran it, against
/// Srikar's v3 series applied together (`SRIKAR_V3`: one switch per patch,
/// docs/policies.md).
macro_rules! hackbench_001 {
    ($mode:literal, $transport:literal) => {
        &[
            "--experiment",
            "hackbench",
            "--arg",
            $mode,
            "--variant-features",
            "SRIKAR_V3",
            "--arg",
            "fds=24",
            "--arg",
            "loops=50",
            "--arg",
            $transport,
            "--sweep",
            "groups=1,2,3,4,8",
        ]
    };
}

/// Seed 002: Fleming's `hackbench -pipe 30 process`, Guittot's patch as
/// the variant; the three parts differ only in the metric they compare.
macro_rules! pipe_002 {
    ($($metric:literal),*) => {
        &[
            "--experiment",
            "hackbench",
            "--features",
            "RUNNABLE_LOAD,NO_IDLEST_BLOCKED",
            "--variant-features",
            "RUNNABLE_LOAD,IDLEST_BLOCKED",
            "--arg",
            "mode=process",
            "--arg",
            "transport=pipe",
            "--arg",
            "fds=20",
            "--sweep",
            "groups=30",
            $($metric),*
        ]
    };
}

/// Seed 004: one netperf pair, unbound (baseline) vs pinned (variant),
/// every test Galbraith ran.
macro_rules! netperf_004 {
    ($placement:literal) => {
        &[
            "--experiment",
            "netperf",
            "--arg",
            "pairs=1",
            "--arg",
            "duration_ms=500",
            "--arg",
            "placement=unbound",
            "--variant-arg",
            $placement,
            "--sweep",
            "test=TCP_RR,TCP_STREAM,TCP_MAERTS,TCP_SENDFILE,UDP_STREAM,UDP_RR",
        ]
    };
}

/// The five seeds.
pub const RECIPES: &[Recipe] = &[
    Recipe {
        seed: "000",
        title: "Lawall: wake_affine should prefer an idle prev_cpu (NAS, 160-thread Xeon; 4 ms kworkers in passive mode)",
        parts: &[Part {
            name: "team",
            args: &[
                "--experiment",
                "nas",
                "--features",
                "NO_WA_IDLE_PREV",
                "--variant-features",
                "WA_IDLE_PREV",
                "--arg",
                "imbalance_pct=20",
                // 0: intel_pstate (active); 4000: intel_cpufreq's kworkers.
                "--sweep",
                "kworker_period_us=0,4000",
            ],
            quick: &["--arg", "phases=40"],
            // Class C sizes (docs/seeds.md, seed 000): ~4 MiB of arrays per
            // thread (600-700 MB over 160 threads), ~2 ms between barriers
            // and ~26 s in all, as ua.C's 200 time steps in Lawall's 26.6 s.
            full: &[
                "--arg",
                "phases=12000",
                "--arg",
                "work=350000",
                "--arg",
                "working_set_kib=4096",
            ],
        }],
        quick: &["--topology", "default"],
        full: &["--topology", "xeon-e7-8870v4"],
    },
    Recipe {
        seed: "001",
        title: "Srikar v3 'wake_affine improvements' (idle-core id, idler LLC, busy accounting in the idle callbacks) (hackbench, netperf; Aubrey Li's 192-CPU box)",
        parts: &[
            Part {
                name: "process-sockets",
                args: hackbench_001!("mode=process", "transport=socket"),
                quick: &[],
                full: &[],
            },
            Part {
                name: "process-pipe",
                args: hackbench_001!("mode=process", "transport=pipe"),
                quick: &[],
                full: &[],
            },
            Part {
                name: "threads-sockets",
                args: hackbench_001!("mode=thread", "transport=socket"),
                quick: &[],
                full: &[],
            },
            Part {
                name: "threads-pipe",
                args: hackbench_001!("mode=thread", "transport=pipe"),
                quick: &[],
                full: &[],
            },
            Part {
                name: "TCP_RR",
                args: &[
                    "--experiment",
                    "netperf",
                    "--variant-features",
                    "SRIKAR_V3",
                    "--arg",
                    "test=TCP_RR",
                    "--arg",
                    "duration_ms=200",
                ],
                // 0.25x to 2x the CPUs, as 48..384 threads on 192 CPUs.
                quick: &["--sweep", "pairs=2,4,6,8,16"],
                full: &["--sweep", "pairs=48,96,144,192,384"],
            },
            Part {
                name: "UDP_RR",
                args: &[
                    "--experiment",
                    "netperf",
                    "--variant-features",
                    "SRIKAR_V3",
                    "--arg",
                    "test=UDP_RR",
                    "--arg",
                    "duration_ms=200",
                ],
                quick: &["--sweep", "pairs=2,4,6,8,16"],
                full: &["--sweep", "pairs=48,96,144,192,384"],
            },
        ],
        quick: &["--topology", "default"],
        full: &["--topology", "4n192-llc48"],
    },
    Recipe {
        seed: "002",
        title: "Guittot: blocked load in find_idlest_group (hackbench -P -g 1 on Hikey; Fleming's -pipe 30 process 1000 on 2s8)",
        parts: &[
            Part {
                name: "sockets",
                args: &[
                    "--experiment",
                    "hackbench",
                    "--features",
                    "RUNNABLE_LOAD,NO_IDLEST_BLOCKED",
                    "--variant-features",
                    "RUNNABLE_LOAD,IDLEST_BLOCKED",
                    "--arg",
                    "mode=process",
                    "--arg",
                    "transport=socket",
                    "--arg",
                    "fds=20",
                    "--arg",
                    "loops=100",
                    "--sweep",
                    "groups=1",
                ],
                quick: &[],
                full: &[],
            },
            Part {
                name: "pipe",
                args: pipe_002!(),
                quick: &["--arg", "loops=50"],
                full: &["--arg", "loops=1000"],
            },
            Part {
                name: "pipe-migrations",
                args: pipe_002!("--metric", "migrations"),
                quick: &["--arg", "loops=50"],
                full: &["--arg", "loops=1000"],
            },
            Part {
                name: "pipe-runqlat",
                args: pipe_002!("--metric", "runqlat"),
                quick: &["--arg", "loops=50"],
                full: &["--arg", "loops=1000"],
            },
        ],
        quick: &["--topology", "2s8-nosmt"],
        full: &["--topology", "2s8-nosmt"],
    },
    Recipe {
        seed: "003",
        title: "Gorman: heavy wakers lend wakee flips (mmtests hackbench-process-pipes)",
        parts: &[
            Part {
                name: "pipes",
                // Mel's kernel is 5.15-rc3: PELT keeps its sums as 5.14-5.16
                // do (no 32-bit wrap of a heavily loaded queue's load_sum,
                // which arrived in 5.17 and by itself makes the variant win
                // at 141+ groups on 2s48-smt; docs/seeds.md, seed 003).
                args: &[
                    "--experiment",
                    "hackbench",
                    "--features",
                    "PELT_RESYNC_SUMS",
                    "--variant-features",
                    "PELT_RESYNC_SUMS,WAKE_WIDE_HEAVY",
                    "--arg",
                    "mode=process",
                    "--arg",
                    "fds=20",
                    "--arg",
                    "loops=20",
                    "--arg",
                    "transport=pipe",
                ],
                quick: &["--sweep", "groups=1,4,7,12,21,30,48"],
                // mmtests' group stride, every published group count.
                full: &[
                    "--sweep",
                    "groups=1,4,7,12,21,30,48,79,110,141,172,203,234,265,296",
                ],
            },
            Part {
                name: "tbench",
                args: &[
                    "--experiment",
                    "tbench",
                    "--features",
                    "PELT_RESYNC_SUMS",
                    "--variant-features",
                    "PELT_RESYNC_SUMS,WAKE_WIDE_HEAVY",
                    "--arg",
                    "duration_ms=200",
                ],
                // mmtests' tbench4 doubles the clients up to 4x the CPUs: 32 on
                // the 8-CPU quick machine; the full sweep has every published
                // client count (up to 1024, 2048 threads). The warmup covers
                // the balancer's spreading of clients that fork placement
                // left on the parent's node (docs/seeds.md, seed 003):
                // ~0.2 s on the 8-CPU machine, ~2 s on 2s48-smt.
                quick: &["--arg", "warmup_ms=200", "--sweep", "clients=1,2,4,8,16,32"],
                full: &[
                    "--arg",
                    "warmup_ms=2000",
                    "--sweep",
                    "clients=1,2,4,8,16,32,64,128,256,512,1024",
                ],
            },
        ],
        quick: &["--topology", "default"],
        full: &["--topology", "2s48-smt"],
    },
    Recipe {
        seed: "004",
        title: "Galbraith: netperf pinned stacked / cross-smt / cross-core vs unbound (one pair)",
        parts: &[
            Part {
                name: "stacked",
                args: netperf_004!("placement=stacked"),
                quick: &[],
                full: &[],
            },
            Part {
                name: "cross-smt",
                args: netperf_004!("placement=cross-smt"),
                quick: &[],
                full: &[],
            },
            Part {
                name: "cross-core",
                args: netperf_004!("placement=cross-core"),
                quick: &[],
                full: &[],
            },
        ],
        quick: &["--topology", "default"],
        full: &["--topology", "2s48-smt"],
    },
];

/// The recipe of `seed`, or an error naming the known ones.
pub fn recipe(seed: &str) -> Result<&'static Recipe> {
    match RECIPES.iter().find(|r| r.seed == seed) {
        Some(r) => Ok(r),
        None => {
            let known: Vec<&str> = RECIPES.iter().map(|r| r.seed).collect();
            bail!("no seed '{seed}' (known: {})", known.join(", "))
        }
    }
}

/// The `compare` arguments of one part, quick or full, as words (for
/// listing and parsing).
pub fn part_words(r: &Recipe, p: &Part, full: bool) -> Vec<&'static str> {
    let (extra, machine) = if full {
        (p.full, r.full)
    } else {
        (p.quick, r.quick)
    };
    p.args.iter().chain(extra).chain(machine).copied().collect()
}

/// The `compare` options of every part of `seed`, quick or full, plus the
/// user's extra options (e.g. `--runs 10 --results x.jsonl`).
pub fn compare_args(
    seed: &str,
    full: bool,
    extra: &[String],
) -> Result<(&'static Recipe, Vec<(&'static Part, CompareArgs)>)> {
    let r = recipe(seed)?;
    // The recipe sets the switches it compares; a --features here would
    // reach the baseline only when the recipe gives the variant its own.
    if let Some(a) = extra.iter().find(|a| {
        ["--features", "--variant-features"]
            .iter()
            .any(|f| a == f || a.starts_with(&format!("{f}=")))
    }) {
        bail!(
            "seed {seed}: {a}: the recipe sets the switches it compares; add switches to both \
             configurations with --common-features"
        );
    }
    let mut parts = Vec::new();
    for p in r.parts {
        let argv = ["cargo xtask", "compare"]
            .into_iter()
            .map(String::from)
            .chain(part_words(r, p, full).into_iter().map(String::from))
            .chain(extra.iter().cloned());
        let cli = Cli::try_parse_from(argv)
            .map_err(|e| anyhow::anyhow!("seed {seed} part {}: {e}", p.name))?;
        match cli.command {
            Cmd::Compare(a) => parts.push((p, *a)),
            _ => unreachable!("a compare command line"),
        }
    }
    Ok((r, parts))
}

/// The sweep values of a part in one form (empty: no sweep).
pub fn sweep_values(r: &Recipe, p: &Part, full: bool) -> Vec<&'static str> {
    let words = part_words(r, p, full);
    words
        .windows(2)
        .find(|w| w[0] == "--sweep")
        .and_then(|w| w[1].split_once('='))
        .map(|(_, vs)| vs.split(',').collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_recipe_is_a_valid_comparison() {
        for r in RECIPES {
            for full in [false, true] {
                let (_, parts) =
                    compare_args(r.seed, full, &["--runs".into(), "2".into()]).unwrap();
                assert_eq!(parts.len(), r.parts.len());
                for (p, a) in parts {
                    assert_eq!(a.runs, 2);
                    a.run.boot_config().unwrap();
                    a.run.qemu().unwrap();
                    assert!(
                        a.variant_features.is_some() || !a.variant_args.is_empty(),
                        "seed {} part {} changes something",
                        r.seed,
                        p.name
                    );
                    assert!(!sweep_values(r, p, full).is_empty(), "{} sweeps", p.name);
                    crate::compare::metrics::for_experiment_metric(
                        &a.run.experiment,
                        a.metric.as_deref(),
                    )
                    .unwrap();
                }
            }
        }
        assert!(compare_args("999", false, &[]).is_err());
        assert!(compare_args("000", false, &["--bogus".into()]).is_err());
    }

    #[test]
    fn extra_switches_go_to_both_sides_or_are_refused() {
        for f in ["--features", "--variant-features", "--features=NOHZ_IDLE"] {
            let mut extra = vec![f.to_string()];
            if !f.contains('=') {
                extra.push("NOHZ_IDLE".into());
            }
            let Err(e) = compare_args("001", false, &extra) else {
                panic!("{f} accepted");
            };
            let e = e.to_string();
            assert!(e.contains("--common-features"), "{e}");
        }
        let extra = ["--common-features".into(), "NOHZ_IDLE".into()];
        let (_, parts) = compare_args("001", false, &extra).unwrap();
        let (_, a) = &parts[0];
        let (_, tasks) = crate::sweep::plan::compare_part(a, "p", 0).unwrap();
        let has = |t: &crate::sweep::plan::Task| {
            t.args
                .windows(2)
                .any(|w| w[0] == "--features" && w[1].split(',').any(|x| x == "NOHZ_IDLE"))
        };
        assert!(tasks.iter().any(|t| t.config == "baseline"));
        assert!(tasks.iter().any(|t| t.config == "variant"));
        assert!(tasks.iter().all(has), "{:?}", tasks[0].args);
    }

    #[test]
    fn seed_000_full_form_has_class_c_sizes() {
        let r = recipe("000").unwrap();
        let arg = |full: bool, key: &str| {
            let w = part_words(r, &r.parts[0], full);
            w.windows(2)
                .filter(|w| w[0] == "--arg")
                .find_map(|w| w[1].strip_prefix(key)?.strip_prefix('='))
                .map(String::from)
        };
        assert_eq!(arg(false, "phases").as_deref(), Some("40"));
        assert_eq!(arg(true, "phases").as_deref(), Some("12000"));
        assert_eq!(arg(true, "working_set_kib").as_deref(), Some("4096"));
        assert_eq!(arg(false, "working_set_kib"), None);
        for full in [false, true] {
            assert_eq!(arg(full, "imbalance_pct").as_deref(), Some("20"));
            assert_eq!(sweep_values(r, &r.parts[0], full), ["0", "4000"]);
        }
    }

    #[test]
    fn sweep_values_follow_the_form() {
        let r = recipe("001").unwrap();
        let p = r.parts.iter().find(|p| p.name == "TCP_RR").unwrap();
        assert_eq!(sweep_values(r, p, false), ["2", "4", "6", "8", "16"]);
        assert_eq!(sweep_values(r, p, true), ["48", "96", "144", "192", "384"]);
        // Seed 004 sweeps every netperf test Galbraith ran, in both forms.
        let r = recipe("004").unwrap();
        for p in r.parts {
            for full in [false, true] {
                let mut v = sweep_values(r, p, full);
                v.sort_unstable();
                assert_eq!(
                    v,
                    [
                        "TCP_MAERTS",
                        "TCP_RR",
                        "TCP_SENDFILE",
                        "TCP_STREAM",
                        "UDP_RR",
                        "UDP_STREAM"
                    ],
                    "{}",
                    p.name
                );
            }
        }
    }
}
