//! An `lscpu -e`-like table of a [`Topology`] for the kernel console:
//!
//! ```text
//! CPU NODE SOCKET DIE CORE THREAD L1d:L1i:L2:L3 APICID
//!   0    0      0   0    0      0 0:0:0:0            0
//! ```
//!
//! Cache columns are the cache instance numbers per (level, kind), in the order of
//! [`Topology::caches`]; `-` when a CPU has no such cache. The header lists only the
//! cache kinds present.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use crate::topo::{CacheKind, Topology};

fn cache_label(level: u8, kind: CacheKind) -> String {
    match kind {
        CacheKind::Data => format!("L{level}d"),
        CacheKind::Instruction => format!("L{level}i"),
        CacheKind::Unified => format!("L{level}"),
    }
}

/// The `lscpu -e`-like table, one line per CPU plus a header.
pub fn lscpu_table(topo: &Topology) -> String {
    // Distinct (level, kind) in level then kind order.
    let mut kinds: Vec<(u8, CacheKind)> = Vec::new();
    for c in &topo.caches {
        if !kinds.contains(&(c.level, c.kind)) {
            kinds.push((c.level, c.kind));
        }
    }
    kinds.sort_by_key(|&(l, k)| (l, k as u8));
    let cache_hdr: Vec<String> = kinds.iter().map(|&(l, k)| cache_label(l, k)).collect();
    let cache_hdr = cache_hdr.join(":");
    // instance[kind][cpu]: position, among the caches of that kind, of the first
    // one holding the CPU; one pass over each cache's CPUs (not every cache for
    // every CPU, which took about a second at 255 CPUs in the kernel under TCG).
    let n = topo.nr_cpus();
    let instance: Vec<Vec<Option<usize>>> = kinds
        .iter()
        .map(|&(l, k)| {
            let mut of: Vec<Option<usize>> = alloc::vec![None; n];
            for (p, x) in topo
                .caches
                .iter()
                .filter(|x| x.level == l && x.kind == k)
                .enumerate()
            {
                for cpu in x.cpus.iter() {
                    if let Some(slot @ None) = of.get_mut(cpu) {
                        *slot = Some(p);
                    }
                }
            }
            of
        })
        .collect();
    let rows: Vec<[String; 8]> = topo
        .cpus
        .iter()
        .map(|c| {
            let ids: Vec<String> = instance
                .iter()
                .map(|of| {
                    of.get(c.cpu)
                        .copied()
                        .flatten()
                        .map_or_else(|| String::from("-"), |p| format!("{p}"))
                })
                .collect();
            [
                format!("{}", c.cpu),
                format!("{}", c.node),
                format!("{}", c.package),
                format!("{}", c.die),
                format!("{}", c.core),
                format!("{}", c.thread),
                ids.join(":"),
                format!("{}", c.apic_id),
            ]
        })
        .collect();
    let hdr = [
        "CPU",
        "NODE",
        "SOCKET",
        "DIE",
        "CORE",
        "THREAD",
        cache_hdr.as_str(),
        "APICID",
    ];
    let mut width = hdr.map(str::len);
    for r in &rows {
        for (w, v) in width.iter_mut().zip(r.iter()) {
            *w = (*w).max(v.len());
        }
    }
    let mut s = String::new();
    let mut line = |cells: [&str; 8]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(width.iter()).enumerate() {
            if i > 0 {
                l.push(' ');
            }
            // The cache column is left-aligned like lscpu's, numbers right-aligned.
            let _ = if i == 6 {
                write!(l, "{cell:<w$}")
            } else {
                write!(l, "{cell:>w$}")
            };
        }
        let _ = writeln!(s, "{}", l.trim_end());
    };
    line(hdr);
    for r in &rows {
        line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6], &r[7]]);
    }
    s
}

/// Per-node summary, like `numactl --hardware`: node CPUs and the distance matrix.
pub fn numa_table(topo: &Topology) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "available: {} nodes (0-{})",
        topo.nr_nodes,
        topo.nr_nodes.saturating_sub(1)
    );
    for n in 0..topo.nr_nodes as u32 {
        let _ = writeln!(s, "node {n} cpus: {}", topo.node_mask(n));
    }
    let _ = write!(s, "node distances:\nnode");
    for n in 0..topo.nr_nodes {
        let _ = write!(s, " {n:>3}");
    }
    s.push('\n');
    for a in 0..topo.nr_nodes as u32 {
        let _ = write!(s, "{a:>3}:");
        for b in 0..topo.nr_nodes as u32 {
            let _ = write!(s, " {:>3}", topo.node_distance(a, b));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::SyntheticSpec;

    #[test]
    fn table_layout() {
        let spec = SyntheticSpec {
            nodes: 2,
            ..SyntheticSpec::simple(2, 1, 2)
        };
        let t = Topology::synthetic(&spec).unwrap();
        let s = lscpu_table(&t);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "CPU NODE SOCKET DIE CORE THREAD L1d:L1i:L2:L3 APICID"
        );
        assert_eq!(
            lines[1],
            "  0    0      0   0    0      0 0:0:0:0            0"
        );
        assert_eq!(
            lines[4],
            "  3    1      1   1    1      1 1:1:1:1            3"
        );
        assert_eq!(lines.len(), 5);
        let n = numa_table(&t);
        assert!(n.contains("node 1 cpus: 2-3\n"), "{n}");
        assert!(n.contains("  0:  10  20\n"), "{n}");
    }
}
