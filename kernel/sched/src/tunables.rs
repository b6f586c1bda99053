//! Scheduler tunables (the `sysctl_sched_*` knobs) and their CPU-count scaling.
//!
//! Mirrors Linux's `get_update_sysctl_factor()` / `update_sysctl()` with the
//! default `SCHED_TUNABLESCALING_LOG` policy: normalized values are multiplied
//! by `1 + ilog2(min(ncpus, 8))`. Migration cost is not scaled, as in Linux.

/// How tunables scale with the number of CPUs (`enum sched_tunable_scaling`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunableScaling {
    /// factor = 1
    None,
    /// factor = 1 + ilog2(min(ncpus, 8)) (Linux default)
    Log,
    /// factor = min(ncpus, 8)
    Linear,
}

/// Normalized (1-CPU) values of Linux's defaults, in nanoseconds.
pub const NORMALIZED_SCHED_LATENCY_NS: u64 = 6_000_000;
/// `normalized_sysctl_sched_min_granularity`.
pub const NORMALIZED_MIN_GRANULARITY_NS: u64 = 750_000;
/// `normalized_sysctl_sched_wakeup_granularity`.
pub const NORMALIZED_WAKEUP_GRANULARITY_NS: u64 = 1_000_000;
/// `normalized_sysctl_sched_base_slice` (EEVDF 6.6-6.14).
pub const NORMALIZED_BASE_SLICE_NS: u64 = 750_000;
/// ... from v6.15 (and 6.12.y kernels with the backport; BASE_SLICE_700US).
pub const NORMALIZED_BASE_SLICE_700US_NS: u64 = 700_000;
/// `sysctl_sched_migration_cost` (not scaled).
pub const SCHED_MIGRATION_COST_NS: u64 = 500_000;
/// `sysctl_sched_nr_migrate` (non-RT default).
pub const SCHED_NR_MIGRATE: u32 = 32;
/// `NR_MIGRATE_BREAK` / loop_break.
pub const NR_MIGRATE_BREAK: u32 = 32;

/// The effective tunables for one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunables {
    /// Multiplier applied to the normalized values.
    pub factor: u64,
    /// `sysctl_sched_latency` (CFS period target).
    pub sched_latency_ns: u64,
    /// `sysctl_sched_min_granularity`.
    pub min_granularity_ns: u64,
    /// `sysctl_sched_wakeup_granularity`.
    pub wakeup_granularity_ns: u64,
    /// `sched_nr_latency` = latency / min_granularity.
    pub nr_latency: u64,
    /// `sysctl_sched_base_slice` (EEVDF request size).
    pub base_slice_ns: u64,
    /// `sysctl_sched_migration_cost` (cache-hot threshold, newidle cost floor).
    pub migration_cost_ns: u64,
    /// `sysctl_sched_nr_migrate`.
    pub nr_migrate: u32,
    /// Scheduler tick length (`TICK_NSEC`; HZ=1000 by default, so one jiffy = 1 ms).
    pub tick_ns: u64,
}

impl Tunables {
    /// `get_update_sysctl_factor()`.
    pub fn factor_for(ncpus: usize, scaling: TunableScaling) -> u64 {
        let n = ncpus.clamp(1, 8) as u64;
        match scaling {
            TunableScaling::None => 1,
            TunableScaling::Linear => n,
            TunableScaling::Log => 1 + u64::from(n.ilog2()),
        }
    }

    /// Linux defaults for `ncpus` online CPUs (`update_sysctl()`), HZ=1000.
    pub fn for_cpus(ncpus: usize) -> Self {
        Self::with_scaling(ncpus, TunableScaling::Log)
    }

    /// Defaults with an explicit scaling policy.
    pub fn with_scaling(ncpus: usize, scaling: TunableScaling) -> Self {
        let factor = Self::factor_for(ncpus, scaling);
        let lat = NORMALIZED_SCHED_LATENCY_NS * factor;
        let min = NORMALIZED_MIN_GRANULARITY_NS * factor;
        Tunables {
            factor,
            sched_latency_ns: lat,
            min_granularity_ns: min,
            wakeup_granularity_ns: NORMALIZED_WAKEUP_GRANULARITY_NS * factor,
            nr_latency: lat.div_ceil(min),
            base_slice_ns: NORMALIZED_BASE_SLICE_NS * factor,
            migration_cost_ns: SCHED_MIGRATION_COST_NS,
            nr_migrate: SCHED_NR_MIGRATE,
            tick_ns: 1_000_000,
        }
    }

    /// Milliseconds to ticks (`msecs_to_jiffies`), at least 1.
    pub fn ms_to_ticks(&self, ms: u64) -> u64 {
        (ms * 1_000_000).div_ceil(self.tick_ns).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_factor_matches_linux() {
        let f = |n| Tunables::factor_for(n, TunableScaling::Log);
        assert_eq!(
            [f(1), f(2), f(3), f(4), f(7), f(8), f(160)],
            [1, 2, 2, 3, 3, 4, 4]
        );
        assert_eq!(Tunables::factor_for(160, TunableScaling::None), 1);
        assert_eq!(Tunables::factor_for(6, TunableScaling::Linear), 6);
    }

    #[test]
    fn scaled_values_for_large_machine() {
        let t = Tunables::for_cpus(160);
        assert_eq!(t.sched_latency_ns, 24_000_000);
        assert_eq!(t.min_granularity_ns, 3_000_000);
        assert_eq!(t.wakeup_granularity_ns, 4_000_000);
        assert_eq!(t.base_slice_ns, 3_000_000);
        assert_eq!(t.nr_latency, 8);
        assert_eq!(t.migration_cost_ns, 500_000);
        let t1 = Tunables::for_cpus(1);
        assert_eq!(t1.sched_latency_ns, 6_000_000);
        assert_eq!(t1.ms_to_ticks(8), 8);
    }

    #[test]
    fn base_slice_700us_gives_the_rigs_slice() {
        use crate::config::{PickPolicy, SchedConfig};
        // 0.70 ms x (1 + ilog2(8)): the rig's 6.12.117 reports 2800000.
        let c = |f: &str| {
            SchedConfig::new(8, PickPolicy::Eevdf)
                .with_features(f)
                .unwrap()
                .tunables
                .base_slice_ns
        };
        assert_eq!(c(""), 3_000_000);
        assert_eq!(c("BASE_SLICE_700US"), 2_800_000);
        assert_eq!(c("LINUX_6_12"), 2_800_000);
        assert_eq!(c("LINUX_6_12,NO_BASE_SLICE_700US"), 3_000_000);
    }
}
