//! The machine as records and console text: the `smp` record (bring-up,
//! clock, tick), the `topology` record (per-CPU placement, nodes, distances,
//! caches, scheduling domains), an `lscpu -e`-like table and Linux's
//! sched-domain debug listing.

use alloc::string::String;
use core::fmt::Write;

use topology::{CacheKind, CpuMask};

use crate::machine::Machine;
use crate::record::{Record, escape_into};

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    let _ = escape_into(&mut out, s);
    out.push('"');
    out
}

fn mask(m: &CpuMask) -> String {
    json_str(&alloc::format!("{m}"))
}

/// Emits the `smp` record.
pub fn emit_smp(m: &Machine) {
    let mut failed = String::from("[");
    let mut aps = String::from("[");
    for ap in &m.aps {
        if !ap.online {
            let sep = if failed.len() > 1 { "," } else { "" };
            let _ = write!(failed, "{sep}{}", ap.apic_id);
        }
        let sep = if aps.len() > 1 { "," } else { "" };
        let _ = write!(
            aps,
            "{sep}{{\"cpu\":{},\"apic_id\":{},\"online\":{},\"start_ns\":{}}}",
            ap.cpu, ap.apic_id, ap.online, ap.start_ns
        );
    }
    failed.push(']');
    aps.push(']');
    let online = 1 + m.aps.iter().filter(|a| a.online).count();
    Record::new("smp")
        .u64("cpus", m.topology.nr_cpus() as u64)
        .u64("online", online as u64)
        .raw("failed_apic_ids", &failed)
        .raw("aps", &aps)
        .u64("reset_to_all_online_ns", m.reset_to_online_ns)
        .u64("kernel_to_all_online_ns", m.kernel_to_online_ns)
        .str("apic_mode", if m.x2apic { "x2apic" } else { "xapic" })
        .u64("tsc_hz", m.tsc_hz)
        .str("tsc_source", m.tsc_source.name())
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
    let mut cpus = String::from("[");
    for (i, c) in t.cpus.iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        let _ = write!(
            cpus,
            "{sep}{{\"cpu\":{},\"apic_id\":{},\"package\":{},\"die\":{},\"core\":{},\"thread\":{},\"node\":{},\"llc\":{},\"online\":{},\"sd_llc_size\":{},\"sd_llc_id\":{}}}",
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
        );
    }
    cpus.push(']');
    let mut dist = String::from("[");
    for (i, row) in t.distance.iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        let _ = write!(dist, "{sep}{row:?}");
    }
    dist.push(']');
    let mut caches = String::from("[");
    for (i, c) in t.caches.iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        let kind = match c.kind {
            CacheKind::Data => "data",
            CacheKind::Instruction => "instruction",
            CacheKind::Unified => "unified",
        };
        let _ = write!(
            caches,
            "{sep}{{\"level\":{},\"type\":\"{kind}\",\"size_bytes\":{},\"line_bytes\":{},\"ways\":{},\"cpus\":{}}}",
            c.level,
            c.size_bytes,
            c.line_bytes,
            c.ways,
            mask(&c.cpus)
        );
    }
    caches.push(']');
    let mut domains = String::from("[");
    for cpu in 0..t.nr_cpus() {
        let sep = if cpu > 0 { "," } else { "" };
        let _ = write!(domains, "{sep}{{\"cpu\":{cpu},\"levels\":[");
        for (i, sd) in m.domains.domains(cpu).iter().enumerate() {
            let sep = if i > 0 { "," } else { "" };
            let _ = write!(
                domains,
                "{sep}{{\"name\":\"{}\",\"span\":{},\"span_weight\":{},\"flags\":{},\"imbalance_pct\":{},\"groups\":[",
                sd.name,
                mask(&sd.span),
                sd.span_weight(),
                json_str(&alloc::format!("{}", sd.flags)),
                sd.imbalance_pct
            );
            for (j, g) in sd.groups.iter().enumerate() {
                let sep = if j > 0 { "," } else { "" };
                let _ = write!(domains, "{sep}{}", mask(&g.span));
            }
            domains.push_str("]}");
        }
        domains.push_str("]}");
    }
    domains.push(']');
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
