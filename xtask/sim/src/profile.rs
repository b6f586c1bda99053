//! The cost profile: every time the simulator charges, named, in one TOML
//! file (`profiles/*.toml`, or `--profile FILE`). Parsed strictly: an
//! unknown key, a missing key or an out-of-range value is an error naming
//! the key, before anything runs.

use serde::Deserialize;

use sched::stats::MigrationDistance;

/// The built-in default profile.
pub const DEFAULT_PROFILE: &str = include_str!("../profiles/nominal-x86-server.toml");

/// Built-in profiles by name; a topology preset with a profile of its name
/// uses it by default.
pub const BUILTIN: &[(&str, &str)] = &[
    ("nominal-x86-server", DEFAULT_PROFILE),
    (
        "xeon-e7-8870v4",
        include_str!("../profiles/xeon-e7-8870v4.toml"),
    ),
];

/// A cost profile (see `profiles/nominal-x86-server.toml` for each field).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Profile name (reported in the `sim` record).
    pub name: String,
    /// CPU speed.
    pub cpu: Cpu,
    /// Kernel path costs.
    pub kernel: Kernel,
    /// Wakeup latencies.
    pub wakeup: Wakeup,
    /// Cache model.
    pub cache: Cache,
    /// Address-space switches.
    pub mm: Mm,
    /// Seeded jitter.
    pub noise: Noise,
}

/// CPU speed.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Cpu {
    /// ns per compute work unit.
    pub compute_unit_ns: f64,
    /// Per-thread speed while an SMT sibling runs (0 < s <= 1).
    pub smt_shared_speed: f64,
    /// Per-thread speed while the SMT siblings only spin in a barrier's
    /// `pause` loop (0 < s <= 1); 1 when a profile written before it was
    /// added leaves it out.
    #[serde(default = "full_speed")]
    pub smt_spin_speed: f64,
}

fn full_speed() -> f64 {
    1.0
}

/// Kernel path costs (ns).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    /// Thread switch.
    pub context_switch_ns: f64,
    /// One pipe/socket read or write.
    pub syscall_ns: f64,
    /// One datagram (UDP) socket read or write.
    pub datagram_syscall_ns: f64,
    /// Copy per byte.
    pub copy_ns_per_byte: f64,
    /// futex operation.
    pub futex_ns: f64,
    /// Waker-side wakeup cost.
    pub wakeup_ns: f64,
    /// Thread creation.
    pub fork_ns: f64,
    /// Timer interrupt.
    pub timer_ns: f64,
}

/// Values by topology distance (ns).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ByDistance {
    /// SMT sibling.
    pub smt: f64,
    /// Same LLC.
    pub llc: f64,
    /// Other LLC, same package.
    pub package: f64,
    /// Other package, same node.
    pub node: f64,
    /// Other NUMA node at `cache.remote_slit`.
    pub remote: f64,
}

/// Wakeup latencies.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Wakeup {
    /// IPI by distance.
    pub ipi_ns: ByDistance,
    /// Idle exit.
    pub idle_exit_ns: f64,
}

/// Line latencies by distance, with the same-core (after eviction) case.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LineNs {
    /// Same core, evicted to the LLC.
    pub same: f64,
    /// SMT sibling.
    pub smt: f64,
    /// Same LLC.
    pub llc: f64,
    /// Other LLC, same package.
    pub package: f64,
    /// Other package, same node.
    pub node: f64,
    /// Other node at `remote_slit`.
    pub remote: f64,
}

/// Cache model.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Cache {
    /// Line size (bytes).
    pub line_bytes: u64,
    /// Misses in flight.
    pub mlp: u64,
    /// Private cache per core (bytes).
    pub private_bytes: u64,
    /// LLC capacity per core (bytes).
    pub llc_bytes_per_core: u64,
    /// Line latency by distance.
    pub line_ns: LineNs,
    /// Local DRAM latency.
    pub dram_ns: f64,
    /// DRAM latency of another node's memory at `remote_slit` (first-touch
    /// NUMA placement: a task that runs away from the node holding its
    /// working set streams it from there; see `crate::cache`).
    pub remote_dram_ns: f64,
    /// SLIT distance at which `remote` values hold.
    pub remote_slit: u32,
}

/// Address-space switches (see `crate::mm`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Mm {
    /// Loading another process's page tables (ns).
    pub switch_ns: f64,
    /// Address spaces per CPU that keep their TLB entries (PCIDs in use).
    pub asids: u64,
    /// Pages a process touches on every run besides its working set.
    pub base_pages: u64,
    /// One page walk (ns).
    pub page_walk_ns: f64,
    /// TLB entries (the most page walks a refill can take).
    pub tlb_entries: u64,
}

/// Seeded jitter.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Noise {
    /// Relative half-width of the uniform cost factor (0 <= j < 1).
    pub jitter: f64,
}

impl Profile {
    /// Parses and validates a profile; errors name the key.
    pub fn parse(text: &str) -> Result<Profile, String> {
        let p: Profile = toml::from_str(text).map_err(|e| format!("cost profile: {e}"))?;
        p.validate()?;
        Ok(p)
    }

    /// The built-in profile.
    pub fn default_profile() -> Profile {
        Profile::parse(DEFAULT_PROFILE).expect("the built-in profile is valid")
    }

    /// The profile for a topology preset: its own built-in one if there is
    /// one, else the nominal server.
    pub fn for_preset(preset: Option<&str>) -> Profile {
        let text = BUILTIN
            .iter()
            .find(|(n, _)| Some(*n) == preset)
            .map_or(DEFAULT_PROFILE, |(_, t)| t);
        Profile::parse(text).expect("built-in profiles are valid")
    }

    fn validate(&self) -> Result<(), String> {
        let nonneg = [
            ("cpu.compute_unit_ns", self.cpu.compute_unit_ns),
            ("kernel.context_switch_ns", self.kernel.context_switch_ns),
            ("kernel.syscall_ns", self.kernel.syscall_ns),
            (
                "kernel.datagram_syscall_ns",
                self.kernel.datagram_syscall_ns,
            ),
            ("kernel.copy_ns_per_byte", self.kernel.copy_ns_per_byte),
            ("kernel.futex_ns", self.kernel.futex_ns),
            ("kernel.wakeup_ns", self.kernel.wakeup_ns),
            ("kernel.fork_ns", self.kernel.fork_ns),
            ("kernel.timer_ns", self.kernel.timer_ns),
            ("wakeup.ipi_ns.smt", self.wakeup.ipi_ns.smt),
            ("wakeup.ipi_ns.llc", self.wakeup.ipi_ns.llc),
            ("wakeup.ipi_ns.package", self.wakeup.ipi_ns.package),
            ("wakeup.ipi_ns.node", self.wakeup.ipi_ns.node),
            ("wakeup.ipi_ns.remote", self.wakeup.ipi_ns.remote),
            ("wakeup.idle_exit_ns", self.wakeup.idle_exit_ns),
            ("cache.line_ns.same", self.cache.line_ns.same),
            ("cache.line_ns.smt", self.cache.line_ns.smt),
            ("cache.line_ns.llc", self.cache.line_ns.llc),
            ("cache.line_ns.package", self.cache.line_ns.package),
            ("cache.line_ns.node", self.cache.line_ns.node),
            ("cache.line_ns.remote", self.cache.line_ns.remote),
            ("cache.dram_ns", self.cache.dram_ns),
            ("cache.remote_dram_ns", self.cache.remote_dram_ns),
            ("mm.switch_ns", self.mm.switch_ns),
            ("mm.page_walk_ns", self.mm.page_walk_ns),
        ];
        for (k, v) in nonneg {
            if !(v.is_finite() && (0.0..=1e9).contains(&v)) {
                return Err(format!("cost profile: {k} = {v} must be in 0..=1e9 ns"));
            }
        }
        if self.cache.remote_dram_ns < self.cache.dram_ns {
            return Err(format!(
                "cost profile: cache.remote_dram_ns = {} must be at least cache.dram_ns = {}",
                self.cache.remote_dram_ns, self.cache.dram_ns
            ));
        }
        for (k, s) in [
            ("cpu.smt_shared_speed", self.cpu.smt_shared_speed),
            ("cpu.smt_spin_speed", self.cpu.smt_spin_speed),
        ] {
            if !(s > 0.0 && s <= 1.0) {
                return Err(format!("cost profile: {k} = {s} must be in (0, 1]"));
            }
        }
        let j = self.noise.jitter;
        if !(0.0..0.5).contains(&j) {
            return Err(format!(
                "cost profile: noise.jitter = {j} must be in [0, 0.5)"
            ));
        }
        for (k, v) in [
            ("cache.line_bytes", self.cache.line_bytes),
            ("cache.mlp", self.cache.mlp),
            ("cache.private_bytes", self.cache.private_bytes),
            ("cache.remote_slit", u64::from(self.cache.remote_slit)),
            ("mm.asids", self.mm.asids),
            ("mm.tlb_entries", self.mm.tlb_entries),
        ] {
            if v == 0 {
                return Err(format!("cost profile: {k} must be at least 1"));
            }
        }
        Ok(())
    }

    /// IPI latency from a CPU to another at distance `d` (SLIT `slit` when remote).
    pub fn ipi_ns(&self, d: MigrationDistance, slit: u32) -> f64 {
        let i = &self.wakeup.ipi_ns;
        match d {
            MigrationDistance::SameCpu => 0.0,
            MigrationDistance::SmtSibling => i.smt,
            MigrationDistance::SameLlc => i.llc,
            MigrationDistance::SamePackage => i.package,
            MigrationDistance::SameNode => i.node,
            MigrationDistance::OtherNode => i.remote * self.slit_scale(slit),
        }
    }

    /// Latency of a line whose copy is at distance `d`.
    pub fn line_ns(&self, d: MigrationDistance, slit: u32) -> f64 {
        let l = &self.cache.line_ns;
        match d {
            MigrationDistance::SameCpu => l.same,
            MigrationDistance::SmtSibling => l.smt,
            MigrationDistance::SameLlc => l.llc,
            MigrationDistance::SamePackage => l.package,
            MigrationDistance::SameNode => l.node,
            MigrationDistance::OtherNode => l.remote * self.slit_scale(slit),
        }
    }

    /// Factor for a remote SLIT distance relative to `remote_slit`.
    pub fn slit_scale(&self, slit: u32) -> f64 {
        f64::from(slit.max(10)) / f64::from(self.cache.remote_slit)
    }

    /// DRAM latency of another node's memory at SLIT distance `slit`: the
    /// excess over local memory scales with the distance's excess over the
    /// local 10, so no remote node is ever cheaper than the local one (a
    /// whole-latency scaling would put SLIT 12, as sub-NUMA clusters report,
    /// below local).
    pub fn remote_dram_ns(&self, slit: u32) -> f64 {
        let c = &self.cache;
        if c.remote_slit <= 10 {
            return c.remote_dram_ns;
        }
        let f = f64::from(slit.max(10) - 10) / f64::from(c.remote_slit - 10);
        c.dram_ns + (c.remote_dram_ns - c.dram_ns) * f
    }

    /// Time to bring `lines` lines from latency `lat`: `mlp` misses overlap.
    pub fn transfer_ns(&self, lines: u64, lat: f64) -> f64 {
        lines.div_ceil(self.cache.mlp) as f64 * lat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_profiles_parse_under_their_names() {
        let p = Profile::default_profile();
        assert_eq!(p.name, "nominal-x86-server");
        assert!(p.cache.line_ns.remote > p.cache.line_ns.llc);
        for (name, text) in BUILTIN {
            assert_eq!(Profile::parse(text).unwrap().name, *name);
        }
        let e7 = Profile::for_preset(Some("xeon-e7-8870v4"));
        assert!((e7.cpu.compute_unit_ns - 5.0 / 2.1).abs() < 0.01);
        assert_eq!(Profile::for_preset(Some("2s8-nosmt")), p);
    }

    #[test]
    fn unknown_missing_and_bad_keys_are_named() {
        let bad = DEFAULT_PROFILE.replace("mlp = 8", "mlp = 8\nbogus = 1");
        assert!(Profile::parse(&bad).unwrap_err().contains("bogus"));
        let missing = DEFAULT_PROFILE.replace("fork_ns = 20000", "");
        assert!(Profile::parse(&missing).unwrap_err().contains("fork_ns"));
        let neg = DEFAULT_PROFILE.replace("futex_ns = 350", "futex_ns = -1");
        assert!(
            Profile::parse(&neg)
                .unwrap_err()
                .contains("kernel.futex_ns")
        );
        let smt = DEFAULT_PROFILE.replace("smt_shared_speed = 0.62", "smt_shared_speed = 0");
        assert!(
            Profile::parse(&smt)
                .unwrap_err()
                .contains("smt_shared_speed")
        );
    }

    #[test]
    fn remote_costs_scale_with_slit() {
        let p = Profile::default_profile();
        let at21 = p.line_ns(MigrationDistance::OtherNode, 21);
        let at42 = p.line_ns(MigrationDistance::OtherNode, 42);
        assert!((at42 - 2.0 * at21).abs() < 1e-9);
        assert_eq!(p.transfer_ns(1, 100.0), 100.0);
        assert_eq!(p.transfer_ns(16, 100.0), 200.0);
    }
}
