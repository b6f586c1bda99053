//! Faulty firmware built from a real QEMU capture (fixtures/smp8-2s2c2t-2n: 8 CPUs,
//! 2 nodes): each fault gets a message naming the table, the entry and the field.

use topology::acpi::error::Table;
use topology::acpi::sdt::fix_checksum;
use topology::acpi::srat::build::cpu;
use topology::acpi::{AcpiTables, Firmware, parse_slit, parse_srat};
use topology::cpuid::{self, CpuIdentity, SynthCpuid, Vendor};
use topology::*;

const MADT: &[u8] = include_bytes!("../fixtures/smp8-2s2c2t-2n/APIC.bin");
const SRAT: &[u8] = include_bytes!("../fixtures/smp8-2s2c2t-2n/SRAT.bin");
const SLIT: &[u8] = include_bytes!("../fixtures/smp8-2s2c2t-2n/SLIT.bin");

/// `table` with `extra` appended, length and checksum fixed.
fn append(table: &[u8], extra: &[u8]) -> Vec<u8> {
    let mut t = table.to_vec();
    t.extend_from_slice(extra);
    let len = t.len() as u32;
    t[4..8].copy_from_slice(&len.to_le_bytes());
    fix_checksum(&mut t, 9);
    t
}

#[test]
fn duplicate_srat_processor_entry_names_srat_the_entry_and_the_apic_id() {
    let s = parse_srat(SRAT).unwrap();
    let first = s.cpus[0].clone();
    assert_eq!((first.apic_id, first.proximity_domain), (0, 0));
    // APIC id 0 again, in the other node's domain: entry index after the
    // fixture's processor and memory entries.
    let entries = s.cpus.len() + s.memory.len();
    let bad = append(SRAT, &cpu(0, 1, true));
    let e = parse_srat(&bad).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "SRAT: entry {entries} (processor affinity) gives APIC id 0 proximity domain 1, but entry 0 gave it domain 0"
        )
    );
    // The boot goes on with one node and says why (was: "node 2 has no CPU").
    let (fw, w) = Firmware::from_bytes(MADT, Some(&bad), Some(SLIT)).unwrap();
    assert!(fw.srat.is_none());
    assert_eq!(
        w[0].to_string(),
        format!("{e}; SRAT ignored, one node assumed")
    );
    // The same entry repeated with the same domain is harmless and dropped.
    let same = parse_srat(&append(SRAT, &cpu(0, 0, true))).unwrap();
    assert_eq!(same.cpus, s.cpus);
}

#[test]
fn second_srat_and_slit_are_reported() {
    let t = AcpiTables {
        rsdp: None,
        tables: vec![
            (0x1000, *b"APIC", MADT.to_vec()),
            (0x2000, *b"SRAT", SRAT.to_vec()),
            (0x3000, *b"SLIT", SLIT.to_vec()),
            (0x4000, *b"SRAT", SRAT.to_vec()),
            (0x5000, *b"SLIT", SLIT.to_vec()),
        ],
    };
    let (fw, w) = Firmware::from_tables(&t).unwrap();
    assert!(fw.srat.is_some() && fw.slit.is_some());
    let msgs: Vec<String> = w.iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        [
            "SRAT: a second table at 0x4000 ignored; the first at 0x2000 is used",
            "SLIT: a second table at 0x5000 ignored; the first at 0x3000 is used",
        ]
    );
    assert!(matches!(
        w[0],
        Warning::DuplicateTable {
            table: Table::Srat,
            ..
        }
    ));
}

#[test]
fn slit_size_message_says_what_is_wrong() {
    // The fixture's 2 localities with the matrix cut to 2 bytes.
    let mut t = SLIT[..SLIT.len() - 2].to_vec();
    let len = t.len() as u32;
    t[4..8].copy_from_slice(&len.to_le_bytes());
    fix_checksum(&mut t, 9);
    assert_eq!(
        parse_slit(&t).unwrap_err().to_string(),
        "SLIT: locality count 2 needs a 2x2 matrix of 4 bytes, but the table has 2 matrix bytes"
    );
    // The reported "localities 4 but table has 4 entries": 4 localities, 4 bytes.
    let mut body = 4u64.to_le_bytes().to_vec();
    body.extend_from_slice(&[10, 20, 20, 10]);
    let t = topology::acpi::sdt::build_table(*b"SLIT", 1, &body);
    assert_eq!(
        parse_slit(&t).unwrap_err().to_string(),
        "SLIT: locality count 4 needs a 4x4 matrix of 16 bytes, but the table has 4 matrix bytes"
    );
}

fn identities(fw: &Firmware) -> Vec<(u32, CpuIdentity)> {
    let synth = SynthCpuid {
        vendor: Vendor::Intel,
        threads_per_core: 2,
        cores_per_die: 2,
        dies_per_package: 1,
        l3_sharing_bits: None,
        leaf_1f: false,
    };
    fw.madt
        .enabled_cpus()
        .map(|c| {
            let leaves = synth.leaves(c.apic_id);
            (c.apic_id, cpuid::decode(&leaves).unwrap())
        })
        .collect()
}

#[test]
fn slit_distance_255_is_no_connection() {
    let slit = parse_slit(SLIT).unwrap();
    assert_eq!(slit.distance(0, 1), Some(21));
    // Distance 0 -> 1 set to 255 (ACPI: no connection).
    let mut t = SLIT.to_vec();
    let at = t.len() - 3; // row 0, column 1 of the 2x2 matrix
    t[at] = 255;
    fix_checksum(&mut t, 9);
    let (fw, _) = Firmware::from_bytes(MADT, Some(SRAT), Some(&t)).unwrap();
    assert_eq!(fw.slit.as_ref().unwrap().distance(0, 1), Some(255));
    let (topo, w) = assemble(
        &fw.madt,
        fw.srat.as_ref(),
        fw.slit.as_ref(),
        &identities(&fw),
    )
    .unwrap();
    assert_eq!(topo.nr_nodes, 2);
    assert_eq!(topo.distance, vec![vec![10, 20], vec![20, 10]]);
    assert!(
        w.iter().any(|x| x.to_string()
            == "SLIT: distance from proximity domain 0 to 1 is 255 (no connection), but both have CPUs; SLIT not used, distances 10 local / 20 remote assumed"),
        "{w:?}"
    );
}
