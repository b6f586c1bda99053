//! `assemble()` on hand-made tables: numbering, node remapping, distances, x2APIC,
//! AMD and unknown-vendor CPUID, and every inconsistency warning/error.

use topology::acpi::madt::build::{lapic, madt, x2apic};
use topology::acpi::slit::build_slit;
use topology::acpi::srat::build::{cpu, memory, srat, x2cpu};
use topology::acpi::{Firmware, parse_madt, parse_slit, parse_srat};
use topology::cpuid::{self, CpuIdentity, SynthCpuid, Vendor};
use topology::*;

fn intel(threads: u32, cores: u32) -> SynthCpuid {
    SynthCpuid {
        vendor: Vendor::Intel,
        threads_per_core: threads,
        cores_per_die: cores,
        dies_per_package: 1,
        l3_sharing_bits: None,
        leaf_1f: false,
    }
}

fn ids(s: &SynthCpuid, apics: &[u32]) -> Vec<(u32, CpuIdentity)> {
    apics
        .iter()
        .map(|&a| (a, cpuid::decode(&s.leaves(a)).unwrap()))
        .collect()
}

fn col(t: &Topology, f: impl Fn(&CpuTopo) -> u32) -> Vec<u32> {
    t.cpus.iter().map(f).collect()
}

#[test]
fn bsp_first_then_madt_order_and_dense_nodes() {
    // 2 packages x 2 cores x 2 threads; MADT lists package 1 first; BSP is APIC 2.
    let m = madt(&[
        lapic(0, 4, 1),
        lapic(1, 5, 1),
        lapic(2, 6, 1),
        lapic(3, 7, 1),
        lapic(4, 0, 1),
        lapic(5, 1, 1),
        lapic(6, 2, 1),
        lapic(7, 3, 1),
        lapic(8, 8, 0),
    ]);
    let (m, w) = parse_madt(&m).unwrap();
    assert!(w.is_empty());
    // Proximity domains 9 (package 1) and 4 (package 0), listed package 1 first.
    let s = parse_srat(&srat(&[
        cpu(4, 9, true),
        cpu(5, 9, true),
        cpu(6, 9, true),
        cpu(7, 9, true),
        cpu(0, 4, true),
        cpu(1, 4, true),
        cpu(2, 4, true),
        cpu(3, 4, true),
        memory(4, 0, 1 << 30),
        memory(9, 1 << 30, 1 << 30),
        memory(11, 2 << 30, 1 << 30),
    ]))
    .unwrap();
    // SLIT over 12 localities: d(4,9) = 32, d(9,4) = 32.
    let mut mat = vec![vec![20u8; 12]; 12];
    for (i, row) in mat.iter_mut().enumerate() {
        row[i] = 10;
    }
    mat[4][9] = 32;
    mat[9][4] = 32;
    let sl = parse_slit(&build_slit(&mat)).unwrap();
    let s8 = intel(2, 2);
    let mut cpus = ids(&s8, &[2, 0, 1, 3, 4, 5, 6, 7]);
    cpus.truncate(8);
    let (t, w) = assemble(&m, Some(&s), Some(&sl), &cpus).unwrap();
    assert_eq!(
        w,
        [Warning::MemoryOnlyDomain {
            proximity_domain: 11
        }]
    );
    assert_eq!(col(&t, |c| c.apic_id), [2, 4, 5, 6, 7, 0, 1, 3]);
    // Node 0 = domain 9 (first in SRAT), node 1 = domain 4.
    assert_eq!(col(&t, |c| c.node), [1, 0, 0, 0, 0, 1, 1, 1]);
    assert_eq!(col(&t, |c| c.package), [0, 1, 1, 1, 1, 0, 0, 0]);
    assert_eq!(col(&t, |c| c.core), [0, 1, 1, 2, 2, 3, 3, 0]);
    assert_eq!(col(&t, |c| c.thread), [0, 0, 1, 0, 1, 0, 1, 1]);
    assert_eq!(t.distance, vec![vec![10, 32], vec![32, 10]]);
    assert_eq!(t.smt_mask(0).to_string(), "0,7");
    let sd = build_sched_domains(&t);
    assert_eq!(
        sd.domains(0).iter().map(|d| d.name).collect::<Vec<_>>(),
        ["SMT", "MC", "NUMA"]
    );
    // 32 > RECLAIM_DISTANCE: no WAKE_AFFINE at the NUMA level.
    assert!(!sd.domains(0)[2].flags.contains(SD_WAKE_AFFINE));
}

#[test]
fn inconsistencies_are_warnings() {
    let (m, _) = parse_madt(&madt(&[
        lapic(0, 0, 1),
        lapic(1, 1, 1),
        lapic(2, 2, 1),
        lapic(3, 3, 1),
    ]))
    .unwrap();
    let s = parse_srat(&srat(&[
        cpu(0, 0, true),
        cpu(1, 0, true),
        cpu(2, 1, true),
        cpu(7, 1, true),
    ]))
    .unwrap();
    let s4 = intel(1, 4);
    let mut cpus = ids(&s4, &[0, 1, 2]);
    // CPUID for a CPU the MADT does not list, and one reporting another APIC id.
    cpus.push((9, cpuid::decode(&s4.leaves(9)).unwrap()));
    cpus[1].1 = cpuid::decode(&s4.leaves(5)).unwrap();
    let (t, w) = assemble(&m, Some(&s), None, &cpus).unwrap();
    let text: Vec<String> = w.iter().map(|x| x.to_string()).collect();
    assert!(
        text.contains(&"SRAT: processor APIC id 7 has no MADT entry".to_string()),
        "{text:?}"
    );
    assert!(text.contains(
        &"CPUID: no data for APIC id 3; ids derived with the boot CPU's APIC-id layout".to_string()
    ));
    assert!(w.contains(&Warning::CpuNotInSrat { apic_id: 3 }));
    assert!(w.contains(&Warning::CpuidForUnknownCpu { apic_id: 9 }));
    assert!(w.contains(&Warning::ApicIdMismatch {
        listed: 1,
        reported: 5
    }));
    assert!(w.contains(&Warning::NoSlit { nodes: 2 }));
    assert_eq!(col(&t, |c| c.node), [0, 0, 1, 0]);
    assert_eq!(t.distance, vec![vec![10, 20], vec![20, 10]]);
    // The LLC (whole package per CPUID) is split at the node boundary.
    assert!(
        w.iter()
            .any(|x| matches!(x, Warning::LlcSplitByNode { .. })),
        "{w:?}"
    );
    assert_eq!(t.llc_mask(0).to_string(), "0-1,3");
    assert!(t.validate().is_ok());
}

#[test]
fn fatal_errors() {
    let s1 = intel(1, 4);
    let (m, _) = parse_madt(&madt(&[lapic(0, 0, 1), lapic(1, 1, 1), lapic(2, 1, 1)])).unwrap();
    assert_eq!(
        assemble(&m, None, None, &ids(&s1, &[0])).unwrap_err(),
        TopologyError::DuplicateApicId { apic_id: 1 }
    );
    let (m, _) = parse_madt(&madt(&[lapic(0, 0, 1), lapic(1, 1, 0)])).unwrap();
    let e = assemble(&m, None, None, &ids(&s1, &[1])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "MADT: boot CPU APIC id 1 has no enabled processor entry"
    );
    assert_eq!(
        assemble(&m, None, None, &[]).unwrap_err(),
        TopologyError::NoCpuidForBsp { apic_id: 0 }
    );
    let (m, _) = parse_madt(&madt(&[lapic(0, 0, 2)])).unwrap();
    assert_eq!(
        assemble(&m, None, None, &ids(&s1, &[0])).unwrap_err(),
        TopologyError::NoEnabledCpus
    );
}

#[test]
fn x2apic_entries_and_affinity() {
    // APIC ids above 254 need x2APIC entries (QEMU TCG cannot produce them).
    let s = SynthCpuid { ..intel(2, 128) };
    let apics = [0u32, 1, 256, 257];
    let m = madt(&[
        lapic(0, 0, 1),
        lapic(1, 1, 1),
        x2apic(2, 256, 1),
        x2apic(3, 257, 1),
        x2apic(4, 258, 2),
    ]);
    let (m, _) = parse_madt(&m).unwrap();
    assert_eq!(m.cpus.iter().filter(|c| c.online_capable).count(), 1);
    let sr = parse_srat(&srat(&[
        cpu(0, 0, true),
        cpu(1, 0, true),
        x2cpu(256, 1, true),
        x2cpu(257, 1, true),
    ]))
    .unwrap();
    let (t, w) = assemble(&m, Some(&sr), None, &ids(&s, &apics)).unwrap();
    assert_eq!(w, [Warning::NoSlit { nodes: 2 }]);
    assert_eq!(col(&t, |c| c.apic_id), apics);
    assert_eq!(col(&t, |c| c.package), [0, 0, 1, 1]);
    assert_eq!(col(&t, |c| c.node), [0, 0, 1, 1]);
    assert_eq!(col(&t, |c| c.core), [0, 0, 1, 1]);
}

#[test]
fn amd_ccx_llc() {
    // Zen-like: 8 cores x 2 threads per package, L3 per CCX of 4 cores (8 APIC ids).
    let s = SynthCpuid {
        vendor: Vendor::Amd,
        l3_sharing_bits: Some(3),
        ..intel(2, 8)
    };
    let apics: Vec<u32> = (0..16).collect();
    let entries: Vec<Vec<u8>> = apics.iter().map(|&a| lapic(a as u8, a as u8, 1)).collect();
    let (m, _) = parse_madt(&madt(&entries)).unwrap();
    let (t, w) = assemble(&m, None, None, &ids(&s, &apics)).unwrap();
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(
        col(&t, |c| c.llc),
        [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]
    );
    let l3: Vec<String> = t
        .caches
        .iter()
        .filter(|c| c.level == 3)
        .map(|c| c.cpus.to_string())
        .collect();
    assert_eq!(l3, ["0-7", "8-15"]);
    let sd = build_sched_domains(&t);
    assert_eq!(
        sd.domains(9).iter().map(|d| d.name).collect::<Vec<_>>(),
        ["SMT", "MC", "PKG"]
    );
    assert_eq!(sd.sd_llc_size(9), 8);
    assert_eq!(sd.sd_llc_id(9), 8);
}

#[test]
fn unknown_vendor_fallback() {
    let s = SynthCpuid {
        vendor: Vendor::Other(*b"SchedLabCPU!"),
        ..intel(1, 1)
    };
    let apics = [0u32, 1, 2, 3];
    let (m, _) = parse_madt(&madt(&apics.map(|a| lapic(a as u8, a as u8, 1)))).unwrap();
    let (t, w) = assemble(&m, None, None, &ids(&s, &apics)).unwrap();
    assert!(w.iter().any(|x| matches!(x, Warning::UnknownVendor { .. })));
    assert!(w.contains(&Warning::NoCacheLeaf));
    // No fact about sharing: every CPU its own core, package and LLC, no caches.
    assert_eq!(col(&t, |c| c.core), [0, 1, 2, 3]);
    assert_eq!(col(&t, |c| c.package), [0, 1, 2, 3]);
    assert_eq!(col(&t, |c| c.llc), [0, 1, 2, 3]);
    assert!(t.caches.is_empty());
    let sd = build_sched_domains(&t);
    assert_eq!(
        sd.domains(0).iter().map(|d| d.name).collect::<Vec<_>>(),
        ["PKG"]
    );
    assert_eq!(sd.sd_llc_size(0), 1);
}

#[test]
fn broken_srat_and_slit_are_dropped_with_warnings() {
    let m = madt(&[lapic(0, 0, 1)]);
    let mut bad_srat = srat(&[cpu(0, 0, true)]);
    bad_srat[20] = bad_srat[20].wrapping_add(0x3c);
    let bad_slit = build_slit(&[vec![10, 21, 21], vec![21, 10, 21]]);
    let (fw, w) = Firmware::from_bytes(&m, Some(&bad_srat), Some(&bad_slit)).unwrap();
    assert!(fw.srat.is_none() && fw.slit.is_none());
    let text: Vec<String> = w.iter().map(|x| x.to_string()).collect();
    assert_eq!(
        text,
        [
            "SRAT: checksum mismatch (sum 0x3c, expected 0); SRAT ignored, one node assumed",
            "SLIT: locality count 2 needs a 2x2 matrix of 4 bytes, but the table has 6 matrix bytes; SLIT ignored, distances 10 local / 20 remote assumed",
        ]
    );
    // SLIT smaller than the proximity domains used.
    let (m, _) = parse_madt(&madt(&[lapic(0, 0, 1), lapic(1, 1, 1)])).unwrap();
    let sr = parse_srat(&srat(&[cpu(0, 0, true), cpu(1, 3, true)])).unwrap();
    let sl = parse_slit(&build_slit(&[vec![10, 15], vec![15, 10]])).unwrap();
    let (t, w) = assemble(&m, Some(&sr), Some(&sl), &ids(&intel(1, 2), &[0, 1])).unwrap();
    assert!(
        w.contains(&Warning::SlitMissingDomain {
            proximity_domain: 3,
            localities: 2
        }),
        "{w:?}"
    );
    assert_eq!(t.distance, vec![vec![10, 20], vec![20, 10]]);
}
