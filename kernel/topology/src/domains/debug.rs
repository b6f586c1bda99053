//! Text listings of the domains for the kernel console, in the format of Linux
//! `sched_domain_debug()` (`sched_verbose`):
//!
//! ```text
//! CPU0 attaching sched-domain(s):
//!  domain-0: span=0-1 level=SMT
//!   groups: 0:{ span=0 }, 1:{ span=1 }
//!   domain-1: span=0-3 level=MC
//!    groups: 0:{ span=0-1 cap=2048 }, 2:{ span=2-3 cap=2048 }
//! ```
//!
//! Group capacity is shown as Linux shows it at boot for symmetric CPUs:
//! 1024 per CPU, printed only when it differs from 1024. Overlap groups whose balance
//! mask differs from their span also print `mask=`. The number before `:{` is Linux's
//! `sgc->id`: the group's first CPU, or for NUMA overlap groups the first CPU of the
//! balance mask.

use alloc::string::String;
use core::fmt::{self, Write};

use super::{SD_OVERLAP, SchedDomain, SchedDomains};
use crate::CpuId;

/// Nominal capacity of one CPU (`SCHED_CAPACITY_SCALE`).
const CAPACITY_SCALE: usize = 1024;

fn write_domain(f: &mut impl Write, idx: usize, sd: &SchedDomain) -> fmt::Result {
    let pad = |n: usize| " ".repeat(n);
    writeln!(
        f,
        "{} domain-{idx}: span={} level={}",
        pad(idx),
        sd.span,
        sd.name
    )?;
    write!(f, "{} groups:", pad(idx + 1))?;
    for (gi, g) in sd.groups.iter().enumerate() {
        if gi > 0 {
            f.write_char(',')?;
        }
        // Linux prints `sgc->id`: the CPU whose group-capacity object the group uses,
        // i.e. the first CPU of the balance mask (= first of the span if not NUMA).
        let id = if sd.flags.contains(SD_OVERLAP) {
            g.balance_mask.first()
        } else {
            g.span.first()
        };
        write!(f, " {}:{{ span={}", id.unwrap_or(0), g.span)?;
        if sd.flags.contains(SD_OVERLAP) && g.balance_mask != g.span {
            write!(f, " mask={}", g.balance_mask)?;
        }
        let cap = g.span.weight().saturating_mul(CAPACITY_SCALE);
        if cap != CAPACITY_SCALE {
            write!(f, " cap={cap}")?;
        }
        f.write_str(" }")?;
    }
    f.write_char('\n')
}

impl SchedDomains {
    /// The `sched_domain_debug` listing of one CPU.
    pub fn debug_cpu(&self, cpu: CpuId) -> String {
        let mut s = String::new();
        let ds = self.domains(cpu);
        if ds.is_empty() {
            let _ = writeln!(s, "CPU{cpu} attaching NULL sched-domain.");
            return s;
        }
        let _ = writeln!(s, "CPU{cpu} attaching sched-domain(s):");
        for (i, sd) in ds.iter().enumerate() {
            let _ = write_domain(&mut s, i, sd);
        }
        s
    }

    /// Detailed per-domain parameters (flags, intervals, imbalance) for one CPU, one
    /// line per domain, like `/proc/sys/kernel/sched_domain/cpuN/domainM/*`.
    pub fn params_cpu(&self, cpu: CpuId) -> String {
        let mut s = String::new();
        for (i, d) in self.domains(cpu).iter().enumerate() {
            let _ = write!(
                s,
                "cpu{cpu} domain{i} {} span={} imbalance_pct={} cache_nice_tries={} \
                 min_interval={} max_interval={} busy_factor={} imb_numa_nr={}",
                d.name,
                d.span,
                d.imbalance_pct,
                d.cache_nice_tries,
                d.min_interval_ms,
                d.max_interval_ms,
                d.busy_factor,
                d.imb_numa_nr
            );
            if let Some(dist) = d.numa_distance {
                let _ = write!(s, " distance={dist}");
            }
            let _ = writeln!(s, " flags={}", d.flags);
        }
        s
    }
}

/// Every CPU's `sched_domain_debug` listing, CPU 0 first.
impl fmt::Display for SchedDomains {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for cpu in 0..self.nr_cpus() {
            f.write_str(&self.debug_cpu(cpu))?;
        }
        Ok(())
    }
}
