//! TSC calibration sources (docs/boot.md, "TSC calibration"): QEMU 7.2's TCG
//! CPUs state no crystal in CPUID leaf 0x15, so the default q35 machine
//! calibrates against the HPET; with `-machine hpet=off` the kernel must fall
//! back to the ACPI PM timer from the FADT, and under `--icount` without an
//! HPET to the PIT (the PM timer's phase would make runs differ). Each run
//! names its source and value in the `smp` record.

use schedlab_tests::Boot;
use xtask::machine::Machine;
use xtask::outcome::Outcome;

/// One vCPU, 128 MiB: only the bring-up matters here. Returns the `smp`
/// record's TSC source and rate, and the `boot` record's HPET address.
fn small(extra_args: Vec<&'static str>, icount: Option<u32>) -> (String, u64, Option<u64>) {
    let mut b = Boot::new("boot");
    b.machine = Machine {
        sockets: 1,
        cores: 1,
        threads: 1,
        numa_nodes: 1,
        memory_mib: 128,
        ..Machine::default()
    };
    b.extra_args = extra_args;
    b.icount = icount;
    let r = b.expect(Outcome::Success);
    let smp = r
        .record("smp")
        .unwrap_or_else(|| panic!("no smp record; console:\n{}", r.console()));
    let source = smp["tsc_source"]
        .as_str()
        .expect("smp.tsc_source")
        .to_string();
    let hz = smp["tsc_hz"].as_u64().expect("smp.tsc_hz");
    let boot = r.record("boot").expect("boot record");
    // q35's PM timer: port 0x608, 24 bits (FADT without TMR_VAL_EXT).
    assert_eq!(
        (
            boot["pm_timer_port"].as_u64(),
            boot["pm_timer_bits"].as_u64()
        ),
        (Some(0x608), Some(24)),
        "{boot}"
    );
    (source, hz, boot["hpet_address"].as_u64())
}

#[test]
fn tsc_is_calibrated_against_hpet_then_pm_timer_then_pit() {
    let (hpet_source, hpet_hz, hpet) = small(vec![], None);
    assert_eq!(hpet_source, "hpet", "default q35 machine");
    assert_eq!(hpet, Some(0xFED0_0000));
    let (pm_source, pm_hz, hpet) = small(vec!["-machine", "hpet=off"], None);
    assert_eq!(pm_source, "pm-timer", "q35 without HPET");
    assert_eq!(hpet, None, "hpet=off leaves no HPET table");
    // Both measure the same TSC (under TCG it follows the host's clock); a
    // 50 ms window bracketed by two reads on each side agrees to well under
    // 5% even on a loaded host.
    let ratio = pm_hz as f64 / hpet_hz as f64;
    assert!(
        (0.95..1.05).contains(&ratio),
        "pm-timer {pm_hz} Hz vs hpet {hpet_hz} Hz"
    );

    // Under -icount the TSC is QEMU's virtual clock in ns: 1 GHz exactly,
    // measured through the HPET's 10 ns counter.
    let (source, hz, _) = small(vec![], Some(0));
    assert_eq!(source, "hpet", "icount, default machine");
    assert!(hz.abs_diff(1_000_000_000) < 1_000_000, "icount TSC {hz} Hz");
    // Without an HPET the PM timer is skipped under -icount: the PIT.
    let (source, hz, _) = small(vec!["-machine", "hpet=off"], Some(0));
    assert_eq!(source, "pit", "icount without HPET");
    assert!(hz.abs_diff(1_000_000_000) < 1_000_000, "icount TSC {hz} Hz");
}
