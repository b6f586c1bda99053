//! Host timings of topology and scheduling-domain building at big CPU counts
//! (plain `std::time::Instant`, host wall time; median of several runs).
//!
//! For each shape: `Topology::synthetic`, `build_sched_domains`, and the
//! walk a record writer makes over the result (every CPU's domains and
//! groups printed as cpulists; its byte count is printed too). The kernel
//! does the same work on one vCPU at boot (docs/topology.md, "Cost").
//!
//! Run with `cargo bench -p topology` (or `cargo xtask bench`).

use std::fmt::Write;
use std::hint::black_box;
use std::time::{Duration, Instant};
use topology::{SyntheticSpec, Topology, build_sched_domains};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut last = None;
    let mut ts = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        last = Some(black_box(f()));
        ts.push(t.elapsed());
    }
    (median(ts), last.expect("runs > 0"))
}

fn shape(name: &str, spec: SyntheticSpec) {
    // `SCHEDLAB_BENCH_SHAPE=255` runs only the shapes whose name contains it.
    if std::env::var("SCHEDLAB_BENCH_SHAPE").is_ok_and(|f| !name.contains(f.as_str())) {
        return;
    }
    let runs = 5;
    let (t_topo, topo) = time(runs, || Topology::synthetic(&spec).expect("valid spec"));
    let (t_dom, sd) = time(runs, || build_sched_domains(&topo));
    let (t_walk, bytes) = time(runs, || {
        let mut s = String::new();
        for cpu in 0..topo.nr_cpus() {
            for d in sd.domains(cpu) {
                write!(s, "{} {} ", d.name, d.span).unwrap();
                for g in &d.groups {
                    write!(s, "{},", g.span).unwrap();
                }
            }
        }
        s.len()
    });
    let groups: usize = (0..topo.nr_cpus())
        .flat_map(|c| sd.domains(c))
        .map(|d| d.groups.len())
        .sum();
    println!(
        "{name:<34} {:>5} CPUs  synthetic {:>9.3} ms  domains {:>9.3} ms  per-CPU listing {:>9.3} ms ({bytes} B, {groups} groups)",
        topo.nr_cpus(),
        t_topo.as_secs_f64() * 1e3,
        t_dom.as_secs_f64() * 1e3,
        t_walk.as_secs_f64() * 1e3,
    );
}

fn nodes(spec: SyntheticSpec, nodes: u32, distances: Option<Vec<Vec<u32>>>) -> SyntheticSpec {
    SyntheticSpec {
        nodes,
        distances,
        ..spec
    }
}

fn main() {
    println!("topology and domain building, host wall time, median of 5 runs");
    shape(
        "1s x 255c x 1t (flat, 1 node)",
        SyntheticSpec::simple(1, 255, 1),
    );
    shape(
        "2s x 60c x 2t, 2 nodes",
        nodes(SyntheticSpec::simple(2, 60, 2), 2, None),
    );
    let d4 = vec![
        vec![10, 12, 21, 21],
        vec![12, 10, 21, 21],
        vec![21, 21, 10, 12],
        vec![21, 21, 12, 10],
    ];
    shape(
        "2s x 2d x 28c x 2t, 4 nodes (224)",
        SyntheticSpec {
            dies_per_socket: 2,
            ..nodes(SyntheticSpec::simple(2, 28, 2), 4, Some(d4.clone()))
        },
    );
    shape(
        "1s x 1024c x 1t (flat, 1 node)",
        SyntheticSpec::simple(1, 1024, 1),
    );
    shape(
        "4s x 128c x 2t, 4 nodes (1024)",
        nodes(SyntheticSpec::simple(4, 128, 2), 4, None),
    );
    let ring: Vec<Vec<u32>> = (0..16)
        .map(|a: i32| {
            (0..16)
                .map(|b: i32| {
                    let h = (a - b).rem_euclid(16).min((b - a).rem_euclid(16)) as u32;
                    if h == 0 { 10 } else { 10 + 6 * h }
                })
                .collect()
        })
        .collect();
    shape(
        "16s x 32c x 2t, 16-node ring (1024)",
        nodes(SyntheticSpec::simple(16, 32, 2), 16, Some(ring)),
    );
}
