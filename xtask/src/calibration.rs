//! `cargo xtask profile --from LOG`: a simulator cost profile (the TOML
//! schema `--backend sim --profile FILE` loads, `xtask/sim/src/profile.rs`)
//! from the records of a `calibrate` run (`kernel/src/experiments/calibrate.rs`).
//!
//! The log is a serial console capture (bare metal: `@@SCHEDLAB ` lines among
//! firmware and log noise) or the JSON lines `cargo xtask run --results FILE`
//! writes. Each measured quantity becomes the profile parameter it stands for;
//! every parameter `calibrate` cannot measure keeps the built-in
//! `nominal-x86-server` value, and the file says which is which in a comment
//! per parameter. The header names the clock the numbers come from (bare
//! metal TSC, QEMU TCG host time or QEMU icount virtual time, told apart by
//! the `boot` and `calibrate` records), because emulated numbers are not a
//! machine's. Kept in its own module: reading a log is all it shares with the
//! rest of xtask.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};
use schedsim::Profile;
use serde_json::Value;

use crate::RECORD_PREFIX;

/// Ratio of a datagram call's kernel time to a stream socket call's, from
/// `docs/probes/netcost.c` (the built-in profile's source for
/// `kernel.datagram_syscall_ns`).
const DATAGRAM_RATIO: f64 = 0.48;

/// The simulator's distance classes, in profile order.
const DISTANCES: [&str; 5] = ["smt", "llc", "package", "node", "remote"];

/// The result records of a log: `@@SCHEDLAB ` console lines (the prefix may
/// follow other output on the line), or whole-line JSON objects with a
/// `type` (a `--results` file). Lines that are neither are skipped; a
/// prefixed line that is not JSON is an error naming the line.
pub fn read_records(text: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if let Some(pos) = line.find(RECORD_PREFIX) {
            let json = &line[pos + RECORD_PREFIX.len()..];
            let v: Value = serde_json::from_str(json)
                .with_context(|| format!("line {}: malformed record", i + 1))?;
            out.push(v);
        } else if line.trim_start().starts_with('{')
            && let Ok(v) = serde_json::from_str::<Value>(line.trim())
            && v.get("type").is_some()
        {
            out.push(v);
        }
    }
    Ok(out)
}

fn record<'a>(records: &'a [Value], ty: &str) -> Option<&'a Value> {
    records.iter().find(|r| r["type"] == ty)
}

/// Where the log's times come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClockSource {
    /// Real hardware, TSC.
    BareMetal,
    /// QEMU `-icount`: virtual time counted in instructions.
    QemuIcount,
    /// QEMU's TCG emulator without icount: host time of emulated vCPUs.
    QemuTcg,
    /// Another hypervisor (e.g. KVM): hardware TSC, virtualised interrupts.
    Hypervisor(String),
}

impl ClockSource {
    /// From the `boot` record's `icount` and the `calibrate` record's
    /// hypervisor fields.
    /// The `boot` record's fields win; the `calibrate` record carries the
    /// hypervisor fields too, for logs whose boot record lacks them.
    pub fn of(boot: Option<&Value>, cal: &Value) -> ClockSource {
        let field = |k: &str| {
            boot.map(|b| &b[k])
                .filter(|v| !v.is_null())
                .unwrap_or(&cal[k])
        };
        let vendor = field("hypervisor_vendor").as_str().unwrap_or("");
        if boot.is_some_and(|b| b["icount"] == true) {
            ClockSource::QemuIcount
        } else if vendor == "TCGTCGTCGTCG" {
            ClockSource::QemuTcg
        } else if *field("hypervisor") == true {
            ClockSource::Hypervisor(vendor.to_string())
        } else {
            ClockSource::BareMetal
        }
    }

    /// Short name for the profile's name.
    pub fn tag(&self) -> &'static str {
        match self {
            ClockSource::BareMetal => "bare-metal",
            ClockSource::QemuIcount => "qemu-icount",
            ClockSource::QemuTcg => "qemu-tcg",
            ClockSource::Hypervisor(_) => "vm",
        }
    }

    /// What the numbers mean, for the header.
    pub fn describe(&self) -> String {
        match self {
            ClockSource::BareMetal => {
                "bare metal: the TSC of real hardware; these are the machine's own costs".into()
            }
            ClockSource::QemuIcount => {
                "QEMU icount: virtual time, 1 ns per 2^shift guest instructions. \
                 EMULATION NUMBERS: instruction counts, not any machine's latencies; no caches, \
                 no NUMA, vCPUs run one at a time"
                    .into()
            }
            ClockSource::QemuTcg => "QEMU TCG (no icount): host time of emulated vCPU threads. \
                 EMULATION NUMBERS: the emulator's speed on this host, not a machine's latencies; \
                 TCG has no caches and no NUMA latency, and vCPUs share the host's cores"
                .into(),
            ClockSource::Hypervisor(v) => format!(
                "a virtual machine (hypervisor '{v}'): the hardware TSC, but IPIs, idle exits and \
                 NUMA placement go through the hypervisor; not bare-metal numbers"
            ),
        }
    }
}

fn u(v: &Value, key: &str) -> Result<u64> {
    v[key]
        .as_u64()
        .with_context(|| format!("calibrate record: '{key}' is missing or not a number"))
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// One profile line: a value and where it came from.
struct Param {
    key: &'static str,
    value: String,
    note: String,
}

fn num(x: f64) -> String {
    if x == x.trunc() && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').to_string()
    }
}

fn measured(key: &'static str, x: f64, how: &str) -> Param {
    Param {
        key,
        value: num(x),
        note: format!("measured: {how}"),
    }
}

fn builtin(key: &'static str, x: f64, why: &str) -> Param {
    Param {
        key,
        value: num(x),
        note: format!("NOT MEASURED by calibrate ({why}): built-in nominal-x86-server value"),
    }
}

/// Cache sizes from the `topology` record (CPUID leaf 4 as the kernel read
/// it): (L1d + L2 of one core, LLC bytes per core).
fn cache_sizes(topo: &Value) -> Option<(u64, u64)> {
    let caches = topo["caches"].as_array()?;
    let cpus = crate::topology_record::cpus(topo)?;
    let core0 = cpus.first()?.core;
    let threads = cpus.iter().filter(|c| c.core == core0).count() as u64;
    let size = |level: u64, types: &[&str]| {
        caches
            .iter()
            .find(|c| c["level"] == level && types.contains(&c["type"].as_str().unwrap_or("")))
    };
    let l1 = size(1, &["data", "unified"])?["size_bytes"].as_u64()?;
    let l2 = size(2, &["unified", "data"])?["size_bytes"].as_u64()?;
    let llc = caches
        .iter()
        .filter(|c| c["type"] != "instruction")
        .max_by_key(|c| c["level"].as_u64().unwrap_or(0))?;
    let sharing = count_cpus(crate::topology_record::cache_instances(llc).first()?)?;
    let cores = (sharing / threads.max(1)).max(1);
    Some((l1 + l2, llc["size_bytes"].as_u64()? / cores))
}

/// CPUs in a list such as "0-3,8,10-11".
fn count_cpus(list: &str) -> Option<u64> {
    let mut n = 0;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => b.trim().parse::<u64>().ok()? - a.trim().parse::<u64>().ok()? + 1,
            None => {
                part.trim().parse::<u64>().ok()?;
                1
            }
        };
    }
    Some(n)
}

/// The profile TOML for a log's records. `source` names the log in the header.
pub fn profile_toml(records: &[Value], source: &str) -> Result<String> {
    let Some(cal) = record(records, "calibrate") else {
        bail!(
            "no calibrate record in {source} (capture the console of `cargo xtask run --experiment calibrate`, or its --results file)"
        );
    };
    let boot = record(records, "boot");
    let topo = record(records, "topology");
    let clock = ClockSource::of(boot, cal);
    let base = Profile::default_profile();
    let dists: Vec<&Value> = cal["distances"]
        .as_array()
        .context("calibrate record without distances")?
        .iter()
        .collect();
    let dist = |name: &str| dists.iter().find(|d| d["distance"] == name).copied();

    // [cpu]
    let mut cpu = vec![measured(
        "compute_unit_ns",
        u(cal, "compute_unit_ps")? as f64 / 1000.0,
        "one iteration of workloads::args::compute, timed over 20,000-unit runs on CPU 0",
    )];
    cpu.push(match cal["smt_shared_speed_milli"].as_u64() {
        Some(s) if s > 0 => {
            let speed = (s as f64 / 1000.0).min(1.0);
            measured(
                "smt_shared_speed",
                speed,
                &format!(
                    "compute speed on CPU 0 while its SMT sibling also computes, relative to alone ({:.3}{})",
                    s as f64 / 1000.0,
                    if s > 1000 { ", capped at 1" } else { "" }
                ),
            )
        }
        _ => builtin(
            "smt_shared_speed",
            base.cpu.smt_shared_speed,
            "the machine has no SMT sibling of CPU 0",
        ),
    });
    cpu.push(builtin(
        "smt_spin_speed",
        base.cpu.smt_spin_speed,
        "calibrate does not time a thread next to a pause-loop spinner",
    ));

    // [kernel]
    let syscall = u(cal, "pipe_call_ns")? as f64;
    let wake_ups: Vec<f64> = dists
        .iter()
        .filter_map(|d| d["wake_up_ns"].as_u64())
        .map(|x| x as f64)
        .collect();
    let mut kernel = vec![
        measured(
            "context_switch_ns",
            u(cal, "context_switch_ns")? as f64,
            "half of a yield_now between two threads bound to CPU 0 (two switches)",
        ),
        measured(
            "syscall_ns",
            syscall,
            "half of a 1-byte pipe write + read on one thread (schedlab's pipe, not Linux's)",
        ),
        Param {
            key: "datagram_syscall_ns",
            value: num(syscall * DATAGRAM_RATIO),
            note: format!(
                "derived: {DATAGRAM_RATIO} x the measured syscall_ns (the UDP/TCP ratio measured with docs/probes/netcost.c); schedlab has no datagram path to time"
            ),
        },
        measured(
            "copy_ns_per_byte",
            u(cal, "copy_ps_per_byte")? as f64 / 1000.0,
            "a 4 KiB pipe write + read minus a 1-byte one, per byte copied (in and out)",
        ),
        measured(
            "futex_ns",
            u(cal, "semaphore_op_ns")? as f64,
            "half of an uncontended semaphore up + down",
        ),
    ];
    kernel.push(match median(wake_ups) {
        Some(w) => measured(
            "wakeup_ns",
            w,
            "median over distances of the waker's semaphore up that wakes a thread blocked on an idle CPU",
        ),
        None => builtin(
            "wakeup_ns",
            base.kernel.wakeup_ns,
            "a one-CPU machine: no cross-CPU wakeup",
        ),
    });
    kernel.push(measured(
        "fork_ns",
        u(cal, "spawn_ns")? as f64,
        "task::spawn of an empty bound thread, on the parent",
    ));
    kernel.push(timer_param(cal, &clock, base.kernel.timer_ns));

    // [wakeup]
    let by_dist = |field: &str, what: &str, base: [f64; 5]| -> Vec<Param> {
        DISTANCES
            .iter()
            .zip(base)
            .map(
                |(&name, b)| match dist(name).and_then(|d| d[field].as_u64()) {
                    Some(x) => {
                        let cpus = dist(name)
                            .map(|d| d["cpus"].to_string())
                            .unwrap_or_default();
                        measured(name, x as f64, &format!("{what}, CPUs {cpus}"))
                    }
                    None => builtin(name, b, "the machine has no CPU pair at this distance"),
                },
            )
            .collect()
    };
    let ipi = &base.wakeup.ipi_ns;
    let ipi_params = by_dist(
        "ipi_busy_ns",
        "call-function IPI from send to the handler's TSC read on a busy target (one way)",
        [ipi.smt, ipi.llc, ipi.package, ipi.node, ipi.remote],
    );
    let exits: Vec<f64> = dists
        .iter()
        .filter_map(|d| {
            Some(
                d["ipi_idle_ns"]
                    .as_u64()?
                    .saturating_sub(d["ipi_busy_ns"].as_u64()?),
            )
        })
        .map(|x| x as f64)
        .collect();
    let idle_exit = match median(exits) {
        Some(x) => measured(
            "idle_exit_ns",
            x,
            "median over distances of the IPI to a halted (HLT) target minus the IPI to a busy one",
        ),
        None => builtin(
            "idle_exit_ns",
            base.wakeup.idle_exit_ns,
            "a one-CPU machine: no IPI",
        ),
    };

    // [cache]
    let line_bytes = u(cal, "line_bytes")?;
    let (private, llc) = match topo.and_then(cache_sizes) {
        Some((p, l)) => (
            measured(
                "private_bytes",
                p as f64,
                "L1d + L2 of one core from CPUID leaf 4 (the topology record), not timed",
            ),
            measured(
                "llc_bytes_per_core",
                l as f64,
                "last-level cache size / cores sharing it, from CPUID leaf 4, not timed",
            ),
        ),
        None => (
            builtin(
                "private_bytes",
                base.cache.private_bytes as f64,
                "the log has no topology record with L1/L2/LLC caches",
            ),
            builtin(
                "llc_bytes_per_core",
                base.cache.llc_bytes_per_core as f64,
                "the log has no topology record with L1/L2/LLC caches",
            ),
        ),
    };
    let l = &base.cache.line_ns;
    let line_params = by_dist(
        "line_ns",
        "half the round trip of one cache line bounced between two spinning threads",
        [l.smt, l.llc, l.package, l.node, l.remote],
    );
    // mlp: the model refills `lines` lines from distance d in
    // ceil(lines / mlp) x line_ns(d); solve for mlp from the measured refill
    // of the mid-size working set (cold minus warm re-read).
    let mlps: Vec<f64> = dists
        .iter()
        .filter_map(|d| {
            let line_ns = d["line_ns"].as_u64()? as f64;
            let r = d["refill"].as_array()?.get(1)?;
            let refill = r["cold_ns"].as_u64()?.checked_sub(r["warm_ns"].as_u64()?)? as f64;
            let lines = (r["kib"].as_u64()? * 1024 / line_bytes.max(1)) as f64;
            let mlp = lines * line_ns / refill;
            (refill > 0.0 && (1.0..=64.0).contains(&mlp)).then_some(mlp)
        })
        .collect();
    let solved = mlps.len();
    let mlp = match median(mlps) {
        Some(m) => measured(
            "mlp",
            m.round(),
            &format!(
                "lines x line_ns / refill time of the 256 KiB working set re-read after a migration (median over the {solved} of {} distances that gave 1-64)",
                dists.len()
            ),
        ),
        None => builtin(
            "mlp",
            base.cache.mlp as f64,
            "no distance gave a refill time consistent with 1-64 misses in flight (cold re-read not slower than warm, as under TCG which has no caches)",
        ),
    };
    let mem = &cal["memory"];
    let from = mem["from"].as_array().cloned().unwrap_or_default();
    let buffer_node = mem["buffer_node"].as_u64();
    let local = from
        .iter()
        .find(|f| f["node"].as_u64() == buffer_node.or(Some(0)));
    let dram = match (local.and_then(|f| f["ns_per_hop"].as_u64()), buffer_node) {
        (Some(ns), Some(n)) => measured(
            "dram_ns",
            ns as f64,
            &format!(
                "random pointer chase over {} MiB from node {n}, which holds the buffer (SRAT)",
                mem["bytes"].as_u64().unwrap_or(0) >> 20
            ),
        ),
        (Some(ns), None) => measured(
            "dram_ns",
            ns as f64,
            &format!(
                "random pointer chase over {} MiB from CPU 0; the buffer's node is unknown (no SRAT, or it straddles nodes)",
                mem["bytes"].as_u64().unwrap_or(0) >> 20
            ),
        ),
        _ => builtin("dram_ns", base.cache.dram_ns, "no memory chase in the log"),
    };
    let remote_slit = dist("remote")
        .and_then(|d| {
            let cpus = d["cpus"].as_array()?;
            let topo = topo?;
            let rows = crate::topology_record::cpus(topo)?;
            let node = |cpu: &Value| -> Option<usize> {
                let c = cpu.as_u64()?;
                rows.iter().find(|x| x.cpu == c).map(|x| x.node as usize)
            };
            let (na, nb) = (node(&cpus[0])?, node(&cpus[1])?);
            topo["distances"][na][nb].as_u64()
        })
        .map_or_else(
            || {
                builtin(
                    "remote_slit",
                    f64::from(base.cache.remote_slit),
                    "no remote pair with a SLIT distance in the log",
                )
            },
            |s| Param {
                key: "remote_slit",
                value: num(s as f64),
                note: "node distance of the measured remote pair (topology record: the SLIT, or 10/20 without one), so remote values hold at it".into(),
            },
        );
    // Remote DRAM: the chases from the other nodes (the buffer's node is
    // known), each brought to `remote_slit` by the model's rule (the excess
    // over local memory scales with the SLIT distance's excess over 10);
    // their median, never below local memory.
    let slit_at: f64 = remote_slit
        .value
        .parse()
        .unwrap_or(f64::from(base.cache.remote_slit));
    let local: f64 = dram.value.parse().unwrap_or(base.cache.dram_ns);
    let remote_chases: Vec<(u64, u64, u64)> = from
        .iter()
        .filter(|f| buffer_node.is_some() && f["node"].as_u64() != buffer_node)
        .filter_map(|f| {
            Some((
                f["node"].as_u64()?,
                f["slit"].as_u64().filter(|&s| s > 10)?,
                f["ns_per_hop"].as_u64()?,
            ))
        })
        .collect();
    let at_remote_slit = |slit: u64, ns: u64| {
        if slit_at <= 10.0 {
            ns as f64
        } else {
            local + (ns as f64 - local) * (slit_at - 10.0) / (slit as f64 - 10.0)
        }
    };
    let remote_dram = match median(
        remote_chases
            .iter()
            .map(|&(_, slit, ns)| at_remote_slit(slit, ns))
            .collect(),
    ) {
        Some(ns) => measured(
            "remote_dram_ns",
            ns.max(local).round(),
            &format!(
                "the same chase from the other nodes ({}), its excess over dram_ns scaled to SLIT {} (median{})",
                remote_chases
                    .iter()
                    .map(|(n, slit, ns)| format!("node {n} at SLIT {slit}: {ns} ns"))
                    .collect::<Vec<_>>()
                    .join(", "),
                num(slit_at),
                if ns < local {
                    "; below dram_ns, so raised to it"
                } else {
                    ""
                }
            ),
        ),
        None => Param {
            key: "remote_dram_ns",
            value: num((local * base.cache.remote_dram_ns / base.cache.dram_ns).round()),
            note: format!(
                "NOT MEASURED by calibrate ({}): dram_ns times the built-in nominal-x86-server remote/local ratio ({} / {})",
                if buffer_node.is_none() {
                    "the chase buffer's node is unknown, so no chase is known to be remote"
                } else {
                    "no chase from another node in the log (one node?)"
                },
                num(base.cache.remote_dram_ns),
                num(base.cache.dram_ns)
            ),
        },
    };

    let mut cache = vec![
        measured(
            "line_bytes",
            line_bytes as f64,
            "line size from CPUID leaf 4",
        ),
        mlp,
        private,
        llc,
    ];
    let same = llc_hit_param(cal, l.same);
    let mut lines = vec![same];
    lines.extend(line_params);
    // [mm] switch_ns: the kernel gives each process its own PML4, so a
    // switch between threads of two processes loads CR3; calibrate times
    // one on CPU 0 minus a switch between two threads of one process. No
    // PCID there, so that difference includes the TLB refill of whatever
    // the yield path touches. A log from before the measurement (no `mm`
    // field) keeps the built-in value.
    let mm_switch = match cal["mm"]["switch_ns"].as_u64() {
        Some(ns) => measured(
            "switch_ns",
            ns as f64,
            &format!(
                "a switch between threads of two processes bound to CPU 0 ({} ns) minus one between two threads of one process ({} ns): CR3 load without PCID, TLB refill of the yield path included",
                cal["mm"]["process_switch_ns"], cal["mm"]["thread_switch_ns"]
            ),
        ),
        None => builtin(
            "switch_ns",
            base.mm.switch_ns,
            "this log's calibrate record has no mm field: it predates the measurement",
        ),
    };
    let mm = vec![
        mm_switch,
        builtin(
            "asids",
            base.mm.asids as f64,
            "schedlab's kernel uses no PCID (every CR3 load flushes the TLB); Linux's 6 slots",
        ),
        builtin(
            "base_pages",
            base.mm.base_pages as f64,
            "schedlab processes have no user pages to count",
        ),
        match cal["mm"]["page_walk_ps"].as_u64() {
            Some(ps) if ps > 0 => measured(
                "page_walk_ns",
                ps as f64 / 1000.0,
                &format!(
                    "one word in each of {} pages of {} bytes read right after a TLB flush minus warm, per page (the model's walks are of 4 KiB pages; a 2 MiB page's walk has one level less)",
                    cal["mm"]["walk_pages"], cal["mm"]["page_bytes"]
                ),
            ),
            Some(_) => builtin(
                "page_walk_ns",
                base.mm.page_walk_ns,
                "measured 0: a TLB miss cost nothing on this clock (QEMU icount counts instructions)",
            ),
            None => builtin(
                "page_walk_ns",
                base.mm.page_walk_ns,
                "this log's calibrate record has no page walk: it predates the measurement",
            ),
        },
        tlb_param(&cal["mm"], base.mm.tlb_entries),
    ];
    cache.push(dram);
    cache.push(remote_dram);
    cache.push(remote_slit);

    let mut t = String::new();
    let w = &mut t;
    writeln!(
        w,
        "# schedlab simulator cost profile, measured by the `calibrate` experiment"
    )?;
    writeln!(w, "# (cargo xtask profile --from {source}).")?;
    writeln!(w, "#")?;
    writeln!(w, "# Clock source: {}", clock.describe())?;
    if clock != ClockSource::BareMetal {
        writeln!(
            w,
            "# Use this profile to exercise the calibration path, not as a model of real hardware."
        )?;
    }
    if let Some(s) = record(records, "smp") {
        writeln!(
            w,
            "# Machine: {} CPUs, {} NUMA node(s); TSC {} Hz ({}).",
            s["cpus"],
            topo.map_or(Value::Null, |t| t["nodes"].clone()),
            s["tsc_hz"],
            s["tsc_source"].as_str().unwrap_or("?")
        )?;
    }
    writeln!(
        w,
        "# Medians of {} samples each, from CPU {} to a partner CPU at each distance.",
        cal["rounds"], cal["cpu"]
    )?;
    writeln!(
        w,
        "# Each parameter says whether it was measured or kept from the built-in profile."
    )?;
    writeln!(w)?;
    writeln!(w, "name = \"calibrated-{}\"", clock.tag())?;
    let section = |w: &mut String, name: &str, ps: &[Param]| -> std::fmt::Result {
        writeln!(w, "\n[{name}]")?;
        for p in ps {
            writeln!(w, "# {}", p.note)?;
            writeln!(w, "{} = {}", p.key, p.value)?;
        }
        Ok(())
    };
    let table = |w: &mut String, key: &str, ps: &[Param]| -> std::fmt::Result {
        for p in ps {
            writeln!(w, "# {key}.{}: {}", p.key, p.note)?;
        }
        let body: Vec<String> = ps
            .iter()
            .map(|p| format!("{} = {}", p.key, p.value))
            .collect();
        writeln!(w, "{key} = {{ {} }}", body.join(", "))
    };
    section(w, "cpu", &cpu)?;
    section(w, "kernel", &kernel)?;
    writeln!(w, "\n[wakeup]")?;
    table(w, "ipi_ns", &ipi_params)?;
    section_body(w, &[idle_exit])?;
    writeln!(w, "\n[cache]")?;
    section_body(w, &cache)?;
    table(w, "line_ns", &lines)?;
    section(w, "mm", &mm)?;
    section(
        w,
        "noise",
        &[builtin(
            "jitter",
            base.noise.jitter,
            "a modelling choice, not a machine cost",
        )],
    )?;
    Profile::parse(&t).map_err(|e| anyhow::anyhow!("the generated profile does not load: {e}"))?;
    Ok(t)
}

/// `kernel.timer_ns` from the record's `timer` field: the median detour
/// of CPU 0's periodic tick on a thread spinning there (the model charges
/// a sleep's timer interrupt to whatever runs on the CPU it fires on).
fn timer_param(cal: &Value, clock: &ClockSource, nominal: f64) -> Param {
    let t = &cal["timer"];
    match t["detour_ns"].as_u64() {
        Some(ns) if ns > 0 => {
            let on = match clock {
                ClockSource::QemuTcg => {
                    "; under TCG this is emulation time: the emulator delivering an interrupt"
                }
                ClockSource::QemuIcount => {
                    "; under icount this counts the instructions of the interrupt path"
                }
                _ => "",
            };
            measured(
                "timer_ns",
                ns as f64,
                &format!(
                    "median gap a periodic LAPIC tick (nothing expiring) opened in a thread spinning on the TSC on CPU 0 ({} ns; {} of {} ticks found as gaps, {} gaps in all) minus the loop's iteration ({} ps): interrupt entry, tick handler, exit. schedlab's sleeps expire in this tick; Linux's hrtimer interrupt (expiry, wakeup) differs{on}",
                    t["gap_ns"], t["tick_gaps"], t["ticks"], t["gaps"], t["iteration_ps"]
                ),
            )
        }
        Some(_) => builtin("timer_ns", nominal, "the tick's detour measured 0"),
        None if t.is_object() => builtin(
            "timer_ns",
            nominal,
            "no tick opened a gap in the spinning thread on CPU 0",
        ),
        None => builtin(
            "timer_ns",
            nominal,
            "this log's calibrate record has no timer field: it predates the measurement",
        ),
    }
}

/// `mm.tlb_entries` from the `mm` field's `tlb_4k_entries`: the last-level
/// 4 KiB TLB that CPUID leaf 0x18 describes, read rather than timed.
fn tlb_param(mm: &Value, nominal: u64) -> Param {
    match mm["tlb_4k_entries"].as_u64() {
        Some(n) if n > 0 => measured(
            "tlb_entries",
            n as f64,
            &format!(
                "CPUID leaf 0x18: the level-{} data/unified TLB's 4 KiB entries (ways x sets), read, not timed",
                mm["tlb_level"]
            ),
        ),
        _ if mm.get("tlb_4k_entries").is_some() => builtin(
            "tlb_entries",
            nominal as f64,
            "CPUID leaf 0x18 describes no 4 KiB TLB on this CPU (AMD and older Intel parts lack the leaf; QEMU TCG's -cpu max reports none)",
        ),
        _ => builtin(
            "tlb_entries",
            nominal as f64,
            "this log's calibrate record has no TLB size: it predates reading CPUID leaf 0x18",
        ),
    }
}

/// `cache.line_ns.same` from the record's `llc_hit` field: a dependent
/// chase's latency over a buffer beyond the private caches and inside the
/// LLC (the model's lines other tasks evicted from the private caches on
/// the task's own CPU, still in its LLC).
fn llc_hit_param(cal: &Value, nominal: f64) -> Param {
    let h = &cal["llc_hit"];
    match h["ns_per_hop"].as_u64() {
        Some(ns) if ns > 0 => measured(
            "same",
            ns as f64,
            &format!(
                "random dependent pointer chase, one hop per line, on CPU 0 over {} bytes = min(4 x L1d+L2 {}, LLC {} / 2), after a warm-up pass: an LLC hit",
                h["bytes"], h["private_bytes"], h["llc_bytes"]
            ),
        ),
        Some(_) => builtin("same", nominal, "the LLC chase measured 0"),
        None if h.is_object() && h["llc_bytes"].as_u64().unwrap_or(0) == 0 => builtin(
            "same",
            nominal,
            "CPUID leaf 4 gave no L1d, L2 and L3 or higher for CPU 0",
        ),
        None if h.is_object() => builtin(
            "same",
            nominal,
            &format!(
                "min(4 x L1d+L2 {}, LLC {} / 2) is not at least 2 x L2 {}: no buffer between the private caches and the LLC",
                h["private_bytes"], h["llc_bytes"], h["l2_bytes"]
            ),
        ),
        None => builtin(
            "same",
            nominal,
            "this log's calibrate record has no llc_hit field: it predates the measurement",
        ),
    }
}

fn section_body(w: &mut String, ps: &[Param]) -> std::fmt::Result {
    for p in ps {
        writeln!(w, "# {}", p.note)?;
        writeln!(w, "{} = {}", p.key, p.value)?;
    }
    Ok(())
}

/// The records of the run to calibrate from: in a console log (split into
/// boots by [`crate::capture`], which copes with CRLF, escapes, non-UTF-8
/// bytes and several boots), the last boot with a `calibrate` record; in a
/// `--results` file, its records.
pub fn log_records(bytes: &[u8]) -> Result<Vec<Value>> {
    if bytes
        .windows(RECORD_PREFIX.len())
        .any(|w| w == RECORD_PREFIX.as_bytes())
    {
        let capture = crate::capture::parse(bytes)?;
        let boot = capture
            .boots
            .iter()
            .rev()
            .find(|b| b.result.record("calibrate").is_some())
            .unwrap_or_else(|| capture.boots.last().expect("parse guarantees a boot"));
        return Ok(boot.result.records.clone());
    }
    read_records(&String::from_utf8_lossy(bytes))
}

/// `cargo xtask profile --from LOG [--out FILE]`.
pub fn run(from: &Path, out: Option<&Path>) -> Result<i32> {
    let bytes = std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    let records = log_records(&bytes).with_context(|| format!("{}", from.display()))?;
    let toml = profile_toml(&records, &from.display().to_string())?;
    match out {
        Some(p) => {
            std::fs::write(p, &toml).with_context(|| format!("writing {}", p.display()))?;
            eprintln!(
                "xtask: profile written to {} (load it with --backend sim --profile {})",
                p.display(),
                p.display()
            );
        }
        None => print!("{toml}"),
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serial console of `cargo xtask run --experiment calibrate --release
    /// --sockets 2 --cores 2 --threads 2 --numa-nodes 2` under QEMU TCG on
    /// this project's 2-core build host (`tests/fixtures/README.md`).
    const FIXTURE: &str = include_str!("../tests/fixtures/calibrate-qemu-tcg.log");

    fn records() -> Vec<Value> {
        log_records(FIXTURE.as_bytes()).unwrap()
    }

    fn cal(records: &[Value]) -> &Value {
        record(records, "calibrate").unwrap()
    }

    /// The `mm` field of the last calibrate record.
    fn c_mm(r: &mut [Value]) -> &mut Value {
        &mut r
            .iter_mut()
            .rev()
            .find(|v| v["type"] == "calibrate")
            .unwrap()["mm"]
    }

    /// The comment line right above `key = ...` in the profile text.
    fn note_of<'a>(toml: &'a str, key: &str) -> &'a str {
        let lines: Vec<&str> = toml.lines().collect();
        let i = lines
            .iter()
            .position(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in\n{toml}"));
        lines[i - 1]
    }

    #[test]
    fn the_console_log_has_every_record_a_profile_needs() {
        let r = records();
        for ty in [
            "boot",
            "smp",
            "topology",
            "sched_config",
            "calibrate",
            "exit",
        ] {
            assert!(record(&r, ty).is_some(), "no {ty} record");
        }
        assert_eq!(record(&r, "exit").unwrap()["status"], "success");
        // Log lines and firmware output around the records are skipped.
        assert!(FIXTURE.lines().count() > r.len());
    }

    #[test]
    fn results_file_and_console_log_give_the_same_profile() {
        let r = records();
        let jsonl: String = r.iter().map(|v| format!("{v}\n")).collect();
        let again = log_records(jsonl.as_bytes()).unwrap();
        assert_eq!(again, r);
        assert_eq!(read_records(FIXTURE).unwrap(), r);
        assert_eq!(
            profile_toml(&again, "x").unwrap(),
            profile_toml(&r, "x").unwrap()
        );
    }

    #[test]
    fn the_last_boot_with_a_calibrate_record_is_used() {
        // A later boot (the server rebooted into another experiment) does
        // not hide the calibration run.
        let log = format!(
            "{FIXTURE}@@SCHEDLAB {{\"type\":\"boot\",\"experiment\":\"boot\"}}\n@@SCHEDLAB {{\"type\":\"exit\",\"status\":\"success\"}}\n"
        );
        assert_eq!(log_records(log.as_bytes()).unwrap(), records());
    }

    #[test]
    fn a_broken_record_line_is_an_error_naming_the_line() {
        let e = read_records("noise\n@@SCHEDLAB {\"type\":").unwrap_err();
        assert!(
            format!("{e:#}").starts_with("line 2: malformed record"),
            "{e:#}"
        );
    }

    #[test]
    fn measured_values_land_in_their_parameters() {
        let r = records();
        let c = cal(&r);
        let toml = profile_toml(&r, "fixture.log").unwrap();
        let p = Profile::parse(&toml).unwrap();
        let base = Profile::default_profile();
        let f = |k: &str| c[k].as_u64().unwrap() as f64;
        assert_eq!(p.name, "calibrated-qemu-tcg");
        assert_eq!(p.kernel.context_switch_ns, f("context_switch_ns"));
        assert_eq!(p.kernel.syscall_ns, f("pipe_call_ns"));
        assert_eq!(p.kernel.futex_ns, f("semaphore_op_ns"));
        assert_eq!(p.kernel.fork_ns, f("spawn_ns"));
        assert!((p.cpu.compute_unit_ns - f("compute_unit_ps") / 1000.0).abs() < 1e-3);
        assert!((p.kernel.datagram_syscall_ns - 0.48 * f("pipe_call_ns")).abs() < 1e-3);
        // 2 sockets x 2 cores x 2 threads, a node per socket: smt, llc and
        // remote partners exist; package and node do not.
        let d = |name: &str| {
            c["distances"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["distance"] == name)
                .unwrap_or_else(|| panic!("no {name}"))
        };
        for (name, ipi, line) in [
            ("smt", p.wakeup.ipi_ns.smt, p.cache.line_ns.smt),
            ("llc", p.wakeup.ipi_ns.llc, p.cache.line_ns.llc),
            ("remote", p.wakeup.ipi_ns.remote, p.cache.line_ns.remote),
        ] {
            assert_eq!(ipi, d(name)["ipi_busy_ns"].as_u64().unwrap() as f64);
            assert_eq!(line, d(name)["line_ns"].as_u64().unwrap() as f64);
        }
        assert_eq!(p.wakeup.ipi_ns.package, base.wakeup.ipi_ns.package);
        assert_eq!(p.cache.line_ns.node, base.cache.line_ns.node);
        assert_eq!(p.cache.line_ns.same, base.cache.line_ns.same);
        assert_eq!(p.mm, base.mm);
        assert_eq!(p.noise, base.noise);
        // QEMU's SLIT between the two nodes is 20.
        assert_eq!(p.cache.remote_slit, 20);
        let mem = &c["memory"];
        let local = mem["from"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["node"] == mem["buffer_node"])
            .expect("the buffer's node is known in the fixture");
        assert_eq!(
            p.cache.dram_ns,
            local["ns_per_hop"].as_u64().unwrap() as f64
        );
        // The chase from node 1 (SLIT 20, the remote pair's distance too).
        let remote = mem["from"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["node"] != mem["buffer_node"])
            .expect("a remote chase in the fixture");
        assert_eq!(remote["slit"], 20);
        assert_eq!(
            p.cache.remote_dram_ns,
            remote["ns_per_hop"].as_u64().unwrap() as f64
        );
    }

    #[test]
    fn every_parameter_says_where_it_came_from() {
        let records = records();
        let toml = profile_toml(&records, "fixture.log").unwrap();
        for key in [
            "compute_unit_ns",
            "context_switch_ns",
            "syscall_ns",
            "futex_ns",
            "wakeup_ns",
            "fork_ns",
            "idle_exit_ns",
            "dram_ns",
            "remote_dram_ns",
            "private_bytes",
        ] {
            assert!(note_of(&toml, key).starts_with("# measured: "), "{key}");
        }
        for key in ["timer_ns", "switch_ns", "asids", "jitter"] {
            assert!(
                note_of(&toml, key).contains("NOT MEASURED by calibrate"),
                "{key}"
            );
        }
        assert!(toml.contains("# ipi_ns.smt: measured: "));
        assert!(toml.contains("# ipi_ns.package: NOT MEASURED by calibrate (the machine has no CPU pair at this distance)"));
        assert!(toml.contains("# line_ns.same: NOT MEASURED"));
        // mlp is solved where a distance gives 1-64 misses in flight, kept
        // otherwise; which one the fixture gives is checked against its record.
        let c = cal(&records);
        let solvable = c["distances"].as_array().unwrap().iter().any(|d| {
            let r = &d["refill"][1];
            let refill = r["cold_ns"].as_f64().unwrap() - r["warm_ns"].as_f64().unwrap();
            let mlp = 4096.0 * d["line_ns"].as_f64().unwrap() / refill;
            refill > 0.0 && (1.0..=64.0).contains(&mlp)
        });
        let note = note_of(&toml, "mlp");
        assert_eq!(note.starts_with("# measured: "), solvable, "{note}");
    }

    #[test]
    fn a_log_with_the_mm_field_gives_the_measured_switch() {
        // 2 vCPUs (1 socket x 2 cores), multi-threaded TCG, rounds=200.
        let log = include_str!("../tests/fixtures/calibrate-qemu-tcg-mm.log");
        let r = log_records(log.as_bytes()).unwrap();
        let mm = &cal(&r)["mm"];
        let p = Profile::parse(&profile_toml(&r, "mm.log").unwrap()).unwrap();
        let want =
            mm["process_switch_ns"].as_u64().unwrap() - mm["thread_switch_ns"].as_u64().unwrap();
        assert_eq!(mm["switch_ns"].as_u64().unwrap(), want);
        assert!(want > 0);
        assert_eq!(p.mm.switch_ns, want as f64);
        // Two CR3 loads per sampled round trip, 200 rounds.
        assert!(mm["cr3_loads"].as_u64().unwrap() >= 400, "{mm}");
        let walk = mm["page_walk_ps"].as_u64().unwrap();
        assert!(walk > 0, "{mm}");
        assert_eq!(p.mm.page_walk_ns, walk as f64 / 1000.0);
    }

    #[test]
    fn the_address_space_switch_and_page_walk_are_measured_when_the_record_has_them() {
        // The fixture predates the measurement: built-in value, said so.
        let r = records();
        let toml = profile_toml(&r, "fixture.log").unwrap();
        assert!(
            note_of(&toml, "switch_ns").contains("has no mm field"),
            "{toml}"
        );
        // The same record with the field: the difference lands in mm.switch_ns.
        let mut r = records();
        let c = r
            .iter_mut()
            .rev()
            .find(|v| v["type"] == "calibrate")
            .unwrap();
        c["mm"] = serde_json::json!({
            "process_switch_ns": 12214, "thread_switch_ns": 3705, "switch_ns": 8509,
            "cr3_loads": 403, "cr4_pge": false, "cr4_pcide": false,
            "pages": 3135, "global_pages": 0
        });
        let toml = profile_toml(&r, "fixture.log").unwrap();
        assert!(
            note_of(&toml, "page_walk_ns").contains("has no page walk"),
            "{toml}"
        );
        // With a page walk; 0 (icount) keeps the built-in value.
        c_mm(&mut r)["page_walk_ps"] = serde_json::json!(110_723);
        c_mm(&mut r)["walk_pages"] = serde_json::json!(8);
        c_mm(&mut r)["page_bytes"] = serde_json::json!(2_097_152);
        let toml = profile_toml(&r, "fixture.log").unwrap();
        let p = Profile::parse(&toml).unwrap();
        let base = Profile::default_profile();
        assert_eq!(p.mm.switch_ns, 8509.0);
        assert_eq!(p.mm.asids, base.mm.asids);
        assert!((p.mm.page_walk_ns - 110.723).abs() < 1e-9);
        assert!(note_of(&toml, "page_walk_ns").contains("8 pages of 2097152 bytes"));
        c_mm(&mut r)["page_walk_ps"] = serde_json::json!(0);
        let zero = Profile::parse(&profile_toml(&r, "icount.log").unwrap()).unwrap();
        assert_eq!(zero.mm.page_walk_ns, base.mm.page_walk_ns);
        let note = note_of(&toml, "switch_ns");
        assert!(note.starts_with("# measured: "), "{note}");
        assert!(
            note.contains("(12214 ns)") && note.contains("(3705 ns)"),
            "{note}"
        );
    }

    /// 2 vCPUs (1 socket x 2 cores), multi-threaded TCG, rounds=200, with
    /// the `timer` and `llc_hit` fields (`tests/fixtures/README.md`).
    const TIMER_FIXTURE: &str = include_str!("../tests/fixtures/calibrate-qemu-tcg-timer.log");

    #[test]
    fn a_log_with_the_timer_and_llc_fields_gives_the_measured_values() {
        let r = log_records(TIMER_FIXTURE.as_bytes()).unwrap();
        let c = cal(&r);
        let (t, h) = (&c["timer"], &c["llc_hit"]);
        let toml = profile_toml(&r, "timer.log").unwrap();
        let p = Profile::parse(&toml).unwrap();
        // Every tick of the window opened a gap of its own; the emulator's
        // other stalls are gaps without a tick.
        let ticks = t["ticks"].as_u64().unwrap();
        assert!(ticks >= 100, "{t}");
        assert_eq!(t["tick_gaps"].as_u64().unwrap(), ticks, "{t}");
        assert!(t["gaps"].as_u64().unwrap() >= ticks, "{t}");
        assert_eq!(t["ipis"], 0, "{t}");
        let detour = t["detour_ns"].as_u64().unwrap();
        assert_eq!(
            detour,
            t["gap_ns"].as_u64().unwrap() - t["iteration_ps"].as_u64().unwrap() / 1000
        );
        assert_eq!(p.kernel.timer_ns, detour as f64);
        let note = note_of(&toml, "timer_ns");
        assert!(note.starts_with("# measured: "), "{note}");
        assert!(
            note.contains("181 of 181 ticks") && note.contains("emulation time"),
            "{note}"
        );
        // QEMU's caches: L1d 32 KiB + L2 4 MiB, L3 16 MiB: min(4 x private,
        // 8 MiB) = 8 MiB, twice the L2.
        assert_eq!(h["bytes"], 8 << 20, "{h}");
        let ns = h["ns_per_hop"].as_u64().unwrap();
        assert!(ns > 0);
        assert_eq!(p.cache.line_ns.same, ns as f64);
        assert!(toml.contains("# line_ns.same: measured: random dependent pointer chase"));
        // The mm measurements still land; QEMU TCG reports no leaf 0x18.
        assert_eq!(
            p.mm.switch_ns,
            c["mm"]["switch_ns"].as_u64().unwrap() as f64
        );
        assert_eq!(c["mm"]["tlb_4k_entries"], Value::Null);
        assert_eq!(p.mm.tlb_entries, Profile::default_profile().mm.tlb_entries);
        let note = note_of(&toml, "tlb_entries");
        assert!(note.contains("leaf 0x18 describes no 4 KiB TLB"), "{note}");
        // A CPU that has the leaf (Skylake-SP's STLB: 1536 entries).
        let mut r = r.clone();
        c_mm(&mut r)["tlb_4k_entries"] = 1536.into();
        c_mm(&mut r)["tlb_level"] = 2.into();
        let toml = profile_toml(&r, "x").unwrap();
        assert_eq!(Profile::parse(&toml).unwrap().mm.tlb_entries, 1536);
        let note = note_of(&toml, "tlb_entries");
        assert!(
            note.starts_with("# measured: CPUID leaf 0x18: the level-2"),
            "{note}"
        );
    }

    #[test]
    fn a_log_without_the_timer_and_llc_fields_keeps_the_built_in_values() {
        let base = Profile::default_profile();
        for log in [
            FIXTURE,
            include_str!("../tests/fixtures/calibrate-qemu-tcg-mm.log"),
        ] {
            let r = log_records(log.as_bytes()).unwrap();
            assert!(cal(&r).get("timer").is_none() && cal(&r).get("llc_hit").is_none());
            let toml = profile_toml(&r, "old.log").unwrap();
            let p = Profile::parse(&toml).unwrap();
            assert_eq!(p.kernel.timer_ns, base.kernel.timer_ns);
            assert_eq!(p.cache.line_ns.same, base.cache.line_ns.same);
            assert!(
                note_of(&toml, "timer_ns").contains("has no timer field"),
                "{toml}"
            );
            assert!(
                note_of(&toml, "tlb_entries").contains("has no TLB size"),
                "{toml}"
            );
            assert!(toml.contains("# line_ns.same: NOT MEASURED by calibrate (this log's calibrate record has no llc_hit field"), "{toml}");
        }
    }

    #[test]
    fn an_absent_tick_gap_or_llc_buffer_keeps_the_built_in_value_and_says_why() {
        let base = Profile::default_profile();
        let mut r = log_records(TIMER_FIXTURE.as_bytes()).unwrap();
        let c = r
            .iter_mut()
            .rev()
            .find(|v| v["type"] == "calibrate")
            .unwrap();
        c["timer"]["detour_ns"] = Value::Null;
        c["timer"]["tick_gaps"] = 0.into();
        // An L2 of 2 MiB next to an LLC of 4 MiB: min(4 x private, 2 MiB)
        // is not twice the L2.
        c["llc_hit"] = serde_json::json!({"private_bytes": 2_129_920, "l2_bytes": 2_097_152,
            "llc_bytes": 4_194_304, "bytes": 0, "hops": 20000, "ns_per_hop": null});
        let toml = profile_toml(&r, "x").unwrap();
        let p = Profile::parse(&toml).unwrap();
        assert_eq!(p.kernel.timer_ns, base.kernel.timer_ns);
        assert_eq!(p.cache.line_ns.same, base.cache.line_ns.same);
        assert!(
            note_of(&toml, "timer_ns").contains("no tick opened a gap"),
            "{toml}"
        );
        assert!(toml.contains("is not at least 2 x L2 2097152"), "{toml}");
        // No level-3 cache: the sizes are unknown.
        let c = r
            .iter_mut()
            .rev()
            .find(|v| v["type"] == "calibrate")
            .unwrap();
        c["llc_hit"] = serde_json::json!({"private_bytes": 0, "l2_bytes": 0,
            "llc_bytes": 0, "bytes": 0, "hops": 20000, "ns_per_hop": null});
        let toml = profile_toml(&r, "x").unwrap();
        assert!(
            toml.contains("CPUID leaf 4 gave no L1d, L2 and L3"),
            "{toml}"
        );
    }

    #[test]
    fn the_header_names_the_clock_source() {
        let mut r = records();
        let toml = profile_toml(&r, "fixture.log").unwrap();
        assert!(toml.contains("# Clock source: QEMU TCG (no icount)"));
        assert!(toml.contains("EMULATION NUMBERS"));
        let boot = r.iter_mut().find(|v| v["type"] == "boot").unwrap();
        boot["icount"] = Value::Bool(true);
        let toml = profile_toml(&r, "x").unwrap();
        assert!(toml.contains("# Clock source: QEMU icount"));
        assert!(toml.contains("name = \"calibrated-qemu-icount\""));
        let boot = r.iter_mut().find(|v| v["type"] == "boot").unwrap();
        boot["icount"] = Value::Bool(false);
        let c = r.iter_mut().find(|v| v["type"] == "calibrate").unwrap();
        c["hypervisor"] = Value::Bool(false);
        c["hypervisor_vendor"] = Value::String(String::new());
        let toml = profile_toml(&r, "x").unwrap();
        assert!(toml.contains("# Clock source: bare metal"));
        assert!(!toml.contains("EMULATION"));
        let c = r.iter_mut().find(|v| v["type"] == "calibrate").unwrap();
        c["hypervisor"] = Value::Bool(true);
        c["hypervisor_vendor"] = Value::String("KVMKVMKVM...".into());
        let toml = profile_toml(&r, "x").unwrap();
        assert!(toml.contains("hypervisor 'KVMKVMKVM...'"), "{toml}");
    }

    #[test]
    fn mlp_is_solved_from_a_refill_slower_than_a_warm_read() {
        let mut r = records();
        let c = r.iter_mut().find(|v| v["type"] == "calibrate").unwrap();
        // 256 KiB = 4096 lines of 64 bytes; at 100 ns a line and 8 in flight
        // the model's refill is 4096 / 8 x 100 ns.
        for d in c["distances"].as_array_mut().unwrap() {
            d["line_ns"] = 100.into();
            d["refill"][1] =
                serde_json::json!({"kib": 256, "cold_ns": 51_200 + 1000, "warm_ns": 1000});
        }
        let p = Profile::parse(&profile_toml(&r, "x").unwrap()).unwrap();
        assert_eq!(p.cache.mlp, 8);
        assert_eq!(p.cache.line_ns.llc, 100.0);
    }

    #[test]
    fn cache_sizes_come_from_the_topology_record() {
        let r = records();
        let topo = record(&r, "topology").unwrap();
        let (private, llc) = cache_sizes(topo).unwrap();
        let p = Profile::parse(&profile_toml(&r, "x").unwrap()).unwrap();
        assert_eq!(
            (p.cache.private_bytes, p.cache.llc_bytes_per_core),
            (private, llc)
        );
        assert!(private > 0 && llc > 0);
        assert_eq!(count_cpus("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpus("x"), None);
    }

    #[test]
    fn a_log_without_calibrate_is_refused() {
        let r: Vec<Value> = records()
            .into_iter()
            .filter(|v| v["type"] != "calibrate")
            .collect();
        let e = profile_toml(&r, "boot.log").unwrap_err();
        assert!(
            e.to_string().starts_with("no calibrate record in boot.log"),
            "{e}"
        );
    }
}
