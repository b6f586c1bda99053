//! The machine as records and console text: the `smp` record (bring-up,
//! clock, tick), the `topology` record (per-CPU placement, nodes, distances,
//! caches, scheduling domains), an `lscpu -e`-like table and Linux's
//! sched-domain debug listing.

use alloc::string::String;
use core::fmt::Write;

use topology::{CacheKind, CpuMask};

use crate::machine::Machine;
use crate::record::{Emit, Record, json_array, json_string};

fn mask(m: &CpuMask) -> String {
    json_string(&alloc::format!("{m}"))
}

/// Emits the `smp` record.
pub fn emit_smp(m: &Machine) {
    let failed = json_array(m.aps.iter().filter(|a| !a.online), |w, ap| {
        write!(w, "{}", ap.apic_id)
    });
    let aps = json_array(&m.aps, |w, ap| {
        write!(
            w,
            "{{\"cpu\":{},\"apic_id\":{},\"online\":{},\"start_ns\":{}}}",
            ap.cpu, ap.apic_id, ap.online, ap.start_ns
        )
    });
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

/// Emits the `topology` record.
pub fn emit_topology(m: &Machine) {
    let t = &m.topology;
    let cpus = json_array(&t.cpus, |w, c| {
        write!(
            w,
            "{{\"cpu\":{},\"apic_id\":{},\"package\":{},\"die\":{},\"core\":{},\"thread\":{},\"node\":{},\"llc\":{},\"online\":{},\"sd_llc_size\":{},\"sd_llc_id\":{}}}",
            c.cpu,
            c.apic_id,
            c.package,
            c.die,
            c.core,
            c.thread,
            c.node,
            c.llc,
            m.is_online(c.cpu),
            m.domains.sd_llc_size(c.cpu),
            m.domains.sd_llc_id(c.cpu),
        )
    });
    let dist = json_array(&t.distance, |w, row| write!(w, "{row:?}"));
    let caches = json_array(&t.caches, |w, c| {
        let kind = match c.kind {
            CacheKind::Data => "data",
            CacheKind::Instruction => "instruction",
            CacheKind::Unified => "unified",
        };
        write!(
            w,
            "{{\"level\":{},\"type\":\"{kind}\",\"size_bytes\":{},\"line_bytes\":{},\"ways\":{},\"cpus\":{}}}",
            c.level,
            c.size_bytes,
            c.line_bytes,
            c.ways,
            mask(&c.cpus)
        )
    });
    let domains = json_array(0..t.nr_cpus(), |w, cpu| {
        let levels = json_array(m.domains.domains(cpu), |w, sd| {
            let groups = json_array(&sd.groups, |w, g| w.write_str(&mask(&g.span)));
            write!(
                w,
                "{{\"name\":\"{}\",\"span\":{},\"span_weight\":{},\"flags\":{},\"imbalance_pct\":{},\"groups\":{groups}}}",
                sd.name,
                mask(&sd.span),
                sd.span_weight(),
                json_string(&alloc::format!("{}", sd.flags)),
                sd.imbalance_pct
            )
        });
        write!(w, "{{\"cpu\":{cpu},\"levels\":{levels}}}")
    });
    Record::new("topology")
        .u64("nr_cpus", t.nr_cpus() as u64)
        .u64("nodes", t.nr_nodes as u64)
        .raw("distances", &dist)
        .raw("cpus", &cpus)
        .raw("caches", &caches)
        .raw("domains", &domains)
        .emit();
}

/// Prints the `lscpu -e`-like table and the sched-domain listing.
pub fn print_console(m: &Machine) {
    for line in topology::lscpu_table(&m.topology).lines() {
        log::info!("{line}");
    }
    for line in topology::numa_table(&m.topology).lines() {
        log::info!("{line}");
    }
    let nr = m.topology.nr_cpus();
    // Every CPU's listing for small machines; CPU 0's and the last CPU's otherwise.
    for cpu in 0..nr {
        if nr <= 16 || cpu == 0 || cpu == nr - 1 {
            for line in m.domains.debug_cpu(cpu).lines() {
                log::info!("{line}");
            }
        }
    }
    if nr > 16 {
        log::info!(
            "(sched-domain listing of the other {} CPUs: see the topology record)",
            nr - 2
        );
    }
}
