//! Hand-checked domain hierarchies for known shapes (values derived by hand from the
//! Linux algorithm, see docs/topology.md).

use topology::*;

fn topo(spec: SyntheticSpec) -> Topology {
    Topology::synthetic(&spec).expect("valid spec")
}

fn names(sd: &SchedDomains, cpu: CpuId) -> Vec<&'static str> {
    sd.domains(cpu).iter().map(|d| d.name).collect()
}

fn group_spans(d: &SchedDomain) -> Vec<String> {
    d.groups.iter().map(|g| g.span.to_string()).collect()
}

#[test]
fn two_sockets_smt_two_nodes_21() {
    // The example of linux-fair-reference F.3: 2 sockets x 8 cores x 2 threads, SLIT 10/21.
    let t = topo(SyntheticSpec {
        nodes: 2,
        distances: Some(vec![vec![10, 21], vec![21, 10]]),
        ..SyntheticSpec::simple(2, 8, 2)
    });
    let sd = build_sched_domains(&t);
    for cpu in 0..32 {
        assert_eq!(names(&sd, cpu), ["SMT", "MC", "NUMA"], "cpu {cpu}");
        assert_eq!(sd.sd_llc_size(cpu), 16);
        assert_eq!(sd.sd_llc_id(cpu), if cpu < 16 { 0 } else { 16 });
        assert_eq!(sd.sd_share_id(cpu), sd.sd_llc_id(cpu));
        assert_eq!(sd.sd_numa(cpu).map(|d| d.span.weight()), Some(32));
    }
    let d = sd.domains(17);
    assert_eq!(d[0].span.to_string(), "16-17");
    assert_eq!(group_spans(&d[0]), ["17", "16"]);
    assert_eq!(d[0].imbalance_pct, 110);
    assert_eq!(d[0].cache_nice_tries, 0);
    assert_eq!(
        d[0].flags,
        SD_BALANCE_NEWIDLE
            | SD_BALANCE_EXEC
            | SD_BALANCE_FORK
            | SD_WAKE_AFFINE
            | SD_PREFER_SIBLING
            | SD_SHARE_CPUCAPACITY
            | SD_SHARE_LLC
    );
    assert_eq!(d[1].span.to_string(), "16-31");
    assert_eq!(group_spans(&d[1])[..3], ["16-17", "18-19", "20-21"]);
    assert_eq!(d[1].groups.len(), 8);
    assert_eq!((d[1].imbalance_pct, d[1].cache_nice_tries), (117, 1));
    assert_eq!(
        (d[1].min_interval_ms, d[1].max_interval_ms, d[1].busy_factor),
        (16, 32, 16)
    );
    assert_eq!(group_spans(&d[2]), ["16-31", "0-15"]);
    assert_eq!((d[2].imbalance_pct, d[2].cache_nice_tries), (125, 2));
    assert_eq!(d[2].numa_distance, Some(21));
    assert_eq!(d[2].imb_numa_nr, 2);
    assert_eq!(
        d[2].flags,
        SD_BALANCE_NEWIDLE
            | SD_BALANCE_EXEC
            | SD_BALANCE_FORK
            | SD_WAKE_AFFINE
            | SD_SERIALIZE
            | SD_OVERLAP
            | SD_NUMA
    );
    assert!(!d[2].flags.contains(SD_PREFER_SIBLING));
    let lin = build_sched_domains_with(&t, &DomainConfig::LINUX_6);
    assert_eq!(lin.domains(0)[2].imbalance_pct, 117);
}

#[test]
fn beyond_reclaim_distance_loses_affine() {
    let t = topo(SyntheticSpec {
        nodes: 2,
        distances: Some(vec![vec![10, 40], vec![40, 10]]),
        ..SyntheticSpec::simple(2, 2, 1)
    });
    let sd = build_sched_domains(&t);
    let top = sd.domains(0).last().unwrap();
    assert_eq!(top.name, "NUMA");
    assert_eq!(
        top.flags,
        SD_BALANCE_NEWIDLE | SD_SERIALIZE | SD_OVERLAP | SD_NUMA
    );
}

#[test]
fn ring_of_four_nodes_overlaps() {
    // 4 single-CPU nodes in a ring: neighbours 20, opposite 30.
    let d = vec![
        vec![10, 20, 30, 20],
        vec![20, 10, 20, 30],
        vec![30, 20, 10, 20],
        vec![20, 30, 20, 10],
    ];
    let t = topo(SyntheticSpec {
        nodes: 4,
        distances: Some(d),
        ..SyntheticSpec::simple(4, 1, 1)
    });
    let sd = build_sched_domains(&t);
    let expected = "CPU0 attaching sched-domain(s):\n \
        domain-0: span=0-1,3 level=NUMA\n  \
        groups: 0:{ span=0 }, 1:{ span=1 }, 3:{ span=3 }\n  \
        domain-1: span=0-3 level=NUMA\n   \
        groups: 0:{ span=0-1,3 mask=0 cap=3072 }, 2:{ span=1-3 mask=2 cap=3072 }\n";
    assert_eq!(sd.debug_cpu(0), expected);
    assert_eq!(sd.sd_llc(0), None);
    assert_eq!(sd.sd_llc_size(0), 1);
    assert_eq!(sd.sd_llc_id(2), 2);
    assert_eq!(sd.sd_numa(0).unwrap().numa_distance, Some(20));
    assert_eq!(sd.domains(2)[1].groups[0].span.to_string(), "1-3");
}

#[test]
fn single_node_smt_listing() {
    let t = topo(SyntheticSpec::simple(1, 2, 2));
    let sd = build_sched_domains(&t);
    let expected = "CPU0 attaching sched-domain(s):\n \
        domain-0: span=0-1 level=SMT\n  \
        groups: 0:{ span=0 }, 1:{ span=1 }\n  \
        domain-1: span=0-3 level=MC\n   \
        groups: 0:{ span=0-1 cap=2048 }, 2:{ span=2-3 cap=2048 }\n";
    assert_eq!(sd.debug_cpu(0), expected);
    assert!(sd.to_string().starts_with(expected));
    assert!(sd.to_string().contains("CPU3 attaching sched-domain(s):\n domain-0: span=2-3 level=SMT\n  groups: 3:{ span=3 }, 2:{ span=2 }\n"));
    assert!(
        sd.params_cpu(0)
            .contains("cpu0 domain1 MC span=0-3 imbalance_pct=117")
    );
    let one = build_sched_domains(&topo(SyntheticSpec::simple(1, 1, 1)));
    assert_eq!(one.debug_cpu(0), "CPU0 attaching NULL sched-domain.\n");
}

#[test]
fn two_sockets_one_node_keeps_pkg() {
    // Without SRAT both sockets are one node: PKG (= node) spans both LLCs.
    let t = topo(SyntheticSpec::simple(2, 4, 1));
    let sd = build_sched_domains(&t);
    assert_eq!(names(&sd, 5), ["MC", "PKG"]);
    let pkg = &sd.domains(5)[1];
    assert_eq!(group_spans(pkg), ["4-7", "0-3"]);
    assert_eq!((pkg.imbalance_pct, pkg.cache_nice_tries), (125, 1));
    assert!(pkg.flags.contains(SD_PREFER_SIBLING));
    assert_eq!(pkg.imb_numa_nr, 2);
}

#[test]
fn sub_numa_clusters_drop_pkg() {
    // 1 socket, 2 nodes: x86 numa-in-package topology, the node level is NODE... which
    // equals MC here and disappears; NUMA joins the two halves.
    let t = topo(SyntheticSpec {
        nodes: 2,
        ..SyntheticSpec::simple(1, 4, 2)
    });
    let sd = build_sched_domains(&t);
    assert_eq!(names(&sd, 0), ["SMT", "MC", "NUMA"]);
    assert_eq!(sd.sd_llc_size(0), 4);
    assert!(sd.fixups().is_empty());
}

#[test]
fn llc_groups_smaller_than_node() {
    // Zen-like: 8 cores per socket, CCX of 4 CPUs (2 cores x 2 threads).
    let t = topo(SyntheticSpec {
        cpus_per_llc: Some(4),
        ..SyntheticSpec::simple(1, 8, 2)
    });
    let sd = build_sched_domains(&t);
    assert_eq!(names(&sd, 6), ["SMT", "MC", "PKG"]);
    assert_eq!(sd.sd_llc_size(6), 4);
    assert_eq!(sd.sd_llc_id(6), 4);
    assert!(sd.cpus_share_cache(4, 7));
    assert!(!sd.cpus_share_cache(3, 4));
    assert_eq!(
        group_spans(&sd.domains(6)[2]),
        ["4-7", "8-11", "12-15", "0-3"]
    );
    // imb_numa_nr at PKG: 4 LLCs.
    assert_eq!(sd.domains(6)[2].imb_numa_nr, 4);
}
