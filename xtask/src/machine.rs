//! The emulated machine's shape: CPU count and topology, NUMA nodes, memory.
//! Validated here so a bad combination is a clear error before QEMU starts.

use anyhow::{Result, bail, ensure};

/// Highest xAPIC id (255 is the broadcast id); above it a machine needs x2APIC.
pub const MAX_APIC_ID: u64 = 254;

/// CPUs the kernel supports (its `MAX_CPUS`).
pub const MAX_KERNEL_CPUS: u32 = 1024;

/// What QEMU should emulate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    pub sockets: u32,
    pub dies: u32,
    pub cores: u32,
    pub threads: u32,
    pub numa_nodes: u32,
    pub memory_mib: u32,
    /// Node-to-node SLIT distances; `None` lets QEMU use 10 local / 20 remote.
    pub distances: Option<Vec<Vec<u32>>>,
}

impl Default for Machine {
    fn default() -> Self {
        Machine {
            sockets: 1,
            dies: 1,
            cores: 2,
            threads: 1,
            numa_nodes: 1,
            memory_mib: 512,
            distances: None,
        }
    }
}

impl Machine {
    /// Total logical CPUs, saturating at `u32::MAX` (see [`Machine::checked_cpus`]).
    /// The shape in words, e.g. `8 CPUs = 2 sockets x 1 dies x 2 cores x 2
    /// threads, 2 NUMA nodes`.
    pub fn shape(&self) -> String {
        format!(
            "{} CPUs = {} sockets x {} dies x {} cores x {} threads, {} NUMA nodes",
            self.cpus(),
            self.sockets,
            self.dies,
            self.cores,
            self.threads,
            self.numa_nodes
        )
    }

    pub fn cpus(&self) -> u32 {
        self.checked_cpus().unwrap_or(u32::MAX)
    }

    /// Total logical CPUs, `None` when the product overflows.
    pub fn checked_cpus(&self) -> Option<u32> {
        self.sockets
            .checked_mul(self.dies)?
            .checked_mul(self.cores)?
            .checked_mul(self.threads)
    }

    /// Memory of each NUMA node in MiB: an even split, the remainder spread one MiB
    /// at a time over the first nodes (QEMU takes per-node sizes, which must add up
    /// to `-m`). E.g. 512 MiB over 3 nodes: 171, 171, 170.
    pub fn node_memory_mib(&self) -> Vec<u32> {
        let n = self.numa_nodes.max(1);
        let (base, extra) = (self.memory_mib / n, self.memory_mib % n);
        (0..n).map(|i| base + u32::from(i < extra)).collect()
    }

    /// Checks the shape QEMU 7.2 (TCG, no x2APIC) can emulate.
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [
            ("sockets", self.sockets),
            ("dies", self.dies),
            ("cores", self.cores),
            ("threads", self.threads),
        ] {
            ensure!(v >= 1, "--{name} must be at least 1");
        }
        let product = u128::from(self.sockets)
            * u128::from(self.dies)
            * u128::from(self.cores)
            * u128::from(self.threads);
        // QEMU numbers APIC ids with ceil(log2(count)) bits per level, so a count that
        // is not a power of two leaves gaps: the highest id, not the count, must fit.
        let max_apic =
            topology::qemu_max_apic_id(self.sockets, self.dies, self.cores, self.threads)
                .unwrap_or(u64::MAX);
        // Above MAX_APIC_ID the machine needs x2APIC, which depends on the
        // QEMU version (`qemu_version::check`); here only the kernel's limit.
        ensure!(
            product <= MAX_KERNEL_CPUS as u128 && max_apic < u64::from(u32::MAX),
            "--sockets {} x --dies {} x --cores {} x --threads {} = {product} CPUs: the kernel \
             supports at most {MAX_KERNEL_CPUS} (kernel/src/arch/percpu.rs MAX_CPUS); use \
             --backend sim for up to 1024 simulated CPUs",
            self.sockets,
            self.dies,
            self.cores,
            self.threads
        );
        let cpus = self.cpus();
        ensure!(self.numa_nodes >= 1, "--numa-nodes must be at least 1");
        ensure!(
            cpus.is_multiple_of(self.numa_nodes),
            "{cpus} CPUs cannot be split evenly over {} NUMA nodes",
            self.numa_nodes
        );
        ensure!(
            self.memory_mib >= 128,
            "--memory must be at least 128 (MiB)"
        );
        ensure!(
            self.memory_mib >= self.numa_nodes,
            "--memory {} MiB is less than 1 MiB for each of --numa-nodes {}",
            self.memory_mib,
            self.numa_nodes
        );
        if let Some(d) = &self.distances {
            let n = self.numa_nodes as usize;
            if d.len() != n || d.iter().any(|row| row.len() != n) {
                bail!("distance matrix must be {n}x{n} for {n} NUMA nodes");
            }
            for (i, row) in d.iter().enumerate() {
                ensure!(
                    row[i] == 10,
                    "distance from node {i} to itself must be 10, not {}",
                    row[i]
                );
                for (j, &v) in row.iter().enumerate() {
                    ensure!(
                        i == j || (11..=254).contains(&v),
                        "distance {i}->{j} = {v} must be in 11..=254"
                    );
                }
            }
        }
        Ok(())
    }

    /// The `-smp`, `-m` and `-numa` arguments for this machine.
    pub fn qemu_args(&self) -> Vec<String> {
        let mut args = vec![
            "-smp".to_string(),
            format!(
                "{},sockets={},dies={},cores={},threads={}",
                self.cpus(),
                self.sockets,
                self.dies,
                self.cores,
                self.threads
            ),
            "-m".to_string(),
            format!("{}M", self.memory_mib),
        ];
        if self.numa_nodes > 1 {
            let per_node = self.cpus() / self.numa_nodes;
            for (n, mem) in (0..self.numa_nodes).zip(self.node_memory_mib()) {
                args.push("-object".into());
                args.push(format!("memory-backend-ram,id=mem{n},size={mem}M"));
                args.push("-numa".into());
                let first = n * per_node;
                args.push(format!(
                    "node,nodeid={n},cpus={}-{},memdev=mem{n}",
                    first,
                    first + per_node - 1
                ));
            }
            if let Some(d) = &self.distances {
                for (i, row) in d.iter().enumerate() {
                    for (j, v) in row.iter().enumerate() {
                        if i != j {
                            args.push("-numa".into());
                            args.push(format!("dist,src={i},dst={j},val={v}"));
                        }
                    }
                }
            }
        }
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        Machine::default().validate().unwrap();
        assert_eq!(Machine::default().cpus(), 2);
    }

    #[test]
    fn rejects_bad_shapes() {
        let m = Machine {
            sockets: 2,
            cores: 64,
            threads: 2,
            ..Machine::default()
        };
        // 256 CPUs need x2APIC: the machine is valid, the QEMU version
        // decides (qemu_version::check); the kernel's limit is 1024.
        m.validate().unwrap();
        let m = Machine {
            sockets: 2,
            cores: 512,
            threads: 2,
            ..Machine::default()
        };
        assert!(
            m.validate()
                .unwrap_err()
                .to_string()
                .contains("at most 1024")
        );
        let m = Machine {
            cores: 3,
            numa_nodes: 2,
            ..Machine::default()
        };
        assert!(
            m.validate()
                .unwrap_err()
                .to_string()
                .contains("split evenly")
        );
        let m = Machine {
            numa_nodes: 2,
            distances: Some(vec![vec![10, 20]]),
            ..Machine::default()
        };
        assert!(m.validate().unwrap_err().to_string().contains("2x2"));
        let m = Machine {
            threads: 0,
            ..Machine::default()
        };
        assert!(m.validate().is_err());
    }

    #[test]
    fn numa_args_split_cpus_and_memory() {
        let m = Machine {
            sockets: 2,
            cores: 2,
            threads: 2,
            numa_nodes: 2,
            distances: Some(vec![vec![10, 21], vec![21, 10]]),
            ..Machine::default()
        };
        m.validate().unwrap();
        let a = m.qemu_args().join(" ");
        assert!(
            a.contains("-smp 8,sockets=2,dies=1,cores=2,threads=2"),
            "{a}"
        );
        assert!(a.contains("node,nodeid=1,cpus=4-7,memdev=mem1"), "{a}");
        assert!(a.contains("memory-backend-ram,id=mem0,size=256M"), "{a}");
        assert!(a.contains("dist,src=0,dst=1,val=21"), "{a}");
    }

    #[test]
    fn memory_split_unevenly_when_it_must() {
        let m = Machine {
            sockets: 3,
            cores: 1,
            numa_nodes: 3,
            ..Machine::default()
        };
        m.validate().unwrap();
        assert_eq!(m.node_memory_mib(), vec![171, 171, 170]);
        let a = m.qemu_args().join(" ");
        assert!(a.contains("id=mem0,size=171M"), "{a}");
        assert!(a.contains("id=mem2,size=170M"), "{a}");
        assert!(a.contains("-m 512M"), "{a}");
        let m = Machine {
            memory_mib: 130,
            sockets: 255,
            cores: 1,
            numa_nodes: 255,
            ..Machine::default()
        };
        let e = m.validate().unwrap_err().to_string();
        assert!(e.contains("less than 1 MiB"), "{e}");
    }

    #[test]
    fn apic_id_limit_is_on_the_highest_id() {
        // 3 x 80 = 240 CPUs, but 80 cores take 7 bits: the last id is (2 << 7) | 79.
        let m = Machine {
            sockets: 3,
            cores: 80,
            ..Machine::default()
        };
        m.validate().unwrap();
        let max = topology::qemu_max_apic_id(3, 1, 80, 1).unwrap();
        let qemu72 = crate::qemu_version::Version {
            major: 7,
            minor: 2,
            micro: 0,
        };
        let e = crate::qemu_version::check(qemu72, max, 1, false, m.cpus())
            .unwrap_err()
            .to_string();
        assert!(e.contains("highest APIC id QEMU would give is 335"), "{e}");
        // 2 x 127 = 254 CPUs with ids 0..=253 fit.
        let m = Machine {
            sockets: 2,
            cores: 127,
            ..Machine::default()
        };
        m.validate().unwrap();
        // Overflowing products are refused, not a panic.
        let m = Machine {
            sockets: 65536,
            cores: 65536,
            ..Machine::default()
        };
        assert!(
            m.validate()
                .unwrap_err()
                .to_string()
                .contains("4294967296 CPUs")
        );
        assert_eq!(m.cpus(), u32::MAX);
    }
}
