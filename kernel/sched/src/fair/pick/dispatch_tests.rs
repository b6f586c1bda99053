//! The dispatch point routes each step to the run's discipline (unit level).
//!
//! `dispatch_forwards_every_step`: every [`PickDiscipline`] method, run on
//! the same queue through [`PickPolicy`] and through the discipline type,
//! gives the same result and state, and the two disciplines differ on that
//! queue, so an arm of `dispatch!` pointing at the wrong discipline fails.
//! `each_pick_shows_its_own_steps`: one shape driven through the
//! [`Scheduler`] under each pick, checked for the effect each pick's steps
//! have (fork placement, tick preemption, yield, migrations), with values
//! derived from the Linux rules named in the comments.

use super::PickDiscipline;
use super::cfs::Cfs;
use super::eevdf::Eevdf;
use crate::config::{PickPolicy, SchedConfig};
use crate::fair::cfs_rq::CfsRq;
use crate::fair::entity::{DequeueFlags, EnqueueFlags};
use crate::task::{Task, TaskId, TaskPolicy, TaskTable};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// An 8-CPU configuration of `build`'s pick and a queue built with its
/// tree key: `curr` (index 3) running outside the tree at `min_vruntime +
/// 1.5 ms`, past its deadline, picked 8 ms ago; A, B, C (0, 1, 2) queued
/// at `+0 / +1 / +2 ms` with deadlines `+9 / +2 / +1.5 ms` and C the next
/// buddy (V = +1.125 ms: A and B are eligible, C and curr are not); a
/// fifth task (4) asleep far back with a lag of 0.5 ms.
fn queue(build: impl PickDiscipline) -> (SchedConfig, CfsRq, TaskTable, Vec<TaskId>) {
    const MS: u64 = 1_000_000;
    let pick = PickPolicy::parse(build.name()).expect("pick name");
    let cfg = SchedConfig::new(8, pick);
    let mut q = CfsRq::default();
    let mut a = TaskTable::default();
    let ids: Vec<TaskId> = (0..5)
        .map(|_| a.alloc(|id| Task::new(id, 0, TaskPolicy::Normal, 0)))
        .collect();
    let base = q.min_vruntime;
    let at = [
        (0, 9 * MS),
        (MS, 2 * MS),
        (2 * MS, 3 * MS / 2),
        (3 * MS / 2, MS),
    ];
    for (&id, &(v, dl)) in ids.iter().zip(&at) {
        let se = &mut a[id].se;
        se.vruntime = base + v;
        se.deadline = base + dl;
        se.slice = cfg.tunables.base_slice_ns;
        se.on_rq = true;
        q.account_enqueue(&a, id);
    }
    for &id in &ids[..3] {
        q.tree_insert(build, &mut a, id);
    }
    q.curr = Some(ids[3]);
    q.next = Some(ids[2]);
    a[ids[3]].se.sum_exec_runtime = 8 * MS;
    let se = &mut a[ids[4]].se;
    se.vruntime = base - 50 * MS;
    se.vlag = (MS / 2) as i64;
    se.deadline = base;
    (cfg, q, a, ids)
}

const WAKEUP: EnqueueFlags = EnqueueFlags {
    wakeup: true,
    initial: false,
    migrated: false,
};
const INITIAL: EnqueueFlags = EnqueueFlags {
    wakeup: false,
    initial: true,
    migrated: false,
};
const MIGRATED: EnqueueFlags = EnqueueFlags {
    wakeup: true,
    initial: false,
    migrated: true,
};

/// A step run on a fresh [`queue`]: its result as text.
type Step<D> = fn(D, &mut CfsRq, &mut TaskTable, &SchedConfig, &[TaskId]) -> String;

/// Every step of `d`, each on a fresh queue built by `build`, as (step,
/// result, queue and tasks after).
fn probe<D: PickDiscipline>(build: impl PickDiscipline, d: D) -> Vec<(&'static str, String)> {
    let steps: [(&'static str, Step<D>); 15] = [
        ("name", |d, _, _, _, _| d.name().into()),
        ("tree_key", |d, _, a, _, ids| {
            format!("{}", d.tree_key(&a[ids[0]].se))
        }),
        ("tree_min_vruntime", |d, q, _, _, _| {
            format!("{:?}", d.tree_min_vruntime(q))
        }),
        ("update_deadline", |d, q, a, cfg, ids| {
            format!(
                "{}",
                d.update_deadline(cfg, q.nr_running, &mut a[ids[3]].se)
            )
        }),
        ("task_fork", |d, q, a, cfg, ids| {
            d.task_fork(q, a, cfg, ids[4], Some(ids[3]), 50_000_000);
            String::new()
        }),
        ("enqueue_relative", |d, _, _, _, _| {
            format!(
                "{:?}",
                [WAKEUP, INITIAL, MIGRATED].map(|f| d.enqueue_relative(f))
            )
        }),
        ("place_entity wakeup", |d, q, a, cfg, ids| {
            d.place_entity(q, a, cfg, ids[4], WAKEUP);
            String::new()
        }),
        ("place_entity initial", |d, q, a, cfg, ids| {
            d.place_entity(q, a, cfg, ids[4], INITIAL);
            String::new()
        }),
        ("update_entity_lag", |d, q, a, cfg, ids| {
            d.update_entity_lag(q, a, cfg, ids[2]);
            String::new()
        }),
        ("delay_dequeue", |d, q, a, cfg, ids| {
            // With the switch on: curr (ahead of V) may stay, A may not.
            let mut c = *cfg;
            c.features.set(crate::features::Feat::DelayDequeue, true);
            format!(
                "{:?}",
                [ids[3], ids[0]]
                    .map(|p| d.delays_sleepers(&c) && !q.vruntime_eligible(a, a[p].se.vruntime))
            )
        }),
        ("dequeue_detach", |d, q, a, _, ids| {
            // Not a sleep (a migration); a sleep changes nothing in either.
            let flags = DequeueFlags {
                sleep: false,
                migrate: true,
                special: false,
            };
            d.dequeue_detach(q, &mut a[ids[2]].se, flags);
            String::new()
        }),
        ("set_next_entity", |d, _, a, _, ids| {
            d.set_next_entity(&mut a[ids[1]].se);
            String::new()
        }),
        ("pick_next_entity", |d, q, a, cfg, _| {
            format!("{:?}", d.pick_next_entity(q, a, cfg))
        }),
        ("check_preempt_tick", |d, q, a, cfg, ids| {
            format!("{}", d.check_preempt_tick(q, a, cfg, ids[3]))
        }),
        ("check_preempt_wakeup", |d, q, a, cfg, ids| {
            // A then B waking: CFS refuses both (within the wakeup
            // granularity); EEVDF preempts for its pick.
            let r = [ids[0], ids[1]].map(|p| {
                let (mut q, mut a) = (q.clone(), a.clone());
                d.check_preempt_wakeup(&mut q, &mut a, cfg, ids[3], p, false, false, 0)
            });
            format!("{r:?}")
        }),
    ];
    let mut out: Vec<(&'static str, String)> = steps
        .iter()
        .map(|&(name, f)| {
            let (cfg, mut q, mut a, ids) = queue(build);
            let r = f(d, &mut q, &mut a, &cfg, &ids);
            (name, format!("{r} | {q:?} | {a:?}"))
        })
        .collect();
    let (cfg, mut q, mut a, ids) = queue(build);
    d.yield_task(&mut q, &mut a, &cfg, ids[3], 0);
    out.push(("yield_task", format!("{q:?} | {a:?}")));
    out
}

/// The steps on which `a` and `b` disagree.
fn differing(a: &[(&'static str, String)], b: &[(&'static str, String)]) -> Vec<&'static str> {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .filter(|((_, x), (_, y))| x != y)
        .map(|((step, _), _)| *step)
        .collect()
}

#[test]
fn dispatch_forwards_every_step() {
    let all: Vec<&str> = probe(Cfs, Cfs).iter().map(|(s, _)| *s).collect();
    // The probe separates the disciplines at every step (on the CFS queue
    // the two tree minima coincide by construction), so a forwarder that
    // reaches the other discipline shows below.
    let same_on_cfs_queue: Vec<&str> = all
        .iter()
        .filter(|s| !differing(&probe(Cfs, Cfs), &probe(Cfs, Eevdf)).contains(s))
        .copied()
        .collect();
    assert_eq!(same_on_cfs_queue, ["tree_min_vruntime"]);
    assert_eq!(differing(&probe(Eevdf, Cfs), &probe(Eevdf, Eevdf)), all);
    let none: [&str; 0] = [];
    assert_eq!(
        differing(&probe(Cfs, PickPolicy::Cfs), &probe(Cfs, Cfs)),
        none
    );
    assert_eq!(
        differing(&probe(Eevdf, PickPolicy::Eevdf), &probe(Eevdf, Eevdf)),
        none
    );
}
