//! `CpuMask`: a fixed-capacity CPU bitset, the equivalent of Linux's `struct cpumask`
//! sized for `nr_cpu_ids`.
//!
//! All operations are total: setting, clearing or testing a CPU outside the capacity is
//! a no-op / `false`, never a panic, so callers fed by firmware data cannot crash the
//! kernel. Binary operations between masks of different capacity work on the common
//! prefix and return a mask with the capacity of `self`.

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use crate::CpuId;

/// A set of logical CPUs (`0..nr_cpus`), stored as a `u64` bitset.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct CpuMask {
    nr_cpus: usize,
    bits: Vec<u64>,
}

impl CpuMask {
    /// Empty mask with room for `nr_cpus` CPUs (`cpumask_clear`).
    pub fn new(nr_cpus: usize) -> Self {
        Self {
            nr_cpus,
            bits: vec![0; nr_cpus.div_ceil(64)],
        }
    }

    /// Mask with every CPU `0..nr_cpus` set (`cpumask_setall`).
    pub fn full(nr_cpus: usize) -> Self {
        let mut m = Self::new(nr_cpus);
        for (i, w) in m.bits.iter_mut().enumerate() {
            let start = i * 64;
            let n = nr_cpus.saturating_sub(start).min(64);
            *w = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        }
        m
    }

    /// Mask holding the given CPUs; CPUs `>= nr_cpus` are ignored.
    pub fn from_cpus(nr_cpus: usize, cpus: impl IntoIterator<Item = CpuId>) -> Self {
        let mut m = Self::new(nr_cpus);
        for c in cpus {
            m.set(c);
        }
        m
    }

    /// Capacity of the mask (`nr_cpu_ids`), not the number of set CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    /// Adds `cpu` (`cpumask_set_cpu`); ignored when out of range.
    pub fn set(&mut self, cpu: CpuId) {
        if cpu < self.nr_cpus
            && let Some(w) = self.bits.get_mut(cpu / 64)
        {
            *w |= 1u64 << (cpu % 64);
        }
    }

    /// Removes `cpu` (`cpumask_clear_cpu`); ignored when out of range.
    pub fn clear(&mut self, cpu: CpuId) {
        if let Some(w) = self.bits.get_mut(cpu / 64) {
            *w &= !(1u64 << (cpu % 64));
        }
    }

    /// `cpumask_test_cpu`.
    pub fn contains(&self, cpu: CpuId) -> bool {
        cpu < self.nr_cpus
            && self
                .bits
                .get(cpu / 64)
                .is_some_and(|w| w & (1u64 << (cpu % 64)) != 0)
    }

    /// Number of set CPUs (`cpumask_weight`).
    pub fn weight(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// `cpumask_empty`.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }

    /// Lowest set CPU (`cpumask_first`), `None` when empty.
    pub fn first(&self) -> Option<CpuId> {
        self.iter().next()
    }

    /// Set CPUs in increasing order (`for_each_cpu`).
    pub fn iter(&self) -> impl Iterator<Item = CpuId> + '_ {
        self.bits.iter().enumerate().flat_map(|(i, &w)| BitIter {
            word: w,
            base: i * 64,
        })
    }

    /// Set CPUs starting at `start` and wrapping around (`for_each_cpu_wrap`):
    /// first the CPUs `>= start` in increasing order, then those `< start`.
    pub fn iter_wrap(&self, start: CpuId) -> impl Iterator<Item = CpuId> + '_ {
        self.iter()
            .filter(move |&c| c >= start)
            .chain(self.iter().filter(move |&c| c < start))
    }

    fn zip_with(&self, o: &Self, f: impl Fn(u64, u64) -> u64) -> Self {
        let mut r = self.clone();
        for (i, w) in r.bits.iter_mut().enumerate() {
            *w = f(*w, o.bits.get(i).copied().unwrap_or(0));
        }
        r
    }

    /// Intersection (`cpumask_and`).
    pub fn and(&self, o: &Self) -> Self {
        self.zip_with(o, |a, b| a & b)
    }

    /// Union (`cpumask_or`); CPUs of `o` beyond `self`'s capacity are dropped.
    pub fn or(&self, o: &Self) -> Self {
        let mut r = self.zip_with(o, |a, b| a | b);
        r.trim();
        r
    }

    /// Difference `self \ o` (`cpumask_andnot`).
    pub fn andnot(&self, o: &Self) -> Self {
        self.zip_with(o, |a, b| a & !b)
    }

    /// `cpumask_intersects`.
    pub fn intersects(&self, o: &Self) -> bool {
        self.bits.iter().zip(o.bits.iter()).any(|(a, b)| a & b != 0)
    }

    /// `cpumask_subset`: every CPU of `self` is in `o`.
    pub fn is_subset(&self, o: &Self) -> bool {
        self.bits
            .iter()
            .enumerate()
            .all(|(i, &a)| a & !o.bits.get(i).copied().unwrap_or(0) == 0)
    }

    /// Clears bits at or above `nr_cpus` in the last word.
    fn trim(&mut self) {
        let rem = self.nr_cpus % 64;
        if rem != 0
            && let Some(last) = self.bits.last_mut()
        {
            *last &= (1u64 << rem) - 1;
        }
    }
}

struct BitIter {
    word: u64,
    base: usize,
}

impl Iterator for BitIter {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.word == 0 {
            return None;
        }
        let tz = self.word.trailing_zeros() as usize;
        self.word &= self.word - 1;
        Some(self.base + tz)
    }
}

/// Linux cpulist format (`%*pbl`): `0-3,8,10-11`; empty mask prints nothing.
impl fmt::Display for CpuMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut run: Option<(usize, usize)> = None;
        let mut emit = |f: &mut fmt::Formatter<'_>, (a, b): (usize, usize)| -> fmt::Result {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if a == b {
                write!(f, "{a}")
            } else {
                write!(f, "{a}-{b}")
            }
        };
        for c in self.iter() {
            run = match run {
                Some((a, b)) if b + 1 == c => Some((a, c)),
                Some(r) => {
                    emit(f, r)?;
                    Some((c, c))
                }
                None => Some((c, c)),
            };
        }
        if let Some(r) = run {
            emit(f, r)?;
        }
        Ok(())
    }
}

impl fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuMask({}/{})", self, self.nr_cpus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn cpulist_format() {
        let m = CpuMask::from_cpus(16, [0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(format!("{m}"), "0-3,8,10-11");
        assert_eq!(format!("{}", CpuMask::new(4)), "");
        assert_eq!(format!("{}", CpuMask::full(130)), "0-129");
        assert_eq!(
            format!("{}", CpuMask::from_cpus(200, [63, 64, 65, 190])),
            "63-65,190"
        );
    }

    #[test]
    fn full_weight_and_bounds() {
        for n in [0, 1, 63, 64, 65, 128, 200] {
            let f = CpuMask::full(n);
            assert_eq!(f.weight(), n);
            assert!(!f.contains(n));
        }
        let mut m = CpuMask::new(10);
        m.set(10);
        m.set(1000);
        m.clear(1000);
        assert!(m.is_empty());
        assert_eq!(m.first(), None);
        m.set(9);
        assert_eq!(m.first(), Some(9));
    }

    #[test]
    fn wrap_order() {
        let m = CpuMask::from_cpus(8, [0, 2, 5, 7]);
        let v: Vec<_> = m.iter_wrap(5).collect();
        assert_eq!(v, [5, 7, 0, 2]);
        let v: Vec<_> = m.iter_wrap(3).collect();
        assert_eq!(v, [5, 7, 0, 2]);
        let v: Vec<_> = m.iter_wrap(100).collect();
        assert_eq!(v, [0, 2, 5, 7]);
    }

    #[test]
    fn set_ops() {
        let a = CpuMask::from_cpus(70, [0, 1, 65]);
        let b = CpuMask::from_cpus(70, [1, 2, 65, 69]);
        assert_eq!(a.and(&b), CpuMask::from_cpus(70, [1, 65]));
        assert_eq!(a.or(&b), CpuMask::from_cpus(70, [0, 1, 2, 65, 69]));
        assert_eq!(a.andnot(&b), CpuMask::from_cpus(70, [0]));
        assert!(a.intersects(&b));
        assert!(!a.is_subset(&b));
        assert!(a.and(&b).is_subset(&a));
        assert!(!CpuMask::from_cpus(70, [0]).intersects(&CpuMask::from_cpus(70, [69])));
        // Mixed capacities: result keeps self's capacity.
        let small = CpuMask::from_cpus(4, [0, 3]);
        assert_eq!(small.or(&b).nr_cpus(), 4);
        assert_eq!(small.or(&b), CpuMask::from_cpus(4, [0, 1, 2, 3]));
    }
}
