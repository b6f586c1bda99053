//! The topology levels (Linux `struct sched_domain_topology_level`) and `sd_init`.
//!
//! Levels, bottom-up, as Linux x86 6.x builds them:
//! * `SMT` — `cpu_smt_mask`, flags `SD_SHARE_CPUCAPACITY | SD_SHARE_LLC` (`cpu_smt_flags`);
//! * `MC` — `cpu_coregroup_mask` = CPUs sharing the LLC, `SD_SHARE_LLC` (`cpu_core_flags`);
//! * `PKG` — `cpu_cpu_mask` = CPUs of the CPU's node, no flags. Omitted, like x86's
//!   `x86_numa_in_package_topology`, when a node is smaller than its package;
//! * then, from `sched_init_numa`: `NODE` (nodes at the local distance, no flags) and one
//!   `NUMA` level per further distinct distance `d` (span = CPUs of the nodes at
//!   distance `<= d`, flags `SD_NUMA`, overlapping groups).

use alloc::vec::Vec;

use super::DomainConfig;
use super::flags::*;
use crate::CpuId;
use crate::mask::CpuMask;
use crate::topo::Topology;

/// Which mask a level uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LevelMask {
    Smt,
    Llc,
    Node,
    /// Nodes within the given SLIT distance of the CPU's node.
    NumaWithin(u32),
}

/// One topology level (`struct sched_domain_topology_level`).
#[derive(Clone, Debug)]
pub(crate) struct Level {
    pub name: &'static str,
    pub mask: LevelMask,
    /// `tl->sd_flags()`.
    pub sd_flags: SdFlags,
    /// `SDTL_OVERLAP`.
    pub overlap: bool,
    /// Distance of a NODE/NUMA level (`sched_domains_numa_distance[numa_level]`).
    pub numa_distance: Option<u32>,
}

/// The distinct node distances, sorted (`sched_init_numa`'s distance bitmap); the first
/// is the local distance.
pub(crate) fn numa_distances(topo: &Topology) -> Vec<u32> {
    let mut d: Vec<u32> = Vec::new();
    for a in 0..topo.nr_nodes as u32 {
        for b in 0..topo.nr_nodes as u32 {
            let v = topo.node_distance(a, b);
            if let Err(p) = d.binary_search(&v) {
                d.insert(p, v);
            }
        }
    }
    d
}

/// True when some node is strictly smaller than the package of one of its CPUs
/// (x86 `x86_has_numa_in_package`).
pub(crate) fn numa_in_package(topo: &Topology) -> bool {
    let mut seen: Vec<(u32, u32)> = Vec::new();
    for c in &topo.cpus {
        match seen.iter().find(|(p, _)| *p == c.package) {
            Some(&(_, n)) if n != c.node => return true,
            Some(_) => {}
            None => seen.push((c.package, c.node)),
        }
    }
    false
}

/// The level list for `topo` (`x86_topology` / `x86_numa_in_package_topology`
/// followed by the levels `sched_init_numa` appends).
pub(crate) fn topology_levels(topo: &Topology) -> Vec<Level> {
    let mut v = Vec::new();
    let plain = |name, mask, sd_flags| Level {
        name,
        mask,
        sd_flags,
        overlap: false,
        numa_distance: None,
    };
    v.push(plain(
        "SMT",
        LevelMask::Smt,
        SD_SHARE_CPUCAPACITY | SD_SHARE_LLC,
    ));
    v.push(plain("MC", LevelMask::Llc, SD_SHARE_LLC));
    if !numa_in_package(topo) {
        v.push(plain("PKG", LevelMask::Node, SdFlags::EMPTY));
    }
    if topo.nr_nodes > 1 {
        for (j, d) in numa_distances(topo).into_iter().enumerate() {
            v.push(Level {
                name: if j == 0 { "NODE" } else { "NUMA" },
                mask: LevelMask::NumaWithin(d),
                sd_flags: if j == 0 { SdFlags::EMPTY } else { SD_NUMA },
                overlap: j != 0,
                numa_distance: Some(d),
            });
        }
    }
    v
}

/// Per-level masks, computed once: node-based levels (PKG/NODE/NUMA) per node,
/// SMT and LLC per CPU (each CPU's entry a copy of its core's / LLC's mask).
pub(crate) struct LevelMasks {
    /// `per_node[level][node]`, empty for CPU-based levels.
    per_node: Vec<Vec<CpuMask>>,
    /// `cpu_smt_mask` of each CPU, as [`Topology::smt_mask`].
    smt: Vec<CpuMask>,
    /// `cpu_coregroup_mask` of each CPU, as [`Topology::llc_mask`].
    llc: Vec<CpuMask>,
    /// Capacity of the masks (for an unknown CPU's empty mask).
    nr_cpus: usize,
    /// `cpu_to_node` of each CPU index.
    node_of: Vec<u32>,
}

/// For every CPU index `0..nr_cpus`, the mask of the CPUs (by their `cpu` field) whose
/// `key` equals that of `cpus[index]`, as `Topology::mask_where` gives it, in
/// O(n log n) instead of a scan of every CPU for every CPU.
fn masks_by_key(topo: &Topology, key: impl Fn(&crate::topo::CpuTopo) -> u32) -> Vec<CpuMask> {
    let n = topo.nr_cpus();
    let mut keys: Vec<(u32, CpuId)> = topo.cpus.iter().map(|c| (key(c), c.cpu)).collect();
    keys.sort_unstable();
    // One mask per distinct key, in key order.
    let mut distinct: Vec<(u32, CpuMask)> = Vec::new();
    for (k, cpu) in keys {
        match distinct.last_mut() {
            Some((lk, m)) if *lk == k => m.set(cpu),
            _ => distinct.push((k, CpuMask::from_cpus(n, [cpu]))),
        }
    }
    topo.cpus
        .iter()
        .map(|c| {
            let k = key(c);
            distinct
                .binary_search_by_key(&k, |(dk, _)| *dk)
                .ok()
                .and_then(|i| distinct.get(i))
                .map_or_else(|| CpuMask::new(n), |(_, m)| m.clone())
        })
        .collect()
}

impl LevelMasks {
    /// Precomputes `sd_numa_mask`-style masks: for each node-based level and node, the
    /// OR of the CPUs of the nodes `k` with `node_distance(node, k) <= d` (just the
    /// node itself for PKG).
    pub(crate) fn new(topo: &Topology, levels: &[Level]) -> Self {
        let nodes: Vec<CpuMask> = (0..topo.nr_nodes as u32)
            .map(|n| topo.node_mask(n))
            .collect();
        let per_node = levels
            .iter()
            .map(|l| match l.mask {
                LevelMask::Smt | LevelMask::Llc => Vec::new(),
                LevelMask::Node => nodes.clone(),
                LevelMask::NumaWithin(d) => (0..nodes.len() as u32)
                    .map(|node| {
                        let mut m = CpuMask::new(topo.nr_cpus());
                        for (k, km) in nodes.iter().enumerate() {
                            if topo.node_distance(node, k as u32) <= d {
                                m = m.or(km);
                            }
                        }
                        m
                    })
                    .collect(),
            })
            .collect();
        LevelMasks {
            per_node,
            smt: masks_by_key(topo, |c| c.core),
            llc: masks_by_key(topo, |c| c.llc),
            nr_cpus: topo.nr_cpus(),
            node_of: topo.cpus.iter().map(|c| c.node).collect(),
        }
    }

    /// The level's mask for `cpu` (`tl->mask(cpu)`), before intersecting with the map.
    pub(crate) fn mask(&self, li: usize, level: &Level, cpu: CpuId) -> CpuMask {
        let found = match level.mask {
            LevelMask::Smt => self.smt.get(cpu),
            LevelMask::Llc => self.llc.get(cpu),
            LevelMask::Node | LevelMask::NumaWithin(_) => self
                .node_of
                .get(cpu)
                .and_then(|&n| self.per_node.get(li)?.get(n as usize)),
        };
        found.cloned().unwrap_or_else(|| CpuMask::new(self.nr_cpus))
    }
}

/// Parameters `sd_init` derives from the level flags and span weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SdInit {
    pub flags: SdFlags,
    pub imbalance_pct: u32,
    pub cache_nice_tries: u32,
    pub min_interval_ms: u32,
    pub max_interval_ms: u32,
    pub busy_factor: u32,
}

/// Mirrors Linux `sd_init()`: defaults (NEWIDLE|EXEC|FORK|WAKE_AFFINE|PREFER_SIBLING,
/// intervals `w`/`2w` ms, `busy_factor`), then SMT → pct 110; LLC → pct 117, one
/// cache_nice_try; NUMA → two tries, no PREFER_SIBLING, SERIALIZE, and beyond the
/// reclaim distance no EXEC/FORK/WAKE_AFFINE; anything else → one try.
pub(crate) fn sd_init(level: &Level, span_weight: usize, cfg: &DomainConfig) -> SdInit {
    let w = u32::try_from(span_weight).unwrap_or(u32::MAX);
    let mut s = SdInit {
        flags: SD_BALANCE_NEWIDLE
            | SD_BALANCE_EXEC
            | SD_BALANCE_FORK
            | SD_WAKE_AFFINE
            | SD_PREFER_SIBLING
            | level.sd_flags,
        imbalance_pct: cfg.default_imbalance_pct,
        cache_nice_tries: 0,
        min_interval_ms: w,
        max_interval_ms: w.saturating_mul(2),
        busy_factor: cfg.busy_factor,
    };
    if s.flags.contains(SD_SHARE_CPUCAPACITY) {
        s.imbalance_pct = 110;
    } else if s.flags.contains(SD_SHARE_LLC) {
        s.imbalance_pct = 117;
        s.cache_nice_tries = 1;
    } else if s.flags.contains(SD_NUMA) {
        s.cache_nice_tries = 2;
        s.flags = s.flags.without(SD_PREFER_SIBLING) | SD_SERIALIZE;
        if level
            .numa_distance
            .is_some_and(|d| d > cfg.reclaim_distance)
        {
            s.flags = s
                .flags
                .without(SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE);
        }
    } else {
        s.cache_nice_tries = 1;
    }
    if level.overlap {
        s.flags |= SD_OVERLAP;
    }
    s
}
