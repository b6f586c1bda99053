//! Per-run configuration: pick policy (CFS or EEVDF), feature switches and
//! tunables.

use crate::fair::pick::PickDiscipline;
use crate::features::Features;
use crate::tunables::Tunables;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// Which fair-class pick algorithm a run uses. Each variant's steps are a
/// [`PickDiscipline`] in `fair/pick/`; the enum forwards to them
/// (`fair/pick/dispatch.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickPolicy {
    /// Classic CFS (Linux <= 6.5): leftmost vruntime, slices from
    /// sched_latency, buddies, wakeup granularity.
    Cfs,
    /// EEVDF (Linux 6.6+): earliest eligible virtual deadline, lag.
    Eevdf,
}

impl PickPolicy {
    /// Every pick, in `--pick` order.
    pub const ALL: [PickPolicy; 2] = [PickPolicy::Cfs, PickPolicy::Eevdf];

    /// Parse a pick's name ("CFS" / "EEVDF", case-insensitive).
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|p| p.name()).collect();
                alloc::format!(
                    "unknown pick policy '{}' ({})",
                    s.to_ascii_uppercase(),
                    names.join(" or ")
                )
            })
    }

    /// Name for result records ([`PickDiscipline::name`]).
    pub fn name(&self) -> &'static str {
        PickDiscipline::name(*self)
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
    /// Seed of the per-CPU random state (`sched_rnd_state`, NI_RANDOM's
    /// die): the run's `--seed` (0 without one), mixed with each CPU's
    /// number. Linux seeds it from boot entropy.
    pub rng_seed: u64,
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
            rng_seed: 0,
        }
    }

    /// Replace the feature set by `defaults + s` (see [`Features::parse`]).
    pub fn with_features(mut self, s: &str) -> Result<Self, String> {
        self.set_features(Features::parse(s).map_err(|e| e.to_string())?);
        Ok(self)
    }

    /// Replace the feature set, and the tunables the switches set with it
    /// (`BASE_SLICE_700US`: the normalized base slice).
    pub fn set_features(&mut self, f: Features) {
        self.features = f;
        let normalized = if f.has(crate::features::Feat::BaseSlice700us) {
            crate::tunables::NORMALIZED_BASE_SLICE_700US_NS
        } else {
            crate::tunables::NORMALIZED_BASE_SLICE_NS
        };
        self.tunables.base_slice_ns = normalized * self.tunables.factor;
    }
}
