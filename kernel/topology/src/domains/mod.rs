//! Linux-style scheduling domains built from a [`Topology`].
//!
//! [`build_sched_domains`] mirrors Linux `build_sched_domains()`: for every CPU it walks
//! the topology levels (`levels.rs`) bottom-up, creating a domain per level
//! (`build_sched_domain` + `sd_init`) until one spans every CPU, builds the groups of each
//! domain (`build_sched_groups` / `build_overlap_sched_groups`), computes `imb_numa_nr`,
//! drops degenerate domains (`cpu_attach_domain` with `sd_degenerate` /
//! `sd_parent_degenerate`) and caches the per-CPU LLC/NUMA pointers
//! (`update_top_cache_domain`). See `build.rs` for the details and `debug.rs` for the
//! `sched_domain_debug`-style listing.

mod build;
mod debug;
pub mod flags;
mod levels;

use alloc::sync::Arc;
use alloc::vec::Vec;

pub use build::build_sched_domains_with;
pub use flags::*;

use crate::CpuId;
use crate::mask::CpuMask;
use crate::topo::Topology;

/// Tunables of domain construction that changed across Linux releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DomainConfig {
    /// `imbalance_pct` of levels that are neither SMT nor LLC (PKG, NODE, NUMA).
    /// Linux used 125 before v5.10 and 117 since ("sched/fair: Reduce minimal
    /// imbalance threshold").
    pub default_imbalance_pct: u32,
    /// `busy_factor` (32 before v5.10, 16 since).
    pub busy_factor: u32,
    /// `node_reclaim_distance` (`RECLAIM_DISTANCE`, 30): NUMA levels farther than this
    /// lose `SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE`.
    pub reclaim_distance: u32,
}

impl DomainConfig {
    /// The project default: 125 above the LLC, busy_factor 16, reclaim distance 30.
    pub const DEFAULT: DomainConfig = DomainConfig {
        default_imbalance_pct: 125,
        busy_factor: 16,
        reclaim_distance: 30,
    };
    /// Linux v5.10 and later (6.x): 117 above the LLC, busy_factor 16.
    pub const LINUX_6: DomainConfig = DomainConfig {
        default_imbalance_pct: 117,
        busy_factor: 16,
        reclaim_distance: 30,
    };
    /// Linux before v5.10: 125 above the LLC, busy_factor 32.
    pub const LINUX_PRE_5_10: DomainConfig = DomainConfig {
        default_imbalance_pct: 125,
        busy_factor: 32,
        reclaim_distance: 30,
    };
}

impl Default for DomainConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A scheduling group (`struct sched_group`).
///
/// Its masks are shared, as Linux shares one `sched_group` among the CPUs whose
/// domains list it: every CPU's group list holds references to the same child-domain
/// spans, so building and storing `n` CPUs' lists costs `n` references per level, not
/// `n` masks (the masks themselves are read through `Deref`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedGroup {
    /// CPUs of the group (`sched_group_span`).
    pub span: Arc<CpuMask>,
    /// CPUs allowed to balance on behalf of the group (`group_balance_mask`): the span
    /// for non-overlapping groups, `build_balance_mask` for NUMA overlap groups.
    pub balance_mask: Arc<CpuMask>,
}

impl SchedGroup {
    /// `group_balance_cpu`: first CPU of the balance mask.
    pub fn balance_cpu(&self) -> Option<CpuId> {
        self.balance_mask.first()
    }
}

/// One scheduling domain of one CPU (`struct sched_domain`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedDomain {
    /// Level name: "SMT", "MC", "PKG", "NODE" or "NUMA".
    pub name: &'static str,
    /// Linux `sd->level`: depth in the hierarchy *before* degenerate removal
    /// (0 = SMT). The position in [`SchedDomains::domains`] is the attached index.
    pub level: usize,
    /// CPUs of the domain.
    pub span: CpuMask,
    /// `SD_*` flags after `sd_init` and degenerate-parent flag transfer.
    pub flags: SdFlags,
    /// `imbalance_pct`.
    pub imbalance_pct: u32,
    /// `min_interval` = span weight, in ms.
    pub min_interval_ms: u32,
    /// `max_interval` = 2 x span weight, in ms.
    pub max_interval_ms: u32,
    /// `busy_factor`.
    pub busy_factor: u32,
    /// `cache_nice_tries`.
    pub cache_nice_tries: u32,
    /// Groups; the first contains this CPU; order is Linux's (wrapping from this CPU).
    pub groups: Vec<SchedGroup>,
    /// SLIT distance of a NODE/NUMA level, `None` otherwise.
    pub numa_distance: Option<u32>,
    /// `imb_numa_nr`: allowed NUMA imbalance (tasks) at this level (Linux 5.18+).
    pub imb_numa_nr: u32,
}

impl SchedDomain {
    /// `sd->span_weight`.
    pub fn span_weight(&self) -> usize {
        self.span.weight()
    }
}

/// A non-subset child span that had to be widened (Linux prints
/// "BUG: arch topology borken" and ORs the child span into the parent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanFixup {
    /// CPU whose hierarchy was fixed.
    pub cpu: CpuId,
    /// Child level name.
    pub child: &'static str,
    /// Parent level name.
    pub parent: &'static str,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CpuDomains {
    pub domains: Vec<SchedDomain>,
    pub llc: Option<usize>,
    pub numa: Option<usize>,
    pub llc_id: CpuId,
    pub share_id: CpuId,
}

/// Every CPU's attached domain hierarchy and cached pointers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedDomains {
    pub(crate) cpus: Vec<CpuDomains>,
    pub(crate) fixups: Vec<SpanFixup>,
}

impl SchedDomains {
    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Attached domains of `cpu`, lowest first (empty for an unknown CPU or a
    /// single-CPU machine).
    pub fn domains(&self, cpu: CpuId) -> &[SchedDomain] {
        self.cpus.get(cpu).map_or(&[], |c| &c.domains)
    }

    /// `sd_llc`: highest domain with `SD_SHARE_LLC`.
    pub fn sd_llc(&self, cpu: CpuId) -> Option<&SchedDomain> {
        let c = self.cpus.get(cpu)?;
        c.domains.get(c.llc?)
    }

    /// `sd_llc_size`: span weight of `sd_llc`, 1 without one.
    pub fn sd_llc_size(&self, cpu: CpuId) -> usize {
        self.sd_llc(cpu).map_or(1, |d| d.span_weight())
    }

    /// `sd_llc_id`: first CPU of `sd_llc`'s span, the CPU itself without one.
    pub fn sd_llc_id(&self, cpu: CpuId) -> CpuId {
        self.cpus.get(cpu).map_or(cpu, |c| c.llc_id)
    }

    /// `sd_numa`: lowest domain with `SD_NUMA`.
    pub fn sd_numa(&self, cpu: CpuId) -> Option<&SchedDomain> {
        let c = self.cpus.get(cpu)?;
        c.domains.get(c.numa?)
    }

    /// `sd_share_id`: first CPU of the lowest `SD_CLUSTER` domain, else the LLC id —
    /// the identity of the LLC's `sched_domain_shared` on machines without clusters.
    pub fn sd_share_id(&self, cpu: CpuId) -> CpuId {
        self.cpus.get(cpu).map_or(cpu, |c| c.share_id)
    }

    /// `cpus_share_cache`: same CPU or same `sd_llc_id`.
    pub fn cpus_share_cache(&self, a: CpuId, b: CpuId) -> bool {
        a == b || self.sd_llc_id(a) == self.sd_llc_id(b)
    }

    /// Spans that had to be widened because a level did not contain its child
    /// (empty for a topology that passed [`Topology::validate`]).
    pub fn fixups(&self) -> &[SpanFixup] {
        &self.fixups
    }
}

/// Builds the domains with [`DomainConfig::DEFAULT`] (see the module docs).
pub fn build_sched_domains(topo: &Topology) -> SchedDomains {
    build_sched_domains_with(topo, &DomainConfig::DEFAULT)
}
