//! One pipe-style message between two tasks, as the kernel's `latency`
//! experiment drives the core: the sender wakes the receiver with WF_SYNC
//! and blocks, its CPU schedules. Run it under an instruction counter to
//! see what the core's wakeup path costs, e.g.
//!
//! ```text
//! cargo build --release -p sched --example wake_cycle
//! valgrind --tool=callgrind target/release/examples/wake_cycle same 100000
//! valgrind --tool=callgrind target/release/examples/wake_cycle cross 100000 eevdf
//! ```
//!
//! `same`: both tasks bound to CPU 0; `cross`: bound to CPUs 0 and 2 (the
//! receiver's CPU is idle, so each message is a remote wakeup and an idle
//! exit). The machine is the default preset's: 2 sockets x 2 cores x 2
//! threads, a node per socket. The third argument is the pick (`cfs`, the
//! default, or `eevdf`).

use sched::config::{PickPolicy, SchedConfig};
use sched::{SchedTopo, Scheduler, TaskPolicy};
use topology::SyntheticSpec;

fn main() {
    let mut a = std::env::args().skip(1);
    let mode = a.next().unwrap_or_else(|| "same".into());
    let n: u64 = a
        .next()
        .map_or(100_000, |s| s.parse().expect("message count"));
    let pick = PickPolicy::parse(&a.next().unwrap_or_else(|| "cfs".into())).expect("pick");
    let spec = SyntheticSpec {
        nodes: 2,
        ..SyntheticSpec::simple(2, 2, 2)
    };
    let topo = SchedTopo::synthetic(&spec).expect("topology");
    let cpus = topo.nr_cpus;
    let s = Scheduler::new(topo, SchedConfig::new(cpus, pick));
    let (ca, cb) = match mode.as_str() {
        "same" => (0, 0),
        "cross" => (0, 2),
        m => panic!("mode '{m}': same or cross"),
    };
    // b starts first and waits for the first message; then a starts.
    let tb = s
        .wake_up_new_task_bound(None, cb, 0, TaskPolicy::Normal, 1_000)
        .task;
    s.schedule(cb, 1_000);
    assert_eq!(s.current(cb), Some(tb));
    s.block_and_schedule(cb, 1_500);
    let ta = s
        .wake_up_new_task_bound(None, ca, 0, TaskPolicy::Normal, 1_500)
        .task;
    let mut now = 2_000;
    s.schedule(ca, now);
    assert_eq!(s.current(ca), Some(ta));
    let (mut from, mut to) = ((ca, ta), (cb, tb));
    let mut woke = 0u64;
    for _ in 0..n {
        now += 5_000;
        let (fc, _) = from;
        let (tc, tt) = to;
        if s.current(fc).is_none() {
            s.schedule(fc, now);
        }
        let r = s.wake_up(tt, fc, true, now);
        woke += r.resched.len() as u64;
        s.block_and_schedule(fc, now);
        if tc != fc {
            s.schedule(tc, now);
        }
        std::mem::swap(&mut from, &mut to);
    }
    println!(
        "{mode} {}: {n} messages, {woke} reschedule requests",
        pick.name()
    );
}
