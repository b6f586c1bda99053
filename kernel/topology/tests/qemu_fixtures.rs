//! Real ACPI tables and boot-CPU CPUID captured from QEMU 7.2 (q35, SeaBIOS, TCG,
//! `-cpu max,vendor=GenuineIntel`) by `fixtures/capture.py`; each test checks that the
//! parsed result is what QEMU was asked for on its command line (`cmdline.txt`).
//!
//! QEMU gives every vCPU the same CPUID except the APIC-id fields (leaf 1
//! EBX[31:24], leaf 0xB/0x1F EDX, AMD 0x8000001E EAX), so the application processors' leaves are derived
//! from the captured boot-CPU leaves by substituting those fields.

use topology::acpi::{self, Firmware, MemoryImage};
use topology::cpuid::{self, CpuIdentity, CpuidLeaves, TopologySource};
use topology::*;

struct Shape {
    rsdp: &'static [u8],
    rsdt: &'static [u8],
    madt: &'static [u8],
    srat: Option<&'static [u8]>,
    slit: Option<&'static [u8]>,
    others: &'static [(&'static str, &'static [u8])],
    layout: &'static str,
    cpuid: &'static str,
}

macro_rules! shape {
    ($dir:literal, srat) => {
        Shape {
            srat: Some(include_bytes!(concat!("../fixtures/", $dir, "/SRAT.bin"))),
            slit: Some(include_bytes!(concat!("../fixtures/", $dir, "/SLIT.bin"))),
            ..shape!($dir)
        }
    };
    ($dir:literal) => {
        Shape {
            rsdp: include_bytes!(concat!("../fixtures/", $dir, "/RSDP.bin")),
            rsdt: include_bytes!(concat!("../fixtures/", $dir, "/RSDT.bin")),
            madt: include_bytes!(concat!("../fixtures/", $dir, "/APIC.bin")),
            srat: None,
            slit: None,
            others: &[
                (
                    "FACP",
                    include_bytes!(concat!("../fixtures/", $dir, "/FACP.bin")),
                ),
                (
                    "HPET",
                    include_bytes!(concat!("../fixtures/", $dir, "/HPET.bin")),
                ),
                (
                    "MCFG",
                    include_bytes!(concat!("../fixtures/", $dir, "/MCFG.bin")),
                ),
                (
                    "WAET",
                    include_bytes!(concat!("../fixtures/", $dir, "/WAET.bin")),
                ),
            ],
            layout: include_str!(concat!("../fixtures/", $dir, "/layout.txt")),
            cpuid: include_str!(concat!("../fixtures/", $dir, "/CPUID-bsp.txt")),
        }
    };
}

/// Guest memory rebuilt from the captured tables at their captured addresses.
fn memory(s: &Shape) -> (MemoryImage, u64) {
    let mut img = MemoryImage::default();
    let mut rsdp_addr = 0;
    for line in s.layout.lines().filter(|l| !l.starts_with('#')) {
        let (sig, addr) = line.split_once(' ').unwrap();
        let addr = u64::from_str_radix(addr.trim_start_matches("0x"), 16).unwrap();
        let bytes: &[u8] = match sig {
            "RSDP" => {
                rsdp_addr = addr;
                s.rsdp
            }
            "RSDT" => s.rsdt,
            "APIC" => s.madt,
            "SRAT" => s.srat.unwrap(),
            "SLIT" => s.slit.unwrap(),
            other => s.others.iter().find(|(n, _)| *n == other).unwrap().1,
        };
        img.regions.push((addr, bytes.to_vec()));
    }
    (img, rsdp_addr)
}

/// The leaves CPU `apic` reports, derived from the boot CPU's.
fn leaves_for(bsp: &CpuidLeaves, apic: u32) -> CpuidLeaves {
    let mut l = bsp.clone();
    for e in &mut l.entries {
        match e.leaf {
            1 => e.regs[1] = (e.regs[1] & 0x00ff_ffff) | (apic << 24),
            0xB | 0x1F => e.regs[3] = apic,
            0x8000_001E => e.regs[0] = apic,
            _ => {}
        }
    }
    l
}

struct Loaded {
    fw: Firmware,
    topo: Topology,
    warnings: Vec<Warning>,
    bsp: CpuIdentity,
}

fn load(s: &Shape) -> Loaded {
    // Walk RSDP -> RSDT -> tables exactly as the kernel does.
    let (mut img, rsdp_addr) = memory(s);
    let mut bios = vec![0u8; 0x20000];
    let off = (rsdp_addr - 0xE0000) as usize;
    bios[off..off + s.rsdp.len()].copy_from_slice(s.rsdp);
    img.regions.push((0xE0000, bios));
    assert_eq!(acpi::scan_bios_area(&mut img).unwrap(), rsdp_addr);
    let (tables, w) = acpi::load_tables(&mut img, rsdp_addr).unwrap();
    assert!(w.is_empty(), "{w:?}");
    let (fw, w) = Firmware::from_tables(&tables).unwrap();
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(tables.find(*b"APIC"), Some(s.madt));
    assert_eq!(tables.find(*b"SRAT"), s.srat);
    let bsp_leaves = CpuidLeaves::from_text(s.cpuid).unwrap();
    let bsp = cpuid::decode(&bsp_leaves).unwrap();
    let ids: Vec<(u32, CpuIdentity)> = fw
        .madt
        .enabled_cpus()
        .map(|c| {
            (
                c.apic_id,
                cpuid::decode(&leaves_for(&bsp_leaves, c.apic_id)).unwrap(),
            )
        })
        .collect();
    let (topo, warnings) = assemble(&fw.madt, fw.srat.as_ref(), fw.slit.as_ref(), &ids).unwrap();
    Loaded {
        fw,
        topo,
        warnings,
        bsp,
    }
}

fn col(t: &Topology, f: impl Fn(&CpuTopo) -> u32) -> Vec<u32> {
    t.cpus.iter().map(f).collect()
}

fn names(sd: &SchedDomains, cpu: CpuId) -> Vec<&'static str> {
    sd.domains(cpu).iter().map(|d| d.name).collect()
}

#[test]
fn smp8_2_sockets_2_cores_2_threads_2_nodes() {
    let l = load(&shape!("smp8-2s2c2t-2n", srat));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    let t = &l.topo;
    assert_eq!(t.nr_cpus(), 8);
    assert_eq!(col(t, |c| c.apic_id), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(col(t, |c| c.node), [0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(col(t, |c| c.package), [0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(col(t, |c| c.core), [0, 0, 1, 1, 2, 2, 3, 3]);
    assert_eq!(col(t, |c| c.thread), [0, 1, 0, 1, 0, 1, 0, 1]);
    assert_eq!(t.distance, vec![vec![10, 21], vec![21, 10]]);
    assert_eq!(l.bsp.layout.source, TopologySource::Leaf0B);
    assert_eq!((l.bsp.layout.smt_shift, l.bsp.layout.pkg_shift), (1, 2));
    assert_eq!(t.llc_mask(5).to_string(), "4-7");
    // SRAT memory: two 128 MiB nodes (node 0 also holds the low 640 KiB hole entry).
    let srat = l.fw.srat.as_ref().unwrap();
    assert!(
        srat.memory
            .iter()
            .any(|m| m.proximity_domain == 1 && m.enabled)
    );
    let sd = build_sched_domains(t);
    assert_eq!(names(&sd, 0), ["SMT", "MC", "NUMA"]);
    assert_eq!(sd.sd_llc_size(6), 4);
    assert_eq!(sd.domains(6)[2].numa_distance, Some(21));
}

#[test]
fn smp4_one_node_no_srat() {
    let l = load(&shape!("smp4-1n"));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert!(l.fw.srat.is_none() && l.fw.slit.is_none());
    let t = &l.topo;
    assert_eq!(col(t, |c| c.apic_id), [0, 1, 2, 3]);
    assert_eq!(col(t, |c| c.node), [0, 0, 0, 0]);
    assert_eq!(col(t, |c| c.core), [0, 1, 2, 3]);
    assert_eq!(t.distance, vec![vec![10]]);
    assert_eq!(l.fw.madt.io_apics.len(), 1);
    assert_eq!(l.fw.madt.local_apic_address, 0xfee0_0000);
    let sd = build_sched_domains(t);
    assert_eq!(names(&sd, 3), ["MC"]);
    assert_eq!(sd.sd_llc_size(3), 4);
}

#[test]
fn smp16_four_sockets_ring_distances() {
    let l = load(&shape!("smp16-4s4c-4n", srat));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    let t = &l.topo;
    assert_eq!(t.nr_cpus(), 16);
    assert_eq!(col(t, |c| c.apic_id), (0..16).collect::<Vec<_>>());
    assert_eq!(
        col(t, |c| c.node),
        (0..16).map(|i| i / 4).collect::<Vec<_>>()
    );
    assert_eq!(
        t.distance,
        vec![
            vec![10, 20, 30, 20],
            vec![20, 10, 20, 30],
            vec![30, 20, 10, 20],
            vec![20, 30, 20, 10]
        ]
    );
    let sd = build_sched_domains(t);
    assert_eq!(names(&sd, 0), ["MC", "NUMA", "NUMA"]);
    let d = sd.domains(0);
    assert_eq!(d[1].span.to_string(), "0-7,12-15");
    assert_eq!(
        d[2].groups
            .iter()
            .map(|g| g.span.to_string())
            .collect::<Vec<_>>(),
        ["0-7,12-15", "4-15"]
    );
    assert_eq!(sd.sd_numa(0).and_then(|d| d.numa_distance), Some(20));
}

#[test]
fn smp12_two_dies_three_cores_apic_holes() {
    let l = load(&shape!("smp12-1s2d3c2t"));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    let t = &l.topo;
    assert_eq!(
        col(t, |c| c.apic_id),
        [0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13]
    );
    assert_eq!(l.bsp.layout.source, TopologySource::Leaf1F);
    assert_eq!(col(t, |c| c.die), [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]);
    assert_eq!(col(t, |c| c.package), [0; 12]);
    // Same numbering as the synthetic model of the same -smp line.
    let spec = SyntheticSpec {
        dies_per_socket: 2,
        ..SyntheticSpec::simple(1, 3, 2)
    };
    let synth = Topology::synthetic(&spec).unwrap();
    assert_eq!(col(t, |c| c.apic_id), col(&synth, |c| c.apic_id));
    assert_eq!(col(t, |c| c.core), col(&synth, |c| c.core));
    assert_eq!(col(t, |c| c.llc), col(&synth, |c| c.llc));
    let sd = build_sched_domains(t);
    assert_eq!(names(&sd, 7), ["SMT", "MC", "PKG"]);
    assert_eq!(sd.sd_llc_id(7), 6);
}

#[test]
fn smp6_of_8_possible_cpus() {
    let l = load(&shape!("smp6-max8"));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(l.fw.madt.cpus.len(), 8);
    assert_eq!(
        l.fw.madt
            .cpus
            .iter()
            .filter(|c| !c.enabled)
            .map(|c| c.apic_id)
            .collect::<Vec<_>>(),
        [6, 7]
    );
    let t = &l.topo;
    assert_eq!(t.nr_cpus(), 6);
    assert_eq!(col(t, |c| c.package), [0, 0, 0, 0, 1, 1]);
    let sd = build_sched_domains(t);
    assert_eq!(names(&sd, 0), ["MC", "PKG"]);
    assert_eq!(sd.sd_llc_size(0), 4);
    assert_eq!(sd.sd_llc_size(5), 2);
}

#[test]
fn qemu_cpuid_caches() {
    let l = load(&shape!("smp8-2s2c2t-2n", srat));
    let c: Vec<_> = l
        .bsp
        .caches
        .iter()
        .map(|c| (c.level, c.kind, c.size_bytes, c.ways))
        .collect();
    assert_eq!(
        c,
        [
            (1, CacheKind::Data, 32 << 10, 8),
            (1, CacheKind::Instruction, 32 << 10, 8),
            (2, CacheKind::Unified, 4 << 20, 16),
            (3, CacheKind::Unified, 16 << 20, 16),
        ]
    );
    // QEMU 7.2 reports L1 as private to each thread (sharing field 0), L2 per core.
    assert_eq!(
        l.topo
            .caches
            .iter()
            .filter(|c| c.level == 1 && c.kind == CacheKind::Data)
            .count(),
        8
    );
    assert_eq!(l.topo.caches.iter().filter(|c| c.level == 2).count(), 4);
    assert_eq!(l.topo.caches.iter().filter(|c| c.level == 3).count(), 2);
    let table = lscpu_table(&l.topo);
    assert_eq!(
        table.lines().nth(6).unwrap(),
        "  5    1      1   1    2      1 5:5:2:1            5"
    );
}

#[test]
fn smp32_amd_epyc_rome_two_nodes_far() {
    let l = load(&shape!("smp32-amd-2s8c2t-2n", srat));
    assert_eq!(
        (l.bsp.vendor, l.bsp.family, l.bsp.model),
        (cpuid::Vendor::Amd, 0x17, 0x31)
    );
    // QEMU's Rome model also reports leaf 0xB, which Linux 6.x (and we) prefer.
    assert_eq!(l.bsp.layout.source, TopologySource::Leaf0B);
    assert_eq!((l.bsp.layout.smt_shift, l.bsp.layout.pkg_shift), (1, 4));
    // TCG cannot provide TOPOEXT (0x80000001 ECX bit 22 stays clear although asked
    // for), so like Linux we do not trust 0x8000001D: no cache is claimed and each
    // core is its own LLC group, with a warning.
    assert_eq!(l.warnings, [Warning::NoCacheLeaf]);
    assert!(l.bsp.caches.is_empty() && l.topo.caches.is_empty());
    let t = &l.topo;
    assert_eq!(t.nr_cpus(), 32);
    assert_eq!(col(t, |c| c.apic_id), (0..32).collect::<Vec<_>>());
    assert_eq!(
        col(t, |c| c.node),
        (0..32).map(|i| i / 16).collect::<Vec<_>>()
    );
    assert_eq!(
        col(t, |c| c.package),
        (0..32).map(|i| i / 16).collect::<Vec<_>>()
    );
    assert_eq!(
        col(t, |c| c.core),
        (0..32).map(|i| i / 2).collect::<Vec<_>>()
    );
    assert_eq!(
        col(t, |c| c.llc),
        (0..32).map(|i| i / 2).collect::<Vec<_>>()
    );
    assert_eq!(t.distance, vec![vec![10, 32], vec![32, 10]]);
    let sd = build_sched_domains(t);
    assert_eq!(names(&sd, 17), ["SMT", "PKG", "NUMA"]);
    assert_eq!(sd.sd_llc_size(17), 2);
    // 32 > RECLAIM_DISTANCE (30): no wake-affine, fork or exec balancing across nodes.
    let numa = &sd.domains(17)[2];
    assert!(!numa.flags.contains(SD_WAKE_AFFINE) && !numa.flags.contains(SD_BALANCE_FORK));
    assert!(numa.flags.contains(SD_BALANCE_NEWIDLE | SD_SERIALIZE));
}
