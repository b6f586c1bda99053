//! Differential oracles: the project's MADT and CPUID decoders against the
//! `acpi` (5.2) and `raw-cpuid` (11.6) crates, on every captured fixture
//! (`fixtures/`: six QEMU 7.2 machines, two CPUs of an AMD EPYC host) and on
//! synthetic inputs (hand-made MADTs, `SynthCpuid` shapes, two edge cases of
//! real CPUs that the crates cannot take).
//!
//! Both sides must agree on every input the crate gets through. A crate
//! panic is caught with `catch_unwind`, counted and named; the test then
//! checks that exactly the known crate failures happened (docs/topology.md,
//! "Why the project's own parsers", lists them with their cause), so a crate
//! upgrade that fixes or adds one shows up here. The project's decoders must
//! accept every input.
//!
//! `acpi` 5.2 can only be reached through its `AcpiHandler`, whose mapping
//! function is `unsafe`: the handler below "maps" host buffers, which is the
//! one use of `unsafe` in the host tests.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;

use acpi::madt::{Madt as CrateMadt, MadtEntry};
use acpi::{AcpiHandler, PhysicalMapping};
use raw_cpuid::{CacheType, CpuId, CpuIdResult, TopologyType};
use topology::CacheKind;
use topology::acpi::madt::build::{lapic, madt, x2apic};
use topology::acpi::parse_madt;
use topology::cpuid::{self, CpuidEntry, CpuidLeaves, SynthCpuid, TopologySource, Vendor};

macro_rules! fixture {
    ($dir:literal) => {
        (
            $dir,
            include_bytes!(concat!("../fixtures/", $dir, "/APIC.bin")),
            include_str!(concat!("../fixtures/", $dir, "/CPUID-bsp.txt")),
        )
    };
}
/// (fixture directory, MADT, boot-CPU CPUID) of the QEMU captures.
const QEMU: &[(&str, &[u8], &str)] = &[
    fixture!("smp4-1n"),
    fixture!("smp6-max8"),
    fixture!("smp8-2s2c2t-2n"),
    fixture!("smp12-1s2d3c2t"),
    fixture!("smp16-4s4c-4n"),
    fixture!("smp32-amd-2s8c2t-2n"),
];

const EPYC: &[(&str, &str)] = &[
    (
        "host-amd-epyc-kvm/cpu0",
        include_str!("../fixtures/host-amd-epyc-kvm/CPUID-cpu0.txt"),
    ),
    (
        "host-amd-epyc-kvm/cpu1",
        include_str!("../fixtures/host-amd-epyc-kvm/CPUID-cpu1.txt"),
    ),
];

/// Runs `f`, turning a panic into `Err(message)`; the default hook's report
/// of the (expected) panic is silenced for the call.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    r.map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic".into())
    })
}

// ---------------------------------------------------------------- MADT

/// "Maps" physical address = host address: the tables are host buffers.
#[derive(Clone, Copy)]
struct HostMemory;

impl AcpiHandler for HostMemory {
    unsafe fn map_physical_region<T>(&self, phys: usize, size: usize) -> PhysicalMapping<Self, T> {
        let virt = NonNull::new(phys as *mut T).expect("null table address");
        // SAFETY: `phys` is the address of a live host buffer of at least
        // `size` bytes (see `crate_madt`), which outlives the mapping.
        unsafe { PhysicalMapping::new(phys, virt, size, size, *self) }
    }

    fn unmap_physical_region<T>(_region: &PhysicalMapping<Self, T>) {}
}

/// (uid, APIC id, enabled, online-capable, x2APIC entry) of every processor
/// entry in table order, then the local APIC address.
type MadtFacts = (Vec<(u32, u32, bool, bool, bool)>, u64);

/// The project's parse; `Err` when it rejects the table (its error names
/// the entry at fault).
fn our_madt(table: &[u8]) -> Result<MadtFacts, String> {
    let (m, _) = parse_madt(table).map_err(|e| format!("{e:?}"))?;
    let cpus = m
        .cpus
        .iter()
        .map(|c| (c.uid, c.apic_id, c.enabled, c.online_capable, c.x2apic))
        .collect();
    Ok((cpus, m.local_apic_address))
}

fn crate_madt(table: &[u8]) -> MadtFacts {
    // Zero padding after the table: an entry whose length runs past the
    // table end is then read from the padding, not from outside the buffer.
    let mut buf = table.to_vec();
    buf.resize(table.len() + 256, 0);
    // SAFETY: `buf` holds the whole table (and padding) and lives until the
    // end of this function, past the mapping's last use.
    let mapping =
        unsafe { HostMemory.map_physical_region::<CrateMadt>(buf.as_ptr() as usize, table.len()) };
    let m = mapping.get();
    let mut cpus = Vec::new();
    for e in m.entries() {
        match e {
            MadtEntry::LocalApic(e) => {
                let flags = e.flags;
                cpus.push((
                    e.processor_id as u32,
                    e.apic_id as u32,
                    flags & 1 != 0,
                    flags & 2 != 0,
                    false,
                ));
            }
            MadtEntry::LocalX2Apic(e) => {
                let (uid, id, flags) = (e.processor_uid, e.x2apic_id, e.flags);
                cpus.push((uid, id, flags & 1 != 0, flags & 2 != 0, true));
            }
            _ => {}
        }
    }
    let lapic_address = m.local_apic_address;
    (cpus, lapic_address as u64)
}

/// Hand-made MADTs: x2APIC entries, disabled and online-capable CPUs, an
/// entry cut by the table end (last), and whether the crate is known to
/// fail on it.
fn synthetic_madts() -> Vec<(&'static str, Vec<u8>, bool)> {
    let mut truncated = madt(&[lapic(0, 0, 1), lapic(1, 1, 1)]);
    // Drop the last 4 bytes of the second entry; the header length and
    // checksum are rebuilt so only the entry is cut.
    let body = truncated[36..truncated.len() - 4].to_vec();
    truncated = topology::acpi::sdt::build_table(*b"APIC", 3, &body);
    vec![
        (
            "x2apic-mixed",
            madt(&[
                lapic(0, 0, 1),
                x2apic(1, 300, 1),
                x2apic(2, 0x1_0000, 2),
                lapic(3, 7, 0),
            ]),
            false,
        ),
        (
            "disabled-and-online-capable",
            madt(&[
                lapic(0, 0, 1),
                lapic(1, 1, 0),
                lapic(2, 2, 2),
                lapic(3, 3, 3),
            ]),
            false,
        ),
        ("empty", madt(&[]), false),
        // acpi 5.2 subtracts the entry's length from the bytes left without
        // a check: "attempt to subtract with overflow".
        ("entry-cut-by-table-end", truncated, true),
    ]
}

#[test]
fn madt_decoder_agrees_with_the_acpi_crate() {
    let mut inputs: Vec<(String, Vec<u8>, bool)> = QEMU
        .iter()
        .map(|(dir, t, _)| (dir.to_string(), t.to_vec(), false))
        .collect();
    inputs.extend(
        synthetic_madts()
            .into_iter()
            .map(|(n, t, f)| (n.to_string(), t, f))
            // The crate's known failures are overflow panics, which only a
            // build with overflow checks (debug) has: without them the
            // subtraction wraps and its entry walk runs on, allocating
            // without bound (a release `cargo test` died at 12 GB).
            .filter(|(_, _, f)| cfg!(debug_assertions) || !f),
    );
    let (mut agreed, mut failed, mut expected_failures) = (0, Vec::new(), Vec::new());
    for (name, table, known_failure) in &inputs {
        if *known_failure {
            expected_failures.push(name.clone());
        }
        let ours = guarded(|| our_madt(table))
            .unwrap_or_else(|e| panic!("{name}: the project's parser panicked: {e}"));
        match guarded(|| crate_madt(table)) {
            Ok(theirs) => {
                assert_eq!(ours, Ok(theirs), "{name}: MADT decoders disagree");
                agreed += 1;
            }
            Err(msg) => failed.push((name.clone(), msg)),
        }
    }
    let failed_names: Vec<String> = failed.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(
        failed_names, expected_failures,
        "acpi crate failures differ from the known ones: {failed:?}"
    );
    for (name, msg) in &failed {
        assert!(msg.contains("subtract with overflow"), "{name}: {msg}");
    }
    assert_eq!(agreed, inputs.len() - expected_failures.len());
    // Where the crate panics, the project's parser says which entry is cut.
    let err = our_madt(&synthetic_madts()[3].1).unwrap_err();
    assert!(err.contains("EntryTruncated"), "{err}");
}

// ---------------------------------------------------------------- CPUID

/// (level, kind, size, ways, partitions, line, sets, fully associative,
/// sharing shift) of one cache sub-leaf.
type CacheFacts = (u8, char, u64, u32, u32, u32, u64, bool, u32);

/// What both decoders can say about one CPU.
#[derive(Debug, PartialEq, Eq)]
struct CpuFacts {
    vendor: String,
    family: u32,
    model: u32,
    stepping: u32,
    x2apic_id: Option<u32>,
    /// (SMT shift, die shift, package shift) from the extended topology
    /// leaf (0xB / 0x1F) or AMD's 0x8000001E/0x80000008.
    shifts: Option<(u32, u32, u32)>,
    /// Every cache sub-leaf.
    caches: Vec<CacheFacts>,
}

/// ceil(log2(n)), the width of an id field for `n` values.
fn bits_for(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

fn our_cpu(l: &CpuidLeaves) -> CpuFacts {
    let id = cpuid::decode(l).expect("the project's CPUID decoder rejected the leaves");
    let vendor = match id.vendor {
        Vendor::Intel => "GenuineIntel".to_string(),
        Vendor::Amd => "AuthenticAMD".to_string(),
        Vendor::Hygon => "HygonGenuine".to_string(),
        Vendor::Other(v) => String::from_utf8_lossy(&v).into_owned(),
    };
    let shifts = match id.layout.source {
        TopologySource::Leaf0B | TopologySource::Leaf1F | TopologySource::AmdExtended => Some((
            id.layout.smt_shift,
            id.layout.die_shift,
            id.layout.pkg_shift,
        )),
        _ => None,
    };
    let caches = id
        .caches
        .iter()
        .map(|c| {
            let kind = match c.kind {
                CacheKind::Data => 'd',
                CacheKind::Instruction => 'i',
                CacheKind::Unified => 'u',
            };
            (
                c.level,
                kind,
                c.size_bytes,
                c.ways,
                c.partitions,
                c.line_bytes,
                c.sets,
                c.fully_associative,
                c.sharing_shift,
            )
        })
        .collect();
    CpuFacts {
        vendor,
        family: id.family,
        model: id.model,
        stepping: id.stepping,
        x2apic_id: id.x2apic_id,
        shifts,
        caches,
    }
}

/// The same facts through `raw-cpuid`, reading the captured leaves (absent
/// sub-leaves read as zeros, as CPUID returns for an invalid sub-leaf).
/// `source`: where the project's decoder took the layout from, so that the
/// crate is asked the same leaf.
fn crate_cpu(l: &CpuidLeaves, source: TopologySource) -> CpuFacts {
    let read = |eax: u32, ecx: u32| {
        let [eax, ebx, ecx, edx] = l.get(eax, ecx).unwrap_or([0; 4]);
        CpuIdResult { eax, ebx, ecx, edx }
    };
    let c = CpuId::with_cpuid_reader(read);
    let vendor = c.get_vendor_info().expect("leaf 0");
    let f = c.get_feature_info().expect("leaf 1");
    let ext_levels = match source {
        TopologySource::Leaf1F => c.get_extended_topology_info_v2(),
        TopologySource::Leaf0B => c.get_extended_topology_info(),
        _ => None,
    };
    let (x2apic_id, shifts) = if let Some(levels) = ext_levels {
        let levels: Vec<_> = levels.collect();
        let smt = levels
            .iter()
            .find(|l| l.level_type() == TopologyType::SMT)
            .map_or(0, |l| l.shift_right_for_next_apic_id());
        let pkg = levels
            .last()
            .map_or(0, |l| l.shift_right_for_next_apic_id());
        let first_die = levels
            .iter()
            .position(|l| l.level_type() == TopologyType::Die);
        let die = first_die.map_or(pkg, |i| {
            if i == 0 {
                0
            } else {
                levels[i - 1].shift_right_for_next_apic_id()
            }
        });
        (
            levels.first().map(|l| l.x2apic_id()),
            Some((smt, die.max(smt), pkg)),
        )
    } else if source == TopologySource::AmdExtended {
        let t = c.get_processor_topology_info().expect("leaf 0x8000001E");
        let cap = c
            .get_processor_capacity_feature_info()
            .expect("leaf 0x80000008");
        let smt = bits_for(t.threads_per_core() as u64);
        let pkg = match cap.apic_id_size() {
            0 => bits_for(cap.maximum_logical_processors() as u64),
            n => n as u32,
        }
        .max(smt);
        (Some(t.x2apic_id()), Some((smt, pkg, pkg)))
    } else {
        (Some(f.initial_local_apic_id() as u32), None)
    };
    // Linux (and the project) read AMD's cache leaf 0x8000001D only when
    // CPUID says TOPOEXT; raw-cpuid reads it for any AMD CPU whose extended
    // maximum leaf reaches it, so the oracle applies the rule itself.
    let amd_without_topoext = vendor.as_str() == "AuthenticAMD"
        && !c
            .get_extended_processor_and_feature_identifiers()
            .is_some_and(|e| e.has_topology_extensions());
    let caches = c
        .get_cache_parameters()
        .filter(|_| !amd_without_topoext)
        .into_iter()
        .flatten()
        .map(|p| {
            let kind = match p.cache_type() {
                CacheType::Data => 'd',
                CacheType::Instruction => 'i',
                _ => 'u',
            };
            let (ways, parts, line, sets) = (
                p.associativity() as u32,
                p.physical_line_partitions() as u32,
                p.coherency_line_size() as u32,
                p.sets() as u64,
            );
            (
                p.level(),
                kind,
                ways as u64 * parts as u64 * line as u64 * sets,
                ways,
                parts,
                line,
                sets,
                p.is_fully_associative(),
                bits_for(p.max_cores_for_cache() as u64),
            )
        })
        .collect();
    CpuFacts {
        vendor: vendor.as_str().to_string(),
        family: f.family_id() as u32,
        model: f.model_id() as u32,
        stepping: f.stepping_id() as u32,
        x2apic_id,
        shifts,
        caches,
    }
}

fn set(l: &mut CpuidLeaves, leaf: u32, subleaf: u32, regs: [u32; 4]) {
    match l
        .entries
        .iter_mut()
        .find(|e| e.leaf == leaf && e.subleaf == subleaf)
    {
        Some(e) => e.regs = regs,
        None => l.entries.push(CpuidEntry {
            leaf,
            subleaf,
            regs,
        }),
    }
}

/// Synthetic CPUs (`SynthCpuid` shapes) and two edge cases of the SDM that
/// real CPUs report; `true` marks the known crate failures.
fn synthetic_cpus() -> Vec<(String, CpuidLeaves, bool)> {
    let intel = |t, c, d, leaf_1f| SynthCpuid {
        vendor: Vendor::Intel,
        threads_per_core: t,
        cores_per_die: c,
        dies_per_package: d,
        l3_sharing_bits: None,
        leaf_1f,
    };
    let amd = SynthCpuid {
        vendor: Vendor::Amd,
        threads_per_core: 2,
        cores_per_die: 8,
        dies_per_package: 1,
        l3_sharing_bits: Some(3),
        leaf_1f: false,
    };
    let mut out = vec![
        (
            "synth-intel-2t4c".into(),
            intel(2, 4, 1, false).leaves(5),
            false,
        ),
        (
            "synth-intel-1t6c-1f".into(),
            intel(1, 6, 1, true).leaves(3),
            false,
        ),
        (
            "synth-intel-2t3c2d".into(),
            intel(2, 3, 2, false).leaves(9),
            false,
        ),
        ("synth-amd-2t8c".into(), amd.leaves(7), false),
    ];
    // Leaf 0x1F with a "DieGrp" level (type 6, SDM since 2023) above the
    // die: raw-cpuid 11.6 `unreachable!()`s on any level type above 5.
    let mut diegrp = intel(2, 4, 2, true).leaves(0);
    let die = diegrp.get(0x1F, 2).expect("die level of the 2-die shape");
    set(
        &mut diegrp,
        0x1F,
        3,
        [die[0] + 1, die[1] * 2, (6 << 8) | 3, 0],
    );
    set(&mut diegrp, 0x1F, 4, [0, 0, 4, 0]);
    out.push(("leaf-1f-diegrp-level".into(), diegrp, true));
    // AMD 0x8000001E with EBX[15:8] = 0xff (256 threads per core, the
    // field's maximum): raw-cpuid computes `u8 + 1`, "attempt to add with
    // overflow".
    let mut wide = amd.leaves(0);
    let e = wide.get(0x8000_001E, 0).expect("leaf 0x8000001E");
    set(
        &mut wide,
        0x8000_001E,
        0,
        [e[0], (e[1] & !0xff00) | 0xff00, e[2], e[3]],
    );
    // Only with overflow checks (debug builds): without them the sum wraps
    // to 0 and the crate goes on to allocate without bound (a release
    // `cargo test` was OOM-killed at 23 GB), so there is no failure to
    // compare, only a machine to take down.
    if cfg!(debug_assertions) {
        out.push(("amd-0x8000001e-255-threads-field".into(), wide, true));
    }
    out
}

#[test]
fn cpuid_decoder_agrees_with_raw_cpuid() {
    let mut inputs: Vec<(String, CpuidLeaves, bool)> = QEMU
        .iter()
        .map(|(dir, _, text)| (dir.to_string(), text, false))
        .chain(EPYC.iter().map(|(n, text)| (n.to_string(), text, false)))
        .map(|(n, text, f)| (n, CpuidLeaves::from_text(text).unwrap(), f))
        .collect();
    inputs.extend(synthetic_cpus());
    let (mut agreed, mut failed, mut expected_failures) = (0, Vec::new(), Vec::new());
    for (name, leaves, known_failure) in &inputs {
        if *known_failure {
            expected_failures.push(name.clone());
        }
        let ours = guarded(|| our_cpu(leaves))
            .unwrap_or_else(|e| panic!("{name}: the project's decoder panicked: {e}"));
        let source = cpuid::decode(leaves).unwrap().layout.source;
        match guarded(|| crate_cpu(leaves, source)) {
            Ok(theirs) => {
                assert_eq!(ours, theirs, "{name}: CPUID decoders disagree");
                agreed += 1;
            }
            Err(msg) => failed.push((name.clone(), msg)),
        }
    }
    let failed_names: Vec<String> = failed.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(
        failed_names, expected_failures,
        "raw-cpuid failures differ from the known ones: {failed:?}"
    );
    let cause = |name: &str| &failed.iter().find(|(n, _)| n == name).unwrap().1;
    assert!(
        cause("leaf-1f-diegrp-level").contains("unreachable"),
        "{failed:?}"
    );
    if cfg!(debug_assertions) {
        assert!(
            cause("amd-0x8000001e-255-threads-field").contains("add with overflow"),
            "{failed:?}"
        );
    }
    assert_eq!(agreed, inputs.len() - expected_failures.len());
    // Every captured fixture went through both decoders.
    assert!(agreed >= QEMU.len() + EPYC.len());
}
