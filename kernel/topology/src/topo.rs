//! The machine model: [`Topology`], one [`CpuTopo`] per logical CPU, the caches and the
//! NUMA distance matrix, plus the mask helpers the scheduler uses (`cpu_smt_mask`,
//! `cpu_coregroup_mask`/LLC, package and node masks).
//!
//! A `Topology` is plain data. It is produced by [`Topology::synthetic`] (tests,
//! simulations) or by [`crate::assemble()`] from ACPI + CPUID, and checked by
//! [`Topology::validate`] so that domain building can rely on its invariants.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::CpuId;
use crate::error::TopologyError;
use crate::mask::CpuMask;

/// SLIT distance of a node to itself (Linux `LOCAL_DISTANCE`).
pub const LOCAL_DISTANCE: u32 = 10;
/// Default distance between two different nodes when firmware gives none
/// (Linux `REMOTE_DISTANCE`).
pub const REMOTE_DISTANCE: u32 = 20;

/// Placement of one logical CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuTopo {
    /// Dense logical CPU number (index in [`Topology::cpus`]).
    pub cpu: CpuId,
    /// Local (x2)APIC id.
    pub apic_id: u32,
    /// Dense package (socket) number, in order of first appearance.
    pub package: u32,
    /// Globally unique die number, in order of first appearance.
    pub die: u32,
    /// Globally unique core number, in order of first appearance.
    pub core: u32,
    /// Index of this hardware thread within its core (0 = first sibling).
    pub thread: u32,
    /// Dense NUMA node number.
    pub node: u32,
    /// Id of its last-level-cache group (dense, order of first appearance).
    pub llc: u32,
}

/// Kind of a cache (CPUID leaf 4 / 0x8000001D "cache type").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheKind {
    /// Data cache.
    Data,
    /// Instruction cache.
    Instruction,
    /// Unified cache.
    Unified,
}

/// One physical cache instance and the CPUs sharing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    /// Cache level (1 = L1).
    pub level: u8,
    /// Data / instruction / unified.
    pub kind: CacheKind,
    /// Total size in bytes.
    pub size_bytes: u64,
    /// Line size in bytes.
    pub line_bytes: u32,
    /// Associativity (ways); 0 when unknown, `u32::MAX` never used.
    pub ways: u32,
    /// CPUs that share this instance.
    pub cpus: CpuMask,
}

/// The whole machine: CPUs, NUMA nodes and distances, caches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// One entry per logical CPU, `cpus[i].cpu == i`.
    pub cpus: Vec<CpuTopo>,
    /// Number of NUMA nodes (`>= 1`); node ids are `0..nr_nodes`.
    pub nr_nodes: usize,
    /// `nr_nodes x nr_nodes` distances in SLIT units (10 = local).
    pub distance: Vec<Vec<u32>>,
    /// Every cache instance, ordered by level, kind, then first CPU.
    pub caches: Vec<Cache>,
}

impl Topology {
    /// Number of logical CPUs (`nr_cpu_ids`).
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    fn mask_where(&self, f: impl Fn(&CpuTopo) -> bool) -> CpuMask {
        CpuMask::from_cpus(
            self.nr_cpus(),
            self.cpus.iter().filter(|c| f(c)).map(|c| c.cpu),
        )
    }

    /// SMT siblings of `cpu`, including itself (`cpu_smt_mask`). Empty for an
    /// unknown CPU.
    pub fn smt_mask(&self, cpu: CpuId) -> CpuMask {
        match self.cpus.get(cpu) {
            Some(t) => self.mask_where(|c| c.core == t.core),
            None => CpuMask::new(self.nr_cpus()),
        }
    }

    /// CPUs sharing `cpu`'s last-level cache (`cpu_coregroup_mask` /
    /// `cpu_llc_shared_mask` on x86).
    pub fn llc_mask(&self, cpu: CpuId) -> CpuMask {
        match self.cpus.get(cpu) {
            Some(t) => self.mask_where(|c| c.llc == t.llc),
            None => CpuMask::new(self.nr_cpus()),
        }
    }

    /// CPUs of `cpu`'s package (`topology_core_cpumask`).
    pub fn package_mask(&self, cpu: CpuId) -> CpuMask {
        match self.cpus.get(cpu) {
            Some(t) => self.mask_where(|c| c.package == t.package),
            None => CpuMask::new(self.nr_cpus()),
        }
    }

    /// CPUs of `cpu`'s die (`topology_die_cpumask`).
    pub fn die_mask(&self, cpu: CpuId) -> CpuMask {
        match self.cpus.get(cpu) {
            Some(t) => self.mask_where(|c| c.die == t.die),
            None => CpuMask::new(self.nr_cpus()),
        }
    }

    /// CPUs of NUMA node `node` (`cpumask_of_node`).
    pub fn node_mask(&self, node: u32) -> CpuMask {
        self.mask_where(|c| c.node == node)
    }

    /// Node of `cpu` (`cpu_to_node`), `None` for an unknown CPU.
    pub fn node_of(&self, cpu: CpuId) -> Option<u32> {
        self.cpus.get(cpu).map(|c| c.node)
    }

    /// SLIT distance between two nodes (`node_distance`); unknown nodes give
    /// [`LOCAL_DISTANCE`] when equal and [`REMOTE_DISTANCE`] otherwise.
    pub fn node_distance(&self, a: u32, b: u32) -> u32 {
        self.distance
            .get(a as usize)
            .and_then(|row| row.get(b as usize))
            .copied()
            .unwrap_or(if a == b {
                LOCAL_DISTANCE
            } else {
                REMOTE_DISTANCE
            })
    }

    /// Checks the invariants domain building relies on: at least one CPU,
    /// `cpus[i].cpu == i`, node ids below `nr_nodes`, every node non-empty, a square
    /// distance matrix with 10 on the diagonal and more than 10 elsewhere
    /// (Linux `numa_set_distance` rules), SMT siblings in one package and LLC,
    /// each LLC within one node, cache masks sized for `nr_cpus`.
    pub fn validate(&self) -> Result<(), TopologyError> {
        use TopologyError as E;
        if self.cpus.is_empty() {
            return Err(E::NoCpus);
        }
        if self.nr_nodes == 0 {
            return Err(E::Inconsistent("nr_nodes is 0"));
        }
        for (i, c) in self.cpus.iter().enumerate() {
            if c.cpu != i {
                return Err(E::CpuNumbering {
                    index: i,
                    cpu: c.cpu,
                });
            }
            if c.node as usize >= self.nr_nodes {
                return Err(E::NodeOutOfRange {
                    cpu: i,
                    node: c.node,
                    nr_nodes: self.nr_nodes,
                });
            }
        }
        for n in 0..self.nr_nodes {
            if self.node_mask(n as u32).is_empty() {
                return Err(E::EmptyNode { node: n as u32 });
            }
        }
        validate_distances(&self.distance, self.nr_nodes)?;
        self.validate_sets()?;
        for (i, cache) in self.caches.iter().enumerate() {
            if cache.cpus.nr_cpus() != self.nr_cpus() || cache.cpus.is_empty() {
                return Err(E::BadCacheMask { index: i });
            }
        }
        Ok(())
    }
}

impl Topology {
    /// SMT siblings agree on package, LLC, node and die, and an LLC stays in
    /// one node. Each core's and each LLC's first CPU is compared with every
    /// other member, O(n log n) (a scan of every CPU's masks was O(n²): about
    /// 22 M host instructions at 1,024 CPUs). The error is the one that scan
    /// reported first: in CPU order, the SMT test before the LLC test of a
    /// CPU, naming the lowest member that differs. Equality is transitive, so
    /// in a set with differing members its first CPU differs from one of
    /// them, and that CPU comes before every other member.
    fn validate_sets(&self) -> Result<(), TopologyError> {
        let mut core_first: BTreeMap<u32, CpuId> = BTreeMap::new();
        let mut llc_first: BTreeMap<u32, CpuId> = BTreeMap::new();
        // The split set with the lowest first CPU, and its lowest differing
        // member: CPUs come in order, so a set's first split found is that
        // member, and only a set with a lower first CPU replaces it.
        let mut smt: Option<(CpuId, CpuId)> = None;
        let mut llc: Option<(CpuId, CpuId)> = None;
        let key = |c: &CpuTopo| (c.package, c.llc, c.node, c.die);
        for c in &self.cpus {
            let f = *core_first.entry(c.core).or_insert(c.cpu);
            if key(&self.cpus[f]) != key(c) && smt.is_none_or(|(sf, _)| f < sf) {
                smt = Some((f, c.cpu));
            }
            let g = *llc_first.entry(c.llc).or_insert(c.cpu);
            if self.cpus[g].node != c.node && llc.is_none_or(|(lf, _)| g < lf) {
                llc = Some((g, c.cpu));
            }
        }
        match (smt, llc) {
            (Some((cpu, sibling)), l) if l.is_none_or(|(lc, _)| cpu <= lc) => {
                Err(TopologyError::SmtSiblingsSplit { cpu, sibling })
            }
            (_, Some((cpu, other))) => Err(TopologyError::LlcSpansNodes { cpu, other }),
            _ => Ok(()),
        }
    }
}

/// Validates a node distance matrix like Linux `numa_set_distance`: square
/// `nr_nodes x nr_nodes`, local distance exactly 10, remote distances above 10.
pub fn validate_distances(d: &[Vec<u32>], nr_nodes: usize) -> Result<(), TopologyError> {
    if d.len() != nr_nodes || d.iter().any(|r| r.len() != nr_nodes) {
        return Err(TopologyError::DistanceShape { nr_nodes });
    }
    for (i, row) in d.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            let ok = if i == j {
                v == LOCAL_DISTANCE
            } else {
                v > LOCAL_DISTANCE
            };
            if !ok {
                return Err(TopologyError::BadDistance {
                    from: i as u32,
                    to: j as u32,
                    value: v,
                });
            }
        }
    }
    Ok(())
}

/// The default matrix: 10 on the diagonal, 20 elsewhere.
pub fn default_distances(nr_nodes: usize) -> Vec<Vec<u32>> {
    (0..nr_nodes)
        .map(|i| {
            (0..nr_nodes)
                .map(|j| {
                    if i == j {
                        LOCAL_DISTANCE
                    } else {
                        REMOTE_DISTANCE
                    }
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod validate_tests {
    use super::*;
    use crate::synthetic::SyntheticSpec;

    /// The scan `validate_sets` replaced: every CPU's SMT and LLC masks.
    fn scan(t: &Topology) -> Result<(), TopologyError> {
        for c in &t.cpus {
            for o in t.smt_mask(c.cpu).iter().filter_map(|o| t.cpus.get(o)) {
                if o.package != c.package || o.llc != c.llc || o.node != c.node || o.die != c.die {
                    return Err(TopologyError::SmtSiblingsSplit {
                        cpu: c.cpu,
                        sibling: o.cpu,
                    });
                }
            }
            for o in t.llc_mask(c.cpu).iter().filter_map(|o| t.cpus.get(o)) {
                if o.node != c.node {
                    return Err(TopologyError::LlcSpansNodes {
                        cpu: c.cpu,
                        other: o.cpu,
                    });
                }
            }
        }
        Ok(())
    }

    /// On machines with a few fields of a few CPUs changed at random (core,
    /// LLC, node, package, die), the set checks report exactly what the
    /// mask scan reported, error or not.
    #[test]
    fn set_checks_report_what_the_mask_scan_reported() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let (mut errors, mut smt, mut llc) = (0, 0, 0);
        for round in 0..3_000 {
            let spec = SyntheticSpec {
                nodes: 2,
                ..SyntheticSpec::simple(2, 1 + next(4) as u32, 1 + next(2) as u32)
            };
            let mut t = Topology::synthetic(&spec).expect("shape");
            let n = t.cpus.len();
            for _ in 0..next(3) {
                let c = next(n as u64) as usize;
                let v = next(3) as u32;
                match next(5) {
                    0 => t.cpus[c].core = v,
                    1 => t.cpus[c].llc = v,
                    2 => t.cpus[c].node = v % 2,
                    3 => t.cpus[c].package = v,
                    _ => t.cpus[c].die = v,
                }
            }
            let want = scan(&t);
            assert_eq!(t.validate_sets(), want, "round {round}: {:?}", t.cpus);
            errors += usize::from(want.is_err());
            smt += usize::from(matches!(want, Err(TopologyError::SmtSiblingsSplit { .. })));
            llc += usize::from(matches!(want, Err(TopologyError::LlcSpansNodes { .. })));
        }
        assert!(
            smt > 100 && llc > 100,
            "too few errors of each kind: {smt} SMT, {llc} LLC of {errors}"
        );
    }
}
