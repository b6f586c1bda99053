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
//! A brand-new task's data comes from local memory.
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
pub fn refill_ns(p: &Profile, g: &Geometry<'_>, ws: u64, home: DataHome, cpu: usize, touched: u64) -> f64 {
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

/// Time (ns) for a reader on `to` to pull `bytes` written on `from`.
pub fn transfer_ns(p: &Profile, g: &Geometry<'_>, bytes: usize, from: Option<usize>, to: usize) -> f64 {
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
        let (na, nb) = (self.topo.cpus[a].node as usize, self.topo.cpus[b].node as usize);
        self.slit.get(na).and_then(|r| r.get(nb)).copied().unwrap_or(10)
    }
}
