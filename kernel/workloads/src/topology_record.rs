//! The `topology` record's compact body, written once for the kernel (and
//! readable by xtask's `topology_record` module; schema in docs/results.md).
//!
//! Its size grows linearly with the CPU count on regular machines, where the
//! old per-CPU form grew with CPUs x groups (514,771 bytes for 255 CPUs):
//! * per-CPU facts are columns of arithmetic runs `[first, count, step]`
//!   (`0,1,2,...,254` is `[[0,255,1]]`);
//! * caches with the same attributes are one entry listing every instance's
//!   CPUs;
//! * each distinct scheduling domain is listed once, under an entry for its
//!   attached index (`domain-N`), name, flags, `imbalance_pct` and weight,
//!   with its groups in CPU order and, when they are not its span, the CPUs
//!   that have it.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use topology::{CacheKind, CpuId, CpuMask, SchedDomain, SchedDomains, Topology};

use crate::json::{json_array, json_string};

/// `values` as arithmetic runs `[first, count, step]`, greedily from the
/// left: a run continues while the next value is `first + count * step`.
pub fn json_runs(values: impl IntoIterator<Item = u64>) -> String {
    let mut runs: Vec<(u64, u64, i64)> = Vec::new();
    for v in values {
        match runs.last_mut() {
            Some((first, count, step)) if *count == 1 => {
                *step = v as i64 - *first as i64;
                *count = 2;
            }
            Some((first, count, step))
                if (*first as i64).wrapping_add(*count as i64 * *step) == v as i64 =>
            {
                *count += 1;
            }
            _ => runs.push((v, 1, 0)),
        }
    }
    json_array(runs, |w, (first, count, step)| {
        write!(w, "[{first},{count},{step}]")
    })
}

fn mask(m: &CpuMask) -> String {
    json_string(&alloc::format!("{m}"))
}

/// Level, type, size, line and ways of a cache.
type CacheKey = (u8, CacheKind, u64, u32, u32);

/// A domain listed once for every CPU that has an equal one at the same index.
struct Distinct<'a> {
    index: usize,
    sd: &'a SchedDomain,
    /// The groups' spans, sorted by first CPU.
    groups: Vec<&'a CpuMask>,
    cpus: CpuMask,
}

fn sorted_groups(sd: &SchedDomain) -> Vec<&CpuMask> {
    let mut g: Vec<&CpuMask> = sd.groups.iter().map(|g| &*g.span).collect();
    g.sort_by_key(|m| m.first());
    g
}

/// Same level, span, flags, `imbalance_pct` and set of group spans.
fn same(d: &Distinct<'_>, index: usize, sd: &SchedDomain) -> bool {
    d.index == index
        && d.sd.span == sd.span
        && d.sd.name == sd.name
        && d.sd.flags == sd.flags
        && d.sd.imbalance_pct == sd.imbalance_pct
        && d.groups.len() == sd.groups.len()
        && sd.groups.iter().all(|g| {
            d.groups
                .binary_search_by_key(&g.span.first(), |m| m.first())
                .ok()
                .and_then(|i| d.groups.get(i))
                .is_some_and(|m| **m == *g.span)
        })
}

/// The distinct domains of every CPU, in order of (index, first CPU).
fn distinct(domains: &SchedDomains) -> Vec<Distinct<'_>> {
    let n = domains.nr_cpus();
    let mut out: Vec<Distinct<'_>> = Vec::new();
    for cpu in 0..n {
        for (index, sd) in domains.domains(cpu).iter().enumerate() {
            // Most CPUs find their domain among those of the same span, so the
            // search is short; the rare mismatches append a new entry.
            match out.iter_mut().rev().find(|d| same(d, index, sd)) {
                Some(d) => d.cpus.set(cpu),
                None => out.push(Distinct {
                    index,
                    sd,
                    groups: sorted_groups(sd),
                    cpus: CpuMask::from_cpus(n, [cpu as CpuId]),
                }),
            }
        }
    }
    out.sort_by_key(|d| (d.index, d.cpus.first()));
    out
}

/// The `topology` record's fields after `type`: `nr_cpus`, `nodes`,
/// `distances`, `cpus`, `caches`, `domains` (docs/results.md).
pub fn topology_fields(
    t: &Topology,
    domains: &SchedDomains,
    online: impl Fn(CpuId) -> bool,
) -> crate::json::Record {
    let col = |f: &dyn Fn(CpuId) -> u64| json_runs((0..t.nr_cpus()).map(f));
    let cpu_field = |f: fn(&topology::CpuTopo) -> u32| {
        col(&|cpu| t.cpus.get(cpu).map_or(0, |c| u64::from(f(c))))
    };
    let mut cpus = String::from("{");
    let columns: [(&str, String); 10] = [
        ("apic_id", cpu_field(|c| c.apic_id)),
        ("package", cpu_field(|c| c.package)),
        ("die", cpu_field(|c| c.die)),
        ("core", cpu_field(|c| c.core)),
        ("thread", cpu_field(|c| c.thread)),
        ("node", cpu_field(|c| c.node)),
        ("llc", cpu_field(|c| c.llc)),
        ("online", col(&|cpu| u64::from(online(cpu)))),
        ("sd_llc_size", col(&|cpu| domains.sd_llc_size(cpu) as u64)),
        ("sd_llc_id", col(&|cpu| domains.sd_llc_id(cpu) as u64)),
    ];
    for (i, (k, v)) in columns.iter().enumerate() {
        if i > 0 {
            cpus.push(',');
        }
        let _ = write!(cpus, "\"{k}\":{v}");
    }
    cpus.push('}');

    let dist = json_array(&t.distance, |w, row| write!(w, "{row:?}"));

    // Caches with equal attributes become one entry with every instance.
    let mut kinds: Vec<(CacheKey, Vec<&CpuMask>)> = Vec::new();
    for c in &t.caches {
        let key = (c.level, c.kind, c.size_bytes, c.line_bytes, c.ways);
        match kinds.iter_mut().find(|k| k.0 == key) {
            Some(k) => k.1.push(&c.cpus),
            None => kinds.push((key, alloc::vec![&c.cpus])),
        }
    }
    let caches = json_array(&kinds, |w, ((level, kind, size, line, ways), inst)| {
        let kind = match kind {
            CacheKind::Data => "data",
            CacheKind::Instruction => "instruction",
            CacheKind::Unified => "unified",
        };
        let inst = json_array(inst.iter(), |w, m| w.write_str(&mask(m)));
        write!(
            w,
            "{{\"level\":{level},\"type\":\"{kind}\",\"size_bytes\":{size},\"line_bytes\":{line},\"ways\":{ways},\"instances\":{inst}}}"
        )
    });

    // Distinct domains of one index, name, flags, imbalance_pct and weight form
    // one level entry; each domain lists its CPUs only when they are not its span.
    let all = distinct(domains);
    let mut levels: Vec<Vec<&Distinct<'_>>> = Vec::new();
    for d in &all {
        let key = |x: &Distinct<'_>| {
            (
                x.index,
                x.sd.name,
                x.sd.flags,
                x.sd.imbalance_pct,
                x.sd.span_weight(),
            )
        };
        match levels
            .iter_mut()
            .find(|l| l.first().is_some_and(|f| key(f) == key(d)))
        {
            Some(l) => l.push(d),
            None => levels.push(alloc::vec![d]),
        }
    }
    let doms = json_array(&levels, |w, l| {
        let Some(f) = l.first() else {
            return Ok(());
        };
        let list = json_array(l.iter(), |w, d| {
            let groups = json_array(&d.groups, |w, g| w.write_str(&mask(g)));
            write!(w, "{{\"span\":{}", mask(&d.sd.span))?;
            if d.cpus != d.sd.span {
                write!(w, ",\"cpus\":{}", mask(&d.cpus))?;
            }
            write!(w, ",\"groups\":{groups}}}")
        });
        write!(
            w,
            "{{\"index\":{},\"name\":\"{}\",\"span_weight\":{},\"flags\":{},\"imbalance_pct\":{},\"domains\":{list}}}",
            f.index,
            f.sd.name,
            f.sd.span_weight(),
            json_string(&alloc::format!("{}", f.sd.flags)),
            f.sd.imbalance_pct
        )
    });
    crate::json::Record::new("topology")
        .u64("nr_cpus", t.nr_cpus() as u64)
        .u64("nodes", t.nr_nodes as u64)
        .raw("distances", &dist)
        .raw("cpus", &cpus)
        .raw("caches", &caches)
        .raw("domains", &doms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs() {
        assert_eq!(json_runs([]), "[]");
        assert_eq!(json_runs([7]), "[[7,1,0]]");
        assert_eq!(json_runs(0..255), "[[0,255,1]]");
        assert_eq!(json_runs([0, 0, 1, 1]), "[[0,2,0],[1,2,0]]");
        assert_eq!(json_runs([5, 3, 1, 4]), "[[5,3,-2],[4,1,0]]");
    }
}
