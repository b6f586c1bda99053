//! [`Topology::synthetic`]: a regular machine described by a [`SyntheticSpec`], numbered
//! exactly like QEMU's `-smp sockets=S,dies=D,cores=C,threads=T`.
//!
//! * Logical CPU `i` is the `i`-th tuple in (socket, die, core, thread) nested order,
//!   the order in which QEMU creates vCPUs and lists them in the MADT.
//! * APIC ids are composed like QEMU's `x86_apicid_from_topo_ids`: each level gets
//!   `ceil(log2(count))` bits, thread bits lowest.
//! * Nodes: if `nodes <= sockets`, each node takes `sockets / nodes` consecutive sockets;
//!   otherwise each socket is split into `nodes / sockets` nodes of equal numbers of
//!   consecutive cores.
//! * LLC: one per die (`cpus_per_llc: None`) or groups of `cpus_per_llc` consecutive
//!   CPUs inside a die. An LLC never spans two nodes: like Linux on sub-NUMA-clustered
//!   Intel parts, a node boundary splits the LLC.
//! * Caches are nominal (values are not measured): per core 32 KiB 8-way L1d and L1i,
//!   1 MiB 16-way L2; per LLC group an L3 of 2 MiB per core, 16-way; 64-byte lines.

use alloc::format;
use alloc::vec::Vec;

use crate::error::TopologyError;
use crate::mask::CpuMask;
use crate::topo::{Cache, CacheKind, CpuTopo, Topology, default_distances, validate_distances};

/// Largest CPU count [`Topology::synthetic`] accepts.
pub const MAX_SYNTHETIC_CPUS: u32 = 8192;

/// Shape of a regular machine, as in QEMU's `-smp` and `-numa` options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticSpec {
    /// Packages.
    pub sockets: u32,
    /// Dies in each package.
    pub dies_per_socket: u32,
    /// Cores in each die.
    pub cores_per_die: u32,
    /// Hardware threads in each core.
    pub threads_per_core: u32,
    /// NUMA nodes: must divide `sockets` or be a multiple of it whose per-socket
    /// count divides the socket's cores.
    pub nodes: u32,
    /// CPUs per LLC group (a multiple of `threads_per_core`); `None` = one LLC per die.
    pub cpus_per_llc: Option<u32>,
    /// Node distance matrix (`nodes x nodes`); `None` = 10 local / 20 remote.
    pub distances: Option<Vec<Vec<u32>>>,
}

impl SyntheticSpec {
    /// `sockets x cores x threads`, one die per socket, one node, LLC per socket.
    pub fn simple(sockets: u32, cores_per_die: u32, threads_per_core: u32) -> Self {
        Self {
            sockets,
            dies_per_socket: 1,
            cores_per_die,
            threads_per_core,
            nodes: 1,
            cpus_per_llc: None,
            distances: None,
        }
    }
}

/// QEMU `apicid_bitwidth_for_count`: bits needed to number `count` items.
pub(crate) fn bits_for_count(count: u32) -> u32 {
    match count.checked_sub(1) {
        None | Some(0) => 0,
        Some(n) => 32 - n.leading_zeros(),
    }
}

/// Highest APIC id QEMU gives a `-smp sockets=S,dies=D,cores=C,threads=T` machine (the
/// last CPU's, composed as in the module docs), or `None` when a count is 0. Computed
/// in 128 bits so that no count overflows (saturating at `u64::MAX`); QEMU's ids have
/// gaps whenever a count is not a power of two, so this can be far above `S*D*C*T - 1`.
pub fn qemu_max_apic_id(sockets: u32, dies: u32, cores: u32, threads: u32) -> Option<u64> {
    let (tb, cb, db) = (
        bits_for_count(threads),
        bits_for_count(cores),
        bits_for_count(dies),
    );
    let top = |count: u32| u128::from(count).checked_sub(1);
    let id = (top(sockets)? << (db + cb + tb))
        | (top(dies)? << (cb + tb))
        | (top(cores)? << tb)
        | top(threads)?;
    Some(u64::try_from(id).unwrap_or(u64::MAX))
}

fn invalid(s: alloc::string::String) -> TopologyError {
    TopologyError::InvalidSpec(s)
}

impl Topology {
    /// Builds the regular topology described by `spec` (see the module docs for the
    /// numbering rules). Errors name the offending field.
    pub fn synthetic(spec: &SyntheticSpec) -> Result<Topology, TopologyError> {
        let s = spec;
        for (name, v) in [
            ("sockets", s.sockets),
            ("dies_per_socket", s.dies_per_socket),
            ("cores_per_die", s.cores_per_die),
            ("threads_per_core", s.threads_per_core),
            ("nodes", s.nodes),
        ] {
            if v == 0 {
                return Err(invalid(format!("{name} must be at least 1")));
            }
        }
        let cpus_per_die = s.cores_per_die.checked_mul(s.threads_per_core);
        let cores_per_socket = s.cores_per_die.checked_mul(s.dies_per_socket);
        let total = cpus_per_die
            .and_then(|c| c.checked_mul(s.dies_per_socket))
            .and_then(|c| c.checked_mul(s.sockets))
            .filter(|&t| t <= MAX_SYNTHETIC_CPUS);
        let (Some(total), Some(cpus_per_die), Some(cores_per_socket)) =
            (total, cpus_per_die, cores_per_socket)
        else {
            return Err(invalid(format!("more than {MAX_SYNTHETIC_CPUS} CPUs")));
        };
        // Cores per node (for nodes >= sockets) or sockets per node.
        let (sockets_per_node, cores_per_node) = if s.nodes <= s.sockets {
            if !s.sockets.is_multiple_of(s.nodes) {
                return Err(invalid(format!(
                    "nodes {} does not divide sockets {}",
                    s.nodes, s.sockets
                )));
            }
            (s.sockets / s.nodes, 1)
        } else {
            let per_socket = s.nodes / s.sockets;
            if !s.nodes.is_multiple_of(s.sockets) || !cores_per_socket.is_multiple_of(per_socket) {
                return Err(invalid(format!(
                    "nodes {} must be a multiple of sockets {} splitting each socket's {} cores evenly",
                    s.nodes, s.sockets, cores_per_socket
                )));
            }
            (0, cores_per_socket / per_socket)
        };
        if let Some(n) = s.cpus_per_llc
            && (n == 0 || !n.is_multiple_of(s.threads_per_core))
        {
            return Err(invalid(format!(
                "cpus_per_llc {n} must be a non-zero multiple of threads_per_core {}",
                s.threads_per_core
            )));
        }
        let distance = match &s.distances {
            Some(d) => {
                validate_distances(d, s.nodes as usize)
                    .map_err(|e| invalid(format!("distances: {e}")))?;
                d.clone()
            }
            None => default_distances(s.nodes as usize),
        };

        let tb = bits_for_count(s.threads_per_core);
        let cb = bits_for_count(s.cores_per_die);
        let db = bits_for_count(s.dies_per_socket);
        let llc_span = s.cpus_per_llc.unwrap_or(cpus_per_die);
        let mut cpus = Vec::with_capacity(total as usize);
        let mut llc_keys: Vec<(u32, u32, u32)> = Vec::new();
        for cpu in 0..total {
            let thread = cpu % s.threads_per_core;
            let core_in_die = (cpu / s.threads_per_core) % s.cores_per_die;
            let die_in_socket = (cpu / cpus_per_die) % s.dies_per_socket;
            let socket = cpu / cpus_per_die / s.dies_per_socket;
            let core = cpu / s.threads_per_core;
            let die = cpu / cpus_per_die;
            let node = if let Some(n) = socket.checked_div(sockets_per_node) {
                n
            } else {
                let core_in_socket = core % cores_per_socket;
                socket * (s.nodes / s.sockets) + core_in_socket / cores_per_node
            };
            let key = (die, node, (cpu % cpus_per_die) / llc_span);
            // Keys come in contiguous runs (die, node and LLC chunks are all ranges of
            // consecutive CPUs), so comparing with the last key is enough.
            if llc_keys.last() != Some(&key) {
                llc_keys.push(key);
            }
            let llc = (llc_keys.len() - 1) as u32;
            // Widths are below 32 bits for totals <= MAX_SYNTHETIC_CPUS.
            let apic_id = (socket << (db + cb + tb))
                | (die_in_socket << (cb + tb))
                | (core_in_die << tb)
                | thread;
            cpus.push(CpuTopo {
                cpu: cpu as usize,
                apic_id,
                package: socket,
                die,
                core,
                thread,
                node,
                llc,
            });
        }
        let n = total as usize;
        let mut caches = Vec::new();
        let cores = total / s.threads_per_core;
        for (level, kind, size, ways) in [
            (1u8, CacheKind::Data, 32u64 << 10, 8u32),
            (1, CacheKind::Instruction, 32 << 10, 8),
            (2, CacheKind::Unified, 1 << 20, 16),
        ] {
            for core in 0..cores {
                // Cores are runs of `threads_per_core` consecutive CPUs.
                let first = (core * s.threads_per_core) as usize;
                let m = CpuMask::from_cpus(n, first..first + s.threads_per_core as usize);
                caches.push(Cache {
                    level,
                    kind,
                    size_bytes: size,
                    line_bytes: 64,
                    ways,
                    cpus: m,
                });
            }
        }
        let mut llc_masks = alloc::vec![CpuMask::new(n); llc_keys.len()];
        for c in &cpus {
            if let Some(m) = llc_masks.get_mut(c.llc as usize) {
                m.set(c.cpu);
            }
        }
        for m in llc_masks {
            let ncores = (m.weight() as u64).div_ceil(u64::from(s.threads_per_core));
            caches.push(Cache {
                level: 3,
                kind: CacheKind::Unified,
                size_bytes: ncores * (2 << 20),
                line_bytes: 64,
                ways: 16,
                cpus: m,
            });
        }
        let topo = Topology {
            cpus,
            nr_nodes: s.nodes as usize,
            distance,
            caches,
        };
        topo.validate()?;
        Ok(topo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn qemu_order_and_apic_ids() {
        let spec = SyntheticSpec {
            nodes: 2,
            ..SyntheticSpec::simple(2, 2, 2)
        };
        let t = Topology::synthetic(&spec).unwrap();
        assert_eq!(t.nr_cpus(), 8);
        let ids: Vec<_> = t.cpus.iter().map(|c| c.apic_id).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 5, 6, 7]);
        let nodes: Vec<_> = t.cpus.iter().map(|c| c.node).collect();
        assert_eq!(nodes, [0, 0, 0, 0, 1, 1, 1, 1]);
        assert_eq!(format!("{}", t.smt_mask(5)), "4-5");
        assert_eq!(format!("{}", t.llc_mask(5)), "4-7");
        assert_eq!(format!("{}", t.package_mask(1)), "0-3");
        assert_eq!(t.distance, vec![vec![10, 20], vec![20, 10]]);
        // 3 cores per die need 2 bits: APIC ids have holes like QEMU's.
        let t = Topology::synthetic(&SyntheticSpec::simple(2, 3, 1)).unwrap();
        let ids: Vec<_> = t.cpus.iter().map(|c| c.apic_id).collect();
        assert_eq!(ids, [0, 1, 2, 4, 5, 6]);
    }

    #[test]
    fn nodes_split_sockets() {
        let spec = SyntheticSpec {
            nodes: 4,
            ..SyntheticSpec::simple(2, 4, 2)
        };
        let t = Topology::synthetic(&spec).unwrap();
        let nodes: Vec<_> = t.cpus.iter().map(|c| c.node).collect();
        assert_eq!(nodes, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]);
        // The die-wide LLC is split at the node boundary.
        assert_eq!(format!("{}", t.llc_mask(0)), "0-3");
        assert_eq!(format!("{}", t.package_mask(0)), "0-7");
        let bad = SyntheticSpec {
            nodes: 3,
            ..SyntheticSpec::simple(2, 4, 2)
        };
        assert!(matches!(
            Topology::synthetic(&bad),
            Err(TopologyError::InvalidSpec(_))
        ));
    }

    #[test]
    fn llc_groups_and_caches() {
        let spec = SyntheticSpec {
            cpus_per_llc: Some(4),
            ..SyntheticSpec::simple(1, 4, 2)
        };
        let t = Topology::synthetic(&spec).unwrap();
        assert_eq!(format!("{}", t.llc_mask(5)), "4-7");
        let l3: Vec<_> = t.caches.iter().filter(|c| c.level == 3).collect();
        assert_eq!(l3.len(), 2);
        assert_eq!(l3[0].size_bytes, 4 << 20);
        assert_eq!(t.caches.iter().filter(|c| c.level == 1).count(), 8);
        let bad = SyntheticSpec {
            cpus_per_llc: Some(3),
            ..SyntheticSpec::simple(1, 4, 2)
        };
        assert!(Topology::synthetic(&bad).is_err());
    }

    #[test]
    fn rejects_bad_fields() {
        assert!(Topology::synthetic(&SyntheticSpec::simple(0, 1, 1)).is_err());
        assert!(Topology::synthetic(&SyntheticSpec::simple(u32::MAX, 2, 2)).is_err());
        let d = SyntheticSpec {
            nodes: 2,
            distances: Some(vec![vec![10, 5], vec![20, 10]]),
            ..SyntheticSpec::simple(2, 1, 1)
        };
        let e = Topology::synthetic(&d).unwrap_err();
        assert!(format!("{e}").contains("distance 0->1 is 5"), "{e}");
        let d = SyntheticSpec {
            nodes: 2,
            distances: Some(vec![vec![10]]),
            ..SyntheticSpec::simple(2, 1, 1)
        };
        assert!(Topology::synthetic(&d).is_err());
    }

    #[test]
    fn bit_widths() {
        assert_eq!(
            [1, 2, 3, 4, 5, 8, 9].map(bits_for_count),
            [0, 1, 2, 2, 3, 3, 4]
        );
        assert_eq!(bits_for_count(0), 0);
    }

    #[test]
    fn max_apic_id_matches_the_last_cpu() {
        for (s, d, c, t) in [(1, 1, 2, 1), (2, 1, 3, 2), (3, 2, 5, 1), (2, 1, 12, 2)] {
            let topo = Topology::synthetic(&SyntheticSpec {
                dies_per_socket: d,
                ..SyntheticSpec::simple(s, c, t)
            })
            .unwrap();
            let last = topo.cpus.iter().map(|c| c.apic_id).max().unwrap();
            assert_eq!(qemu_max_apic_id(s, d, c, t), Some(u64::from(last)));
        }
        // 3 cores take 2 bits: 255 CPUs of 1 socket x 85 dies x 3 cores have ids up to
        // (84 << 2) | 2 = 338.
        assert_eq!(qemu_max_apic_id(1, 85, 3, 1), Some(338));
        assert_eq!(qemu_max_apic_id(0, 1, 1, 1), None);
        assert!(qemu_max_apic_id(u32::MAX, u32::MAX, u32::MAX, u32::MAX).is_some());
    }
}
