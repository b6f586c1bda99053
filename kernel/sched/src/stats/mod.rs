//! Observability: plain counters for every decision, printable as JSON.
//!
//! Counterparts of Linux's schedstats (`/proc/schedstat` ttwu/lb/alb fields,
//! per-task `nr_wakeups_*`), Mel Gorman's unmerged `sis_*` counters, migration
//! counts by reason and topology distance, runqueue wait-time histograms and
//! fork placement per CPU. Each struct has `write_json`.

pub mod hist;
pub mod lag;
pub mod lat;

use alloc::vec;
use alloc::vec::Vec;
use core::fmt::{self, Write};
pub use hist::Log2Histogram;
pub use lag::BlockLag;
pub use lat::LatHistogram;

/// Why a task changed CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationReason {
    /// select_task_rq on wakeup.
    Wakeup,
    /// wake_up_new_task placement away from the parent's CPU.
    Fork,
    /// Periodic load balance.
    Balance,
    /// Newly-idle balance.
    NewIdle,
    /// Active (stopper) balance.
    Active,
    /// sched_exec balancing.
    Exec,
}

/// Names, in index order.
pub const REASON_NAMES: [&str; 6] = ["wakeup", "fork", "balance", "newidle", "active", "exec"];

/// Topology distance between the source and destination CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MigrationDistance {
    /// Same CPU.
    SameCpu,
    /// SMT siblings of one core.
    SmtSibling,
    /// Same LLC, different core.
    SameLlc,
    /// Other LLC in the same package.
    SamePackage,
    /// Other package in the same NUMA node.
    SameNode,
    /// Other NUMA node.
    OtherNode,
}

/// Names, in index order.
pub const DISTANCE_NAMES: [&str; 6] = [
    "same_cpu",
    "smt_sibling",
    "same_llc",
    "other_llc_same_package",
    "other_package_same_node",
    "other_node",
];

/// Migrations by reason x distance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MigrationStats {
    /// `counts[reason][distance]`.
    pub counts: [[u64; 6]; 6],
}

impl MigrationStats {
    /// Record one migration.
    pub fn record(&mut self, r: MigrationReason, d: MigrationDistance) {
        self.counts[r as usize][d as usize] += 1;
    }

    /// Total migrations (excluding same-CPU "moves").
    pub fn total(&self) -> u64 {
        self.counts
            .iter()
            .map(|row| row[1..].iter().sum::<u64>())
            .sum()
    }

    /// Count for one reason over all distances (excluding same-CPU).
    pub fn by_reason(&self, r: MigrationReason) -> u64 {
        self.counts[r as usize][1..].iter().sum()
    }

    /// Count for one distance over all reasons.
    pub fn by_distance(&self, d: MigrationDistance) -> u64 {
        self.counts.iter().map(|row| row[d as usize]).sum()
    }

    /// JSON object `{reason: {distance: n}}`.
    pub fn write_json(&self, w: &mut impl Write) -> fmt::Result {
        write!(w, "{{\"total\":{}", self.total())?;
        for (ri, rn) in REASON_NAMES.iter().enumerate() {
            write!(w, ",\"{rn}\":{{")?;
            for (di, dn) in DISTANCE_NAMES.iter().enumerate() {
                if di > 0 {
                    w.write_char(',')?;
                }
                write!(w, "\"{dn}\":{}", self.counts[ri][di])?;
            }
            w.write_char('}')?;
        }
        w.write_char('}')
    }
}

macro_rules! counters {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $f:ident),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name { $($(#[$fm])* pub $f: u64),* }
        impl $name {
            /// Add every counter of `o`.
            pub fn accumulate(&mut self, o: &Self) {
                $( self.$f += o.$f; )*
            }

            /// Counter-wise `self - before` (saturating).
            pub fn since(&self, before: &Self) -> Self {
                Self { $( $f: self.$f.saturating_sub(before.$f) ),* }
            }

            /// JSON object with one field per counter.
            pub fn write_json(&self, w: &mut impl Write) -> fmt::Result {
                w.write_char('{')?;
                let mut _first = true;
                $(
                    if !_first { w.write_char(',')?; }
                    _first = false;
                    write!(w, "\"{}\":{}", stringify!($f), self.$f)?;
                )*
                w.write_char('}')
            }
        }
    };
}

counters!(
    /// Wakeup-path decisions (select_task_rq_fair, wake_affine, wake_wide).
    WakeStats {
        /// TTWU wakeups.
        nr_wakeups,
        /// ... with WF_SYNC.
        nr_wakeups_sync,
        /// ... that changed CPU.
        nr_wakeups_migrate,
        /// ... placed on the waker's CPU (`ttwu_local`).
        nr_wakeups_local,
        /// ... placed elsewhere.
        nr_wakeups_remote,
        /// ... of them, handed to the target's wake list (TTWU_QUEUE) and
        /// activated by the target, not the waker.
        ttwu_queued,
        /// wake_wide() said "spread".
        wake_wide_hits,
        /// wake_affine() invoked.
        wake_affine_attempts,
        /// wake_affine() chose the waker's CPU (`ttwu_move_affine`).
        wake_affine_success,
        /// wake_affine_idle decided.
        wa_idle_decided,
        /// wake_affine_weight decided for this_cpu.
        wa_weight_this,
        /// wake_affine_weight tests that compared the two loads (not cut
        /// short by the sync rule "the waker's load exceeds its CPU's"); the
        /// four sums below are over these, so sum / tests is the mean input
        /// of the comparison (Linux's side: docs/benchmarks.md, the rig's
        /// kprobes on `select_task_rq_fair` and `task_h_load`).
        wa_weight_tests,
        /// ... of them, decided for this_cpu (so `wa_weight_tests_this /
        /// wa_weight_tests` is the comparison's "this CPU" share;
        /// `wa_weight_this` also counts the sync rule's early answers).
        wa_weight_tests_this,
        /// ... of them, prev_cpu and this_cpu in different LLCs.
        wa_weight_tests_cross_llc,
        /// ... of those, decided for this_cpu.
        wa_weight_this_cross_llc,
        /// Sum of `cpu_load(this_cpu)` over the tests.
        wa_weight_sum_this_load,
        /// Sum of `task_h_load(current)` (the sync discount; 0 without WF_SYNC).
        wa_weight_sum_current_load,
        /// Sum of `task_h_load(p)`.
        wa_weight_sum_task_load,
        /// Sum of `cpu_load(prev_cpu)`.
        wa_weight_sum_prev_load,
        /// Seed 000: prev_cpu idle and undecided by wake_affine_idle's first
        /// two rules while wake_affine_weight picks this_cpu: where
        /// WA_IDLE_PREV (prev_cpu) and the pre-5.11 chain (this_cpu) differ.
        /// Counted with the switch on and off.
        wa_idle_prev_flips,
        /// ... of them, prev_cpu and this_cpu in different LLCs (the wakee's
        /// CPU changes; within an LLC select_idle_sibling takes prev anyway).
        wa_idle_prev_flips_cross_llc,
        /// wake_affine_idler_llc decided (WA_IDLER_LLC, Srikar v3 4/8).
        wa_idler_llc,
        /// ... by claiming an LLC's recorded idle core.
        wa_idler_llc_core,
        /// Slow path (find_idlest_cpu) used on wakeup.
        wake_slow_path,
        /// Forced placement by a WAKEE_* seed switch.
        wake_forced,
    }
);

counters!(
    /// select_idle_sibling: which branch chose the CPU, and scanning effort
    /// (cf. Mel Gorman's sis_* debug counters).
    SisStats {
        /// Searches entered.
        sis_search,
        /// Branch 1: target idle.
        sis_target,
        /// Branch 2: prev idle.
        sis_prev,
        /// Branch 3: per-CPU kthread stacking on prev.
        sis_kthread,
        /// Branch 4: recent_used_cpu idle.
        sis_recent,
        /// Branch 7: idle SMT sibling of prev.
        sis_smt,
        /// Branch 8: select_idle_cpu found a fully idle core.
        sis_idle_core,
        /// Branch 8: select_idle_cpu found an idle CPU.
        sis_idle_cpu,
        /// Branch 9: nothing found, target returned.
        sis_fallback,
        /// Scans of the LLC performed (select_idle_cpu entered).
        sis_domain_search,
        /// CPUs examined in scans.
        sis_scanned,
        /// Scans that found nothing.
        sis_failed,
        /// SIS_UTIL said the LLC is overloaded (nr == 1) and skipped the scan.
        sis_util_skip,
        /// Scan skipped: wake_affine_idler_llc found both LLCs fully busy
        /// (SIS_SKIP_BUSY_LLCS, Srikar v3 8/8).
        sis_idle_skip,
        /// The core scan took the LLC's recorded idle core, which became -1
        /// (IDLE_CORE_ID, Srikar v3 2/8).
        idle_core_taken,
        /// has_idle_cores cleared after a failed full scan.
        has_idle_cores_cleared,
    }
);

counters!(
    /// Load balancing (/proc/schedstat domain fields, summed over domains).
    LbStats {
        /// sched_balance_rq calls.
        lb_count,
        /// Found balanced.
        lb_balanced,
        /// Found imbalance but moved nothing.
        lb_failed,
        /// Tasks moved.
        lb_gained,
        /// Tasks moved although cache hot (forced by failures).
        lb_hot_gained,
        /// No busiest queue.
        lb_nobusyq,
        /// No busiest group.
        lb_nobusyg,
        /// Rejected: cache hot.
        lb_failed_hot,
        /// Rejected: running.
        lb_failed_running,
        /// Active balance started.
        alb_count,
        /// Active balance moved a task.
        alb_pushed,
        /// Active balance found nothing to move.
        alb_failed,
        /// Newly-idle balance attempts.
        newidle_count,
        /// Newly-idle skipped (avg_idle or not overloaded).
        newidle_skipped,
        /// Newly-idle balance pulled something.
        newidle_pulled,
        /// Periodic passes that skipped an SD_SERIALIZE (NUMA) level because
        /// another CPU was walking one (`sched_balance_running` taken).
        serialize_skips,
    }
);

counters!(
    /// NOHZ idle balancing (NOHZ_IDLE; all 0 without it).
    NohzStats {
        /// Ticks stopped at idle entry (`nohz_balance_enter_idle` adding
        /// the CPU to `nohz.idle_cpus_mask`).
        tick_stops,
        /// Idle-load-balancer kicks sent (`kick_ilb` that IPIs a CPU).
        kicks,
        /// ... of them with NOHZ_BALANCE_KICK (the others update stats only).
        balance_kicks,
        /// Kicks run by their idle load balancer (`_nohz_idle_balance`).
        ilb_runs,
        /// ... stopped early because the balancer got work (`need_resched`).
        ilb_aborted,
        /// `sched_balance_domains` run for a tickless CPU (itself included).
        ilb_balances,
        /// Blocked-load updates of tickless CPUs (`update_nohz_stats`).
        stats_updates,
        /// Newly idle CPUs that updated the blocked loads themselves
        /// before halting (`nohz_run_idle_balance`).
        newilb_runs,
    }
);

counters!(
    /// EEVDF delayed dequeue (DELAY_DEQUEUE; all 0 without it).
    DelayStats {
        /// Blocks that left the task queued (`set_delayed`).
        delayed,
        /// Blocks dequeued at once because the task was still eligible
        /// while another entity shared its queue (a task alone on its
        /// queue is always eligible): with `delayed`, the blocks a delay
        /// was possible for (counted only with DELAY_DEQUEUE under EEVDF).
        eligible_shared,
        /// Wakeups that found it still queued and requeued it where it
        /// was (`ttwu_runnable` → `requeue_delayed_entity`): no placement.
        requeued,
        /// ... of them re-placed at V because their lag had become
        /// positive (DELAY_ZERO).
        requeued_replaced,
        /// Delayed tasks the pick dequeued (`pick_next_entity`).
        picked,
        /// Delayed tasks moved by the balancer (they stay delayed).
        migrated,
    }
);

counters!(
    /// NI_RANDOM's newly idle passes (all 0 without it).
    NiStats {
        /// Domain passes the die skipped.
        skipped,
        /// Domain passes the die let run.
        ran,
        /// ... of them that pulled a task.
        pulled,
    }
);

counters!(
    /// Runqueue-level events.
    RqStats {
        /// Context switches (next != prev).
        nr_switches,
        /// Switches to idle (`sched_goidle`).
        sched_goidle,
        /// Ticks handled.
        nr_ticks,
        /// Tick preemptions requested.
        tick_preempt,
        /// Wakeup preemptions requested.
        wakeup_preempt,
        /// Forks.
        nr_forks,
        /// Exits.
        nr_exits,
        /// Idle entries.
        idle_enter,
        /// Idle exits.
        idle_exit,
    }
);

/// All statistics of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedStats {
    /// Wakeup decisions.
    pub wake: WakeStats,
    /// select_idle_sibling branches.
    pub sis: SisStats,
    /// Load balancing.
    pub lb: LbStats,
    /// Load balancing split by domain level name ("SMT", "MC", "PKG", "NUMA", ...).
    pub lb_by_domain: Vec<(&'static str, LbStats)>,
    /// Runqueue events.
    pub rq: RqStats,
    /// NOHZ idle balancing (written only when something happened).
    pub nohz: NohzStats,
    /// Delayed dequeue (written only when something happened).
    pub delay: DelayStats,
    /// Lag at the blocks a delay was possible for (written only when any).
    pub block_lag: BlockLag,
    /// NI_RANDOM (written only when something happened).
    pub ni: NiStats,
    /// Migrations by reason and distance.
    pub migrations: MigrationStats,
    /// Runqueue wait time (ns from enqueue/put-back to pick: the fair
    /// class's schedstat wait, `wait_start` to `wait_sum`; sched_info's
    /// `run_delay` and bcc's `runqlat` take the same interval except for a
    /// delayed-dequeue task, whose wait here starts at its block and there at
    /// its requeue), log-linear so its percentiles are within 1/64.
    pub wait_ns: LatHistogram,
    /// select_idle_cpu scan lengths (CPUs examined per scan).
    pub scan_len: Log2Histogram,
    /// wake_up_new_task target counts per CPU.
    pub fork_targets: Vec<u64>,
}

/// Domain levels [`SchedStats::lb_by_domain`] holds without growing.
const MAX_DOMAIN_LEVELS: usize = 8;

impl SchedStats {
    /// Empty statistics for `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> Self {
        SchedStats {
            wake: WakeStats::default(),
            sis: SisStats::default(),
            lb: LbStats::default(),
            // Room for every level a machine has (SMT, CLS, MC, PKG and a
            // few NUMA levels), so the balancer never allocates here.
            lb_by_domain: Vec::with_capacity(MAX_DOMAIN_LEVELS),
            rq: RqStats::default(),
            nohz: NohzStats::default(),
            delay: DelayStats::default(),
            block_lag: BlockLag::default(),
            ni: NiStats::default(),
            migrations: MigrationStats::default(),
            wait_ns: LatHistogram::default(),
            scan_len: Log2Histogram::default(),
            fork_targets: vec![0; nr_cpus],
        }
    }

    /// The per-domain counters of `name`, created on first use.
    pub fn lb_domain(&mut self, name: &'static str) -> &mut LbStats {
        let i = match self.lb_by_domain.iter().position(|(n, _)| *n == name) {
            Some(i) => i,
            None => {
                self.lb_by_domain.push((name, LbStats::default()));
                self.lb_by_domain.len() - 1
            }
        };
        &mut self.lb_by_domain[i].1
    }

    /// What happened since `before` (an earlier copy of these counters):
    /// the statistics of one measured interval.
    pub fn since(&self, before: &SchedStats) -> SchedStats {
        let mut d = SchedStats::new(self.fork_targets.len());
        d.wake = self.wake.since(&before.wake);
        d.sis = self.sis.since(&before.sis);
        d.lb = self.lb.since(&before.lb);
        for (name, lb) in &self.lb_by_domain {
            let b = before
                .lb_by_domain
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, l)| *l)
                .unwrap_or_default();
            *d.lb_domain(name) = lb.since(&b);
        }
        d.rq = self.rq.since(&before.rq);
        d.nohz = self.nohz.since(&before.nohz);
        d.delay = self.delay.since(&before.delay);
        d.block_lag = self.block_lag.since(&before.block_lag);
        d.ni = self.ni.since(&before.ni);
        for (r, row) in d.migrations.counts.iter_mut().enumerate() {
            for (c, x) in row.iter_mut().enumerate() {
                *x = self.migrations.counts[r][c].saturating_sub(before.migrations.counts[r][c]);
            }
        }
        d.wait_ns = self.wait_ns.since(&before.wait_ns);
        d.scan_len = self.scan_len.since(&before.scan_len);
        for (i, x) in d.fork_targets.iter_mut().enumerate() {
            *x = self.fork_targets[i]
                .saturating_sub(before.fork_targets.get(i).copied().unwrap_or(0));
        }
        d
    }

    /// Add `o` (another CPU's counters) into these.
    pub fn accumulate(&mut self, o: &SchedStats) {
        self.wake.accumulate(&o.wake);
        self.sis.accumulate(&o.sis);
        self.lb.accumulate(&o.lb);
        for (name, lb) in &o.lb_by_domain {
            self.lb_domain(name).accumulate(lb);
        }
        self.rq.accumulate(&o.rq);
        self.nohz.accumulate(&o.nohz);
        self.delay.accumulate(&o.delay);
        self.block_lag.merge(&o.block_lag);
        self.ni.accumulate(&o.ni);
        for (row, orow) in self.migrations.counts.iter_mut().zip(&o.migrations.counts) {
            for (x, y) in row.iter_mut().zip(orow) {
                *x += y;
            }
        }
        self.wait_ns.merge(&o.wait_ns);
        self.scan_len.merge(&o.scan_len);
        for (x, y) in self.fork_targets.iter_mut().zip(&o.fork_targets) {
            *x += y;
        }
    }

    /// One JSON object with every section.
    pub fn write_json(&self, w: &mut impl Write) -> fmt::Result {
        w.write_str("{\"wake\":")?;
        self.wake.write_json(w)?;
        w.write_str(",\"sis\":")?;
        self.sis.write_json(w)?;
        w.write_str(",\"lb\":")?;
        self.lb.write_json(w)?;
        w.write_str(",\"lb_by_domain\":{")?;
        for (i, (name, lb)) in self.lb_by_domain.iter().enumerate() {
            if i > 0 {
                w.write_char(',')?;
            }
            write!(w, "\"{name}\":")?;
            lb.write_json(w)?;
        }
        w.write_str("},\"rq\":")?;
        self.rq.write_json(w)?;
        // Only runs with NOHZ_IDLE have any: records of other runs keep
        // their shape.
        if self.nohz != NohzStats::default() {
            w.write_str(",\"nohz\":")?;
            self.nohz.write_json(w)?;
        }
        if self.delay != DelayStats::default() {
            w.write_str(",\"delay\":")?;
            self.delay.write_json(w)?;
        }
        if !self.block_lag.is_empty() {
            w.write_str(",\"block_lag\":")?;
            self.block_lag.write_json(w)?;
        }
        if self.ni != NiStats::default() {
            w.write_str(",\"ni\":")?;
            self.ni.write_json(w)?;
        }
        w.write_str(",\"migrations\":")?;
        self.migrations.write_json(w)?;
        w.write_str(",\"wait_ns\":")?;
        self.wait_ns.write_json(w)?;
        w.write_str(",\"scan_len\":")?;
        self.scan_len.write_json(w)?;
        w.write_str(",\"fork_targets\":[")?;
        for (i, n) in self.fork_targets.iter().enumerate() {
            if i > 0 {
                w.write_char(',')?;
            }
            write!(w, "{n}")?;
        }
        w.write_str("]}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_well_formed() {
        let mut s = SchedStats::new(3);
        s.wake.nr_wakeups = 5;
        s.migrations
            .record(MigrationReason::Balance, MigrationDistance::SameLlc);
        s.migrations
            .record(MigrationReason::Wakeup, MigrationDistance::OtherNode);
        s.fork_targets[2] = 7;
        s.wait_ns.record(1500);
        let mut out = String::new();
        s.write_json(&mut out).unwrap();
        assert!(out.contains("\"nr_wakeups\":5"));
        assert!(out.contains("\"balance\":{\"same_cpu\":0,\"smt_sibling\":0,\"same_llc\":1"));
        assert!(out.ends_with("\"fork_targets\":[0,0,7]}"));
        assert_eq!(out.matches('{').count(), out.matches('}').count());
        assert_eq!(s.migrations.total(), 2);
        assert_eq!(s.migrations.by_reason(MigrationReason::Wakeup), 1);
        assert_eq!(s.migrations.by_distance(MigrationDistance::SameLlc), 1);
    }

    #[test]
    fn since_is_the_interval_between_two_copies() {
        let mut s = SchedStats::new(2);
        s.wake.nr_wakeups = 3;
        s.wait_ns.record(10);
        s.lb_domain("MC").lb_count = 1;
        let before = s.clone();
        s.wake.nr_wakeups = 10;
        s.wait_ns.record(1000);
        s.wait_ns.record(3);
        s.lb_domain("MC").lb_count = 4;
        s.lb_domain("PKG").lb_count = 2;
        s.fork_targets[1] = 5;
        s.migrations
            .record(MigrationReason::Wakeup, MigrationDistance::SmtSibling);
        let mut d = s.since(&before);
        assert_eq!(d.wake.nr_wakeups, 7);
        assert_eq!((d.wait_ns.count, d.wait_ns.sum), (2, 1003));
        // 1000 keeps its top 7 bits: bucket [1000, 1007], clamped to the
        // overall maximum.
        assert_eq!(d.wait_ns.max, 1000, "max within the interval's top bucket");
        assert_eq!(d.wait_ns.min, 3, "min: the interval's lowest bucket");
        assert_eq!(d.lb_by_domain.len(), 2);
        assert_eq!(d.lb_domain("MC").lb_count, 3);
        assert_eq!(d.lb_domain("PKG").lb_count, 2);
        assert_eq!(d.fork_targets, vec![0, 5]);
        assert_eq!(d.migrations.total(), 1);
        let mut acc = before.clone();
        acc.accumulate(&d);
        assert_eq!(acc.wake, s.wake);
    }
}
