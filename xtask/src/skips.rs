//! Tests that cannot run here say why: the reason goes to
//! `target/test-skips.txt`, which `cargo xtask test` empties before the
//! tests and prints after them (a passing test's own output is hidden by
//! the test harness).

use std::io::Write as _;
use std::path::PathBuf;

/// The file the skip reasons collect in.
pub fn file() -> PathBuf {
    crate::build::target_dir().join("test-skips.txt")
}

/// Records that `test` was skipped and why (also on stderr).
pub fn record(test: &str, reason: &str) {
    eprintln!("SKIPPED {test}: {reason}");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file())
    {
        let _ = writeln!(f, "{test}: {reason}");
    }
}
