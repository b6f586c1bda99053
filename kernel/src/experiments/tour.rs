//! The default experiment, so that a first `cargo xtask run` shows
//! scheduling and not only a machine that booted: the machine check of
//! [`super::boot`] (every CPU ticks and answers IPIs), then a short
//! hackbench (`bootcfg::TOUR_HACKBENCH_ARGS`) whose record the report prints
//! as its time, wakeups (sync, local/remote, wake_affine, wake_wide),
//! migrations by distance and runqueue wait.

use crate::arch::qemu::ExitCode;
use crate::machine::Machine;

/// Runs the tour; an error message fails the run.
pub fn run(m: &Machine) -> Result<ExitCode, alloc::string::String> {
    let code = super::boot::run(m);
    if code != ExitCode::Success {
        return Ok(code);
    }
    log::info!(
        "tour: the machine is up; now hackbench {}",
        bootcfg::TOUR_HACKBENCH_ARGS
    );
    let w = workloads::Workload::parse(
        "hackbench",
        bootcfg::TOUR_HACKBENCH_ARGS,
        m.topology.nr_cpus(),
    )
    .ok_or("hackbench is not a workload")??;
    super::env::run(w).map(|()| ExitCode::Success)
}
