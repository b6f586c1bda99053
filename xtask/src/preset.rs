//! Named machine shapes (`--topology NAME`) mirroring the machines of the
//! seed threads in `shared/seeds/`, plus the small default. What QEMU cannot
//! mimic (cache sizes, clock speed, real SLIT values of the originals) is
//! listed in `docs/topology.md`.

use crate::machine::Machine;

/// A named machine shape.
#[derive(Clone, Debug)]
pub struct Preset {
    pub name: &'static str,
    /// The original machine and the seed that used it.
    pub mirrors: &'static str,
    pub sockets: u32,
    /// Dies per socket (each with its own L3 in QEMU and the simulator).
    pub dies: u32,
    /// Cores per die.
    pub cores: u32,
    pub threads: u32,
    pub nodes: u32,
    /// SLIT distance between nodes on different sockets (local is 10).
    pub remote_distance: u32,
    /// SLIT distance between two nodes of one socket (when a socket has
    /// several nodes).
    pub package_distance: u32,
    pub memory_mib: u32,
}

/// Every preset; the first is the default of `cargo xtask run`.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "default",
        mirrors: "small default: 2 sockets x 2 cores x 2 threads, 2 nodes (SMT, MC, NUMA levels)",
        sockets: 2,
        dies: 1,
        cores: 2,
        threads: 2,
        nodes: 2,
        remote_distance: 21,
        package_distance: 21,
        memory_mib: 512,
    },
    Preset {
        name: "xeon-e7-8870v4",
        mirrors: "4-socket 80-core/160-thread Xeon E7-8870 v4 (seed 000: NAS on all 160 threads)",
        sockets: 4,
        dies: 1,
        cores: 20,
        threads: 2,
        nodes: 4,
        remote_distance: 21,
        package_distance: 21,
        memory_mib: 2048,
    },
    Preset {
        name: "2n48-llc24",
        mirrors: "x86, 48 CPUs, 2 nodes, 24 CPUs per LLC (seed 001: idle-core tracking)",
        sockets: 2,
        dies: 1,
        cores: 12,
        threads: 2,
        nodes: 2,
        remote_distance: 21,
        package_distance: 21,
        memory_mib: 1024,
    },
    Preset {
        name: "4n192-llc48",
        mirrors: "192 CPUs, 4 nodes, 48 CPUs per LLC (seed 001: idle-core tracking)",
        sockets: 4,
        dies: 1,
        cores: 24,
        threads: 2,
        nodes: 4,
        remote_distance: 21,
        package_distance: 21,
        memory_mib: 2048,
    },
    Preset {
        name: "2s48-smt",
        mirrors: "2-socket 48-CPU Xeon with SMT: SMT, MC, NUMA levels (seed 002: idlest group)",
        sockets: 2,
        dies: 1,
        cores: 12,
        threads: 2,
        nodes: 2,
        remote_distance: 20,
        package_distance: 20,
        memory_mib: 1024,
    },
    Preset {
        name: "2s8-nosmt",
        mirrors: "2-socket 8-CPU Xeon without SMT: MC and DIE/PKG levels, one node (seed 002)",
        sockets: 2,
        dies: 1,
        cores: 4,
        threads: 1,
        nodes: 1,
        remote_distance: 20,
        package_distance: 20,
        memory_mib: 512,
    },
    Preset {
        name: "2s384-smt",
        mirrors: "2-socket 384-CPU server, 2 x 96 cores x 2 threads, one node and one L3 per \
                  socket (e.g. 2x Xeon 6972P, SNC off); APIC ids beyond 255: x2APIC, QEMU >= 9",
        sockets: 2,
        dies: 1,
        cores: 96,
        threads: 2,
        nodes: 2,
        remote_distance: 21,
        package_distance: 21,
        memory_mib: 4096,
    },
    Preset {
        name: "2s2d224-llc56",
        mirrors: "2-socket 224-CPU server with 2 dies per socket, L3 and a NUMA node per die, \
                  2 x 2 x 28 cores x 2 threads (2x Xeon Platinum 9282, Cascade Lake-AP); \
                  SLIT nominal: 12 between a socket's dies, 21 across sockets",
        sockets: 2,
        dies: 2,
        cores: 28,
        threads: 2,
        nodes: 4,
        remote_distance: 21,
        package_distance: 12,
        memory_mib: 2048,
    },
];

/// Looks a preset up by name.
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// Names of all presets, for messages.
pub fn names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Preset {
    /// The machine this preset describes.
    pub fn machine(&self) -> Machine {
        let n = self.nodes as usize;
        // Nodes split sockets (or sockets nodes) in order, as --numa-nodes does.
        let socket_of = |node: usize| node * self.sockets as usize / n;
        let distances = (n > 1).then(|| {
            (0..n)
                .map(|i| {
                    (0..n)
                        .map(|j| match (i == j, socket_of(i) == socket_of(j)) {
                            (true, _) => 10,
                            (false, true) => self.package_distance,
                            (false, false) => self.remote_distance,
                        })
                        .collect()
                })
                .collect()
        });
        Machine {
            sockets: self.sockets,
            dies: self.dies,
            cores: self.cores,
            threads: self.threads,
            numa_nodes: self.nodes,
            memory_mib: self.memory_mib,
            distances,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_valid_and_sized_as_their_originals() {
        for p in PRESETS {
            p.machine()
                .validate()
                .unwrap_or_else(|e| panic!("{}: {e}", p.name));
        }
        assert_eq!(find("xeon-e7-8870v4").unwrap().machine().cpus(), 160);
        assert_eq!(find("4n192-llc48").unwrap().machine().cpus(), 192);
        let m = find("2n48-llc24").unwrap().machine();
        assert_eq!((m.cpus(), m.numa_nodes, m.cpus() / m.sockets), (48, 2, 24));
        assert_eq!(find("2s8-nosmt").unwrap().machine().cpus(), 8);
        let m = find("2s384-smt").unwrap().machine();
        assert_eq!((m.cpus(), m.sockets, m.numa_nodes), (384, 2, 2));
        let m = find("2s2d224-llc56").unwrap().machine();
        assert_eq!((m.cpus(), m.sockets * m.dies, m.numa_nodes), (224, 4, 4));
        // Nodes 0-1 are socket 0's dies, 2-3 socket 1's.
        let d = m.distances.unwrap();
        assert_eq!(d[0], vec![10, 12, 21, 21]);
        assert_eq!(d[3], vec![21, 21, 12, 10]);
        assert_eq!(PRESETS[0].name, "default");
        assert!(find("nope").is_none());
    }
}
