//! Beyond 255 CPUs: a 2-socket, 2-node machine of 288 vCPUs (2 x 72 cores x
//! 2 threads, APIC ids 0-143 and 256-399) boots in x2APIC mode from x2APIC
//! MADT and SRAT entries, and every CPU ticks and answers IPIs. QEMU's TCG
//! has x2APIC from QEMU 9; on an older QEMU the test is skipped with the
//! reason (`cargo xtask test` prints it). The release kernel is built here:
//! the debug kernel takes over 10 minutes to build 288 CPUs' topology and
//! domains under TCG (docs/boot.md).

use std::time::Duration;

use bootcfg::BootConfig;
use xtask::accel::Accel;
use xtask::build::Firmware;
use xtask::launch::Launcher;
use xtask::machine::Machine;
use xtask::outcome::Outcome;
use xtask::qemu::QemuConfig;

#[test]
fn x2apic_boots_288_cpus_on_two_sockets_and_two_nodes() {
    const TEST: &str = "x2apic::x2apic_boots_288_cpus_on_two_sockets_and_two_nodes";
    match xtask::qemu_version::installed() {
        Some(v) if v >= xtask::qemu_version::X2APIC_SINCE => {}
        v => {
            xtask::skips::record(
                TEST,
                &format!(
                    "QEMU {} has no x2APIC under TCG (it came in {}); install bookworm-backports' qemu-system-x86",
                    v.map_or("(not found)".to_string(), |v| v.to_string()),
                    xtask::qemu_version::X2APIC_SINCE
                ),
            );
            return;
        }
    }
    let launcher = Launcher::build(true, None).expect("release kernel");
    let machine = Machine {
        sockets: 2,
        cores: 72,
        threads: 2,
        numa_nodes: 2,
        memory_mib: 2048,
        ..Machine::default()
    };
    machine.validate().expect("a valid machine");
    let qemu = QemuConfig {
        machine,
        firmware: Firmware::Bios,
        icount_shift: None,
        accel: Accel::Tcg,
        seed: None,
        extra_args: Vec::new(),
    };
    let config = BootConfig {
        experiment: "boot".into(),
        ..BootConfig::default()
    };
    let r = launcher
        .boot(&config, &qemu, Duration::from_secs(900), false)
        .expect("boot");
    assert_eq!(r.outcome, Outcome::Success, "{}", r.console());
    assert_eq!(r.record("boot").unwrap()["madt_cpus"], 288);
    let cpus = r.record("cpus").expect("cpus record");
    assert_eq!(cpus["online"], 288);
    let per_cpu = cpus["per_cpu"].as_array().expect("per_cpu");
    assert_eq!(per_cpu.len(), 288);
    // The second socket's APIC ids start at 256: 72 cores take 7 bits, 2
    // threads 1, so the socket id sits at bit 8.
    let ids: Vec<u64> = per_cpu
        .iter()
        .map(|c| c["apic_id"].as_u64().expect("apic_id"))
        .collect();
    assert_eq!(ids.iter().max(), Some(&399), "{ids:?}");
    assert!(
        ids.iter().filter(|&&id| id >= 256).count() == 144,
        "{ids:?}"
    );
}
