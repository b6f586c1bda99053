//! Simulator speed (`cargo xtask bench`): host time per simulated second
//! and events per host second, on the reference case (hackbench
//! threads/pipes, 8 groups, on the 160-CPU Xeon E7-8870 v4 shape) and on
//! small and large machines. Run in release; one host core.

use std::time::Instant;

use schedsim::Config;
use topology::{SyntheticSpec, Topology};

fn shape(sockets: u32, cores: u32, threads: u32) -> Topology {
    let mut s = SyntheticSpec::simple(sockets, cores, threads);
    s.nodes = sockets;
    s.distances = Some(
        (0..sockets)
            .map(|i| (0..sockets).map(|j| if i == j { 10 } else { 21 }).collect())
            .collect(),
    );
    Topology::synthetic(&s).expect("shape")
}

fn case(name: &str, topology: Topology, experiment: &str, args: &str) {
    // `cargo bench --bench sim -- WORD`: only the cases whose name has WORD.
    if let Some(filter) = std::env::args().skip(1).find(|a| !a.starts_with('-'))
        && !name.contains(&filter)
    {
        return;
    }
    let cfg = Config::new(topology, experiment, args);
    let t0 = Instant::now();
    let out = schedsim::run(&cfg).expect("runs");
    let host = t0.elapsed().as_secs_f64();
    assert!(out.success, "{name}: {:?}", out.records.last());
    let sim = out.sim_ns as f64 / 1e9;
    println!(
        "{name:<44} sim {sim:>7.3} s  host {host:>7.3} s  host/sim {:>6.3}  {:>6.2} M events/s  {:>5.1}% stale",
        host / sim,
        out.events as f64 / host / 1e6,
        100.0 * out.stale_events as f64 / out.events.max(1) as f64
    );
}

fn main() {
    println!("schedsim speed (host seconds per simulated second; lower is better)");
    case(
        "hackbench thread pipe g8 l2000, 160 CPUs",
        shape(4, 20, 2),
        "hackbench",
        "groups:8,loops:2000,transport:pipe",
    );
    case(
        "hackbench thread socket g8 l500, 8 CPUs",
        shape(2, 2, 2),
        "hackbench",
        "groups:8,loops:500",
    );
    case(
        "netperf TCP_RR 8 pairs 1 s, 8 CPUs",
        shape(2, 2, 2),
        "netperf",
        "test:TCP_RR,pairs:8,duration_ms:1000",
    );
    case(
        "nas 160 threads 200 phases, 160 CPUs",
        shape(4, 20, 2),
        "nas",
        "threads:160,phases:200,work:20000",
    );
    case(
        "nas 160 threads 200 phases spin 1.5 ms, 160 CPUs",
        shape(4, 20, 2),
        "nas",
        "threads:160,phases:200,work:20000,spin_us:1500",
    );
    case(
        "nas 1024 threads 20 phases, 1024 CPUs",
        shape(8, 64, 2),
        "nas",
        "threads:1024,phases:20,work:20000",
    );
}
