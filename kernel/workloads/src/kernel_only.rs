//! Arguments of the kernel-only experiments (stress, latency, fpu-check,
//! calibrate).
//! Their code needs the kernel, but their arguments are parsed here, by the
//! same [`Args`] rules, so that the host rejects an unknown key or an
//! out-of-range value before it builds or boots anything ([`check`]).

use alloc::string::String;

use crate::Footprint;
use crate::args::Args;

/// The experiments whose arguments this module parses.
pub const KERNEL_ONLY: &[&str] = &["stress", "latency", "fpu-check", "calibrate"];

/// `stress`: groups of 8 workers (pipes, sockets, mutexes, barriers, forks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stress {
    /// Workers asked for (rounded up to whole groups).
    pub threads: usize,
    /// Run time.
    pub duration_ns: u64,
    /// Seed of the workers' random choices.
    pub seed: u64,
}

impl Stress {
    /// Workers per group.
    pub const GROUP: usize = 8;

    /// Reads the experiment's arguments.
    pub fn from_args(a: &mut Args<'_>) -> Result<Stress, String> {
        Ok(Stress {
            threads: a.u64("threads", 1024, 8..=20_000)? as usize,
            duration_ns: a.u64("duration_ms", 2000, 10..=3_600_000)? * 1_000_000,
            seed: a.u64("seed", 1, 0..=u64::MAX)?,
        })
    }

    /// Groups of [`Stress::GROUP`] workers.
    pub fn groups(&self) -> usize {
        self.threads.div_ceil(Self::GROUP)
    }
}

/// `latency`: pipe ping-pong round trips between CPU pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Latency {
    /// Round trips per placement.
    pub rounds: usize,
}

impl Latency {
    /// Reads the experiment's arguments.
    pub fn from_args(a: &mut Args<'_>) -> Result<Latency, String> {
        Ok(Latency {
            rounds: a.u64("rounds", 2000, 10..=1_000_000)? as usize,
        })
    }
}

/// `calibrate`: the measurements behind a simulator cost profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Calibrate {
    /// Samples per measurement (round trips, wakeups, IPIs, refills x 10).
    pub rounds: usize,
    /// Size of the pointer-chase buffer for memory latency (MiB); it must
    /// exceed the last-level cache for the chase to measure DRAM.
    pub chase_mib: usize,
}

impl Calibrate {
    /// Working-set sizes of the refill measurement (KiB): inside L1/L2,
    /// around a server core's L2, and beyond it (LLC-resident).
    pub const REFILL_KIB: [usize; 3] = [32, 256, 2048];

    /// Reads the experiment's arguments.
    pub fn from_args(a: &mut Args<'_>) -> Result<Calibrate, String> {
        Ok(Calibrate {
            rounds: a.u64("rounds", 1000, 20..=1_000_000)? as usize,
            chase_mib: a.u64("chase_mib", 64, 1..=16_384)? as usize,
        })
    }

    /// Chase buffers allocated at most: one more each time a buffer straddles
    /// two nodes' memory, so its node is unknown.
    pub const CHASE_TRIES: u64 = 3;

    /// Largest buffer of the LLC-hit chase (MiB): min(4 x private caches,
    /// LLC / 2), allocated and freed before the memory chase's buffers.
    pub const LLC_CHASE_MAX_MIB: u64 = 32;

    /// Heap bytes it holds at once, at most (the memory chase's buffers or
    /// the LLC chase's, whichever is larger, the largest refill buffer and
    /// the samples).
    pub fn buffer_bytes(&self) -> u64 {
        let refill = Self::REFILL_KIB[Self::REFILL_KIB.len() - 1] as u64 * 1024;
        let chase = (Self::CHASE_TRIES * self.chase_mib as u64).max(Self::LLC_CHASE_MAX_MIB);
        chase * (1 << 20) + refill + self.rounds as u64 * 16
    }
}

/// `fpu-check`: FPU and non-FPU threads migrating between CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FpuCheck {
    /// Threads (default: 4 per CPU).
    pub threads: usize,
    /// Run time.
    pub duration_ns: u64,
}

impl FpuCheck {
    /// Reads the experiment's arguments on a machine of `nr_cpus` CPUs.
    pub fn from_args(a: &mut Args<'_>, nr_cpus: usize) -> Result<FpuCheck, String> {
        Ok(FpuCheck {
            threads: a.u64("threads", 4 * nr_cpus as u64, 2..=4096)? as usize,
            duration_ns: a.u64("duration_ms", 1000, 10..=3_600_000)? * 1_000_000,
        })
    }
}

/// Checks a kernel-only experiment's arguments as the kernel will, and says
/// what it allocates up front (a lower bound). `None` when `name` is not one
/// of [`KERNEL_ONLY`].
pub fn check(name: &str, raw_args: &str, nr_cpus: usize) -> Option<Result<Footprint, String>> {
    let mut a = Args::new(name, raw_args);
    let fp = match name {
        "stress" => Stress::from_args(&mut a).map(|s| Footprint {
            threads: (s.groups() * Stress::GROUP) as u64,
            // One 1 KiB pipe and a 2 x 256-byte socket pair per group.
            buffer_bytes: s.groups() as u64 * 1536,
        }),
        "latency" => Latency::from_args(&mut a).map(|l| Footprint {
            threads: 2,
            buffer_bytes: l.rounds as u64 * 8,
        }),
        "calibrate" => Calibrate::from_args(&mut a).map(|c| Footprint {
            threads: 4,
            buffer_bytes: c.buffer_bytes(),
        }),
        "fpu-check" => FpuCheck::from_args(&mut a, nr_cpus).map(|f| Footprint {
            threads: f.threads as u64,
            buffer_bytes: 0,
        }),
        _ => return None,
    };
    Some(fp.and_then(|fp| a.finish().map(|()| fp)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_rules_as_the_kernel() {
        assert_eq!(
            check("stress", "threads:9", 2),
            Some(Ok(Footprint {
                threads: 16,
                buffer_bytes: 2 * 1536
            }))
        );
        assert_eq!(
            check("stress", "thread:9", 2).unwrap().unwrap_err(),
            "experiment 'stress' has no argument 'thread' (known: threads, duration_ms, seed)"
        );
        assert_eq!(
            check("latency", "rounds:5", 2).unwrap().unwrap_err(),
            "experiment 'latency': argument rounds=5 must be an integer in 10..=1000000"
        );
        assert_eq!(check("fpu-check", "", 3).unwrap().unwrap().threads, 12);
        // Three 16 MiB memory chase buffers, or the 32 MiB LLC chase at most.
        assert_eq!(
            check("calibrate", "chase_mib:16", 2).unwrap().unwrap(),
            Footprint {
                threads: 4,
                buffer_bytes: 3 * (16 << 20) + (2 << 20) + 16_000
            }
        );
        assert_eq!(
            check("calibrate", "chase_mib:8", 2).unwrap().unwrap(),
            Footprint {
                threads: 4,
                buffer_bytes: (32 << 20) + (2 << 20) + 16_000
            }
        );
        assert_eq!(
            check("calibrate", "rounds:10", 2).unwrap().unwrap_err(),
            "experiment 'calibrate': argument rounds=10 must be an integer in 20..=1000000"
        );
        assert!(check("hackbench", "", 2).is_none());
    }
}
