//! Experiment arguments (`--arg key=value` on the host, `key:value` pairs in
//! the boot configuration): typed lookups with defaults, and an error for
//! every key the experiment does not know, so a typo is never ignored.

use alloc::string::String;
use alloc::vec::Vec;

/// The arguments of one run, consumed key by key.
pub struct Args<'a> {
    pairs: Vec<(&'a str, &'a str)>,
    used: Vec<&'a str>,
    experiment: &'a str,
}

impl<'a> Args<'a> {
    /// Parses the configuration's argument string (validated by `bootcfg`).
    pub fn new(experiment: &'a str, raw: &'a str) -> Args<'a> {
        Args {
            pairs: bootcfg::parse_args(raw).unwrap_or_default(),
            used: Vec::new(),
            experiment,
        }
    }

    /// An unsigned integer argument within `range`, or `default`.
    pub fn u64(
        &mut self,
        key: &'a str,
        default: u64,
        range: core::ops::RangeInclusive<u64>,
    ) -> Result<u64, String> {
        self.integer(key, default, range)
    }

    /// A signed integer argument within `range`, or `default`.
    pub fn i64(
        &mut self,
        key: &'a str,
        default: i64,
        range: core::ops::RangeInclusive<i64>,
    ) -> Result<i64, String> {
        self.integer(key, default, range)
    }

    fn integer<T>(
        &mut self,
        key: &'a str,
        default: T,
        range: core::ops::RangeInclusive<T>,
    ) -> Result<T, String>
    where
        T: core::str::FromStr + PartialOrd + core::fmt::Display,
    {
        self.used.push(key);
        match self.pairs.iter().find(|(k, _)| *k == key) {
            None => Ok(default),
            Some((_, v)) => v
                .parse::<T>()
                .ok()
                .filter(|n| range.contains(n))
                .ok_or_else(|| {
                    alloc::format!(
                        "experiment '{}': argument {key}={v} must be an integer in {}..={}",
                        self.experiment,
                        range.start(),
                        range.end()
                    )
                }),
        }
    }

    /// One of `choices` (the first is the default when the key is absent).
    pub fn choice(
        &mut self,
        key: &'a str,
        choices: &[&'static str],
    ) -> Result<&'static str, String> {
        self.used.push(key);
        match self.pairs.iter().find(|(k, _)| *k == key) {
            None => Ok(choices[0]),
            Some((_, v)) => choices.iter().copied().find(|c| c == v).ok_or_else(|| {
                alloc::format!(
                    "experiment '{}': argument {key}={v} must be one of {}",
                    self.experiment,
                    choices.join(", ")
                )
            }),
        }
    }

    /// Fails on any argument that was not asked for.
    pub fn finish(self) -> Result<(), String> {
        match self.pairs.iter().find(|(k, _)| !self.used.contains(k)) {
            None => Ok(()),
            Some((k, _)) => Err(alloc::format!(
                "experiment '{}' has no argument '{k}' (known: {})",
                self.experiment,
                self.used.join(", ")
            )),
        }
    }
}

/// A small deterministic PRNG (xorshift64*), one per worker thread.
pub struct Rng(u64);

impl Rng {
    /// Seeds it (any seed; zero is remapped).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Busy computation of about `iterations` integer steps (not optimised away).
pub fn compute(iterations: u64) -> u64 {
    let mut x = iterations;
    for i in 0..iterations {
        x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}
