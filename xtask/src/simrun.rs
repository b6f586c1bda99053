//! `--backend sim`: one run in the host simulator (`xtask/sim`), turned into
//! the same [`RunResult`] a QEMU boot gives, so reports, `--results`,
//! `compare` and `seed` work unchanged. The machine comes from the same
//! options (`--topology`, `--sockets/--dies/--cores/--threads/--numa-nodes`)
//! as a synthetic topology numbered like QEMU's; the simulator accepts up to
//! [`MAX_SIM_CPUS`] CPUs, past QEMU's limits.

use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use topology::{SyntheticSpec, Topology};

use crate::cli::RunArgs;
use crate::outcome::Outcome;
use crate::runner::RunResult;

/// Largest simulated machine.
pub const MAX_SIM_CPUS: u32 = 1024;

/// Simulated time after which a run is given up (the simulator's timeout).
const MAX_SIM_SECONDS: u64 = 3600;

/// The simulator configuration for `args` (validated, nothing run).
pub fn config(args: &RunArgs) -> Result<schedsim::Config> {
    let m = args.machine()?;
    let cpus =
        u128::from(m.sockets) * u128::from(m.dies) * u128::from(m.cores) * u128::from(m.threads);
    if cpus > u128::from(MAX_SIM_CPUS) {
        bail!("{cpus} CPUs requested; the simulator models at most {MAX_SIM_CPUS}");
    }
    let spec = SyntheticSpec {
        sockets: m.sockets,
        dies_per_socket: m.dies,
        cores_per_die: m.cores,
        threads_per_core: m.threads,
        nodes: m.numa_nodes,
        cpus_per_llc: None,
        distances: m.distances.clone(),
    };
    let topology =
        Topology::synthetic(&spec).map_err(|e| anyhow::anyhow!("machine shape: {e:?}"))?;
    let profile = match &args.profile {
        None => schedsim::Profile::for_preset(args.topology.as_deref()),
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("--profile {}", p.display()))?;
            schedsim::Profile::parse(&text)
                .map_err(|e| anyhow::anyhow!("--profile {}: {e}", p.display()))?
        }
    };
    let mut boot = args.boot_config()?;
    if boot.experiment == "tour" {
        // The tour's machine check is about real CPUs; its hackbench runs here.
        if !boot.args.is_empty() {
            bail!("--arg: the tour experiment takes no arguments");
        }
        boot.experiment = "hackbench".into();
        boot.args = bootcfg::TOUR_HACKBENCH_ARGS.into();
    }
    let cfg = schedsim::Config {
        topology,
        pick: boot.pick,
        features: boot.features,
        policy: boot.policy,
        hz: boot.hz,
        experiment: boot.experiment,
        args: boot.args,
        seed: args.seed.unwrap_or(0),
        profile,
        max_sim_ns: MAX_SIM_SECONDS * 1_000_000_000,
        label: boot.label,
        trace_events: if args.trace.is_some() {
            args.trace_events
        } else {
            0
        },
    };
    schedsim::validate(&cfg).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(cfg)
}

/// Runs `args` in the simulator.
pub fn run(args: &RunArgs, echo: bool) -> Result<RunResult> {
    run_config(&config(args)?, echo)
}

/// Runs a configuration made by [`config`].
pub fn run_config(cfg: &schedsim::Config, echo: bool) -> Result<RunResult> {
    let t0 = Instant::now();
    let out = schedsim::run(cfg).map_err(|e| anyhow::anyhow!("{e}"))?;
    if echo {
        for l in &out.console {
            println!("[sim] {l}");
        }
    }
    let records = out
        .records
        .iter()
        .map(|r| serde_json::from_str::<Value>(r).context("simulator record is not JSON"))
        .collect::<Result<Vec<_>>>()?;
    Ok(RunResult {
        outcome: if out.success {
            Outcome::Success
        } else {
            Outcome::Failure
        },
        records,
        log: out.console,
        bad_records: Vec::new(),
        stderr: String::new(),
        wall: t0.elapsed(),
    })
}
