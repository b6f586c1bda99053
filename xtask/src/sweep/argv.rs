//! A run's whole configuration as `cargo xtask run` options: the form a
//! sweep directory's matrix stores (readable, and parsed back by the same
//! clap definitions, so a stored run means exactly what the command line
//! would). Paths are made absolute so a task runs the same from any working
//! directory (a Slurm job's, for one).

use anyhow::{Context, Result};
use clap::Parser as _;

use crate::cli::{Backend, Cli, Cmd, RunArgs};

/// `r` as `cargo xtask run` options (without `run`). `--results`, `--trace`
/// and `--keep` are per-invocation outputs, not configuration: left out.
pub fn to_words(r: &RunArgs) -> Result<Vec<String>> {
    let mut w: Vec<String> = Vec::new();
    let mut opt = |flag: &str, v: String| {
        w.push(flag.to_string());
        w.push(v);
    };
    opt("--experiment", r.experiment.clone());
    if let Some(t) = &r.topology {
        opt("--topology", t.clone());
    }
    for (flag, v) in [
        ("--smp", r.smp),
        ("--sockets", r.sockets),
        ("--dies", r.dies),
        ("--cores", r.cores),
        ("--threads", r.threads),
        ("--numa-nodes", r.numa_nodes),
        ("--memory", r.memory),
    ] {
        if let Some(v) = v {
            opt(flag, v.to_string());
        }
    }
    if let Some(s) = r.icount {
        opt("--icount", s.to_string());
    }
    if let Some(s) = r.seed {
        opt("--seed", s.to_string());
    }
    opt("--timeout", r.timeout.to_string());
    for a in &r.qemu_args {
        // --qemu-arg takes values that start with '-'.
        opt("--qemu-arg", a.clone());
    }
    if let Some(l) = &r.max_log_level {
        opt("--max-log-level", l.clone());
    }
    opt("--log-level", r.log_level.clone());
    opt("--label", r.label.clone());
    opt("--hz", r.hz.to_string());
    opt("--pick", r.pick.clone());
    opt("--features", r.features.clone());
    opt("--policy", r.policy.clone());
    opt("--idle", r.idle.clone());
    for a in &r.args {
        opt("--arg", a.clone());
    }
    opt("--trace-events", r.trace_events.to_string());
    opt(
        "--backend",
        match r.backend {
            Backend::Qemu => "qemu",
            Backend::Sim => "sim",
        }
        .to_string(),
    );
    if let Some(p) = &r.profile {
        let abs = std::path::absolute(p).with_context(|| format!("--profile {}", p.display()))?;
        opt("--profile", abs.display().to_string());
    }
    if r.uefi {
        w.push("--uefi".into());
    }
    if r.release {
        w.push("--release".into());
    }
    Ok(w)
}

/// Parses stored words back into the run's options.
pub fn from_words(words: &[String]) -> Result<RunArgs> {
    let argv = ["xtask", "run"]
        .into_iter()
        .map(String::from)
        .chain(words.iter().cloned());
    match Cli::try_parse_from(argv)
        .map_err(|e| anyhow::anyhow!("stored run options {words:?}: {e}"))?
        .command
    {
        Cmd::Run(r) => Ok(*r),
        _ => unreachable!("parsed as `run`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &[&str]) -> RunArgs {
        from_words(&extra.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn every_configuration_option_survives_the_round_trip() {
        let r = parse(&[
            "--experiment",
            "hackbench",
            "--sockets",
            "2",
            "--cores",
            "3",
            "--threads",
            "2",
            "--numa-nodes",
            "2",
            "--memory",
            "777",
            "--uefi",
            "--icount",
            "3",
            "--seed",
            "42",
            "--timeout",
            "99",
            "--release",
            "--qemu-arg",
            "-d",
            "--qemu-arg",
            "int",
            "--max-log-level",
            "warn",
            "--log-level",
            "debug",
            "--label",
            "a label",
            "--hz",
            "1000",
            "--pick",
            "eevdf",
            "--features",
            "WA_IDLE,NO_SIS_UTIL",
            "--policy",
            "fair",
            "--idle",
            "mwait",
            "--arg",
            "groups=4",
            "--arg",
            "loops=9",
            "--trace-events",
            "17",
            "--backend",
            "sim",
        ]);
        let back = from_words(&to_words(&r).unwrap()).unwrap();
        assert_eq!(format!("{r:?}"), format!("{back:?}"));
        // Defaults only, and a preset.
        let r = parse(&["--topology", "2s8-nosmt"]);
        assert_eq!(
            format!("{r:?}"),
            format!("{:?}", from_words(&to_words(&r).unwrap()).unwrap())
        );
    }

    #[test]
    fn outputs_are_not_configuration() {
        let r = parse(&["--results", "x.jsonl", "--keep", "--trace", "t.json"]);
        let w = to_words(&r).unwrap();
        for flag in ["--results", "--keep", "--trace"] {
            assert!(!w.iter().any(|x| x == flag), "{flag} in {w:?}");
        }
    }
}
