//! PELT: per-entity load tracking (kernel/sched/pelt.c, sched-pelt.h).
//!
//! Time is split into 1024 us periods (1024 units of 1024 ns); a period's
//! contribution decays by `y` per period with `y^32 = 1/2`. Sums are kept for
//! load (runnable, weighted), runnable (count) and util (running); averages
//! are sum / divider, refreshed at most once per period. Integer-only: the
//! decay uses Linux's `runnable_avg_yN_inv` table. Also: attach/detach on
//! migration, deferred removal (`cfs_rq->removed`) and the new-task
//! initialisation of `post_init_entity_util_avg`.

/// `LOAD_AVG_PERIOD`: contributions halve every 32 periods.
pub const LOAD_AVG_PERIOD: u64 = 32;
/// `LOAD_AVG_MAX`: maximum possible load sum.
pub const LOAD_AVG_MAX: u64 = 47742;
/// `PELT_MIN_DIVIDER`.
pub const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;
/// `SCHED_CAPACITY_SCALE`.
pub const SCHED_CAPACITY_SCALE: u64 = 1024;

/// `runnable_avg_yN_inv[n] = floor((2^32 - 1) * y^n)`.
pub const RUNNABLE_AVG_YN_INV: [u32; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796,
    0xd744fcc9, 0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46,
    0xb504f333, 0xb123f581, 0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9,
    0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];

/// `decay_load(val, n)`: `val * y^n`.
pub fn decay_load(mut val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let mut local_n = n;
    if local_n >= LOAD_AVG_PERIOD {
        val >>= local_n / LOAD_AVG_PERIOD;
        local_n %= LOAD_AVG_PERIOD;
    }
    ((u128::from(val) * u128::from(RUNNABLE_AVG_YN_INV[local_n as usize])) >> 32) as u64
}

/// `__accumulate_pelt_segments(periods, d1, d3)`: the three-segment sum
/// d1 * y^p + 1024 * sum_{n=1}^{p-1} y^n + d3.
pub fn accumulate_pelt_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let c1 = decay_load(d1, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024;
    c1 + c2 + d3
}

/// `struct sched_avg` (plus the pre-5.7 `runnable_load_*` pair, kept only on
/// runqueues for the seed experiments that compare against runnable load).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAvg {
    /// ns, multiple of 1024; 0 = "not attached" (needs attach on enqueue).
    pub last_update_time: u64,
    /// Weighted for runqueues, 0/1-valued accumulation for entities.
    pub load_sum: u64,
    /// Runnable count accumulation (<< 10).
    pub runnable_sum: u64,
    /// Running accumulation (<< 10).
    pub util_sum: u64,
    /// Units already accumulated in the current period (0..1023).
    pub period_contrib: u32,
    /// Load average.
    pub load_avg: u64,
    /// Runnable average (1024 per runnable task).
    pub runnable_avg: u64,
    /// Utilization (0..1024 per CPU).
    pub util_avg: u64,
    /// Pre-5.7 `runnable_load_sum` (runqueues only: weight of queued entities).
    pub runnable_load_sum: u64,
    /// Pre-5.7 `runnable_load_avg` (runqueues only).
    pub runnable_load_avg: u64,
}

/// `get_pelt_divider()`.
pub fn pelt_divider(sa: &SchedAvg) -> u64 {
    PELT_MIN_DIVIDER + u64::from(sa.period_contrib)
}

impl SchedAvg {
    /// `accumulate_sum()`: returns the number of completed periods.
    /// `rl_weight` feeds the runqueue-only pre-5.7 runnable load sum.
    fn accumulate_sum(
        &mut self,
        mut delta: u64,
        load: u64,
        runnable: u64,
        running: bool,
        rl_weight: u64,
    ) -> u64 {
        let mut contrib = delta;
        delta += u64::from(self.period_contrib);
        let periods = delta / 1024;
        if periods != 0 {
            self.load_sum = decay_load(self.load_sum, periods);
            self.runnable_sum = decay_load(self.runnable_sum, periods);
            self.util_sum = decay_load(self.util_sum, periods);
            self.runnable_load_sum = decay_load(self.runnable_load_sum, periods);
            delta %= 1024;
            if load != 0 {
                contrib =
                    accumulate_pelt_segments(periods, 1024 - u64::from(self.period_contrib), delta);
            }
        }
        self.period_contrib = delta as u32;
        if load != 0 {
            self.load_sum += load * contrib;
            self.runnable_load_sum += rl_weight * contrib;
        }
        if runnable != 0 {
            self.runnable_sum += (runnable * contrib) << 10;
        }
        if running {
            self.util_sum += contrib << 10;
        }
        periods
    }

    /// `___update_load_sum(now, sa, load, runnable, running)`; returns true
    /// when a period boundary was crossed (averages must be refreshed).
    pub fn update_sum(&mut self, now: u64, load: u64, runnable: u64, running: bool) -> bool {
        self.update_sum_rl(now, load, runnable, running, 0)
    }

    /// [`Self::update_sum`] that also accumulates the pre-5.7 runnable load
    /// (`runnable_weight`, runqueues only).
    pub fn update_sum_rl(
        &mut self,
        now: u64,
        load: u64,
        runnable: u64,
        running: bool,
        runnable_weight: u64,
    ) -> bool {
        if now < self.last_update_time {
            self.last_update_time = now;
            return false;
        }
        let delta = (now - self.last_update_time) >> 10;
        if delta == 0 {
            return false;
        }
        self.last_update_time += delta << 10;
        let (runnable, running) = if load == 0 {
            (0, false)
        } else {
            (runnable, running)
        };
        self.accumulate_sum(delta, load, runnable, running, runnable_weight) != 0
    }

    /// `___update_load_avg(sa, w)`.
    pub fn update_avg(&mut self, w: u64) {
        let divider = pelt_divider(self);
        self.load_avg = w * self.load_sum / divider;
        self.runnable_avg = self.runnable_sum / divider;
        self.util_avg = self.util_sum / divider;
        self.runnable_load_avg = self.runnable_load_sum / divider;
    }
}

/// Accumulated removals from a runqueue (`cfs_rq->removed`), applied at the
/// queue's next PELT update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    /// Load to remove.
    pub load_avg: u64,
    /// Util to remove.
    pub util_avg: u64,
    /// Runnable to remove.
    pub runnable_avg: u64,
    /// Number of removed entities.
    pub nr: u32,
}

/// `sub_positive`.
fn sub_pos(a: &mut u64, b: u64) {
    *a = a.saturating_sub(b);
}

/// Linux's `max_t(u32, sum, avg * PELT_MIN_DIVIDER)`, the lower bound the
/// removal paths (`update_cfs_rq_load_avg`, `dequeue_load_avg`,
/// `detach_entity_load_avg`) put on a queue's sums after subtracting: both
/// operands are cast to u32 first, so a `load_sum` or `runnable_sum` of
/// 2^32 or more (a queue whose `load_avg` or `runnable_avg` exceeds about
/// 91,900, i.e. some 90 runnable nice-0 tasks) comes out modulo 2^32, and
/// the next update's average falls with it. Kept as Linux has it.
#[inline]
fn max_u32(sum: u64, floor: u64) -> u64 {
    u64::from((sum as u32).max(floor as u32))
}

/// A removal as Linux 5.14-5.16 make it (PELT_RESYNC_SUMS; "sched/fair:
/// Ensure _sum and _avg values stay consistent"): the averages lose what
/// leaves, and each sum is recomputed as its average times the divider.
fn remove_resynced(sa: &mut SchedAvg, load: u64, util: u64, runnable: u64) {
    let divider = pelt_divider(sa);
    sub_pos(&mut sa.load_avg, load);
    sa.load_sum = sa.load_avg * divider;
    sub_pos(&mut sa.util_avg, util);
    sa.util_sum = sa.util_avg * divider;
    sub_pos(&mut sa.runnable_avg, runnable);
    sa.runnable_sum = sa.runnable_avg * divider;
}

/// `update_cfs_rq_load_avg()` for a CPU runqueue: apply pending removals, then
/// accumulate with `load = Σweights`, `runnable = nr_runnable`,
/// `running = curr != NULL`. Returns whether the averages decayed.
pub fn update_cfs_rq_load_avg(
    sa: &mut SchedAvg,
    removed: &mut Removed,
    now: u64,
    load_weight: u64,
    nr_runnable: u64,
    running: bool,
    resync: bool,
) -> bool {
    let mut decayed = false;
    if removed.nr != 0 && resync {
        let r = core::mem::take(removed);
        remove_resynced(sa, r.load_avg, r.util_avg, r.runnable_avg);
        decayed = true;
    } else if removed.nr != 0 {
        let r = core::mem::take(removed);
        let divider = pelt_divider(sa);
        sub_pos(&mut sa.load_avg, r.load_avg);
        sub_pos(&mut sa.load_sum, r.load_avg * divider);
        sa.load_sum = max_u32(sa.load_sum, sa.load_avg * PELT_MIN_DIVIDER);
        sub_pos(&mut sa.util_avg, r.util_avg);
        sub_pos(&mut sa.util_sum, r.util_avg * divider);
        sa.util_sum = max_u32(sa.util_sum, sa.util_avg * PELT_MIN_DIVIDER);
        sub_pos(&mut sa.runnable_avg, r.runnable_avg);
        sub_pos(&mut sa.runnable_sum, r.runnable_avg * divider);
        sa.runnable_sum = max_u32(sa.runnable_sum, sa.runnable_avg * PELT_MIN_DIVIDER);
        decayed = true;
    }
    if sa.update_sum_rl(now, load_weight, nr_runnable, running, load_weight) {
        sa.update_avg(1);
        decayed = true;
    }
    decayed
}

/// `__update_load_avg_se()` for a task entity: `load = runnable = on_rq`,
/// `running = is curr`, averages weighted by `weight`.
pub fn update_entity_load_avg(
    sa: &mut SchedAvg,
    now: u64,
    weight: u64,
    on_rq: bool,
    running: bool,
) -> bool {
    update_task_load_avg(sa, now, weight, on_rq, on_rq, running)
}

/// `__update_load_avg_se()` with the runnable input apart from the load
/// input: `se_runnable()` is false for a delayed-dequeue entity, which
/// stays `on_rq` and so keeps accruing load (Linux 6.12).
pub fn update_task_load_avg(
    sa: &mut SchedAvg,
    now: u64,
    weight: u64,
    on_rq: bool,
    runnable: bool,
    running: bool,
) -> bool {
    if sa.update_sum(now, u64::from(on_rq), u64::from(runnable), running) {
        sa.update_avg(weight);
        return true;
    }
    false
}

/// `attach_entity_load_avg()`: align the entity's window with the queue and
/// add its averages and sums to the queue.
pub fn attach_entity_load_avg(rq: &mut SchedAvg, se: &mut SchedAvg, weight: u64, queued: bool) {
    let divider = pelt_divider(rq);
    se.last_update_time = rq.last_update_time;
    se.period_contrib = rq.period_contrib;
    se.util_sum = se.util_avg * divider;
    se.runnable_sum = se.runnable_avg * divider;
    se.load_sum = (se.load_avg * divider)
        .checked_div(weight)
        .unwrap_or(se.load_avg * divider)
        .max(1);
    rq.load_avg += se.load_avg;
    rq.load_sum += weight * se.load_sum;
    rq.util_avg += se.util_avg;
    rq.util_sum += se.util_sum;
    rq.runnable_avg += se.runnable_avg;
    rq.runnable_sum += se.runnable_sum;
    if queued {
        rq.runnable_load_avg += se.load_avg;
        rq.runnable_load_sum += weight * se.load_sum;
    }
}

/// `detach_entity_load_avg()`: synchronous removal (load-balance migration).
/// With `resync` the 5.14-5.16 form: the queue's sums are recomputed from
/// its averages (`dequeue_load_avg` and the util/runnable lines), no floor.
pub fn detach_entity_load_avg(rq: &mut SchedAvg, se: &SchedAvg, weight: u64, resync: bool) {
    if resync {
        remove_resynced(rq, se.load_avg, se.util_avg, se.runnable_avg);
        return;
    }
    sub_pos(&mut rq.load_avg, se.load_avg);
    sub_pos(&mut rq.load_sum, weight * se.load_sum);
    rq.load_sum = max_u32(rq.load_sum, rq.load_avg * PELT_MIN_DIVIDER);
    sub_pos(&mut rq.util_avg, se.util_avg);
    sub_pos(&mut rq.util_sum, se.util_sum);
    rq.util_sum = max_u32(rq.util_sum, rq.util_avg * PELT_MIN_DIVIDER);
    sub_pos(&mut rq.runnable_avg, se.runnable_avg);
    sub_pos(&mut rq.runnable_sum, se.runnable_sum);
    rq.runnable_sum = max_u32(rq.runnable_sum, rq.runnable_avg * PELT_MIN_DIVIDER);
}

/// Enqueue/dequeue bookkeeping of the pre-5.7 runnable load
/// (`enqueue_runnable_load_avg` / `dequeue_runnable_load_avg`).
pub fn runnable_load_enqueue(rq: &mut SchedAvg, se: &SchedAvg, weight: u64, add: bool) {
    if add {
        rq.runnable_load_avg += se.load_avg;
        rq.runnable_load_sum += weight * se.load_sum;
    } else {
        sub_pos(&mut rq.runnable_load_avg, se.load_avg);
        sub_pos(&mut rq.runnable_load_sum, weight * se.load_sum);
        rq.runnable_load_sum = rq
            .runnable_load_sum
            .max(rq.runnable_load_avg * PELT_MIN_DIVIDER);
    }
}

/// `post_init_entity_util_avg()`: initial util of a new task on a CPU of
/// capacity `cap_orig` whose queue averages are `rq`.
pub fn post_init_entity_util_avg(se: &mut SchedAvg, rq: &SchedAvg, weight: u64, cap_orig: u64) {
    let cap = cap_orig.saturating_sub(rq.util_avg) / 2;
    if cap > 0 {
        if rq.util_avg != 0 {
            se.util_avg = rq.util_avg * weight / (rq.load_avg + 1);
            se.util_avg = se.util_avg.min(cap);
        } else {
            se.util_avg = cap;
        }
    }
    se.runnable_avg = se.util_avg;
}

#[cfg(test)]
mod conservation_tests;
#[cfg(test)]
mod tests;
