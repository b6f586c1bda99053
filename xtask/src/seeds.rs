//! `cargo xtask seed N`: re-run the argument of one of the seed LKML threads
//! (`../shared/seeds/`) as a schedlab comparison — the thread's benchmark
//! shape, the heuristic switched off (baseline) and on (variant), on a small
//! machine by default or on the seed's own machine with `--full`.
//!
//! Each recipe is a `cargo xtask compare` command line, so it goes through
//! exactly the same validation and code as a hand-typed comparison.

use anyhow::{Result, bail};
use clap::Parser;

use crate::cli::{Cli, Cmd, CompareArgs};

/// One seed's comparison.
pub struct Recipe {
    pub seed: &'static str,
    pub title: &'static str,
    /// `compare` arguments shared by the quick and the full form.
    pub args: &'static [&'static str],
    /// Machine of the quick form.
    pub quick: &'static [&'static str],
    /// The seed's own machine (and larger parameters).
    pub full: &'static [&'static str],
}

/// The five seeds.
pub const RECIPES: &[Recipe] = &[
    Recipe {
        seed: "000",
        title: "Lawall: wake_affine should prefer an idle prev_cpu (NAS, 160-thread Xeon)",
        args: &[
            "--experiment",
            "nas",
            "--features",
            "NO_WA_IDLE_PREV",
            "--variant-features",
            "WA_IDLE_PREV",
            "--arg",
            "phases=40",
            "--arg",
            "imbalance_pct=20",
        ],
        quick: &["--topology", "default"],
        full: &["--topology", "xeon-e7-8870v4"],
    },
    Recipe {
        seed: "001",
        title: "Srikar: idle-core hint and busy-CPU accounting at idle entry (hackbench)",
        args: &[
            "--experiment",
            "hackbench",
            "--variant-features",
            "IDLE_CORE_HINT,IDLE_ACCT_ENTRY",
            "--arg",
            "fds=10",
            "--arg",
            "loops=50",
            "--sweep",
            "groups=1,2,4",
        ],
        quick: &["--topology", "default"],
        full: &["--topology", "2n48-llc24"],
    },
    Recipe {
        seed: "002",
        title: "Guittot: blocked load in find_idlest_group for fork-heavy hackbench",
        args: &[
            "--experiment",
            "hackbench",
            "--features",
            "RUNNABLE_LOAD,NO_IDLEST_BLOCKED",
            "--variant-features",
            "RUNNABLE_LOAD,IDLEST_BLOCKED",
            "--arg",
            "fds=10",
            "--arg",
            "loops=50",
            "--sweep",
            "groups=1,4",
        ],
        quick: &["--topology", "2s8-nosmt"],
        full: &["--topology", "2s48-smt"],
    },
    Recipe {
        seed: "003",
        title: "Gorman: heavy wakers lend wakee flips (hackbench)",
        args: &[
            "--experiment",
            "hackbench",
            "--variant-features",
            "WAKE_WIDE_HEAVY",
            "--arg",
            "fds=10",
            "--arg",
            "loops=50",
            "--sweep",
            "groups=1,2,4",
        ],
        quick: &["--topology", "default"],
        full: &["--topology", "2s48-smt"],
    },
    Recipe {
        seed: "004",
        title: "Galbraith: netperf TCP_RR pairs stacked on the waker's CPU vs normal placement",
        args: &[
            "--experiment",
            "netperf",
            "--variant-features",
            "WAKEE_STACKED",
            "--arg",
            "duration_ms=500",
            "--sweep",
            "pairs=1,4,8",
        ],
        quick: &["--topology", "default"],
        full: &["--topology", "2s48-smt"],
    },
];

/// The `compare` options of `seed`, quick or full, plus the user's extra
/// options (e.g. `--runs 10 --icount 3 --plot x.svg`).
pub fn compare_args(
    seed: &str,
    full: bool,
    extra: &[String],
) -> Result<(&'static Recipe, CompareArgs)> {
    let Some(r) = RECIPES.iter().find(|r| r.seed == seed) else {
        let known: Vec<&str> = RECIPES.iter().map(|r| r.seed).collect();
        bail!("no seed '{seed}' (known: {})", known.join(", "));
    };
    let machine = if full { r.full } else { r.quick };
    let argv = ["cargo xtask", "compare"]
        .into_iter()
        .map(String::from)
        .chain(r.args.iter().chain(machine).map(|s| s.to_string()))
        .chain(extra.iter().cloned());
    let cli = Cli::try_parse_from(argv).map_err(|e| anyhow::anyhow!("seed {seed}: {e}"))?;
    match cli.command {
        Cmd::Compare(a) => Ok((r, *a)),
        _ => unreachable!("a compare command line"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_recipe_is_a_valid_comparison() {
        for r in RECIPES {
            for full in [false, true] {
                let (_, a) = compare_args(r.seed, full, &["--runs".into(), "2".into()]).unwrap();
                assert_eq!(a.runs, 2);
                a.run.boot_config().unwrap();
                a.run.qemu().unwrap();
                assert!(
                    a.variant_features.is_some(),
                    "seed {} switches a heuristic",
                    r.seed
                );
                crate::compare::metrics::for_experiment(&a.run.experiment).unwrap();
            }
        }
        assert!(compare_args("999", false, &[]).is_err());
        assert!(compare_args("000", false, &["--bogus".into()]).is_err());
    }
}
