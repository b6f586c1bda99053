//! Experiments: what the kernel does after bring-up. The catalogue of names
//! lives in the shared `bootcfg` crate; this module maps each name to code.

mod boot;
mod faults;

use crate::arch::qemu::ExitCode;
use crate::machine::Machine;

/// Runs the configured experiment and says how the run should end.
pub fn run(name: &str, machine: &Machine) -> ExitCode {
    match name {
        "boot" => boot::run(machine),
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
