//! [`assemble()`]: MADT + SRAT + SLIT + per-CPU CPUID -> [`Topology`].
//!
//! * **Logical CPU numbers**: the boot CPU (the first element of `cpus`) is CPU 0; the
//!   other *enabled* MADT processors follow in MADT order (Linux's numbering when CPUs
//!   come up in MADT order). Disabled / online-capable entries get no number.
//! * **Ids**: the boot CPU's APIC-id layout splits every APIC id into package, die,
//!   core and thread fields (Linux 6.9+ does the same with the boot CPU's domain
//!   shifts). Packages, dies and cores get dense numbers in order of first appearance
//!   in logical order; `thread` is the index among the core's CPUs.
//! * **Nodes**: SRAT proximity domains become dense node numbers in the order in which
//!   they first appear among the SRAT processor entries of enabled MADT CPUs. No SRAT:
//!   one node. A CPU without an SRAT entry goes to node 0 (warning).
//! * **LLC**: CPUs whose APIC ids agree above the boot CPU's last-level cache sharing
//!   shift (never below the SMT shift) and which are on the same node. No cache leaf:
//!   each core is its own LLC group.
//! * **Distances**: SLIT entries of the proximity domains, remapped to dense nodes;
//!   10/20 when the SLIT is absent or lacks a domain (warnings).

use alloc::vec;
use alloc::vec::Vec;

use crate::acpi::{Madt, Slit, Srat};
use crate::cpuid::{CacheInfo, CpuIdentity, TopologySource};
use crate::error::TopologyError;
use crate::mask::CpuMask;
use crate::topo::{Cache, CpuTopo, LOCAL_DISTANCE, REMOTE_DISTANCE, Topology};
use crate::warning::Warning;

/// Dense index of `key` in `seen`, appending it when new.
fn dense<K: PartialEq>(seen: &mut Vec<K>, key: K) -> u32 {
    match seen.iter().position(|k| *k == key) {
        Some(p) => p as u32,
        None => {
            seen.push(key);
            (seen.len() - 1) as u32
        }
    }
}

fn push_unique(w: &mut Vec<Warning>, x: Warning) {
    if !w.contains(&x) {
        w.push(x);
    }
}

/// Logical CPU order: BSP, then the other enabled MADT processors in MADT order.
fn logical_order(madt: &Madt, bsp: u32) -> Result<Vec<u32>, TopologyError> {
    let mut order = vec![bsp];
    let mut seen_bsp = false;
    let mut all: Vec<u32> = Vec::new();
    for c in madt.enabled_cpus() {
        if all.contains(&c.apic_id) {
            return Err(TopologyError::DuplicateApicId { apic_id: c.apic_id });
        }
        all.push(c.apic_id);
        if c.apic_id == bsp {
            seen_bsp = true;
        } else {
            order.push(c.apic_id);
        }
    }
    if all.is_empty() {
        return Err(TopologyError::NoEnabledCpus);
    }
    if !seen_bsp {
        return Err(TopologyError::BspNotInMadt { apic_id: bsp });
    }
    Ok(order)
}

/// Node of each logical CPU and the proximity domain of each node.
fn nodes(
    madt: &Madt,
    srat: Option<&Srat>,
    order: &[u32],
    w: &mut Vec<Warning>,
) -> (Vec<u32>, Vec<Option<u32>>) {
    let Some(srat) = srat else {
        return (vec![0; order.len()], vec![None]);
    };
    let mut pxms: Vec<u32> = Vec::new();
    for e in srat.cpus.iter().filter(|e| e.enabled) {
        if !madt.cpus.iter().any(|c| c.apic_id == e.apic_id) {
            push_unique(
                w,
                Warning::SratCpuNotInMadt {
                    apic_id: e.apic_id,
                    x2apic: e.x2apic,
                },
            );
        } else if order.contains(&e.apic_id) {
            dense(&mut pxms, e.proximity_domain);
        }
    }
    let mut node_of = Vec::with_capacity(order.len());
    for &apic in order {
        match srat
            .domain_of(apic)
            .and_then(|p| pxms.iter().position(|&x| x == p))
        {
            Some(n) => node_of.push(n as u32),
            None => {
                w.push(Warning::CpuNotInSrat { apic_id: apic });
                if pxms.is_empty() {
                    // No usable entry at all: node 0 without a proximity domain.
                    return (vec![0; order.len()], vec![None]);
                }
                node_of.push(0);
            }
        }
    }
    for m in srat.memory.iter().filter(|m| m.enabled) {
        if !pxms.contains(&m.proximity_domain) {
            push_unique(
                w,
                Warning::MemoryOnlyDomain {
                    proximity_domain: m.proximity_domain,
                },
            );
        }
    }
    (node_of, pxms.into_iter().map(Some).collect())
}

/// The node distance matrix from the SLIT (remapped) or defaults.
fn distances(slit: Option<&Slit>, pxms: &[Option<u32>], w: &mut Vec<Warning>) -> Vec<Vec<u32>> {
    let n = pxms.len();
    if n > 1 && slit.is_none() {
        w.push(Warning::NoSlit { nodes: n });
    }
    let default = |i: usize, j: usize| {
        if i == j {
            LOCAL_DISTANCE
        } else {
            REMOTE_DISTANCE
        }
    };
    let mut d = vec![vec![0; n]; n];
    for (i, row) in d.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            let (Some(Some(a)), Some(Some(b))) = (pxms.get(i), pxms.get(j)) else {
                *v = default(i, j);
                continue;
            };
            *v = match slit {
                Some(s) => match s.distance(*a, *b) {
                    Some(x) => u32::from(x),
                    None => {
                        let p = if s.distance(*a, *a).is_none() { *a } else { *b };
                        push_unique(
                            w,
                            Warning::SlitMissingDomain {
                                proximity_domain: p,
                                localities: s.localities,
                            },
                        );
                        default(i, j)
                    }
                },
                None => default(i, j),
            };
        }
    }
    // ACPI: 255 means "no connection". Between two nodes that have CPUs it
    // cannot be a scheduling distance, so the SLIT is not used at all.
    for (i, row) in d.iter().enumerate() {
        if let Some(j) = row.iter().position(|&v| v == 255)
            && let (Some(Some(a)), Some(Some(b))) = (pxms.get(i), pxms.get(j))
        {
            w.push(Warning::SlitUnreachable { from: *a, to: *b });
            return (0..n)
                .map(|i| (0..n).map(|j| default(i, j)).collect())
                .collect();
        }
    }
    d
}

/// Builds the [`Topology`]. `cpus` holds `(APIC id, decoded CPUID)` per CPU that ran
/// [`crate::cpuid::collect`]; its **first element must be the boot CPU**. Enabled MADT
/// CPUs without CPUID data are placed with the boot CPU's layout (warning).
pub fn assemble(
    madt: &Madt,
    srat: Option<&Srat>,
    slit: Option<&Slit>,
    cpus: &[(u32, CpuIdentity)],
) -> Result<(Topology, Vec<Warning>), TopologyError> {
    let (bsp_apic, bsp) = match cpus.first() {
        Some((a, id)) => (*a, id),
        None => {
            let apic_id = madt.enabled_cpus().next().map_or(0, |c| c.apic_id);
            return Err(TopologyError::NoCpuidForBsp { apic_id });
        }
    };
    let order = logical_order(madt, bsp_apic)?;
    let mut w: Vec<Warning> = Vec::new();
    for (apic, id) in cpus {
        if !order.contains(apic) {
            push_unique(&mut w, Warning::CpuidForUnknownCpu { apic_id: *apic });
        }
        for x in &id.warnings {
            push_unique(&mut w, x.clone());
        }
        if id.layout != bsp.layout {
            push_unique(&mut w, Warning::LayoutMismatch { apic_id: *apic });
        }
        let reported = match id.layout.source {
            TopologySource::Legacy | TopologySource::None => id.x2apic_id.map(|r| (r, apic & 0xff)),
            _ => id.x2apic_id.map(|r| (r, *apic)),
        };
        if let Some((r, listed)) = reported
            && r != listed
        {
            push_unique(
                &mut w,
                Warning::ApicIdMismatch {
                    listed: *apic,
                    reported: r,
                },
            );
        }
    }
    for apic in &order {
        if !cpus.iter().any(|(a, _)| a == apic) {
            w.push(Warning::CpuidMissing { apic_id: *apic });
        }
    }
    let (node_of, pxms) = nodes(madt, srat, &order, &mut w);
    let distance = distances(slit, &pxms, &mut w);
    let layout = bsp.layout;
    let llc_info: Option<&CacheInfo> = bsp.llc();
    let llc_shift = llc_info.map(|c| c.sharing_shift.max(layout.smt_shift));

    let n = order.len();
    let (mut pkgs, mut dies, mut cores, mut llcs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut topo_cpus: Vec<CpuTopo> = Vec::with_capacity(n);
    for (cpu, &apic) in order.iter().enumerate() {
        let node = node_of.get(cpu).copied().unwrap_or(0);
        let pk = layout.pkg_key(apic);
        let core_key = (node, pk, layout.core_key(apic));
        let core = dense(&mut cores, core_key);
        let llc_key = match llc_shift {
            Some(s) => (node, pk, crate::cpuid::shr_pub(apic, s), false),
            None => (node, pk, layout.core_key(apic), true),
        };
        let thread = topo_cpus.iter().filter(|c| c.core == core).count() as u32;
        topo_cpus.push(CpuTopo {
            cpu,
            apic_id: apic,
            package: dense(&mut pkgs, pk),
            die: dense(&mut dies, (pk, layout.die_key(apic))),
            core,
            thread,
            node,
            llc: dense(&mut llcs, llc_key),
        });
    }
    warn_node_splits(&topo_cpus, &layout, llc_shift, &mut w);

    // Cache instances: CPUs agreeing on node and on the APIC-id bits above the
    // sharing shift (the LLC uses the LLC grouping above).
    let mut caches: Vec<Cache> = Vec::new();
    for info in &bsp.caches {
        let is_llc = llc_info.is_some_and(|l| l == info);
        let mut keys: Vec<(u32, u32)> = Vec::new();
        let mut masks: Vec<CpuMask> = Vec::new();
        for c in &topo_cpus {
            let key = if is_llc {
                (u32::MAX, c.llc)
            } else {
                (c.node, info.instance_key(c.apic_id))
            };
            let i = dense(&mut keys, key) as usize;
            if i == masks.len() {
                masks.push(CpuMask::new(n));
            }
            if let Some(m) = masks.get_mut(i) {
                m.set(c.cpu);
            }
        }
        for cpus in masks {
            caches.push(Cache {
                level: info.level,
                kind: info.kind,
                size_bytes: info.size_bytes,
                line_bytes: info.line_bytes,
                ways: info.ways,
                cpus,
            });
        }
    }
    caches.sort_by_key(|c| (c.level, c.kind as u8, c.cpus.first()));
    let topo = Topology {
        cpus: topo_cpus,
        nr_nodes: pxms.len(),
        distance,
        caches,
    };
    topo.validate()?;
    Ok((topo, w))
}

/// Warns where CPUID says two CPUs share a core or an LLC but they are on different
/// nodes (they were split; Linux `topology_sane` "Ignoring dependency").
fn warn_node_splits(
    cpus: &[CpuTopo],
    layout: &crate::cpuid::ApicLayout,
    llc_shift: Option<u32>,
    w: &mut Vec<Warning>,
) {
    for (i, a) in cpus.iter().enumerate() {
        for b in cpus.iter().skip(i + 1).filter(|b| b.node != a.node) {
            if layout.core_key(a.apic_id) == layout.core_key(b.apic_id) {
                push_unique(
                    w,
                    Warning::SmtSplitByNode {
                        cpu: a.cpu,
                        other: b.cpu,
                    },
                );
            } else if let Some(s) = llc_shift
                && crate::cpuid::shr_pub(a.apic_id, s) == crate::cpuid::shr_pub(b.apic_id, s)
                && layout.pkg_key(a.apic_id) == layout.pkg_key(b.apic_id)
                && !w
                    .iter()
                    .any(|x| matches!(x, Warning::LlcSplitByNode { cpu, .. } if *cpu == a.cpu))
            {
                w.push(Warning::LlcSplitByNode {
                    cpu: a.cpu,
                    other: b.cpu,
                });
            }
        }
    }
}
