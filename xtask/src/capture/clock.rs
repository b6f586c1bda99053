//! Which clock a captured run's times come from, said as honestly as the
//! records allow. The kernel times everything with the TSC; what that TSC
//! measures depends on the machine, which the `boot` record states:
//! `hypervisor` (CPUID.1:ECX[31]), `hypervisor_vendor` (CPUID 0x4000_0000:
//! "TCGTCGTCGTCG" for QEMU's emulator, "KVMKVMKVM" for KVM, ...) and `icount`
//! (QEMU's instruction-counted virtual clock, set by xtask). A log from a
//! kernel older than these fields gets what is known (the TSC's rate and
//! source; the `latency` record's own hypervisor flag) and "unknown".

use serde_json::Value;

use crate::runner::RunResult;

/// A captured run's clock: a key for tables (`compare::clock_meaning`) and
/// the sentence the report prints.
#[derive(Debug, PartialEq, Eq)]
pub struct Clock {
    /// "tsc" (bare metal), "icount", "host" (QEMU TCG), "vm" (another
    /// hypervisor) or "unknown".
    pub key: &'static str,
    pub sentence: String,
}

/// The TSC's rate and where it was measured, from the `smp` record.
fn tsc(r: &RunResult) -> String {
    match r.record("smp") {
        Some(s) => format!(
            "TSC at {:.3} GHz ({})",
            s["tsc_hz"].as_u64().unwrap_or(0) as f64 / 1e9,
            match s["tsc_source"].as_str() {
                Some("cpuid15") => "rate from CPUID leaf 0x15",
                Some("pit") => "rate calibrated against the PIT",
                _ => "rate source not recorded",
            }
        ),
        None => "TSC (no smp record: the run stopped before the CPUs came up)".into(),
    }
}

/// The clock of the run in `r`.
pub fn of(r: &RunResult) -> Clock {
    let boot = r.record("boot").cloned().unwrap_or(Value::Null);
    let tsc = tsc(r);
    let cpu = match (boot["cpu_vendor"].as_str(), boot["cpu_brand"].as_str()) {
        (Some(v), Some(b)) if !b.is_empty() => format!("{v} '{b}'"),
        (Some(v), _) => v.to_string(),
        _ => "CPU not recorded".into(),
    };
    let Some(hypervisor) = boot["hypervisor"].as_bool() else {
        let latency = r
            .record("latency")
            .and_then(|l| l["hypervisor"].as_bool())
            .map_or(String::new(), |h| {
                format!(
                    "; the latency record says {}",
                    if h {
                        "a hypervisor/emulator was present"
                    } else {
                        "no hypervisor was present"
                    }
                )
            });
        return Clock {
            key: "unknown",
            sentence: format!(
                "unknown: the boot record does not say whether the machine was bare metal or a virtual machine (a kernel older than its `hypervisor` field); times are the {tsc}{latency}"
            ),
        };
    };
    if !hypervisor {
        return Clock {
            key: "tsc",
            sentence: format!("real time: bare metal (no hypervisor in CPUID), {cpu}, {tsc}"),
        };
    }
    let vendor = boot["hypervisor_vendor"].as_str().unwrap_or("");
    let icount = boot["icount"].as_bool() == Some(true);
    let (key, what) = match (vendor, icount) {
        (_, true) => (
            "icount",
            "QEMU icount (summed instructions of all vCPUs, not parallel time)".to_string(),
        ),
        ("TCGTCGTCGTCG", false) => (
            "host",
            "host time of QEMU's emulated vCPUs (TCG: emulation speed, not hardware speed)"
                .to_string(),
        ),
        (v, false) => (
            "vm",
            format!(
                "a virtual machine's TSC under '{v}' (real time, but vCPUs share the host's cores)"
            ),
        ),
    };
    Clock {
        key,
        sentence: format!("{what}; CPUID: hypervisor '{vendor}', {cpu}, {tsc}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Outcome;

    fn run(records: Vec<Value>) -> RunResult {
        RunResult {
            outcome: Outcome::Success,
            records,
            log: vec![],
            bad_records: vec![],
            stderr: String::new(),
            wall: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn names_each_machine() {
        let smp =
            serde_json::json!({"type":"smp","tsc_hz":2_100_000_000u64,"tsc_source":"cpuid15"});
        let metal = run(vec![
            serde_json::json!({"type":"boot","hypervisor":false,"hypervisor_vendor":null,
                "cpu_vendor":"GenuineIntel","cpu_brand":"Intel(R) Xeon(R) Gold 6148","icount":false}),
            smp.clone(),
        ]);
        let c = of(&metal);
        assert_eq!(c.key, "tsc");
        assert_eq!(
            c.sentence,
            "real time: bare metal (no hypervisor in CPUID), GenuineIntel 'Intel(R) Xeon(R) Gold 6148', TSC at 2.100 GHz (rate from CPUID leaf 0x15)"
        );
        let tcg = |icount: bool| {
            run(vec![serde_json::json!({"type":"boot","hypervisor":true,
                "hypervisor_vendor":"TCGTCGTCGTCG","cpu_vendor":"GenuineIntel","icount":icount})])
        };
        assert_eq!(of(&tcg(false)).key, "host");
        assert_eq!(of(&tcg(true)).key, "icount");
        let kvm = run(vec![serde_json::json!({"type":"boot","hypervisor":true,
            "hypervisor_vendor":"KVMKVMKVM","icount":false})]);
        assert!(of(&kvm).sentence.contains("under 'KVMKVMKVM'"));
        let old = run(vec![
            serde_json::json!({"type":"boot"}),
            serde_json::json!({"type":"latency","hypervisor":true}),
        ]);
        let c = of(&old);
        assert_eq!(c.key, "unknown");
        assert!(
            c.sentence.contains("a hypervisor/emulator was present"),
            "{}",
            c.sentence
        );
    }
}
