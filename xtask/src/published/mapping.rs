//! Which schedlab comparison cell reproduces each published row: the recipe
//! part (`crate::seeds`) and the sweep value (the compare table's op), or
//! why none does. Explicit per seed, so that what is and is not reproduced
//! is reviewable code with a test, never a silent drop.

use super::data::Row;

/// Threads a hackbench run may have (`workloads::hackbench::MAX_TASKS`).
const MAX_TASKS: u64 = workloads::hackbench::MAX_TASKS;
/// CPUs of Aubrey Li's machine (seed 001) and of schedlab's quick machine.
const CPUS_001: u64 = 192;
const CPUS_QUICK: u64 = 8;

/// Where a published row's schedlab counterpart comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// The cell of recipe part `part` at sweep value `op`; `caveat` says
    /// what differs from the published setup.
    Cell {
        part: &'static str,
        op: String,
        /// The compare table's metric name ("" for an experiment's single
        /// main metric).
        metric: &'static str,
        caveat: Option<&'static str>,
    },
    /// No schedlab shape or knob matches; the reason is printed.
    NotReproduced(String),
}

fn cell(part: &'static str, op: impl ToString, caveat: Option<&'static str>) -> Mapping {
    Mapping::Cell {
        part,
        op: op.to_string(),
        metric: "",
        caveat,
    }
}

fn not(reason: impl Into<String>) -> Mapping {
    Mapping::NotReproduced(reason.into())
}

/// The mapping of `row` in the quick (`full = false`) or full form.
pub fn map(row: &Row, full: bool) -> Mapping {
    match row.seed.as_str() {
        "000" => map_000(row),
        "001" => map_001(row, full),
        "002" => map_002(row),
        "003" => map_003(row),
        "004" => map_004(row),
        other => not(format!("no recipe for seed {other}")),
    }
}

/// NAS class C kernels under active / passive cpufreq: the generic team
/// (imbalance_pct=20 is its UA-like irregular work), without or with 4 ms
/// per-CPU kworkers.
fn map_000(row: &Row) -> Mapping {
    let kernel = row.arg_str("kernel").unwrap_or("?");
    if kernel != "ua" {
        return not(format!(
            "NAS {kernel}.C: schedlab's nas is one generic team whose imbalance_pct=20 stands for UA's irregular work; no {} solver shape",
            kernel.to_uppercase()
        ));
    }
    let passive = row
        .arg_str("power_management")
        .is_some_and(|p| p.starts_with("passive"));
    cell(
        "team",
        if passive { "4000" } else { "0" },
        Some("generic NAS team for UA; passive = kworker every 4 ms on every CPU"),
    )
}

/// hackbench process/threads x pipe/sockets by groups (48 tasks each), netperf
/// TCP_RR by load (threads per CPU scaled to the form's machine).
fn map_001(row: &Row, full: bool) -> Mapping {
    match row.benchmark.as_str() {
        "hackbench" => {
            let part = match (row.arg_str("mode"), row.arg_str("ipc")) {
                (Some("threads"), Some("pipe")) => "threads-pipe",
                (Some("threads"), Some("sockets")) => "threads-sockets",
                (Some("process"), Some("pipe")) => "process-pipe",
                (Some("process"), Some("sockets")) => "process-sockets",
                (mode, ipc) => return not(format!("hackbench mode {mode:?} ipc {ipc:?} unknown")),
            };
            match row.arg_u64("groups") {
                Some(g) => cell(part, g, None),
                None => not("no group count"),
            }
        }
        "netperf" => {
            let part = match row.arg_str("test") {
                Some("TCP_RR") => "TCP_RR",
                Some("UDP_RR") => "UDP_RR",
                other => {
                    return not(format!(
                        "netperf {}: seed 001's recipe has TCP_RR and UDP_RR parts only",
                        other.unwrap_or("?")
                    ));
                }
            };
            let Some(n) = row.arg_u64("instances") else {
                return not("no instance count");
            };
            if full {
                cell(part, n, None)
            } else {
                cell(
                    part,
                    n * CPUS_QUICK / CPUS_001,
                    Some("pairs scaled from 192 to 8 CPUs"),
                )
            }
        }
        other => not(format!("{other}: no recipe part")),
    }
}

/// Guittot's Hikey row (sockets, 1 group), Fleming's 2s8 time row (pipe,
/// 30 groups), his runqueue latencies and migrations of the same shape; the
/// older-kernel and fork-spread rows are not compared.
fn map_002(row: &Row) -> Mapping {
    if row.benchmark == "hackbench" && row.baseline_label.starts_with("v4.8") {
        return cell("sockets", 1, Some("Hikey (8 ARM cores) as 2s8-nosmt"));
    }
    if row.benchmark == "hackbench" && row.metric.starts_with("time") {
        return cell("pipe", 30, None);
    }
    if row.benchmark == "hackbench" {
        return not(format!(
            "{} vs {}: two kernels older than the patch, no switch to reproduce",
            row.baseline_label, row.variant_label
        ));
    }
    if row.benchmark == "hackbench (migrations)" {
        let metric = match row.metric.rsplit(", ").next() {
            Some("total") => "total",
            Some("cross-MC") => "cross-MC",
            Some("cross-DIE") => "cross-DIE",
            other => return not(format!("migration split {other:?} unknown")),
        };
        return Mapping::Cell {
            part: "pipe-migrations",
            op: "30".into(),
            metric,
            caveat: Some(
                "migrations of every task in the timed interval (after the forks), per run; Fleming's tracing scope not stated",
            ),
        };
    }
    if row.benchmark.contains("fork") {
        return not(
            "fork spread: schedlab's hackbench counts scheduler events in the timed interval, which starts after the workers are forked",
        );
    }
    if row.benchmark == "hackbench (runqueue latency)" {
        // "runqueue latency max90 (percentile)" and the like.
        let name = row
            .metric
            .strip_prefix("runqueue latency ")
            .and_then(|m| m.split(' ').next());
        let metric = match name {
            Some("mean") => "mean",
            Some("max90") => "max90",
            Some("max95") => "max95",
            Some("max99") => "max99",
            Some("max") => "max",
            other => return not(format!("runqueue latency {other:?} unknown")),
        };
        return Mapping::Cell {
            part: "pipe-runqlat",
            op: "30".into(),
            metric,
            caveat: Some(
                "runqueue latency: the waits that end in the timed interval (after the forks), from enqueue or preemption to switch-in, ns, percentiles and max within 1/64; Fleming's method and unit not stated",
            ),
        };
    }
    not(format!("{}: no recipe part", row.metric))
}

/// mmtests hackbench-process-pipes by groups (40 tasks each) and tbench4 by
/// clients.
fn map_003(row: &Row) -> Mapping {
    match row.benchmark.as_str() {
        "hackbench" => match row.arg_u64("groups") {
            Some(g) if g * 40 > MAX_TASKS => not(format!(
                "{g} groups x 40 tasks = {} threads, over schedlab's {MAX_TASKS}-thread limit",
                g * 40
            )),
            Some(g) => cell("pipes", g, Some("machine not stated")),
            None => not("no group count"),
        },
        "tbench" => match row.arg_u64("clients") {
            Some(c) => cell(
                "tbench",
                c,
                Some(
                    "tbench: a fixed cycle of dbench's eight SMB operations for the loadfile; 200 ms measured after a warmup (0.2 s quick, 2 s full); machine not stated",
                ),
            ),
            None => not("no client count"),
        },
        other => not(format!("{other}: no recipe part")),
    }
}

/// netperf one pair, unbound vs the row's pinned placement, for each of
/// Galbraith's six tests (the recipe sweeps `test=`).
fn map_004(row: &Row) -> Mapping {
    let test = row.arg_str("test").unwrap_or("?");
    let caveat = match test {
        "TCP_RR" | "TCP_STREAM" | "TCP_MAERTS" => None,
        "TCP_SENDFILE" => Some(
            "TCP_SENDFILE: the sender pays no per-byte copy and the receiver no line transfer (simulator only; the kernel copies)",
        ),
        "UDP_STREAM" => Some(
            "UDP_STREAM: 10^6 bits/s received; datagrams beyond the 208 KiB receive buffer are dropped",
        ),
        "UDP_RR" => Some("UDP_RR: datagram path at 0.48 of the socket call's cost"),
        other => {
            return not(format!(
                "netperf {other}: not modelled (schedlab's netperf has {})",
                "TCP_RR, TCP_STREAM, TCP_MAERTS, TCP_SENDFILE, UDP_STREAM, UDP_RR"
            ));
        }
    };
    match row.arg_str("placement") {
        Some("stacked") => cell("stacked", test, caveat),
        Some("cross-smt") => cell("cross-smt", test, caveat),
        Some("cross-core") => cell("cross-core", test, caveat),
        other => not(format!("placement {other:?}: no recipe part")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::published::data;
    use crate::seeds;

    /// (mapped, not reproduced) per seed, counted by hand from the rows:
    /// 000: ua active + ua passive; 001: 10 process + 10 threads rows + 5 TCP_RR + 5 UDP_RR rows;
    /// 002: 002-03, 002-04, the five runqueue-latency rows 002-06..10 and the three migration
    /// rows 002-11..13; 003: groups 1..296 = 15 rows
    /// (296 x 40 = 11,840 threads, under the 15,360 limit) + the 11 tbench4 rows (clients
    /// 1..1024); 004: all 18 rows, 6 tests x 3 placements.
    const EXPECTED: [(&str, usize, usize); 5] = [
        ("000", 2, 6),
        ("001", 30, 0),
        ("002", 10, 3),
        ("003", 26, 0),
        ("004", 18, 0),
    ];

    #[test]
    fn every_row_maps_or_carries_a_reason() {
        for (seed, mapped, not_mapped) in EXPECTED {
            let rows = data::for_seed(seed).unwrap();
            let maps: Vec<Mapping> = rows.iter().map(|r| map(r, true)).collect();
            let n = maps
                .iter()
                .filter(|m| matches!(m, Mapping::Cell { .. }))
                .count();
            assert_eq!((n, rows.len() - n), (mapped, not_mapped), "seed {seed}");
            for m in maps {
                if let Mapping::NotReproduced(why) = m {
                    assert!(why.len() > 10, "seed {seed}: a real reason: {why}");
                }
            }
        }
    }

    #[test]
    fn mapped_cells_exist_in_the_recipe() {
        for full in [false, true] {
            for row in data::rows().unwrap() {
                let Mapping::Cell { part, op, .. } = map(&row, full) else {
                    continue;
                };
                let r = seeds::recipe(&row.seed).unwrap();
                let p = r.parts.iter().find(|p| p.name == part);
                let p = p.unwrap_or_else(|| panic!("{}: no part {part}", row.id));
                let swept = seeds::sweep_values(r, p, full).contains(&op.as_str());
                // Only seed 003's quick form sweeps fewer groups (<= 48).
                let quick_003 = !full && row.seed == "003" && op.parse::<u64>().unwrap() > 48;
                assert!(
                    swept != quick_003,
                    "{} -> {part}/{op} (full {full})",
                    row.id
                );
            }
        }
    }

    #[test]
    fn examples_by_hand() {
        let rows = data::rows().unwrap();
        let m = |id: &str, full| map(rows.iter().find(|r| r.id == id).unwrap(), full);
        // 001-25: TCP_RR with 384 threads on 192 CPUs = 2 per CPU: 16 pairs
        // on the 8-CPU quick machine, 384 on the full one.
        assert!(
            matches!(m("001-25", false), Mapping::Cell { part: "TCP_RR", ref op, .. } if op == "16")
        );
        assert!(matches!(m("001-25", true), Mapping::Cell { ref op, .. } if op == "384"));
        // 001-30: UDP_RR 384 instances, its own part, scaled the same way.
        assert!(
            matches!(m("001-30", false), Mapping::Cell { part: "UDP_RR", ref op, .. } if op == "16")
        );
        // 001-01: hackbench process pipe, 1 group; 001-07 process sockets, 2 groups.
        assert!(
            matches!(m("001-01", false), Mapping::Cell { part: "process-pipe", ref op, .. } if op == "1")
        );
        assert!(
            matches!(m("001-07", true), Mapping::Cell { part: "process-sockets", ref op, .. } if op == "2")
        );
        assert!(
            matches!(m("001-13", false), Mapping::Cell { part: "threads-pipe", ref op, .. } if op == "3")
        );
        assert!(
            matches!(m("000-08", false), Mapping::Cell { part: "team", ref op, .. } if op == "4000")
        );
        assert!(matches!(m("000-04", false), Mapping::Cell { ref op, .. } if op == "0"));
        assert!(matches!(m("000-06", false), Mapping::NotReproduced(ref w) if w.contains("LU")));
        assert!(matches!(
            m("002-03", false),
            Mapping::Cell {
                part: "sockets",
                ..
            }
        ));
        assert!(matches!(m("002-01", false), Mapping::NotReproduced(ref w) if w.contains("older")));
        assert!(
            matches!(m("002-04", false), Mapping::Cell { part: "pipe", ref op, .. } if op == "30")
        );
        assert!(matches!(
            m("002-13", false),
            Mapping::Cell {
                part: "pipe-migrations",
                metric: "cross-DIE",
                ..
            }
        ));
        assert!(matches!(
            m("002-11", false),
            Mapping::Cell {
                metric: "total",
                ..
            }
        ));
        assert!(matches!(m("002-05", false), Mapping::NotReproduced(ref w) if w.contains("fork")));
        assert!(matches!(
            m("002-06", false),
            Mapping::Cell {
                part: "pipe-runqlat",
                metric: "mean",
                ..
            }
        ));
        assert!(matches!(
            m("002-08", false),
            Mapping::Cell {
                part: "pipe-runqlat",
                metric: "max95",
                ref op,
                ..
            } if op == "30"
        ));
        assert!(matches!(
            m("002-10", false),
            Mapping::Cell { metric: "max", .. }
        ));
        // 296 groups x 40 = 11,840 threads fit under the 15,360 limit.
        assert!(matches!(m("003-15", true), Mapping::Cell { ref op, .. } if op == "296"));
        assert!(matches!(m("003-12", true), Mapping::Cell { ref op, .. } if op == "203"));
        // 003-22 is tbench4 with 64 clients.
        assert!(
            matches!(m("003-22", true), Mapping::Cell { part: "tbench", ref op, .. } if op == "64")
        );
        assert!(
            matches!(m("004-14", false), Mapping::Cell { part: "cross-smt", ref op, .. } if op == "TCP_RR")
        );
        // 004-01 is TCP_SENDFILE stacked, 004-08 TCP_MAERTS cross-smt,
        // 004-12 UDP_STREAM cross-core, 004-16 UDP_RR stacked.
        for (id, part, op) in [
            ("004-01", "stacked", "TCP_SENDFILE"),
            ("004-08", "cross-smt", "TCP_MAERTS"),
            ("004-12", "cross-core", "UDP_STREAM"),
            ("004-16", "stacked", "UDP_RR"),
        ] {
            for full in [false, true] {
                assert!(
                    matches!(m(id, full), Mapping::Cell { part: p, op: ref o, .. } if p == part && o == op),
                    "{id}: {:?}",
                    m(id, full)
                );
            }
        }
        assert!(
            matches!(m("001-30", true), Mapping::Cell { part: "UDP_RR", ref op, .. } if op == "384")
        );
    }
}
