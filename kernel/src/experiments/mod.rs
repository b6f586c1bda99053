//! Experiments: what the kernel does after bring-up. The catalogue of names
//! lives in the shared `bootcfg` crate; this module maps each name to code.

mod faults;

use crate::arch::qemu::ExitCode;

/// Runs the configured experiment and says how the run should end.
pub fn run(name: &str) -> ExitCode {
    match name {
        "boot" => {
            log::info!("experiment 'boot': bring-up complete, nothing else to run");
            ExitCode::Success
        }
        "test-panic" => faults::panic(),
        "test-pagefault" => faults::page_fault(),
        "test-hang" => faults::hang(),
        other => {
            // bootcfg validated the name against the same catalogue, so this
            // means the catalogue and this match disagree: a kernel bug.
            panic!("experiment '{other}' is in the catalogue but has no implementation")
        }
    }
}
