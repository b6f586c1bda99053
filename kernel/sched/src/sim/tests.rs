//! Simulator scenarios: sync ping-pong pairs under the seed 004 placements.

use super::{Behavior, InvariantChecker, Sim};
use crate::config::PickPolicy;
use crate::stats::MigrationDistance;
use crate::testutil::{sched, spec};

fn pingpong(features: &str) -> (Sim<crate::FairPolicy>, crate::TaskId, crate::TaskId) {
    let mut sim = Sim::new(sched(&spec(1, 4, 2, 1), PickPolicy::Eevdf, features));
    let a = sim.spawn_on(
        0,
        0,
        Behavior::PingPong {
            run_ns: 20_000,
            sync: true,
        },
    );
    let b = sim.spawn_on(
        4,
        0,
        Behavior::PingPong {
            run_ns: 20_000,
            sync: true,
        },
    );
    sim.pair(a, b);
    // b starts blocked: it is woken by a's first message.
    sim.block_at_start(b);
    let mut chk = InvariantChecker::default();
    sim.run_until_with(200_000_000, &mut |s| chk.check(&s.sched.core()))
        .unwrap();
    (sim, a, b)
}

#[test]
fn pingpong_pairs_follow_the_forced_placement() {
    let (sim, a, b) = pingpong("WAKEE_STACKED");
    let (ca, cb) = (sim.sched.task(a).cpu, sim.sched.task(b).cpu);
    assert_eq!(ca, cb, "stacked on one CPU");
    assert!(sim.sched.stats().wake.wake_forced > 1000);

    let (sim, a, b) = pingpong("WAKEE_CROSS_SMT");
    let t = &sim.sched.shared.topo;
    let (ca, cb) = (sim.sched.task(a).cpu, sim.sched.task(b).cpu);
    assert_eq!(t.distance(ca, cb), MigrationDistance::SmtSibling);

    let (sim, a, b) = pingpong("WAKEE_CROSS_CORE");
    let t = &sim.sched.shared.topo;
    let (ca, cb) = (sim.sched.task(a).cpu, sim.sched.task(b).cpu);
    assert_eq!(t.distance(ca, cb), MigrationDistance::SameLlc);
}

#[test]
fn pingpong_unbound_makes_progress_and_counts_sync_wakeups() {
    let (sim, a, b) = pingpong("");
    let st = &sim.sched.stats();
    assert!(st.wake.nr_wakeups_sync > 1000, "{:?}", st.wake);
    assert_eq!(st.wake.nr_wakeups, st.wake.nr_wakeups_sync);
    // Messages alternate: both sides ran about the same amount.
    let (ra, rb) = (sim.runtime(a) as f64, sim.runtime(b) as f64);
    assert!((ra / rb - 1.0).abs() < 0.05, "{ra} vs {rb}");
    assert!(st.sis.sis_search > 0);
}
