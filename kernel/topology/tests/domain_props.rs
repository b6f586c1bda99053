//! Property tests: random synthetic topologies (up to 256 CPUs) -> domain invariants,
//! checked against an independent model of which levels must survive.

use proptest::prelude::*;
use topology::*;

/// Random valid specs: up to 4 sockets x 2 dies x 8 cores x 4 threads (256 CPUs).
fn spec() -> impl Strategy<Value = SyntheticSpec> {
    (
        1u32..=4,
        1u32..=2,
        1u32..=8,
        prop_oneof![Just(1u32), Just(2), Just(4)],
    )
        .prop_filter("at most 256 CPUs", |(s, d, c, t)| s * d * c * t <= 256)
        .prop_flat_map(|(sockets, dies, cores, threads)| {
            let per_socket = dies * cores;
            let mut nodes: Vec<u32> = (1..=sockets).filter(|n| sockets % n == 0).collect();
            nodes.extend(
                (2..=per_socket)
                    .filter(|k| per_socket % k == 0)
                    .map(|k| k * sockets)
                    // At most 16 nodes: 64 nodes x 50 distances costs seconds per case
                    // in a debug build without covering anything new.
                    .filter(|&n| n <= 16),
            );
            let llc = prop_oneof![
                Just(None),
                (1..=per_socket).prop_map(move |m| Some(m * threads))
            ];
            (
                Just((sockets, dies, cores, threads)),
                proptest::sample::select(nodes),
                llc,
            )
        })
        .prop_flat_map(|((sockets, dies, cores, threads), nodes, llc)| {
            let n = nodes as usize;
            // Symmetric distances 11..=60, or the default.
            let dist = prop_oneof![
                Just(None),
                proptest::collection::vec(11u32..=60, n * n).prop_map(move |v| {
                    let mut d = vec![vec![10; n]; n];
                    for i in 0..n {
                        for j in i + 1..n {
                            d[i][j] = v[i * n + j];
                            d[j][i] = v[i * n + j];
                        }
                    }
                    Some(d)
                }),
            ];
            dist.prop_map(move |distances| SyntheticSpec {
                sockets,
                dies_per_socket: dies,
                cores_per_die: cores,
                threads_per_core: threads,
                nodes,
                cpus_per_llc: llc,
                distances,
            })
        })
}

/// Independent model of the surviving levels of `cpu`: the candidate masks bottom-up,
/// cut after the first full one; a candidate survives when it has more than one CPU
/// and differs from the candidate below it. (Linux may keep, in addition, a NUMA level
/// whose span equals its child's: `find_descended_sibling` can give it >= 2 groups and
/// its NUMA flags are new, so `sd_parent_degenerate` is false; `check` allows exactly
/// those extra levels.)
fn expected_levels(
    t: &Topology,
    cpu: CpuId,
    numa_in_pkg: bool,
    node_levels: &[Vec<(&'static str, CpuMask)>],
) -> Vec<(&'static str, CpuMask)> {
    let n = t.nr_cpus();
    let node = t.cpus[cpu].node;
    let mut cands: Vec<(&'static str, CpuMask)> =
        vec![("SMT", t.smt_mask(cpu)), ("MC", t.llc_mask(cpu))];
    if !numa_in_pkg {
        cands.push(("PKG", t.node_mask(node)));
    }
    cands.extend(node_levels[node as usize].iter().cloned());
    let mut out: Vec<(&'static str, CpuMask)> = Vec::new();
    let mut prev: Option<CpuMask> = None;
    for (name, m) in cands {
        let full = m.weight() == n;
        if m.weight() > 1 && prev.as_ref() != Some(&m) {
            out.push((name, m.clone()));
        }
        prev = Some(m);
        if full {
            break;
        }
    }
    out
}

fn check(t: &Topology, sd: &SchedDomains) -> Result<(), TestCaseError> {
    let n = t.nr_cpus();
    let mut pkg_node: Vec<(u32, u32)> = t.cpus.iter().map(|c| (c.package, c.node)).collect();
    pkg_node.sort_unstable();
    pkg_node.dedup();
    let numa_in_pkg = pkg_node.windows(2).any(|w| w[0].0 == w[1].0);
    // NODE/NUMA candidates of each node: CPUs of the nodes within each distinct distance.
    let mut ds: Vec<u32> = t.distance.iter().flatten().copied().collect();
    ds.sort_unstable();
    ds.dedup();
    let node_levels: Vec<Vec<(&'static str, CpuMask)>> = (0..t.nr_nodes)
        .map(|node| {
            if t.nr_nodes == 1 {
                return Vec::new();
            }
            ds.iter()
                .enumerate()
                .map(|(i, &d)| {
                    let cpus = t
                        .cpus
                        .iter()
                        .filter(|c| t.distance[node][c.node as usize] <= d)
                        .map(|c| c.cpu);
                    (
                        if i == 0 { "NODE" } else { "NUMA" },
                        CpuMask::from_cpus(n, cpus),
                    )
                })
                .collect()
        })
        .collect();
    prop_assert_eq!(sd.nr_cpus(), n);
    prop_assert!(sd.fixups().is_empty());
    for cpu in 0..n {
        let ds = sd.domains(cpu);
        let exp = expected_levels(t, cpu, numa_in_pkg, &node_levels);
        // Actual levels = model levels plus only non-degenerate equal-span NUMA levels.
        let mut got: Vec<(&'static str, CpuMask)> = Vec::new();
        for (k, d) in ds.iter().enumerate() {
            let child = k.checked_sub(1).map(|c| &ds[c]);
            if let Some(c) = child.filter(|c| c.span == d.span) {
                prop_assert_eq!(d.name, "NUMA");
                prop_assert!(d.groups.len() >= 2);
                prop_assert!(
                    d.flags.0 & !c.flags.0 != 0,
                    "equal-span parent without new flags"
                );
                continue;
            }
            got.push((d.name, d.span.clone()));
        }
        prop_assert_eq!(&got, &exp, "cpu {}", cpu);
        for (k, d) in ds.iter().enumerate() {
            prop_assert!(d.span.contains(cpu));
            if let Some(child) = k.checked_sub(1).map(|c| &ds[c]) {
                prop_assert!(child.span.is_subset(&d.span));
                prop_assert!(child.span != d.span || d.flags.contains(SD_OVERLAP));
                prop_assert!(child.level < d.level);
            }
            // Groups: first contains cpu, union is the span, each inside the span.
            prop_assert!(
                d.groups.len() >= 2,
                "cpu {} {} has {} groups",
                cpu,
                d.name,
                d.groups.len()
            );
            prop_assert!(d.groups[0].span.contains(cpu));
            let mut union = CpuMask::new(n);
            for g in &d.groups {
                prop_assert!(g.span.is_subset(&d.span));
                prop_assert!(g.balance_mask.is_subset(&g.span) && !g.balance_mask.is_empty());
                if !d.flags.contains(SD_OVERLAP) {
                    prop_assert!(
                        !union.intersects(&g.span),
                        "overlapping groups at {}",
                        d.name
                    );
                }
                union = union.or(&g.span);
            }
            prop_assert_eq!(&union, &d.span);
            if !d.flags.contains(SD_OVERLAP) {
                // Groups are the child spans of the members (singletons at the bottom),
                // in wrap order from cpu.
                let mut want: Vec<CpuMask> = Vec::new();
                let mut covered = CpuMask::new(n);
                for j in d.span.iter_wrap(cpu) {
                    if covered.contains(j) {
                        continue;
                    }
                    let c = sd
                        .domains(j)
                        .iter()
                        .rev()
                        .find(|x| x.level < d.level)
                        .map_or_else(|| CpuMask::from_cpus(n, [j]), |x| x.span.clone());
                    covered = covered.or(&c);
                    want.push(c);
                }
                let got: Vec<CpuMask> = d.groups.iter().map(|g| (*g.span).clone()).collect();
                prop_assert_eq!(got, want);
            }
            // Parameters as sd_init sets them.
            let w = d.span.weight() as u32;
            prop_assert_eq!(
                (d.min_interval_ms, d.max_interval_ms, d.busy_factor),
                (w, 2 * w, 16)
            );
            let (pct, tries) = match d.name {
                "SMT" => (110, 0),
                "MC" => (117, 1),
                "NUMA" => (125, 2),
                _ => (125, 1),
            };
            prop_assert_eq!(
                (d.imbalance_pct, d.cache_nice_tries),
                (pct, tries),
                "{}",
                d.name
            );
            let numa = d.name == "NUMA";
            prop_assert_eq!(d.flags.contains(SD_NUMA), numa);
            prop_assert_eq!(d.flags.contains(SD_SERIALIZE | SD_OVERLAP), numa);
            prop_assert_eq!(d.flags.contains(SD_PREFER_SIBLING), !numa);
            prop_assert!(d.flags.contains(SD_BALANCE_NEWIDLE));
            prop_assert!(!d.flags.contains(SD_BALANCE_WAKE));
            let far = d.numa_distance.is_some_and(|x| x > 30) && numa;
            prop_assert_eq!(
                d.flags
                    .contains(SD_WAKE_AFFINE | SD_BALANCE_EXEC | SD_BALANCE_FORK),
                !far
            );
            prop_assert_eq!(
                d.flags.contains(SD_SHARE_LLC),
                d.name == "SMT" || d.name == "MC"
            );
        }
        // update_top_cache_domain.
        let llc = t.llc_mask(cpu);
        prop_assert_eq!(sd.sd_llc_size(cpu), llc.weight());
        prop_assert_eq!(sd.sd_llc_id(cpu), llc.first().unwrap());
        prop_assert_eq!(sd.sd_share_id(cpu), sd.sd_llc_id(cpu));
        prop_assert_eq!(
            sd.sd_numa(cpu).map(|d| d.name),
            ds.iter().find(|d| d.name == "NUMA").map(|d| d.name)
        );
        let head = format!("CPU{} attaching", cpu);
        prop_assert!(sd.debug_cpu(cpu).starts_with(&head));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn domain_invariants(s in spec()) {
        let t = Topology::synthetic(&s).unwrap();
        prop_assert_eq!(t.nr_cpus() as u32, s.sockets * s.dies_per_socket * s.cores_per_die * s.threads_per_core);
        let mut apics: Vec<u32> = t.cpus.iter().map(|c| c.apic_id).collect();
        apics.sort_unstable();
        apics.dedup();
        prop_assert_eq!(apics.len(), t.nr_cpus());
        let sd = build_sched_domains(&t);
        check(&t, &sd)?;
    }
}
