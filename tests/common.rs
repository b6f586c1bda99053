//! Helpers for the QEMU integration tests: boot an experiment on a small
//! machine and return its records; on an unexpected outcome, fail with the
//! whole captured console so the reason is visible in the test output.

use std::time::Duration;

use bootcfg::BootConfig;
use xtask::accel::Accel;
use xtask::build::Firmware;
use xtask::launch::Launcher;
use xtask::machine::Machine;
use xtask::outcome::Outcome;
use xtask::qemu::QemuConfig;
use xtask::runner::RunResult;

/// A boot request with the defaults the tests use (2 vCPUs, 256 MiB, BIOS).
pub struct Boot {
    pub experiment: &'static str,
    /// Experiment arguments, `key:value` pairs separated by commas.
    pub args: &'static str,
    /// Deterministic virtual time (`-icount shift=N`).
    pub icount: Option<u32>,
    /// Perturbation seed (`--seed`: kernel start jitter and QEMU's `-seed`).
    pub seed: Option<u64>,
    /// How idle CPUs wait: "hlt" or "mwait".
    pub idle: &'static str,
    /// Scheduling policy name.
    pub policy: &'static str,
    /// Fair-class pick (`--pick`; empty = the default, CFS).
    pub pick: &'static str,
    /// Scheduler feature switches (`--features`).
    pub features: &'static str,
    /// Scheduler trace events per CPU (0 = no trace).
    pub trace: u32,
    pub firmware: Firmware,
    pub machine: Machine,
    pub timeout: Duration,
    /// Extra QEMU arguments (`--qemu-arg`).
    pub extra_args: Vec<&'static str>,
}

impl Boot {
    /// Default request for `experiment`.
    pub fn new(experiment: &'static str) -> Boot {
        Boot {
            experiment,
            args: "",
            icount: None,
            seed: None,
            idle: "hlt",
            policy: "fair",
            pick: "",
            features: "",
            trace: 0,
            firmware: Firmware::Bios,
            machine: Machine {
                memory_mib: 256,
                ..Machine::default()
            },
            timeout: Duration::from_secs(120),
            extra_args: Vec::new(),
        }
    }

    /// Boots and returns the result (panics on infrastructure errors).
    pub fn run(&self) -> RunResult {
        let launcher = Launcher::from_env().expect("kernel build products");
        let defaults = BootConfig::default();
        let config = BootConfig {
            experiment: self.experiment.into(),
            pick: if self.pick.is_empty() {
                defaults.pick.clone()
            } else {
                self.pick.into()
            },
            args: self.args.into(),
            idle: self.idle.into(),
            policy: self.policy.into(),
            features: self.features.into(),
            trace: self.trace,
            seed: self.seed,
            ..defaults
        };
        let qemu = QemuConfig {
            machine: self.machine.clone(),
            firmware: self.firmware,
            icount_shift: self.icount,
            // The suite asserts TCG's guest (GenuineIntel CPUID, icount
            // determinism), so it never takes KVM, even where it exists.
            accel: Accel::Tcg,
            seed: self.seed,
            extra_args: self.extra_args.iter().map(|a| a.to_string()).collect(),
        };
        launcher
            .boot(&config, &qemu, self.timeout, false)
            .expect("boot")
    }

    /// Boots and asserts the outcome, printing the console when it differs.
    pub fn expect(&self, outcome: Outcome) -> RunResult {
        let r = self.run();
        assert_eq!(
            r.outcome,
            outcome,
            "experiment '{}' ended with {} (expected {outcome}); console:\n{}",
            self.experiment,
            r.outcome,
            r.console()
        );
        assert!(
            r.bad_records.is_empty(),
            "malformed records: {:?}",
            r.bad_records
        );
        r
    }
}
