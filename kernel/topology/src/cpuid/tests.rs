//! Unit tests of CPUID decoding: every topology source, caches, fallbacks.

use super::*;
use crate::topo::CacheKind;
use crate::warning::Warning;

fn intel(threads: u32, cores: u32, dies: u32) -> SynthCpuid {
    SynthCpuid {
        vendor: Vendor::Intel,
        threads_per_core: threads,
        cores_per_die: cores,
        dies_per_package: dies,
        l3_sharing_bits: None,
        leaf_1f: false,
    }
}

/// Replays stored leaves as a CPUID function (missing leaves read as zeros).
fn replay(l: &CpuidLeaves) -> impl FnMut(u32, u32) -> [u32; 4] + '_ {
    |leaf, sub| l.get(leaf, sub).unwrap_or([0; 4])
}

#[test]
fn intel_leaf_b() {
    let s = intel(2, 4, 1);
    let apic = s.apic_id(1, 0, 3, 1);
    assert_eq!(apic, 15);
    let id = decode(&collect(replay(&s.leaves(apic)))).unwrap();
    assert_eq!(id.vendor, Vendor::Intel);
    assert_eq!((id.family, id.model, id.stepping), (6, 0x55, 4));
    assert_eq!(id.x2apic_id, Some(15));
    assert_eq!(
        id.layout,
        ApicLayout {
            smt_shift: 1,
            die_shift: 3,
            pkg_shift: 3,
            source: TopologySource::Leaf0B
        }
    );
    assert_eq!(
        (
            id.layout.thread_field(apic),
            id.layout.core_key(apic),
            id.layout.pkg_key(apic)
        ),
        (1, 7, 1)
    );
    assert!(id.warnings.is_empty(), "{:?}", id.warnings);
    let kinds: Vec<_> = id.caches.iter().map(|c| (c.level, c.kind)).collect();
    assert_eq!(
        kinds,
        [
            (1, CacheKind::Data),
            (1, CacheKind::Instruction),
            (2, CacheKind::Unified),
            (3, CacheKind::Unified)
        ]
    );
    assert_eq!(id.caches[0].size_bytes, 32 << 10);
    assert_eq!(id.caches[2].size_bytes, 1 << 20);
    let llc = id.llc().unwrap();
    assert_eq!(
        (llc.level, llc.size_bytes, llc.sharing_shift),
        (3, 8 << 20, 3)
    );
}

#[test]
fn intel_leaf_1f_dies() {
    let s = intel(2, 3, 2);
    let apic = s.apic_id(0, 1, 2, 0);
    assert_eq!(apic, 0b1100);
    let id = decode(&collect(replay(&s.leaves(apic)))).unwrap();
    assert_eq!(
        id.layout,
        ApicLayout {
            smt_shift: 1,
            die_shift: 3,
            pkg_shift: 4,
            source: TopologySource::Leaf1F
        }
    );
    assert_eq!(id.layout.die_key(apic), 1);
    assert_eq!(
        (id.smt_id(), id.core_id(), id.die_id(), id.package_id()),
        (Some(0), Some(2), Some(1), Some(0))
    );
    let apic = s.apic_id(3, 1, 1, 1);
    let id = decode(&collect(replay(&s.leaves(apic)))).unwrap();
    assert_eq!(
        (id.smt_id(), id.core_id(), id.die_id(), id.package_id()),
        (Some(1), Some(1), Some(1), Some(3))
    );
}

#[test]
fn amd_topoext() {
    let s = SynthCpuid {
        vendor: Vendor::Amd,
        l3_sharing_bits: Some(3),
        ..intel(2, 8, 1)
    };
    let apic = s.apic_id(1, 0, 5, 1);
    let id = decode(&collect(replay(&s.leaves(apic)))).unwrap();
    assert_eq!(id.family, 0x17);
    assert_eq!(id.x2apic_id, Some(apic));
    assert_eq!(
        id.layout,
        ApicLayout {
            smt_shift: 1,
            die_shift: 4,
            pkg_shift: 4,
            source: TopologySource::AmdExtended
        }
    );
    assert_eq!(id.llc().map(|c| c.sharing_shift), Some(3));
    assert!(id.warnings.is_empty(), "{:?}", id.warnings);
}

#[test]
fn legacy_and_unknown() {
    // Intel without 0xB: leaf 1 logical count 8, leaf 4 says 4 cores -> 2 threads.
    let mut l = intel(2, 4, 1).leaves(5);
    l.entries.retain(|e| e.leaf != 0xB);
    let id = decode(&l).unwrap();
    assert_eq!(
        id.layout,
        ApicLayout {
            smt_shift: 1,
            die_shift: 3,
            pkg_shift: 3,
            source: TopologySource::Legacy
        }
    );
    assert_eq!(id.x2apic_id, Some(5));
    assert!(id.warnings.contains(&Warning::LegacyTopology));

    let s = SynthCpuid {
        vendor: Vendor::Other(*b"SchedLabCPU!"),
        ..intel(1, 1, 1)
    };
    let id = decode(&collect(replay(&s.leaves(3)))).unwrap();
    assert!(id.caches.is_empty());
    assert_eq!(id.layout.source, TopologySource::Legacy);
    assert_eq!((id.layout.smt_shift, id.layout.pkg_shift), (0, 0));
    assert!(matches!(id.warnings[0], Warning::UnknownVendor { .. }));
    assert!(id.warnings.contains(&Warning::NoCacheLeaf));
    assert_eq!(
        alloc::format!("{}", id.warnings[0]),
        "CPUID: unknown vendor \"SchedLabCPU!\"; only vendor-neutral leaves used"
    );

    // Only leaf 0.
    let l = CpuidLeaves {
        entries: alloc::vec![CpuidEntry {
            leaf: 0,
            subleaf: 0,
            regs: [0, 0, 0, 0]
        }],
    };
    let id = decode(&l).unwrap();
    assert_eq!(id.layout.source, TopologySource::None);
    assert_eq!(id.x2apic_id, None);
    assert!(id.warnings.contains(&Warning::NoTopologyLeaf));
    assert_eq!(decode(&CpuidLeaves::default()), Err(CpuidError::NoLeaf0));
}

#[test]
fn bad_shift_and_huge_fields() {
    let mut l = intel(2, 4, 1).leaves(0);
    // Core level shift below the SMT shift.
    for e in l
        .entries
        .iter_mut()
        .filter(|e| e.leaf == 0xB && e.subleaf == 1)
    {
        e.regs[0] = 0;
    }
    let id = decode(&l).unwrap();
    assert!(id.warnings.contains(&Warning::BadTopologyShift {
        leaf: 0xB,
        subleaf: 1
    }));
    assert_eq!(id.layout.pkg_shift, 1);
    // Maximal cache fields: no overflow, 32-bit shifts tolerated.
    for e in l
        .entries
        .iter_mut()
        .filter(|e| e.leaf == 4 && e.subleaf == 0)
    {
        e.regs = [!0x1c, u32::MAX, u32::MAX, 0];
    }
    for e in l.entries.iter_mut().filter(|e| e.leaf == 0xB) {
        e.regs[0] |= 0x1f;
    }
    let id = decode(&l).unwrap();
    assert_eq!(id.caches[0].sets, 1 << 32);
    assert_eq!(id.layout.pkg_shift, 31);
    assert_eq!(id.layout.pkg_key(u32::MAX), 1);
    let wide = ApicLayout {
        smt_shift: 32,
        die_shift: 40,
        pkg_shift: 99,
        source: TopologySource::None,
    };
    assert_eq!(
        (
            wide.core_key(u32::MAX),
            wide.pkg_key(7),
            wide.thread_field(u32::MAX)
        ),
        (0, 0, u32::MAX)
    );
    let narrow = ApicLayout {
        smt_shift: 0,
        ..wide
    };
    assert_eq!(narrow.thread_field(u32::MAX), 0);
}

#[test]
fn synth_never_panics_on_absurd_shapes() {
    for vendor in [Vendor::Intel, Vendor::Amd, Vendor::Other(*b"SchedLabCPU!")] {
        for (t, c, d) in [(0, 0, 0), (u32::MAX, u32::MAX, u32::MAX), (1 << 31, 3, 1)] {
            let s = SynthCpuid {
                vendor,
                threads_per_core: t,
                cores_per_die: c,
                dies_per_package: d,
                l3_sharing_bits: Some(u32::MAX),
                leaf_1f: true,
            };
            let apic = s.apic_id(u32::MAX, u32::MAX, u32::MAX, 1);
            assert!(decode(&s.leaves(apic)).is_ok());
        }
    }
}
