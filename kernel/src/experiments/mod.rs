//! Experiments: what the kernel does after bring-up. The catalogue of names
//! lives in the shared `bootcfg` crate; this module maps each name to code.
//! The seeds' benchmark shapes (hackbench, schbench, netperf, tbench, nas) live in
//! the pure `workloads` crate and run here through [`env::KernelEnv`].

mod boot;
mod calibrate;
mod env;
mod faults;
mod fpu;
mod latency;
mod stress;
mod tour;

use crate::arch::qemu::ExitCode;
use crate::machine::Machine;
use crate::record::{Emit, Record};

/// Runs the configured experiment and says how the run should end. An
/// experiment that returns an error message fails the run with an `error` record.
pub fn run(name: &str, raw_args: &str, machine: &Machine) -> ExitCode {
    let result = match workloads::Workload::parse(name, raw_args, machine.topology.nr_cpus()) {
        Some(w) => w.and_then(env::run).map(|()| ExitCode::Success),
        None => {
            let mut a = workloads::args::Args::new(name, raw_args);
            let result = match name {
                "stress" => stress::run(machine, &mut a),
                "latency" => latency::run(machine, &mut a),
                "calibrate" => calibrate::run(machine, &mut a),
                "fpu-check" => fpu::run(machine, &mut a),
                "tour" => tour::run(machine),
                _ => Ok(run_simple(name, machine)),
            };
            result.and_then(|code| a.finish().map(|()| code))
        }
    };
    match result {
        Ok(code) => code,
        Err(msg) => {
            log::error!("{msg}");
            Record::new("error")
                .str("kind", "experiment")
                .str("message", &msg)
                .emit();
            ExitCode::Failure
        }
    }
}

fn run_simple(name: &str, machine: &Machine) -> ExitCode {
    match name {
        "boot" => boot::run(machine),
        "test-panic" => faults::panic(),
        "test-pagefault" => faults::page_fault(),
        "test-hang" => faults::hang(),
        "test-stuck" => faults::stuck(machine),
        "test-deadlock" => faults::deadlock(),
        other => {
            // bootcfg validated the name against the same catalogue, so this
            // means the catalogue and this match disagree: a kernel bug.
            panic!("experiment '{other}' is in the catalogue but has no implementation")
        }
    }
}
