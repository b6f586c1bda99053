//! The machine as records and console text: the `smp` record (bring-up,
//! clock, tick), the `topology` record (per-CPU placement, nodes, distances,
//! caches, scheduling domains), an `lscpu -e`-like table and Linux's
//! sched-domain debug listing.

use core::fmt::Write;

use crate::machine::Machine;
use crate::record::{Emit, Record, json_array};
use workloads::topology_record::json_runs;

/// Emits the `smp` record.
pub fn emit_smp(m: &Machine) {
    let failed = json_array(m.aps.iter().filter(|a| !a.online), |w, ap| {
        write!(w, "{}", ap.apic_id)
    });
    // Columns, the first three as arithmetic runs (docs/results.md).
    let aps = alloc::format!(
        "{{\"cpu\":{},\"apic_id\":{},\"online\":{},\"start_ns\":{}}}",
        json_runs(m.aps.iter().map(|ap| ap.cpu as u64)),
        json_runs(m.aps.iter().map(|ap| u64::from(ap.apic_id))),
        json_runs(m.aps.iter().map(|ap| u64::from(ap.online))),
        json_array(&m.aps, |w, ap| write!(w, "{}", ap.start_ns)),
    );
    let online = 1 + m.aps.iter().filter(|a| a.online).count();
    Record::new("smp")
        .u64("cpus", m.topology.nr_cpus() as u64)
        .u64("online", online as u64)
        .raw("failed_apic_ids", &failed)
        .raw("aps", &aps)
        .u64("reset_to_all_online_ns", m.reset_to_online_ns)
        .u64("kernel_to_all_online_ns", m.kernel_to_online_ns)
        .str("apic_mode", if m.x2apic { "x2apic" } else { "xapic" })
        .u64("tsc_hz", m.tsc.hz)
        .str("tsc_source", m.tsc.source.name())
        .bool("tsc_invariant", m.tsc.invariant)
        .u64("cpuid_base_mhz", m.tsc.cpuid_base_mhz as u64)
        .str(
            "timer_mode",
            if m.timer.tsc_deadline {
                "tsc-deadline"
            } else {
                "periodic"
            },
        )
        .u64("hz", m.hz as u64)
        .u64("topology_warnings", m.warnings as u64)
        .emit();
}

/// Emits the `topology` record (compact form, docs/results.md); returns its
/// length in bytes.
pub fn emit_topology(m: &Machine) -> usize {
    let json = workloads::topology_record::topology_fields(&m.topology, &m.domains, |cpu| {
        m.is_online(cpu)
    })
    .finish();
    crate::record::emit_json(&json);
    json.len()
}

/// Above this many CPUs the console shows the first and last rows of the
/// `lscpu` table and CPU 0's domains only: the console runs at a few tens of
/// KB/s under TCG, and the topology record holds all of it.
const CONSOLE_FULL_CPUS: usize = 64;

/// Prints the `lscpu -e`-like table and the sched-domain listing.
pub fn print_console(m: &Machine) {
    let nr = m.topology.nr_cpus();
    let table = topology::lscpu_table(&m.topology);
    let rows = table.lines().count().saturating_sub(1);
    for (i, line) in table.lines().enumerate() {
        // Line 0 is the header; rows 1..=nr.
        if nr <= CONSOLE_FULL_CPUS || i <= 8 || i + 8 > rows {
            log::info!("{line}");
        } else if i == 9 {
            log::info!(
                "  ({} rows omitted: see the topology record)",
                rows.saturating_sub(16)
            );
        }
    }
    for line in topology::numa_table(&m.topology).lines() {
        log::info!("{line}");
    }
    // Every CPU's listing for small machines; CPU 0's and the last CPU's up to
    // CONSOLE_FULL_CPUS; CPU 0's beyond.
    let shown = |cpu: usize| nr <= 16 || cpu == 0 || (nr <= CONSOLE_FULL_CPUS && cpu == nr - 1);
    for cpu in (0..nr).filter(|&c| shown(c)) {
        for line in m.domains.debug_cpu(cpu).lines() {
            log::info!("{line}");
        }
    }
    if nr > 16 {
        log::info!(
            "(sched-domain listing of the other {} CPUs: see the topology record)",
            (0..nr).filter(|&c| !shown(c)).count()
        );
    }
}
