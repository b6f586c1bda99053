//! The cache model: what a task pays when it runs where its data is not.
//!
//! A task's data is its working set (the `working_set` of its last
//! `compute`), last touched on the CPU it last ran on. Running on CPU `c`
//! refills the part that fits the private caches (L1+L2) from wherever the
//! latest copy is, at that distance's line latency with `mlp` misses in
//! flight:
//! - same CPU: only what other tasks evicted since it left (their
//!   footprints switched in there, against the private capacity), from the
//!   LLC;
//! - SMT sibling: the private caches are shared: the sibling latency;
//! - same LLC, other LLC, other package, other node: that distance's
//!   latency; beyond the LLC (other LLC and farther) the part that lived in
//!   the old LLC (up to the LLC share) is refilled from the old place too.
//!
//! A task's first touch of a (new) working set brings it from memory, up
//! to what private caches and its LLC share hold; the part beyond that
//! streams from memory on every `compute`. Memory is placed by first touch,
//! Linux's default policy (`MPOL_DEFAULT`: a page is allocated on the node
//! of the CPU that faults it in): the working set lives on the node where
//! its first `compute` ran, and a task running on another node streams it
//! from there at `remote_dram_ns` (its excess over `dram_ns` scaled by the
//! SLIT distance's excess over 10). Pages never move (Linux's NUMA
//! balancing, which migrates pages towards their users after a scan delay
//! of a second or more, is not modelled). Granularity: the node a compute
//! streams from, and whether it is remote, is decided when the compute
//! starts (a task moved in the middle of one pays the old rate until its
//! next), and a working set is known by its size (a `compute` with another
//! size is a new working set, placed again).
//!
//! Message data moved through a channel is charged the same way at the
//! reader: the lines written on the writer's CPU are transferred at the
//! writer-to-reader distance.

use sched::SchedTopo;
use sched::stats::MigrationDistance;

use crate::profile::Profile;

/// Where a task's data is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataHome {
    /// CPU it last ran on (None = never ran: data in memory).
    pub cpu: Option<usize>,
    /// That CPU's eviction clock when the task left it.
    pub mark: u64,
}

/// Refill time (ns) of a working set of `ws` bytes for a task whose data is
/// at `home`, starting on `cpu` whose eviction clock reads `touched`.
pub fn refill_ns(
    p: &Profile,
    g: &Geometry<'_>,
    ws: u64,
    home: DataHome,
    cpu: usize,
    touched: u64,
) -> f64 {
    if ws == 0 {
        return 0.0;
    }
    let c = &p.cache;
    let lines = |bytes: u64| bytes.div_ceil(c.line_bytes);
    let private = ws.min(c.private_bytes);
    let Some(from) = home.cpu else {
        return p.transfer_ns(lines(private), c.dram_ns);
    };
    let d = g.topo.distance(from, cpu);
    let slit = g.slit(from, cpu);
    if d == MigrationDistance::SameCpu {
        let evicted = touched.saturating_sub(home.mark).min(c.private_bytes);
        let frac = evicted as f64 / c.private_bytes as f64;
        let lost = (private as f64 * frac) as u64;
        return p.transfer_ns(lines(lost), p.line_ns(d, slit));
    }
    let lat = p.line_ns(d, slit);
    let mut t = p.transfer_ns(lines(private), lat);
    let beyond_llc = matches!(
        d,
        MigrationDistance::SamePackage | MigrationDistance::SameNode | MigrationDistance::OtherNode
    );
    if beyond_llc && ws > private {
        let llc_part = (ws - private).min(c.llc_bytes_per_core);
        t += p.transfer_ns(lines(llc_part), lat);
    }
    t
}

/// First touch (ns) of a working set of `ws` bytes: from local memory, up
/// to what the private caches and the task's LLC share hold.
pub fn first_touch_ns(p: &Profile, ws: u64) -> f64 {
    let c = &p.cache;
    let held = ws.min(c.private_bytes + c.llc_bytes_per_core);
    p.transfer_ns(held.div_ceil(c.line_bytes), c.dram_ns)
}

/// Per-`compute` memory time (ns) of the part of a working set that no
/// cache holds, for a task on `cpu` whose working set lives in the memory
/// of node `mem_node`, and whether that memory is remote. Local memory
/// costs `dram_ns` per line; another node's `remote_dram_ns` at its SLIT
/// distance from `cpu`'s node.
pub fn beyond_llc_ns(
    p: &Profile,
    g: &Geometry<'_>,
    ws: u64,
    mem_node: u32,
    cpu: usize,
) -> (f64, bool) {
    let c = &p.cache;
    let beyond = ws.saturating_sub(c.private_bytes + c.llc_bytes_per_core);
    if beyond == 0 {
        return (0.0, false);
    }
    let node = g.topo.cpus[cpu].node;
    let (lat, remote) = if node == mem_node {
        (c.dram_ns, false)
    } else {
        (p.remote_dram_ns(g.node_slit(node, mem_node)), true)
    };
    (p.transfer_ns(beyond.div_ceil(c.line_bytes), lat), remote)
}

/// Time (ns) for a reader on `to` to pull `bytes` written on `from`.
pub fn transfer_ns(
    p: &Profile,
    g: &Geometry<'_>,
    bytes: usize,
    from: Option<usize>,
    to: usize,
) -> f64 {
    let Some(from) = from else {
        return 0.0;
    };
    let d = g.topo.distance(from, to);
    if d == MigrationDistance::SameCpu {
        return 0.0; // still in this CPU's L1/L2
    }
    let lines = (bytes as u64).div_ceil(p.cache.line_bytes);
    p.transfer_ns(lines, p.line_ns(d, g.slit(from, to)))
}

/// The machine's distances: the scheduler's topology classes plus SLIT.
pub struct Geometry<'a> {
    /// The scheduler's view (distance classes, nodes).
    pub topo: &'a SchedTopo,
    /// Node distance matrix (SLIT).
    pub slit: &'a [Vec<u32>],
}

impl Geometry<'_> {
    /// SLIT distance between the nodes of two CPUs.
    pub fn slit(&self, a: usize, b: usize) -> u32 {
        self.node_slit(self.topo.cpus[a].node, self.topo.cpus[b].node)
    }

    /// SLIT distance between two nodes.
    pub fn node_slit(&self, a: u32, b: u32) -> u32 {
        self.slit
            .get(a as usize)
            .and_then(|r| r.get(b as usize))
            .copied()
            .unwrap_or(10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topology::SyntheticSpec;

    /// 2 sockets (2 nodes, SLIT 21) x 2 cores x 2 threads: cpu0/1 SMT
    /// siblings, cpu2 same LLC, cpu4 other socket.
    fn geo() -> (SchedTopo, Vec<Vec<u32>>) {
        let mut s = SyntheticSpec::simple(2, 2, 2);
        s.nodes = 2;
        s.distances = Some(vec![vec![10, 21], vec![21, 10]]);
        (
            SchedTopo::synthetic(&s).unwrap(),
            vec![vec![10, 21], vec![21, 10]],
        )
    }

    #[test]
    fn refill_grows_with_distance_and_is_free_where_the_data_is() {
        let (t, d) = geo();
        let g = Geometry { topo: &t, slit: &d };
        let p = Profile::default_profile();
        let ws = 512 * 1024;
        let at = |cpu| DataHome {
            cpu: Some(cpu),
            mark: 0,
        };
        let here = refill_ns(&p, &g, ws, at(0), 0, 0);
        let smt = refill_ns(&p, &g, ws, at(1), 0, 0);
        let llc = refill_ns(&p, &g, ws, at(2), 0, 0);
        let remote = refill_ns(&p, &g, ws, at(4), 0, 0);
        assert_eq!(here, 0.0, "nothing evicted, nothing to refill");
        assert!(smt < llc && llc < remote, "{smt} {llc} {remote}");
        // 512 KiB = 8192 lines, 8 in flight, 18 ns each from the same LLC.
        assert!((llc - 8192.0 / 8.0 * 18.0).abs() < 1e-6, "{llc}");
        assert_eq!(refill_ns(&p, &g, 0, at(4), 0, 0), 0.0, "no working set");
    }

    #[test]
    fn memory_beyond_the_caches_streams_from_the_node_that_first_touched_it() {
        let (t, d) = geo();
        let g = Geometry { topo: &t, slit: &d };
        let mut p = Profile::default_profile();
        let ws = 8 << 20;
        // 8 MiB less the 1 MiB private and 1.375 MiB LLC share: 5.625 MiB =
        // 92,160 lines, 8 in flight: 11,520 line latencies.
        let lat = 92_160.0 / 8.0;
        assert_eq!(beyond_llc_ns(&p, &g, ws, 0, 0), (lat * 90.0, false));
        assert_eq!(beyond_llc_ns(&p, &g, ws, 0, 1), (lat * 90.0, false));
        // From the other node (SLIT 21 = remote_slit): remote_dram_ns.
        assert_eq!(beyond_llc_ns(&p, &g, ws, 0, 4), (lat * 140.0, true));
        assert_eq!(beyond_llc_ns(&p, &g, ws, 1, 0), (lat * 140.0, true));
        assert_eq!(beyond_llc_ns(&p, &g, ws, 1, 4), (lat * 90.0, false));
        // The excess over local scales with SLIT - 10: with the profile's
        // 140 ns given at 32, the machine's 21 is half as far (90 + 50 / 2).
        p.cache.remote_slit = 32;
        assert_eq!(beyond_llc_ns(&p, &g, ws, 0, 4), (lat * 115.0, true));
        // No remote distance is cheaper than local memory.
        assert!(p.remote_dram_ns(12) > p.cache.dram_ns);
        // A working set the caches hold streams nothing, from anywhere.
        assert_eq!(beyond_llc_ns(&p, &g, 2 << 20, 0, 4), (0.0, false));
    }

    #[test]
    fn others_footprints_evict_a_task_from_its_own_cpu() {
        let (t, d) = geo();
        let g = Geometry { topo: &t, slit: &d };
        let p = Profile::default_profile();
        let ws = 256 * 1024;
        let home = DataHome {
            cpu: Some(0),
            mark: 1000,
        };
        let half = refill_ns(&p, &g, ws, home, 0, 1000 + p.cache.private_bytes / 2);
        let all = refill_ns(&p, &g, ws, home, 0, 1000 + 4 * p.cache.private_bytes);
        assert!(
            half > 0.0 && (all - 2.0 * half).abs() / all < 0.01,
            "{half} {all}"
        );
    }

    #[test]
    fn beyond_the_llc_the_llc_part_moves_too() {
        let (t, d) = geo();
        let g = Geometry { topo: &t, slit: &d };
        let p = Profile::default_profile();
        let home = DataHome {
            cpu: Some(4),
            mark: 0,
        };
        let small = refill_ns(&p, &g, p.cache.private_bytes, home, 0, 0);
        let big = refill_ns(&p, &g, 2 * p.cache.private_bytes, home, 0, 0);
        assert!(big > 1.9 * small, "{small} {big}");
        // Message data: free on the writer's CPU, paid across the machine.
        assert_eq!(transfer_ns(&p, &g, 4096, Some(0), 0), 0.0);
        assert!(transfer_ns(&p, &g, 4096, Some(4), 0) > transfer_ns(&p, &g, 4096, Some(2), 0));
    }
}
