//! Per-run configuration: pick policy (CFS or EEVDF), feature switches and
//! tunables.

use crate::features::Features;
use crate::tunables::Tunables;
use alloc::string::{String, ToString};

/// Which fair-class pick algorithm a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickPolicy {
    /// Classic CFS (Linux <= 6.5): leftmost vruntime, slices from
    /// sched_latency, buddies, wakeup granularity.
    Cfs,
    /// EEVDF (Linux 6.6+): earliest eligible virtual deadline, lag.
    Eevdf,
}

impl PickPolicy {
    /// Parse "CFS" / "EEVDF" (case-insensitive).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_uppercase().as_str() {
            "CFS" => Ok(PickPolicy::Cfs),
            "EEVDF" => Ok(PickPolicy::Eevdf),
            other => Err(alloc::format!(
                "unknown pick policy '{other}' (CFS or EEVDF)"
            )),
        }
    }

    /// Name for result records.
    pub fn name(&self) -> &'static str {
        match self {
            PickPolicy::Cfs => "CFS",
            PickPolicy::Eevdf => "EEVDF",
        }
    }
}

/// Everything that parameterizes one run of the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedConfig {
    /// Pick algorithm.
    pub pick: PickPolicy,
    /// Switches.
    pub features: Features,
    /// Tunables (scaled for the CPU count).
    pub tunables: Tunables,
    /// Most tasks alive at once (size of the task directory).
    pub max_tasks: usize,
}

/// Default [`SchedConfig::max_tasks`].
pub const DEFAULT_MAX_TASKS: usize = 16_384;

impl SchedConfig {
    /// Linux defaults for `ncpus` CPUs with the given pick policy.
    pub fn new(ncpus: usize, pick: PickPolicy) -> Self {
        SchedConfig {
            pick,
            features: Features::default(),
            tunables: Tunables::for_cpus(ncpus),
            max_tasks: DEFAULT_MAX_TASKS,
        }
    }

    /// Replace the feature set by `defaults + s` (see [`Features::parse`]).
    pub fn with_features(mut self, s: &str) -> Result<Self, String> {
        self.features = Features::parse(s).map_err(|e| e.to_string())?;
        Ok(self)
    }
}
