//! Helpers shared by the simulator's tests.
#![allow(dead_code)]

use schedsim::{Config, Outcome};
use topology::{SyntheticSpec, Topology};

/// sockets x cores x threads, one node per socket.
pub fn machine(sockets: u32, cores: u32, threads: u32) -> Topology {
    let mut s = SyntheticSpec::simple(sockets, cores, threads);
    s.nodes = sockets;
    Topology::synthetic(&s).expect("valid shape")
}

pub fn config(topology: Topology, experiment: &str, args: &str) -> Config {
    Config {
        seed: 1,
        ..Config::new(topology, experiment, args)
    }
}

pub fn run(c: &Config) -> Outcome {
    let o = schedsim::run(c).expect("configuration starts");
    assert!(o.success, "run failed: {:#?}", o.records);
    o
}

/// The record of `kind`, parsed.
pub fn record(o: &Outcome, kind: &str) -> serde_json::Value {
    o.records
        .iter()
        .map(|r| serde_json::from_str::<serde_json::Value>(r).expect("record is JSON"))
        .find(|v| v["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} record in {:#?}", o.records))
}

/// The nominal profile with every cost outside the calls themselves at
/// zero (switch, wakeup, IPI, idle exit, timer, jitter): a message then
/// costs the sum of the profile's terms for its calls.
pub fn calls_only() -> schedsim::Profile {
    let mut p = schedsim::Profile::default_profile();
    p.kernel.context_switch_ns = 0.0;
    p.kernel.wakeup_ns = 0.0;
    p.kernel.timer_ns = 0.0;
    let i = &mut p.wakeup.ipi_ns;
    (i.smt, i.llc, i.package, i.node, i.remote) = (0.0, 0.0, 0.0, 0.0, 0.0);
    p.wakeup.idle_exit_ns = 0.0;
    p.noise.jitter = 0.0;
    p
}
