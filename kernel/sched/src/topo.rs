//! The scheduler's view of the machine: per-CPU cached topology facts derived
//! once from `topology::{Topology, SchedDomains}`.
//!
//! Mirrors the per-CPU pointers of `update_top_cache_domain()` (`sd_llc`,
//! `sd_llc_size`, `sd_llc_id`) plus `cpu_smt_mask()` and the
//! `sched_smt_present` static key, and classifies migration distances.

use crate::CpuId;
use crate::features::{Feat, Features};
use crate::stats::MigrationDistance;
use alloc::vec::Vec;
use topology::{
    CpuMask, CpuTopo, DomainConfig, SchedDomain, SchedDomains, SyntheticSpec, Topology,
    TopologyError, build_sched_domains, build_sched_domains_with,
};

/// The domain-construction rules a run's switches select: `IMB_PCT_117`
/// gives Linux v5.10+'s `imbalance_pct` of 117 above the LLC
/// ([`DomainConfig::LINUX_6`]); otherwise the project default (125,
/// [`DomainConfig::DEFAULT`]). Both have busy_factor 16 and reclaim distance 30.
pub fn domain_config(features: Features) -> DomainConfig {
    if features.has(Feat::ImbPct117) {
        DomainConfig::LINUX_6
    } else {
        DomainConfig::DEFAULT
    }
}

/// Topology facts the scheduler consults on every decision.
#[derive(Clone, Debug)]
pub struct SchedTopo {
    /// Number of CPUs.
    pub nr_cpus: usize,
    /// Per-CPU placement (package, core, node, llc).
    pub cpus: Vec<CpuTopo>,
    /// `cpu_smt_mask(cpu)` (includes cpu).
    pub smt: Vec<CpuMask>,
    /// Span of `sd_llc` (just the CPU when it has none).
    pub llc_span: Vec<CpuMask>,
    /// `sd_llc_id`.
    pub llc_id: Vec<CpuId>,
    /// `sd_llc_size`.
    pub llc_size: Vec<usize>,
    /// Index of `sd_llc` in the CPU's domain list.
    pub llc_level: Vec<Option<usize>>,
    /// `sched_smt_present`: some core has >= 2 threads.
    pub smt_active: bool,
    /// The attached domain hierarchies.
    pub domains: SchedDomains,
}

impl SchedTopo {
    /// Derive the cached facts.
    pub fn new(topo: &Topology, domains: SchedDomains) -> Self {
        let n = topo.nr_cpus();
        let mut llc_span = Vec::with_capacity(n);
        let mut llc_level = Vec::with_capacity(n);
        for cpu in 0..n {
            let ds = domains.domains(cpu);
            let lvl = domains
                .sd_llc(cpu)
                .and_then(|l| ds.iter().position(|d| core::ptr::eq(d, l)));
            llc_level.push(lvl);
            llc_span.push(match domains.sd_llc(cpu) {
                Some(d) => d.span.clone(),
                None => CpuMask::from_cpus(n, [cpu]),
            });
        }
        let smt: Vec<CpuMask> = (0..n).map(|c| topo.smt_mask(c)).collect();
        SchedTopo {
            nr_cpus: n,
            cpus: topo.cpus.clone(),
            smt_active: smt.iter().any(|m| m.weight() > 1),
            smt,
            llc_span,
            llc_id: (0..n).map(|c| domains.sd_llc_id(c)).collect(),
            llc_size: (0..n).map(|c| domains.sd_llc_size(c)).collect(),
            llc_level,
            domains,
        }
    }

    /// Build from a topology with the default domain rules.
    pub fn from_topology(topo: &Topology) -> Self {
        Self::new(topo, build_sched_domains(topo))
    }

    /// Build from a topology with the domain rules the run's switches
    /// select ([`domain_config`]).
    pub fn from_topology_with(topo: &Topology, features: Features) -> Self {
        Self::new(
            topo,
            build_sched_domains_with(topo, &domain_config(features)),
        )
    }

    /// `Topology::synthetic` + `build_sched_domains`.
    pub fn synthetic(spec: &SyntheticSpec) -> Result<Self, TopologyError> {
        Ok(Self::from_topology(&Topology::synthetic(spec)?))
    }

    /// Domains of `cpu`, lowest first.
    pub fn sd(&self, cpu: CpuId) -> &[SchedDomain] {
        self.domains.domains(cpu)
    }

    /// `cpus_share_cache(a, b)`.
    pub fn share_cache(&self, a: CpuId, b: CpuId) -> bool {
        a == b || self.llc_id[a] == self.llc_id[b]
    }

    /// First CPU of `cpu`'s core (`smt_id`), identifying the core.
    pub fn core_id(&self, cpu: CpuId) -> CpuId {
        self.smt[cpu].first().unwrap_or(cpu)
    }

    /// Whether a scan of `span` that wraps from `start`
    /// (`for_each_cpu_wrap`) and drops each examined core's siblings from
    /// its mask (`cpumask_andnot(cpus, cpus, cpu_smt_mask(cpu))`) examines
    /// `cpu`: no SMT sibling of `cpu` in `span` comes before it in scan
    /// order. Siblings form one group per core, so this is the mask-free
    /// form of that scan: the hot paths allocate no scratch mask.
    pub fn first_of_core_in_scan(&self, span: &CpuMask, cpu: CpuId, start: CpuId) -> bool {
        // `s` precedes `cpu` in the scan from `start` (wrapping): both on
        // the same side of `start` and `s` lower, or `s` from `start` on
        // and `cpu` below it (the order of `(c - start) mod nr_cpus`).
        let before = |s: CpuId| {
            if (s >= start) == (cpu >= start) {
                s < cpu
            } else {
                s >= start
            }
        };
        !self.smt[cpu]
            .iter()
            .any(|s| s != cpu && before(s) && span.contains(s))
    }

    /// How far a task moves from `a` to `b`.
    pub fn distance(&self, a: CpuId, b: CpuId) -> MigrationDistance {
        let (ta, tb) = (&self.cpus[a], &self.cpus[b]);
        if a == b {
            MigrationDistance::SameCpu
        } else if ta.core == tb.core {
            MigrationDistance::SmtSibling
        } else if self.share_cache(a, b) {
            MigrationDistance::SameLlc
        } else if ta.package == tb.package {
            MigrationDistance::SamePackage
        } else if ta.node == tb.node {
            MigrationDistance::SameNode
        } else {
            MigrationDistance::OtherNode
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(sockets: u32, cores: u32, threads: u32, nodes: u32) -> SyntheticSpec {
        SyntheticSpec {
            nodes,
            ..SyntheticSpec::simple(sockets, cores, threads)
        }
    }

    #[test]
    fn facts_of_a_two_socket_smt_machine() {
        let t = SchedTopo::synthetic(&spec(2, 4, 2, 2)).unwrap();
        assert_eq!(t.nr_cpus, 16);
        assert!(t.smt_active);
        assert_eq!(t.llc_size[0], 8);
        assert_eq!(t.llc_id[9], 8);
        assert!(t.share_cache(0, 7) && !t.share_cache(0, 8));
        assert_eq!(t.smt[0].weight(), 2);
        assert_eq!(t.distance(0, 0), MigrationDistance::SameCpu);
        assert_eq!(t.distance(0, 1), MigrationDistance::SmtSibling);
        assert_eq!(t.distance(0, 2), MigrationDistance::SameLlc);
        assert_eq!(t.distance(0, 8), MigrationDistance::OtherNode);
        let lvl = t.llc_level[0].unwrap();
        assert_eq!(t.sd(0)[lvl].span.weight(), 8);
    }

    #[test]
    fn first_of_core_in_scan_is_the_modular_order() {
        let t = SchedTopo::synthetic(&spec(2, 4, 4, 2)).unwrap();
        let n = t.nr_cpus;
        for start in 0..n {
            for cpu in 0..n {
                let span = &t.llc_span[cpu];
                let pos = |c: CpuId| (c + n - start) % n;
                let want = !t.smt[cpu]
                    .iter()
                    .any(|s| s != cpu && span.contains(s) && pos(s) < pos(cpu));
                assert_eq!(t.first_of_core_in_scan(span, cpu, start), want);
            }
        }
    }

    #[test]
    fn no_smt_machine() {
        let t = SchedTopo::synthetic(&spec(1, 4, 1, 1)).unwrap();
        assert!(!t.smt_active);
        assert_eq!(t.core_id(3), 3);
        assert_eq!(t.distance(0, 3), MigrationDistance::SameLlc);
    }
}
