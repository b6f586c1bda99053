//! Fuzz-style property tests: every parser and `assemble` on arbitrary bytes and on
//! mutations (truncation, byte flips, length-field corruption, with and without a
//! repaired checksum) of valid tables — real QEMU captures and hand-made ones. The only
//! acceptable outcomes are `Ok` or `Err`; a panic fails the test.

use proptest::prelude::*;
use topology::acpi::madt::build::{lapic, madt, x2apic};
use topology::acpi::sdt::{build_table, fix_checksum};
use topology::acpi::slit::build_slit;
use topology::acpi::srat::build::{cpu, memory, srat, x2cpu};
use topology::acpi::{self, Firmware, MemoryImage, PhysRead};
use topology::cpuid::{self, CpuidEntry, CpuidLeaves};
use topology::*;

const CASES: u32 = 256;

fn valid_tables() -> Vec<Vec<u8>> {
    vec![
        include_bytes!("../fixtures/smp8-2s2c2t-2n/APIC.bin").to_vec(),
        include_bytes!("../fixtures/smp8-2s2c2t-2n/SRAT.bin").to_vec(),
        include_bytes!("../fixtures/smp8-2s2c2t-2n/SLIT.bin").to_vec(),
        include_bytes!("../fixtures/smp16-4s4c-4n/APIC.bin").to_vec(),
        include_bytes!("../fixtures/smp16-4s4c-4n/SRAT.bin").to_vec(),
        include_bytes!("../fixtures/smp16-4s4c-4n/SLIT.bin").to_vec(),
        include_bytes!("../fixtures/smp6-max8/APIC.bin").to_vec(),
        include_bytes!("../fixtures/smp4-1n/RSDT.bin").to_vec(),
        madt(&[
            lapic(0, 0, 1),
            x2apic(1, 300, 1),
            vec![4, 6, 0xff, 5, 0, 1],
            vec![5, 12, 0, 0, 0, 0, 0xe0, 0xfe, 0, 0, 0, 0],
        ]),
        srat(&[cpu(0, 0, true), x2cpu(300, 1, true), memory(1, 0, 1 << 30)]),
        build_slit(&[vec![10, 21, 31], vec![21, 10, 21], vec![31, 21, 10]]),
    ]
}

/// Runs every parser; returns nothing, panics are the failure mode.
fn parse_all(b: &[u8]) {
    let _ = acpi::validate_sdt(b, acpi::Table::Madt);
    let _ = acpi::parse_madt(b);
    let _ = acpi::parse_srat(b);
    let _ = acpi::parse_slit(b);
    let _ = acpi::parse_rsdp(b);
    let _ = acpi::find_rsdp(b, 0xE0000);
    if let Ok((fw, _)) = Firmware::from_bytes(b, Some(b), Some(b)) {
        drive_assemble(&fw);
    }
}

/// Feeds parsed tables to assemble/domains with synthetic CPUID for the MADT CPUs.
fn drive_assemble(fw: &Firmware) {
    let s = cpuid::SynthCpuid {
        vendor: cpuid::Vendor::Intel,
        threads_per_core: 2,
        cores_per_die: 4,
        dies_per_package: 1,
        l3_sharing_bits: None,
        leaf_1f: false,
    };
    let ids: Vec<_> = fw
        .madt
        .enabled_cpus()
        .take(64)
        .map(|c| (c.apic_id, cpuid::decode(&s.leaves(c.apic_id)).unwrap()))
        .collect();
    if let Ok((t, _)) = assemble(&fw.madt, fw.srat.as_ref(), fw.slit.as_ref(), &ids) {
        let sd = build_sched_domains(&t);
        let _ = sd.to_string();
        let _ = lscpu_table(&t);
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    Flip(usize, u8),
    HeaderLength(u32),
    EntryLength(usize, u8),
    Insert(usize, Vec<u8>),
}

fn apply(mut t: Vec<u8>, muts: &[Mutation], repair: bool) -> Vec<u8> {
    for m in muts {
        let len = t.len().max(1);
        match m {
            Mutation::Truncate(n) => t.truncate(n % len),
            Mutation::Flip(i, x) => {
                if let Some(b) = t.get_mut(i % len) {
                    *b ^= x | 1;
                }
            }
            Mutation::HeaderLength(v) => {
                if t.len() >= 8 {
                    t[4..8].copy_from_slice(&v.to_le_bytes());
                }
            }
            Mutation::EntryLength(i, v) => {
                // Corrupt a byte in the entry area, likely a type or length field.
                let at = 44 + i % len.saturating_sub(44).max(1);
                if let Some(b) = t.get_mut(at) {
                    *b = *v;
                }
            }
            Mutation::Insert(i, bytes) => {
                let at = i % (t.len() + 1);
                t.splice(at..at, bytes.iter().copied());
            }
        }
    }
    if repair && t.len() >= 10 {
        fix_checksum(&mut t, 9);
    }
    t
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, x)| Mutation::Flip(i, x)),
        prop_oneof![any::<u32>(), 0u32..64, 36u32..400].prop_map(Mutation::HeaderLength),
        (
            any::<usize>(),
            prop_oneof![Just(0u8), Just(1), Just(2), any::<u8>()]
        )
            .prop_map(|(i, v)| Mutation::EntryLength(i, v)),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 0..24)
        )
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..600)) {
        parse_all(&b);
    }

    #[test]
    fn arbitrary_body_valid_header(
        sig in prop_oneof![Just(*b"APIC"), Just(*b"SRAT"), Just(*b"SLIT"), Just(*b"RSDT"), Just(*b"XSDT")],
        body in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        // Checksum and length are right, so the parsers get past the header.
        parse_all(&build_table(sig, 1, &body));
    }

    #[test]
    fn entry_soup(entries in proptest::collection::vec(
        (prop_oneof![0u8..=5, Just(9u8), Just(0xA), any::<u8>()], proptest::collection::vec(any::<u8>(), 0..30)),
        0..20,
    )) {
        // Well-formed framing (type, length) around random payloads.
        let mut raw: Vec<Vec<u8>> = Vec::new();
        for (ty, payload) in entries {
            let mut e = vec![ty, (payload.len() + 2) as u8];
            e.extend_from_slice(&payload);
            raw.push(e);
        }
        parse_all(&madt(&raw));
        parse_all(&srat(&raw));
    }

    #[test]
    fn mutated_valid_tables(
        which in any::<prop::sample::Index>(),
        muts in proptest::collection::vec(mutation(), 1..4),
        repair in any::<bool>(),
    ) {
        let tables = valid_tables();
        let t = which.get(&tables).clone();
        parse_all(&apply(t, &muts, repair));
    }

    #[test]
    fn slit_counts(n in any::<u64>(), body in proptest::collection::vec(10u8..40, 0..64)) {
        let mut b = n.to_le_bytes().to_vec();
        b.extend_from_slice(&body);
        let r = acpi::parse_slit(&build_table(*b"SLIT", 1, &b));
        // Only an exact square can succeed.
        prop_assert!(r.is_err() || (n as u128 * n as u128 == body.len() as u128));
    }

    #[test]
    fn rsdt_walk_over_corrupt_memory(
        muts in proptest::collection::vec(mutation(), 0..3),
        target in 0usize..4,
        repair in any::<bool>(),
        extra in proptest::collection::vec((any::<u64>(), proptest::collection::vec(any::<u8>(), 0..64)), 0..3),
    ) {
        // The smp8 capture as guest memory, one of RSDP/RSDT/MADT/SRAT corrupted.
        let layout = include_str!("../fixtures/smp8-2s2c2t-2n/layout.txt");
        let files: [(&str, &[u8]); 5] = [
            ("RSDP", include_bytes!("../fixtures/smp8-2s2c2t-2n/RSDP.bin")),
            ("RSDT", include_bytes!("../fixtures/smp8-2s2c2t-2n/RSDT.bin")),
            ("APIC", include_bytes!("../fixtures/smp8-2s2c2t-2n/APIC.bin")),
            ("SRAT", include_bytes!("../fixtures/smp8-2s2c2t-2n/SRAT.bin")),
            ("SLIT", include_bytes!("../fixtures/smp8-2s2c2t-2n/SLIT.bin")),
        ];
        let mut img = MemoryImage::default();
        let mut rsdp = 0;
        for line in layout.lines().filter(|l| !l.starts_with('#')) {
            let (sig, addr) = line.split_once(' ').unwrap();
            let addr = u64::from_str_radix(addr.trim_start_matches("0x"), 16).unwrap();
            if sig == "RSDP" {
                rsdp = addr;
            }
            if let Some(i) = files.iter().position(|(s, _)| *s == sig) {
                let mut bytes = files[i].1.to_vec();
                if i == target {
                    bytes = apply(bytes, &muts, repair);
                }
                img.regions.push((addr, bytes));
            }
        }
        img.regions.extend(extra);
        if let Ok((tables, _)) = acpi::load_tables(&mut img, rsdp)
            && let Ok((fw, _)) = Firmware::from_tables(&tables)
        {
            drive_assemble(&fw);
        }
        let _ = acpi::scan_bios_area(&mut img);
        let _ = img.read(u64::MAX - 3, 16);
    }

    #[test]
    fn cpuid_arbitrary(
        entries in proptest::collection::vec(
            (prop_oneof![Just(0u32), Just(1), Just(4), Just(0xB), Just(0x1F), Just(0x8000_0000),
                         Just(0x8000_0001), Just(0x8000_0008), Just(0x8000_001D), Just(0x8000_001E), any::<u32>()],
             0u32..6, any::<[u32; 4]>()),
            0..40),
        vendor in prop_oneof![Just(*b"GenuineIntel"), Just(*b"AuthenticAMD"), Just(*b"HygonGenuine"), any::<[u8; 12]>()],
        max_basic in prop_oneof![Just(0x1Fu32), any::<u32>()],
        max_ext in prop_oneof![Just(0x8000_001Fu32), any::<u32>()],
    ) {
        let w = |i: usize| u32::from_le_bytes([vendor[i], vendor[i + 1], vendor[i + 2], vendor[i + 3]]);
        let mut l = CpuidLeaves { entries: vec![
            CpuidEntry { leaf: 0, subleaf: 0, regs: [max_basic, w(0), w(8), w(4)] },
            CpuidEntry { leaf: 0x8000_0000, subleaf: 0, regs: [max_ext, 0, 0, 0] },
        ] };
        l.entries.extend(entries.into_iter().map(|(leaf, subleaf, regs)| CpuidEntry { leaf, subleaf, regs }));
        // Decode the raw set, and what collect() reads from a CPU answering with it.
        let id = cpuid::decode(&l).unwrap();
        let collected = cpuid::collect(|leaf, sub| l.get(leaf, sub).unwrap_or([0; 4]));
        prop_assert!(collected.entries.len() <= 4 + 4 * cpuid::MAX_SUBLEAVES as usize + 4);
        let id2 = cpuid::decode(&collected).unwrap();
        prop_assert_eq!(CpuidLeaves::from_text(&l.to_text()), Some(l.clone()));
        // Whatever the CPUID says, assembling a 4-CPU MADT never panics.
        let (m, _) = acpi::parse_madt(&madt(&[lapic(0, 0, 1), lapic(1, 1, 1), lapic(2, 2, 1), lapic(3, 3, 1)])).unwrap();
        let cpus = vec![(0u32, id.clone()), (1, id2), (2, id)];
        if let Ok((t, _)) = assemble(&m, None, None, &cpus) {
            prop_assert!(t.validate().is_ok());
            let _ = build_sched_domains(&t);
        }
    }
}

/// Arbitrary (mostly invalid) `Topology` values, as a caller could build by hand.
fn any_topology() -> impl Strategy<Value = Topology> {
    (1usize..48, 0usize..6).prop_flat_map(|(n, nodes)| {
        let cpu = (
            0u32..8,
            0u32..4,
            0u32..24,
            0u32..3,
            0u32..(nodes as u32 + 2),
            0u32..8,
            any::<u32>(),
        );
        (
            proptest::collection::vec(cpu, n),
            proptest::collection::vec(
                proptest::collection::vec(prop_oneof![Just(10u32), 0u32..80], 0..7),
                0..7,
            ),
            proptest::collection::vec((0u8..4, proptest::collection::vec(0usize..64, 0..8)), 0..6),
            any::<bool>(),
        )
            .prop_map(move |(cpus, distance, caches, renumber)| Topology {
                cpus: cpus
                    .into_iter()
                    .enumerate()
                    .map(
                        |(i, (package, die, core, thread, node, llc, apic_id))| CpuTopo {
                            cpu: if renumber { (i * 7) % n } else { i },
                            apic_id,
                            package,
                            die,
                            core,
                            thread,
                            node,
                            llc,
                        },
                    )
                    .collect(),
                nr_nodes: nodes,
                distance,
                caches: caches
                    .into_iter()
                    .map(|(level, cpus)| Cache {
                        level,
                        kind: CacheKind::Unified,
                        size_bytes: 1 << 20,
                        line_bytes: 64,
                        ways: 8,
                        cpus: CpuMask::from_cpus(n + (level as usize), cpus),
                    })
                    .collect(),
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn domains_on_arbitrary_topologies(t in any_topology()) {
        let valid = t.validate().is_ok();
        for cfg in [DomainConfig::DEFAULT, DomainConfig::LINUX_6] {
            let sd = build_sched_domains_with(&t, &cfg);
            let _ = sd.to_string();
            for cpu in 0..t.nr_cpus() + 1 {
                let _ = (sd.sd_llc_size(cpu), sd.sd_llc_id(cpu), sd.sd_share_id(cpu), sd.sd_numa(cpu), sd.params_cpu(cpu));
                // For valid topologies every span contains its CPU and nests.
                if valid && cpu < t.nr_cpus() {
                    prop_assert!(sd.fixups().is_empty());
                    let ds = sd.domains(cpu);
                    for (k, d) in ds.iter().enumerate() {
                        prop_assert!(d.span.contains(cpu));
                        prop_assert!(k == 0 || ds[k - 1].span.is_subset(&d.span));
                    }
                }
            }
        }
        let _ = (lscpu_table(&t), numa_table(&t));
    }
}
