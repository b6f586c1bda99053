//! The fair runqueue (`struct cfs_rq`) and its timeline bookkeeping.
//!
//! Holds the queued-but-not-running entities in a [`Timeline`], `curr`
//! outside the tree (Linux's structural rule), the load sum, `min_vruntime`
//! and EEVDF's `avg_vruntime`/`avg_load` sums. Mirrors `__enqueue_entity`,
//! `__dequeue_entity`, `avg_vruntime_add/sub`, `avg_vruntime()`,
//! `vruntime_eligible()` and `update_min_vruntime()`.

use super::pick::PickDiscipline;
use super::timeline::Timeline;
use crate::pelt::{Removed, SchedAvg};
use crate::task::{SchedEntity, Task, TaskId, TaskPolicy, Tasks};
use crate::weight::LoadWeight;

/// Initial `min_vruntime`: far from 0 so entities placed left of it (sleeper
/// credit, positive lag) never underflow the u64 clock.
pub const MIN_VRUNTIME_START: u64 = 1 << 40;

/// `struct cfs_rq` of one CPU (no group scheduling).
#[derive(Clone, Debug)]
pub struct CfsRq {
    /// PELT_RESYNC_SUMS: removals recompute the sums from the averages
    /// (5.14-5.16) instead of subtracting with a floor (set from the
    /// configuration when the runqueue is made).
    pub pelt_resync: bool,
    /// Queued entities except `curr`.
    pub timeline: Timeline,
    /// The running entity (kept out of the tree).
    pub curr: Option<TaskId>,
    /// The last `cfs_tasks` head position handed out
    /// ([`SchedEntity::cfs_tasks_pos`](crate::task::SchedEntity::cfs_tasks_pos)).
    pub cfs_tasks_head: u64,
    /// Σ weights of entities on the queue, including curr.
    pub load: LoadWeight,
    /// Entities on the queue including curr (`nr_running` / `h_nr_running`).
    pub nr_running: u32,
    /// SCHED_IDLE entities among them (`h_nr_idle`).
    pub nr_idle: u32,
    /// Delayed-dequeue entities among them (`h_nr_delayed`, 6.12.y: not
    /// runnable for PELT).
    pub nr_delayed: u32,
    /// Monotonic minimum virtual runtime.
    pub min_vruntime: u64,
    /// Σ (v_i - min_vruntime) * w_i over tree entities (EEVDF).
    pub avg_vruntime: i128,
    /// Σ w_i over tree entities (EEVDF).
    pub avg_load: u64,
    /// PELT averages of the queue.
    pub avg: SchedAvg,
    /// Pending removals.
    pub removed: Removed,
    /// Next buddy.
    pub next: Option<TaskId>,
    /// Last buddy (CFS).
    pub last: Option<TaskId>,
    /// Skip buddy (CFS `sched_yield`).
    pub skip: Option<TaskId>,
    /// `update_curr` found curr past its deadline with others queued
    /// (EEVDF): Linux's `resched_curr` from inside `update_curr`, whoever
    /// called it. The core turns it into a reschedule after the operation
    /// ([`crate::core::SchedCore::resched_if_update_curr_asked`]).
    pub resched: bool,
}

impl Default for CfsRq {
    fn default() -> Self {
        CfsRq {
            pelt_resync: false,
            timeline: Timeline::new(),
            curr: None,
            cfs_tasks_head: 0,
            load: LoadWeight::default(),
            nr_running: 0,
            nr_idle: 0,
            nr_delayed: 0,
            min_vruntime: MIN_VRUNTIME_START,
            avg_vruntime: 0,
            avg_load: 0,
            avg: SchedAvg::default(),
            removed: Removed::default(),
            next: None,
            last: None,
            skip: None,
            resched: false,
        }
    }
}

impl CfsRq {
    /// `entity_key()`: vruntime relative to min_vruntime.
    pub fn entity_key(&self, vruntime: u64) -> i64 {
        vruntime.wrapping_sub(self.min_vruntime) as i64
    }

    /// `__enqueue_entity` + `avg_vruntime_add`, sorted by the pick's
    /// [`PickDiscipline::tree_key`].
    pub fn tree_insert(&mut self, pick: impl PickDiscipline, tasks: &mut impl Tasks, id: TaskId) {
        self.tree_insert_se(pick, &mut tasks[id].se, id);
    }

    /// [`Self::tree_insert`] of `id`, whose entity the caller has at hand
    /// (it records its timeline entry in [`SchedEntity::tree_seq`]).
    #[inline]
    pub fn tree_insert_se(&mut self, pick: impl PickDiscipline, se: &mut SchedEntity, id: TaskId) {
        let w = se.load.weight;
        self.avg_vruntime += i128::from(self.entity_key(se.vruntime)) * i128::from(w);
        self.avg_load += w;
        se.tree_seq = self.timeline.insert(pick.tree_key(se), id, se.vruntime);
    }

    /// `__dequeue_entity` + `avg_vruntime_sub` of `id`, whose entity the
    /// caller has at hand (every caller has just looked it up).
    #[inline]
    pub fn tree_remove_se(&mut self, pick: impl PickDiscipline, se: &SchedEntity, id: TaskId) {
        let w = se.load.weight;
        let found = self.timeline.remove(pick.tree_key(se), se.tree_seq);
        debug_assert!(found, "entity {id:?} not in tree");
        self.avg_vruntime -= i128::from(self.entity_key(se.vruntime)) * i128::from(w);
        self.avg_load -= w;
    }

    /// `list_add`/`list_move(&se->group_node, &rq->cfs_tasks)`: `se` goes to
    /// the head of the queue's `cfs_tasks` list, the most recently used end.
    #[inline]
    pub fn cfs_tasks_move_to_head(&mut self, se: &mut crate::task::SchedEntity) {
        self.cfs_tasks_head += 1;
        se.cfs_tasks_pos = self.cfs_tasks_head;
    }

    /// `account_entity_enqueue`.
    pub fn account_enqueue(&mut self, tasks: &impl Tasks, id: TaskId) {
        self.account_enqueue_task(&tasks[id]);
    }

    /// [`Self::account_enqueue`] of a task the caller has at hand.
    #[inline]
    pub fn account_enqueue_task(&mut self, t: &Task) {
        self.load.add(t.weight());
        self.nr_running += 1;
        if t.policy == TaskPolicy::Idle {
            self.nr_idle += 1;
        }
        // A delayed task moved by the balancer arrives still delayed
        // (enqueue_task_fair's `h_nr_delayed` of a non-wakeup enqueue).
        if t.se.sched_delayed {
            self.nr_delayed += 1;
        }
    }

    /// `account_entity_dequeue` of a task the caller has at hand.
    #[inline]
    pub fn account_dequeue_task(&mut self, t: &Task) {
        self.load.sub(t.weight());
        self.nr_running -= 1;
        if t.policy == TaskPolicy::Idle {
            self.nr_idle -= 1;
        }
        if t.se.sched_delayed {
            self.nr_delayed -= 1;
        }
    }

    /// Queued entities PELT counts as runnable: `h_nr_running -
    /// h_nr_delayed` (`__update_load_avg_cfs_rq`, 6.12.y).
    #[inline]
    pub fn nr_runnable(&self) -> u32 {
        self.nr_running - self.nr_delayed
    }

    /// curr's (key·w, w) term if curr is on the queue.
    fn curr_term(&self, tasks: &impl Tasks) -> (i128, u64) {
        match self.curr.map(|c| &tasks[c].se) {
            Some(se) if se.on_rq => {
                let w = se.load.weight;
                (i128::from(self.entity_key(se.vruntime)) * i128::from(w), w)
            }
            _ => (0, 0),
        }
    }

    /// `avg_vruntime()`: the zero-lag virtual time V, rounded toward -inf.
    pub fn avg_vruntime(&self, tasks: &impl Tasks) -> u64 {
        let (ct, cw) = self.curr_term(tasks);
        let mut avg = self.avg_vruntime + ct;
        let load = i128::from(self.avg_load + cw);
        if load != 0 {
            if avg < 0 {
                avg -= load - 1;
            }
            avg = div_i128(avg, load);
        }
        self.min_vruntime.wrapping_add(avg as i64 as u64)
    }

    /// `vruntime_eligible()`: lag >= 0, computed without division.
    pub fn vruntime_eligible(&self, tasks: &impl Tasks, vruntime: u64) -> bool {
        let (ct, cw) = self.curr_term(tasks);
        let avg = self.avg_vruntime + ct;
        let load = i128::from(self.avg_load + cw);
        avg >= i128::from(self.entity_key(vruntime)) * load
    }

    /// `update_min_vruntime()`: never moves backwards; shifts avg_vruntime.
    /// The tree's minimum is the pick's [`PickDiscipline::tree_min_vruntime`].
    pub fn update_min_vruntime(&mut self, pick: impl PickDiscipline, tasks: &impl Tasks) {
        let mut v = self.min_vruntime;
        let mut have_curr = false;
        if let Some(c) = self.curr {
            let se = &tasks[c].se;
            if se.on_rq {
                v = se.vruntime;
                have_curr = true;
            }
        }
        if let Some(m) = pick.tree_min_vruntime(self) {
            v = if have_curr { v.min(m) } else { m };
        }
        if v > self.min_vruntime {
            let d = v - self.min_vruntime;
            self.avg_vruntime -= i128::from(self.avg_load) * i128::from(d);
            self.min_vruntime = v;
        }
    }

    /// `cfs_rq->nr_queued` of tree entities + curr: whether anything is runnable.
    pub fn has_runnable(&self) -> bool {
        self.nr_running > 0
    }
}

/// `a / b` (truncating, as Rust's `/`), through 64-bit division when both
/// fit: the same quotient as the 128-bit one, without the library call
/// (`__divti3`) the hot EEVDF paths would otherwise make on every wakeup.
#[inline]
pub(crate) fn div_i128(a: i128, b: i128) -> i128 {
    match (i64::try_from(a), i64::try_from(b)) {
        (Ok(a), Ok(b)) if !(a == i64::MIN && b == -1) => i128::from(a / b),
        _ => a / b,
    }
}

/// `a * b / c` truncated to i64 as `(i128(a) * i128(b) / i128(c)) as i64`
/// computes it, in 64 bits when the product fits.
#[inline]
pub(crate) fn mul_div_i128(a: i64, b: u64, c: u64) -> i64 {
    match (i64::try_from(b), i64::try_from(c)) {
        (Ok(b64), Ok(c64)) if c64 != 0 => match a.checked_mul(b64) {
            // c64 > 0: the quotient cannot overflow.
            Some(p) => p / c64,
            _ => (i128::from(a) * i128::from(b) / i128::from(c)) as i64,
        },
        _ => (i128::from(a) * i128::from(b) / i128::from(c)) as i64,
    }
}

#[cfg(test)]
mod div_tests {
    use super::{div_i128, mul_div_i128};

    #[test]
    fn narrow_division_gives_the_wide_quotient() {
        let wide = [
            0i128,
            1,
            -1,
            7,
            -7,
            i128::from(i64::MAX),
            i128::from(i64::MIN),
            i128::from(i64::MAX) + 1,
            i128::from(i64::MIN) - 1,
            -(1 << 80),
            1 << 90,
        ];
        for &a in &wide {
            for &b in &[
                1i128,
                -1,
                2,
                3,
                -3,
                1024,
                1 << 40,
                i128::from(i64::MAX),
                1 << 70,
            ] {
                assert_eq!(div_i128(a, b), a / b, "{a} / {b}");
            }
        }
        for &a in &[0i64, 5, -5, i64::MAX, i64::MIN, 1 << 40, -(1 << 40)] {
            for &b in &[1u64, 3, 1024, 1 << 30, u64::MAX] {
                for &c in &[1u64, 2, 1023, 1 << 20, u64::MAX] {
                    let want = (i128::from(a) * i128::from(b) / i128::from(c)) as i64;
                    assert_eq!(mul_div_i128(a, b, c), want, "{a} * {b} / {c}");
                }
            }
        }
    }
}
