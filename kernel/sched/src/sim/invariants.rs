//! Structural invariants of the core, checked after every step by the
//! property tests and the simulator.

use crate::core::SchedCore;
use crate::task::{TaskId, TaskState, Tasks};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// Carries what must be remembered between checks (min_vruntime
/// monotonicity).
#[derive(Clone, Debug, Default)]
pub struct InvariantChecker {
    last_min_vruntime: Vec<u64>,
}

impl InvariantChecker {
    /// Check everything; `Err` describes the first violation.
    pub fn check(&mut self, core: &SchedCore) -> Result<(), String> {
        let n = core.nr_cpus();
        if self.last_min_vruntime.len() != n {
            self.last_min_vruntime = vec![0; n];
        }
        let mut seen: Vec<Option<usize>> = Vec::new();
        for (cpu, rq) in core.rqs.iter().enumerate() {
            let cfs = &rq.cfs;
            if cfs.min_vruntime < self.last_min_vruntime[cpu] {
                return Err(format!(
                    "cpu{cpu}: min_vruntime went back {} -> {}",
                    self.last_min_vruntime[cpu], cfs.min_vruntime
                ));
            }
            self.last_min_vruntime[cpu] = cfs.min_vruntime;
            let mut members: Vec<TaskId> = cfs.timeline.iter().map(|(_, id, _)| id).collect();
            let (mut tree_w, mut tree_kw) = (0u64, 0i128);
            for &id in &members {
                let t = core
                    .tasks
                    .get(id)
                    .ok_or_else(|| format!("cpu{cpu}: dead task {id:?} queued"))?;
                // Queued and waiting, or asleep with its dequeue delayed.
                let state_ok = if t.se.sched_delayed {
                    t.state == TaskState::Sleeping
                } else {
                    t.state == TaskState::Runnable
                };
                if !state_ok || !t.se.on_rq || t.cpu != cpu {
                    return Err(format!(
                        "cpu{cpu}: queued {id:?} has state {:?} on_rq {} cpu {} delayed {}",
                        t.state, t.se.on_rq, t.cpu, t.se.sched_delayed
                    ));
                }
                tree_w += t.weight();
                tree_kw += i128::from(cfs.entity_key(t.se.vruntime)) * i128::from(t.weight());
            }
            if rq.curr != cfs.curr {
                return Err(format!(
                    "cpu{cpu}: rq.curr {:?} != cfs.curr {:?}",
                    rq.curr, cfs.curr
                ));
            }
            if let Some(c) = rq.curr {
                let t = core
                    .tasks
                    .get(c)
                    .ok_or_else(|| format!("cpu{cpu}: curr {c:?} dead"))?;
                if t.cpu != cpu {
                    return Err(format!("cpu{cpu}: curr {c:?} thinks it is on cpu{}", t.cpu));
                }
                if t.se.on_rq {
                    // A delayed curr blocked and has not been switched out.
                    let want = if t.se.sched_delayed {
                        TaskState::Sleeping
                    } else {
                        TaskState::Running
                    };
                    if t.state != want {
                        return Err(format!(
                            "cpu{cpu}: curr {c:?} state {:?} delayed {}",
                            t.state, t.se.sched_delayed
                        ));
                    }
                    members.push(c);
                }
            }
            let nr = members.len() as u32;
            if nr != cfs.nr_running {
                return Err(format!(
                    "cpu{cpu}: nr_running {} but {} entities",
                    cfs.nr_running, nr
                ));
            }
            let delayed = members
                .iter()
                .filter(|&&id| core.tasks[id].se.sched_delayed)
                .count() as u32;
            if delayed != cfs.nr_delayed {
                return Err(format!(
                    "cpu{cpu}: nr_delayed {} but {delayed} delayed entities",
                    cfs.nr_delayed
                ));
            }
            let w: u64 = members.iter().map(|&id| core.tasks[id].weight()).sum();
            if w != cfs.load.weight {
                return Err(format!(
                    "cpu{cpu}: load {} but entities weigh {}",
                    cfs.load.weight, w
                ));
            }
            if tree_w != cfs.avg_load || tree_kw != cfs.avg_vruntime {
                return Err(format!(
                    "cpu{cpu}: avg sums ({}, {}) vs recomputed ({tree_w}, {tree_kw})",
                    cfs.avg_load, cfs.avg_vruntime
                ));
            }
            for id in members {
                let i = id.0 as usize;
                if seen.len() <= i {
                    seen.resize(i + 1, None);
                }
                if let Some(other) = seen[i] {
                    return Err(format!("{id:?} on cpu{other} and cpu{cpu}"));
                }
                seen[i] = Some(cpu);
            }
        }
        // Tasks on wake lists (TTWU_QUEUE): woken, on no runqueue, not
        // homed anywhere, each once, and the list's pending flag set.
        let mut listed: Vec<bool> = Vec::new();
        for cpu in 0..n {
            let mut err = None;
            let mut len = 0;
            core.shared.for_each_wake_listed(cpu, |t, _| {
                len += 1;
                let i = t.id.0 as usize;
                if listed.len() <= i {
                    listed.resize(i + 1, false);
                }
                let queued = seen.get(i).copied().flatten().is_some();
                if err.is_none()
                    && (listed[i] || queued || t.se.on_rq || t.cpu != cpu || core.tasks.get(t.id).is_some())
                {
                    err = Some(format!(
                        "cpu{cpu}: wake-listed {:?} also queued, homed or listed (on_rq {}, cpu {})",
                        t.id, t.se.on_rq, t.cpu
                    ));
                }
                listed[i] = true;
            });
            if let Some(e) = err {
                return Err(e);
            }
            if len > 0 && !core.shared.ttwu_pending(cpu) {
                return Err(format!(
                    "cpu{cpu}: {len} on its wake list, ttwu_pending clear"
                ));
            }
        }
        for t in core.tasks.iter() {
            let queued = seen.get(t.id.0 as usize).copied().flatten().is_some();
            match t.state {
                TaskState::Runnable | TaskState::Running if !queued => {
                    return Err(format!("{:?} is {:?} but on no runqueue", t.id, t.state));
                }
                TaskState::Sleeping if queued && t.se.sched_delayed => {}
                TaskState::Sleeping | TaskState::Dead if queued => {
                    return Err(format!("{:?} is {:?} but queued", t.id, t.state));
                }
                _ if t.se.sched_delayed && !queued => {
                    return Err(format!("{:?} is delayed but on no runqueue", t.id));
                }
                _ => {}
            }
        }
        Ok(())
    }
}
