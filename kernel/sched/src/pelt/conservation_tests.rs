//! Load conservation: a runqueue's `load_avg` is the sum of its attached
//! entities' (Linux keeps the two in step: the queue accumulates its
//! runnable weight, blocked entities decay inside its sum, and migration
//! moves an entity's average out with `removed` and in with `attach`).

use crate::config::PickPolicy;
use crate::placement::WakeFlags;
use crate::task::TaskPolicy;
use crate::testutil::{load_sums_at_queue_clocks, sched, spec};
use crate::{CpuId, TaskId};

struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn run(pick: PickPolicy, seed: u64, queue: bool) -> (u64, u64, u64, u64) {
    let s = sched(&spec(2, 2, 2, 2), pick, "");
    let ncpu = 8;
    let mut now = 1_000_000u64;
    let mut tasks: Vec<TaskId> = Vec::new();
    for i in 0..40 {
        let r = s.wake_up_new_task_on(None, (i % ncpu) as CpuId, 0, TaskPolicy::Normal, now);
        tasks.push(r.task);
        now += 1000;
    }
    for c in 0..ncpu {
        s.schedule(c, now);
    }
    let mut sleeping: Vec<TaskId> = Vec::new();
    let mut rng = Lcg(seed);
    let mut next_tick = now + 4_000_000;
    for _ in 0..200_000 {
        now += 5_000 + rng.next(50_000);
        if now >= next_tick {
            for c in 0..ncpu {
                s.tick(c, now);
                if s.need_resched(c) {
                    s.schedule(c, now);
                }
            }
            next_tick += 4_000_000;
        }
        let c = rng.next(ncpu as u64) as CpuId;
        if s.current(c).is_some() && rng.next(2) == 0 {
            let (p, _) = s.block_and_schedule(c, now);
            sleeping.push(p);
        } else if !sleeping.is_empty() && sleeping.len() > 10 {
            let i = rng.next(sleeping.len() as u64) as usize;
            let p = sleeping.swap_remove(i);
            let r = if queue {
                // TTWU_QUEUE: placement and load removal on the waker,
                // attach on the target when it drains its wake list.
                s.wake_up_queue(p, c, WakeFlags::SYNC, now)
            } else {
                s.wake_up(p, c, true, now)
            };
            for &t in r.resched.iter() {
                s.sched_ttwu_pending(t, now);
                s.schedule(t, now);
            }
        } else if s.current(c).is_none() {
            s.schedule(c, now);
        }
    }
    // Bring every queue to `now` and compare with the entities decayed to it.
    for c in 0..ncpu {
        s.tick(c, now);
    }
    let queued = s.stats().wake.ttwu_queued;
    let (rq_sum, se_sum, detached) = load_sums_at_queue_clocks(&s.core());
    (rq_sum, se_sum, detached, queued)
}

#[test]
fn runqueue_load_is_the_sum_of_its_entities_after_many_migrations() {
    for (pick, queue) in [
        (PickPolicy::Cfs, false),
        (PickPolicy::Eevdf, false),
        (PickPolicy::Eevdf, true),
    ] {
        for seed in 1..4 {
            let (rq, se, det, queued) = run(pick, seed, queue);
            assert_eq!(
                queued > 0,
                queue,
                "{pick:?} seed {seed}: {queued} wake-list wakeups"
            );
            assert_eq!(
                det, 0,
                "{pick:?} queue {queue} seed {seed}: a task left detached"
            );
            // Brought to the same instant, the queue's sum and the
            // entities' differ by rounding: every update floors, and a
            // removal keeps the queue's load_sum at least load_avg x
            // PELT_MIN_DIVIDER, as Linux does, so the queue drifts high
            // (0.4-1.4 % for these nine deterministic runs). Within 2 %.
            assert!(
                se > 10_000,
                "{pick:?} queue {queue} seed {seed}: too little load to test ({se})"
            );
            assert!(
                rq.abs_diff(se) * 50 <= se,
                "{pick:?} queue {queue} seed {seed}: runqueues {rq} vs entities {se}"
            );
        }
    }
}
