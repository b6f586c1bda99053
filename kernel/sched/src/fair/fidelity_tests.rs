//! Entity-level decisions checked against Linux's own rule (issue 10): each
//! expected value is derived by hand from the Linux function named in the
//! test, not from this crate's code.

use super::cfs;
use crate::config::{PickPolicy, SchedConfig};
use crate::fair::cfs_rq::CfsRq;
use crate::task::{Task, TaskId, TaskPolicy, TaskTable};

fn cfg1(pick: PickPolicy) -> SchedConfig {
    SchedConfig::new(1, pick)
}

/// Nice-0 normal tasks queued (in the tree) at `min_vruntime + offsets`.
fn queue_at(offsets: &[u64]) -> (CfsRq, TaskTable, Vec<TaskId>) {
    let c = cfg1(PickPolicy::Cfs);
    let mut a = TaskTable::default();
    let mut q = CfsRq::default();
    let ids: Vec<TaskId> = offsets
        .iter()
        .map(|_| a.alloc(|id| Task::new(id, 0, TaskPolicy::Normal, 0)))
        .collect();
    for (&id, &off) in ids.iter().zip(offsets) {
        a[id].se.vruntime = q.min_vruntime + off;
        a[id].se.on_rq = true;
        q.account_enqueue(&a, id);
        q.tree_insert(c.pick, &a, id);
    }
    (q, a, ids)
}

#[test]
fn cfs_pick_honours_buddies_after_skipping_the_yielder() {
    // Linux v5.11 pick_next_entity(): left = A (skip buddy). second = B;
    // wakeup_preempt_entity(B, A): vdiff = 0.2 ms <= wakeup_gran(A) = 1 ms
    // (nice 0, one CPU: sysctl 1 ms unscaled) -> 0 < 1 -> se = B. Then the
    // buddies are still checked against left: C at +0.8 ms:
    // wakeup_preempt_entity(C, A) = 0 < 1 -> se = C (as next or last buddy).
    let c = cfg1(PickPolicy::Cfs);
    assert_eq!(c.tunables.wakeup_granularity_ns, 1_000_000);
    for buddy in ["next", "last"] {
        let (mut q, a, ids) = queue_at(&[0, 200_000, 800_000]);
        q.skip = Some(ids[0]);
        match buddy {
            "next" => q.next = Some(ids[2]),
            _ => q.last = Some(ids[2]),
        }
        assert_eq!(
            cfs::pick_next_entity(&mut q, &a, &c),
            Some(ids[2]),
            "{buddy}"
        );
        assert_eq!((q.next, q.last, q.skip), (None, None, Some(ids[0])));
    }
}
