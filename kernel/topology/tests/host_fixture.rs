//! CPUID captured on real hardware (the development machine: AMD EPYC, family 0x19
//! model 0x11, 2 vCPUs under KVM) with `examples/cpuid_dump.rs`, checked against Linux's
//! own view of the same machine recorded at capture time (`linux-view.txt`: `lscpu -e`
//! and sysfs cache info).

use topology::acpi::madt::build::{lapic, madt};
use topology::acpi::parse_madt;
use topology::cpuid::{self, CpuidLeaves, TopologySource, Vendor};
use topology::*;

const CPU0: &str = include_str!("../fixtures/host-amd-epyc-kvm/CPUID-cpu0.txt");
const CPU1: &str = include_str!("../fixtures/host-amd-epyc-kvm/CPUID-cpu1.txt");
const LINUX: &str = include_str!("../fixtures/host-amd-epyc-kvm/linux-view.txt");

#[test]
fn amd_epyc_kvm_matches_linux() {
    let ids: Vec<(u32, cpuid::CpuIdentity)> = [CPU0, CPU1]
        .iter()
        .map(|t| {
            let id = cpuid::decode(&CpuidLeaves::from_text(t).unwrap()).unwrap();
            (id.x2apic_id.unwrap(), id)
        })
        .collect();
    let id = &ids[0].1;
    assert_eq!((id.vendor, id.family, id.model), (Vendor::Amd, 0x19, 0x11));
    assert_eq!(id.layout.source, TopologySource::Leaf0B);
    assert!(id.warnings.is_empty(), "{:?}", id.warnings);
    assert_eq!(ids.iter().map(|(a, _)| *a).collect::<Vec<_>>(), [0, 1]);

    // Caches per sysfs: "cpuN level type size ways shared_cpu_list".
    for line in LINUX.lines().filter(|l| l.starts_with("cpu0 ")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let kind = match f[2] {
            "Data" => CacheKind::Data,
            "Instruction" => CacheKind::Instruction,
            _ => CacheKind::Unified,
        };
        let size: u64 = f[3].trim_end_matches('K').parse::<u64>().unwrap() << 10;
        let c = id
            .caches
            .iter()
            .find(|c| c.level.to_string() == f[1] && c.kind == kind)
            .unwrap();
        assert_eq!(
            (c.size_bytes, c.ways.to_string().as_str()),
            (size, f[4]),
            "{line}"
        );
    }

    let (m, _) = parse_madt(&madt(&[lapic(0, 0, 1), lapic(1, 1, 1)])).unwrap();
    let (t, w) = assemble(&m, None, None, &ids).unwrap();
    assert!(w.is_empty(), "{w:?}");
    for line in LINUX.lines().filter(|l| l.starts_with("cpu")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let cpu: usize = f[0].trim_start_matches("cpu").parse().unwrap();
        let kind = match f[2] {
            "Data" => CacheKind::Data,
            "Instruction" => CacheKind::Instruction,
            _ => CacheKind::Unified,
        };
        let c = t
            .caches
            .iter()
            .find(|c| c.level.to_string() == f[1] && c.kind == kind && c.cpus.contains(cpu))
            .unwrap();
        assert_eq!(c.cpus.to_string(), f[5], "{line}");
    }
    // lscpu -e columns NODE SOCKET CORE and L1d:L1i:L2:L3 agree with Linux's.
    let ours = lscpu_table(&t);
    for (linux, mine) in LINUX
        .lines()
        .skip_while(|l| !l.starts_with("CPU "))
        .skip(1)
        .take(2)
        .zip(ours.lines().skip(1))
    {
        let l: Vec<&str> = linux.split_whitespace().collect();
        let o: Vec<&str> = mine.split_whitespace().collect();
        // Linux: CPU NODE SOCKET CORE CACHES ONLINE; ours: CPU NODE SOCKET DIE CORE THREAD CACHES APICID.
        assert_eq!(
            [l[0], l[1], l[2], l[3], l[4]],
            [o[0], o[1], o[2], o[4], o[6]],
            "{linux} vs {mine}"
        );
    }
    let sd = build_sched_domains(&t);
    assert_eq!(
        sd.domains(0).iter().map(|d| d.name).collect::<Vec<_>>(),
        ["MC"]
    );
    assert_eq!(sd.sd_llc_size(1), 2);
}
