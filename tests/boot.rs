//! The kernel boots through both firmware paths, reaches the banner and says
//! what it found in its `boot` record.

use schedlab_tests::Boot;
use xtask::build::Firmware;
use xtask::machine::Machine;
use xtask::outcome::Outcome;

fn check_boot_record(r: &xtask::runner::RunResult, firmware: &str, cpus: u64) {
    let boot = r
        .record("boot")
        .unwrap_or_else(|| panic!("no boot record; console:\n{}", r.console()));
    assert_eq!(boot["firmware"], firmware);
    assert_eq!(boot["madt_cpus"], cpus, "MADT CPU count");
    let mem = boot["memory_bytes"].as_u64().unwrap();
    assert!(
        (200 << 20..=256 << 20).contains(&mem),
        "memory_bytes {mem} for a 256 MiB guest"
    );
    assert_eq!(r.record("exit").unwrap()["status"], "success");
    // What tells a captured console's report its clock: QEMU's TCG sets the
    // hypervisor bit and signs leaf 0x4000_0000; xtask runs these without icount.
    assert_eq!(boot["hypervisor"], true);
    assert_eq!(boot["hypervisor_vendor"], "TCGTCGTCGTCG");
    assert_eq!(boot["icount"], false);
    assert_eq!(boot["cpu_vendor"], "GenuineIntel");
    assert_eq!(
        xtask::capture::clock::of(r).key,
        "host",
        "{}",
        xtask::capture::clock::of(r).sentence
    );
    assert!(
        r.log
            .iter()
            .any(|l| l.contains("schedlab") && l.contains("firmware")),
        "banner missing"
    );
}

/// The default experiment (what a first `cargo xtask run` does) boots, checks
/// the machine and then shows scheduling: a hackbench with its decisions.
#[test]
fn bios_boot_reaches_banner_and_the_default_run_shows_scheduling() {
    assert_eq!(bootcfg::DEFAULT_EXPERIMENT, "tour");
    let r = Boot::new(bootcfg::DEFAULT_EXPERIMENT).expect(Outcome::Success);
    check_boot_record(&r, "bios", 2);
    assert!(r.record("cpus").is_some(), "the machine check ran");
    let h = r
        .record("hackbench")
        .unwrap_or_else(|| panic!("no hackbench record; console:\n{}", r.console()));
    assert_eq!(
        (h["groups"].as_u64(), h["loops"].as_u64()),
        (Some(2), Some(50))
    );
    assert!(h["time_ns"].as_u64().unwrap() > 0);
    let wake = &h["sched"]["wake"];
    // 2 groups x 4 receivers x 4 senders x 50 messages: receivers block.
    assert!(wake["nr_wakeups"].as_u64().unwrap() > 0, "{h}");
    assert!(wake["wake_affine_attempts"].is_u64(), "{h}");
    assert!(
        h["sched"]["migrations"]["wakeup"]["smt_sibling"].is_u64(),
        "{h}"
    );
}

#[test]
fn uefi_boot_reaches_banner() {
    let mut b = Boot::new("boot");
    b.firmware = Firmware::Uefi;
    b.machine = Machine {
        sockets: 2,
        cores: 2,
        threads: 1,
        memory_mib: 256,
        ..Machine::default()
    };
    let r = b.expect(Outcome::Success);
    check_boot_record(&r, "uefi", 4);
}

/// A server without a display: no default devices (so no VGA), only the
/// serial port and the disk xtask adds. UEFI boots it; legacy BIOS cannot
/// (xtask refuses that before booting, see `QemuConfig::validate`).
#[test]
fn uefi_boots_headless_with_no_default_devices() {
    let mut b = Boot::new("boot");
    b.firmware = Firmware::Uefi;
    b.extra_args = vec!["-nodefaults"];
    let r = b.expect(Outcome::Success);
    check_boot_record(&r, "uefi", 2);
}
