//! schedlab's host simulator: the same scheduler core (`sched`) and the
//! same benchmark shapes (`workloads`) as the kernel, on simulated CPUs
//! that each keep their own time, with a cost model for what placement
//! changes on real machines: context switches, wakeup IPIs and idle exit by
//! topology distance, cache refills after migrations, message data moving
//! between CPUs, and SMT siblings sharing a core.
//!
//! Discrete events on one host thread; a run is a pure function of its
//! configuration, cost profile and seed. Times in its records are
//! simulated parallel time (the `sim` clock). See docs/simulator.md.

mod cache;
mod checks;
mod engine;
mod env;
mod mailbox;
mod mm;
mod ops;
pub mod profile;
mod queue;
mod round;
mod trace;
mod world;

use std::fmt::Write as _;

use sched::{DynPolicy, PickPolicy, SchedConfig, SchedPolicy, SchedTopo, Scheduler, TaskPolicy};
use topology::Topology;
use workloads::Workload;
use workloads::json::{Record, sched_config_record};

pub use profile::Profile;

use crate::checks::Checks;
use crate::engine::Engine;

/// One simulated run.
#[derive(Clone, Debug)]
pub struct Config {
    /// The machine.
    pub topology: Topology,
    /// "cfs" or "eevdf".
    pub pick: String,
    /// Feature switches (as `--features`).
    pub features: String,
    /// Policy name (as `--policy`).
    pub policy: String,
    /// Tick rate.
    pub hz: u32,
    /// Experiment (one of `workloads::WORKLOADS`).
    pub experiment: String,
    /// Experiment arguments, `key:value` pairs separated by commas.
    pub args: String,
    /// Jitter seed.
    pub seed: u64,
    /// Cost profile.
    pub profile: Profile,
    /// Give up after this much simulated time.
    pub max_sim_ns: u64,
    /// Free-form label copied into the `sim` record.
    pub label: String,
    /// Scheduler trace events kept per CPU (0 = no trace).
    pub trace_events: u32,
}

impl Config {
    /// `experiment` with `args` on `topology` under Linux's defaults: fair
    /// policy, CFS pick, no feature changes, 250 Hz, seed 0, the built-in
    /// profile, a 3,600 s simulated-time limit, no trace.
    pub fn new(topology: Topology, experiment: &str, args: &str) -> Config {
        Config {
            topology,
            pick: "cfs".into(),
            features: String::new(),
            policy: "fair".into(),
            hz: 250,
            experiment: experiment.into(),
            args: args.into(),
            seed: 0,
            profile: Profile::default_profile(),
            max_sim_ns: 3_600_000_000_000,
            label: String::new(),
            trace_events: 0,
        }
    }
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Result records (JSON objects, the kernel's formats).
    pub records: Vec<String>,
    /// The benchmark's console lines.
    pub console: Vec<String>,
    /// The experiment succeeded (books balanced, no deadlock, in time).
    pub success: bool,
    /// Simulated time at the end (ns).
    pub sim_ns: u64,
    /// Events processed.
    pub events: u64,
    /// Of those, segment ends made stale (preempted or re-rated work).
    pub stale_events: u64,
}

/// Checks a configuration without running it: every error a run would
/// report before starting (experiment, arguments, switches, policy, topology).
/// It does not build the scheduler: building cannot fail once these checks
/// pass, and at 1,024 CPUs one build of the domains and runqueues is ~0.2 G
/// host instructions (callgrind), which `cargo xtask run` paid three more
/// times when every check built one.
pub fn validate(cfg: &Config) -> Result<(), String> {
    check(cfg).map(|_| ())
}

/// What a run starts from, checked: the workload, the scheduler's
/// configuration and its policy.
fn check(cfg: &Config) -> Result<(Workload, SchedConfig, DynPolicy), String> {
    cfg.topology
        .validate()
        .map_err(|e| format!("topology: {e:?}"))?;
    let nr = cfg.topology.nr_cpus();
    let w = Workload::parse(&cfg.experiment, &cfg.args, nr).ok_or_else(|| {
        format!(
            "experiment '{}' does not run in the simulator (it runs: {})",
            cfg.experiment,
            workloads::WORKLOADS.join(", ")
        )
    })??;
    let pick = PickPolicy::parse(&cfg.pick)?;
    let mut sc = SchedConfig::new(nr, pick)
        .with_features(&cfg.features)
        .map_err(|e| format!("features '{}': {e}", cfg.features))?;
    // The simulator activates every wakeup on the waker (the fused path:
    // no IPI delay is modelled), so its records say NO_TTWU_QUEUE.
    sc.features.set(sched::features::Feat::TtwuQueue, false);
    if !(1..=10_000).contains(&cfg.hz) {
        return Err(format!("hz {} must be in 1..=10000", cfg.hz));
    }
    sc.tunables.tick_ns = 1_000_000_000 / u64::from(cfg.hz);
    sc.rng_seed = cfg.seed;
    let policy = sched::policies::by_name(&cfg.policy)?;
    Ok((w, sc, policy))
}

/// A checked configuration's workload and scheduler.
fn prepare(cfg: &Config) -> Result<(Workload, Scheduler<DynPolicy>, SchedConfig), String> {
    let (w, sc, policy) = check(cfg)?;
    let topo = SchedTopo::from_topology_with(&cfg.topology, sc.features);
    let s = Scheduler::with_policy(topo, sc, policy);
    Ok((w, s, sc))
}

/// Runs the experiment; `Err` only for a configuration that cannot start.
pub fn run(cfg: &Config) -> Result<Outcome, String> {
    let (workload, sched, sc) = prepare(cfg)?;
    let nr = cfg.topology.nr_cpus();
    let mut out = Outcome::default();
    let nodes = cfg.topology.nr_nodes.max(1);
    out.records.push(
        Record::new("sim")
            .str("clock", "sim")
            .str("profile", &cfg.profile.name)
            .u64("seed", cfg.seed)
            .u64("cpus", nr as u64)
            .u64("nodes", nodes as u64)
            .str("experiment", &cfg.experiment)
            .str("args", &cfg.args)
            .str("label", &cfg.label)
            .finish(),
    );
    out.records
        .push(sched_config_record(sched.policy.name(), &sc, "sim").finish());

    let mut e = Engine::new(
        sched,
        cfg.profile.clone(),
        cfg.topology.distance.clone(),
        cfg.seed,
    );
    if cfg.trace_events > 0 {
        let mut t = trace::Trace::new(nr, cfg.trace_events);
        t.name(1, "main");
        e.trace = Some(t);
    }
    let result = std::sync::Arc::new(std::sync::Mutex::new(None));
    // Set with the result: the loop below asks after every event, without
    // taking the result's lock.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (env, res, fin) = (e.env.clone(), result.clone(), done.clone());
    let main = async move {
        let r = workload.run(&env).await;
        *res.lock().expect("result") = Some(r);
        fin.store(true, std::sync::atomic::Ordering::Relaxed);
    };
    let r = e.sched.wake_up_new_task(None, 0, 0, TaskPolicy::Normal, 0);
    let serial = e.add_task(r.task, Box::pin(main), Some(0));
    e.trace(0, trace::Kind::Fork, serial + 1, r.cpu as u64, 0);
    e.reschedule(0);

    let mut checks = Checks::new(nr);
    let mut next_check = 0u64;
    let mut failure: Option<String> = None;
    loop {
        if done.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        if e.now >= next_check {
            checks.check(&e);
            next_check = e.now + e.tick_ns;
            if e.deadlocked() {
                failure = Some(format!(
                    "deadlock at {} ns: every simulated task is blocked ({})",
                    e.now,
                    e.blocked_summary()
                ));
                break;
            }
        }
        if e.fatal.is_some() {
            failure = e.fatal.take();
            break;
        }
        if e.now > cfg.max_sim_ns || !e.step(cfg.max_sim_ns + 1) {
            failure = Some(format!(
                "the experiment did not finish within {} s of simulated time",
                cfg.max_sim_ns / 1_000_000_000
            ));
            break;
        }
    }
    {
        let mut w = e.world.lock();
        out.records.append(&mut w.records);
        out.console.append(&mut w.console);
    }
    let verdict = match (failure, result.lock().expect("result").take()) {
        (Some(f), _) => Err(f),
        (None, Some(r)) => r,
        (None, None) => Err("the experiment ended without a result".into()),
    };
    if let Err(msg) = &verdict {
        out.console.push(msg.clone());
        out.records.push(
            Record::new("error")
                .str("kind", "experiment")
                .str("message", msg)
                .finish(),
        );
    }
    if let Some(t) = &e.trace {
        out.records.extend(t.records());
    }
    out.records.extend(checks.violation_records());
    out.sim_ns = e.now;
    out.events = e.events_done;
    out.stale_events = e.stale_events;
    out.records.push(
        Record::new("sim_stats")
            .u64("sim_ns", e.now)
            .u64("events", e.events_done)
            .u64("stale_events", e.stale_events)
            .u64("mm_switches", e.mm_stats.switches)
            .u64("tlb_refills", e.mm_stats.tlb_refills)
            .u64("remote_memory_computes", e.remote_memory_computes)
            .u64("invariant_checks", checks.checks)
            .u64("violations", checks.violations)
            .u64(
                "worst_idle_while_overloaded_ns",
                checks.worst_idle_while_overloaded_ns,
            )
            .finish(),
    );
    out.success = verdict.is_ok() && checks.violations == 0;
    out.records.push(
        Record::new("exit")
            .str("status", if out.success { "success" } else { "failure" })
            .finish(),
    );
    Ok(out)
}

impl Engine {
    /// Blocked tasks by what they wait for (for a deadlock report).
    fn blocked_summary(&self) -> String {
        let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
        for t in self.tasks.iter().flatten() {
            *by.entry(if t.waiting.is_empty() { "?" } else { t.waiting })
                .or_default() += 1;
        }
        let mut s = String::new();
        for (k, v) in by {
            let _ = write!(s, "{}{v} in {k}", if s.is_empty() { "" } else { ", " });
        }
        s
    }
}
