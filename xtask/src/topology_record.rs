//! Reading the kernel's `topology` record (docs/results.md): the compact form
//! the kernel writes since issue 12 (per-CPU columns of arithmetic runs, cache
//! kinds with their instances, each distinct domain once) and, for consoles
//! captured before it, the old per-CPU form. Readers go through here, not
//! through the JSON layout.

use serde_json::Value;

/// One CPU's placement as the record gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuRow {
    pub cpu: u64,
    pub apic_id: u64,
    pub package: u64,
    pub die: u64,
    pub core: u64,
    pub thread: u64,
    pub node: u64,
    pub llc: u64,
    pub online: bool,
    pub sd_llc_size: u64,
    pub sd_llc_id: u64,
}

/// Expands arithmetic runs `[[first, count, step], ...]` into the values.
pub fn runs(v: &Value) -> Option<Vec<u64>> {
    let mut out = Vec::new();
    for r in v.as_array()? {
        let (first, count, step) = (
            r.get(0)?.as_u64()?,
            r.get(1)?.as_u64()?,
            r.get(2)?.as_i64()?,
        );
        for k in 0..count {
            let x = (first as i64).checked_add(step.checked_mul(k as i64)?)?;
            out.push(u64::try_from(x).ok()?);
        }
    }
    Some(out)
}

/// The CPUs of a Linux cpulist such as `0-3,8,10-11`.
pub fn cpulist(s: &str) -> Option<Vec<u64>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.trim().parse::<u64>().ok()?..=b.trim().parse().ok()?),
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

/// Every CPU's row, in CPU order.
pub fn cpus(topo: &Value) -> Option<Vec<CpuRow>> {
    let c = &topo["cpus"];
    if let Some(rows) = c.as_array() {
        // Old form: one object per CPU.
        let u = |r: &Value, k: &str| r[k].as_u64();
        return rows
            .iter()
            .map(|r| {
                Some(CpuRow {
                    cpu: u(r, "cpu")?,
                    apic_id: u(r, "apic_id")?,
                    package: u(r, "package")?,
                    die: u(r, "die")?,
                    core: u(r, "core")?,
                    thread: u(r, "thread")?,
                    node: u(r, "node")?,
                    llc: u(r, "llc")?,
                    online: r["online"].as_bool()?,
                    sd_llc_size: u(r, "sd_llc_size")?,
                    sd_llc_id: u(r, "sd_llc_id")?,
                })
            })
            .collect();
    }
    let col = |k: &str| runs(&c[k]);
    let (apic, pkg, die, core, thread, node, llc, online, size, id) = (
        col("apic_id")?,
        col("package")?,
        col("die")?,
        col("core")?,
        col("thread")?,
        col("node")?,
        col("llc")?,
        col("online")?,
        col("sd_llc_size")?,
        col("sd_llc_id")?,
    );
    let n = apic.len();
    let same = [&pkg, &die, &core, &thread, &node, &llc, &online, &size, &id]
        .iter()
        .all(|v| v.len() == n);
    if !same {
        return None;
    }
    Some(
        (0..n)
            .map(|i| CpuRow {
                cpu: i as u64,
                apic_id: apic[i],
                package: pkg[i],
                die: die[i],
                core: core[i],
                thread: thread[i],
                node: node[i],
                llc: llc[i],
                online: online[i] != 0,
                sd_llc_size: size[i],
                sd_llc_id: id[i],
            })
            .collect(),
    )
}

/// The CPU lists of every instance of a cache entry (`instances`, or the old
/// form's one `cpus` list per entry).
pub fn cache_instances(cache: &Value) -> Vec<String> {
    match cache["instances"].as_array() {
        Some(v) => v
            .iter()
            .filter_map(|s| s.as_str().map(String::from))
            .collect(),
        None => cache["cpus"]
            .as_str()
            .map(String::from)
            .into_iter()
            .collect(),
    }
}

/// `cpu`'s attached domains, lowest first (each with `name`, `span`,
/// `span_weight`, `flags`, `imbalance_pct`, `groups`).
pub fn domains_of(topo: &Value, cpu: u64) -> Vec<Value> {
    let Some(all) = topo["domains"].as_array() else {
        return Vec::new();
    };
    // Old form: `domains[cpu].levels`.
    if all.first().is_some_and(|d| d.get("levels").is_some()) {
        return all
            .iter()
            .find(|d| d["cpu"].as_u64() == Some(cpu))
            .and_then(|d| d["levels"].as_array())
            .map(|l| l.to_vec())
            .unwrap_or_default();
    }
    let mut v: Vec<(u64, Value)> = Vec::new();
    for level in all {
        for d in level["domains"].as_array().into_iter().flatten() {
            let cpus = d
                .get("cpus")
                .or_else(|| d.get("span"))
                .and_then(Value::as_str)
                .and_then(cpulist);
            if cpus.is_some_and(|c| c.contains(&cpu)) {
                let mut one = level.clone();
                if let Some(o) = one.as_object_mut() {
                    o.remove("domains");
                    o.insert("span".into(), d["span"].clone());
                    o.insert("groups".into(), d["groups"].clone());
                }
                v.push((level["index"].as_u64().unwrap_or(0), one));
            }
        }
    }
    v.sort_by_key(|(i, _)| *i);
    v.into_iter().map(|(_, d)| d).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use topology::{SyntheticSpec, Topology, build_sched_domains};

    #[test]
    fn runs_and_cpulists() {
        assert_eq!(
            runs(&json!([[0, 3, 1], [7, 2, 0], [9, 2, -4]])),
            Some(vec![0, 1, 2, 7, 7, 9, 5])
        );
        assert_eq!(runs(&json!([[1, 2, -4]])), None, "negative value");
        assert_eq!(cpulist("0-3,8,10-11"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(cpulist(""), Some(vec![]));
    }

    fn record(spec: &SyntheticSpec) -> (Topology, topology::SchedDomains, Value) {
        let t = Topology::synthetic(spec).unwrap();
        let sd = build_sched_domains(&t);
        let json = workloads::topology_record::topology_fields(&t, &sd, |c| c != 3).finish();
        let v: Value = serde_json::from_str(&json).unwrap();
        (t, sd, v)
    }

    /// The kernel's writer and this reader agree on every CPU's facts and
    /// domains (span, name, flags, groups as a set), on several shapes.
    #[test]
    fn the_compact_record_round_trips() {
        let d4 = vec![
            vec![10, 12, 21, 21],
            vec![12, 10, 21, 21],
            vec![21, 21, 10, 12],
            vec![21, 21, 12, 10],
        ];
        let shapes = [
            SyntheticSpec::simple(1, 255, 1),
            SyntheticSpec {
                nodes: 2,
                ..SyntheticSpec::simple(2, 60, 2)
            },
            SyntheticSpec {
                dies_per_socket: 2,
                nodes: 4,
                distances: Some(d4),
                ..SyntheticSpec::simple(2, 6, 2)
            },
            SyntheticSpec {
                nodes: 4,
                ..SyntheticSpec::simple(1, 8, 1)
            },
        ];
        for spec in &shapes {
            let (t, sd, v) = record(spec);
            let rows = cpus(&v).unwrap();
            assert_eq!(rows.len(), t.nr_cpus());
            for (r, c) in rows.iter().zip(&t.cpus) {
                assert_eq!(
                    (
                        r.cpu, r.apic_id, r.package, r.die, r.core, r.thread, r.node, r.llc
                    ),
                    (
                        c.cpu as u64,
                        c.apic_id.into(),
                        c.package.into(),
                        c.die.into(),
                        c.core.into(),
                        c.thread.into(),
                        c.node.into(),
                        c.llc.into()
                    )
                );
                assert_eq!(r.online, c.cpu != 3);
                assert_eq!(r.sd_llc_size, sd.sd_llc_size(c.cpu) as u64);
                assert_eq!(r.sd_llc_id, sd.sd_llc_id(c.cpu) as u64);
            }
            for cpu in 0..t.nr_cpus() {
                let got = domains_of(&v, cpu as u64);
                let want = sd.domains(cpu);
                assert_eq!(got.len(), want.len(), "{spec:?} cpu {cpu}");
                for (g, w) in got.iter().zip(want) {
                    assert_eq!(g["name"], w.name);
                    assert_eq!(g["span"], w.span.to_string());
                    assert_eq!(g["span_weight"], w.span_weight());
                    assert_eq!(g["flags"], w.flags.to_string());
                    assert_eq!(g["imbalance_pct"], w.imbalance_pct);
                    let mut gs: Vec<String> = g["groups"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s.as_str().unwrap().into())
                        .collect();
                    let mut ws: Vec<String> = w.groups.iter().map(|x| x.span.to_string()).collect();
                    gs.sort();
                    ws.sort();
                    assert_eq!(gs, ws);
                }
            }
            let caches: usize = v["caches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| cache_instances(c).len())
                .sum();
            assert_eq!(caches, t.caches.len());
        }
    }

    /// A 255-CPU machine's record stays small (the per-CPU form was 514,771
    /// bytes on the flat 255-CPU shape).
    #[test]
    fn the_255_cpu_record_is_small() {
        for spec in [
            SyntheticSpec::simple(1, 255, 1),
            SyntheticSpec {
                nodes: 2,
                ..SyntheticSpec::simple(2, 60, 2)
            },
        ] {
            let t = Topology::synthetic(&spec).unwrap();
            let sd = build_sched_domains(&t);
            let json = workloads::topology_record::topology_fields(&t, &sd, |_| true).finish();
            assert!(json.len() < 16_000, "{spec:?}: {} bytes", json.len());
        }
    }
}
