//! Faults are visible: a panic, a CPU exception and a hang each end the run
//! with their own failing status and a readable message.

use std::time::Duration;

use schedlab_tests::Boot;
use xtask::outcome::Outcome;

#[test]
fn panic_is_reported_with_location() {
    let r = Boot::new("test-panic").expect(Outcome::Panic);
    let f = r.record("fault").expect("fault record");
    assert_eq!(f["kind"], "panic");
    assert_eq!(f["cpu"], 0);
    assert!(f["message"].as_str().unwrap().contains("deliberate panic"));
    assert!(f["file"].as_str().unwrap().ends_with("faults.rs"), "{f}");
    assert!(f["line"].as_u64().unwrap() > 0);
    assert!(
        r.log.iter().any(|l| l.contains("PANIC on CPU 0")),
        "console:\n{}",
        r.console()
    );
    assert_eq!(r.record("exit").unwrap()["status"], "panic");
}

#[test]
fn page_fault_is_reported_with_address() {
    let r = Boot::new("test-pagefault").expect(Outcome::Exception);
    let f = r.record("fault").expect("fault record");
    assert_eq!(f["kind"], "exception");
    assert_eq!(f["vector"], 14);
    assert_eq!(f["mnemonic"], "#PF");
    assert_eq!(f["cr2"], 0xdead_0000u64);
    // Error code bit 1: the access was a write.
    assert_ne!(f["error_code"].as_u64().unwrap() & 2, 0);
    assert!(
        r.log.iter().any(|l| l.contains("EXCEPTION #PF")),
        "console:\n{}",
        r.console()
    );
}

#[test]
fn hang_is_caught_by_the_timeout() {
    let mut b = Boot::new("test-hang");
    b.timeout = Duration::from_secs(40);
    let r = b.expect(Outcome::Timeout);
    assert!(
        r.record("boot").is_some(),
        "the kernel booted before hanging"
    );
    assert!(r.record("exit").is_none());
}
