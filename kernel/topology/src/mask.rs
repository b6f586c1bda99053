//! `CpuMask`: a fixed-capacity CPU bitset, the equivalent of Linux's `struct cpumask`
//! sized for `nr_cpu_ids`.
//!
//! All operations are total: setting, clearing or testing a CPU outside the capacity is
//! a no-op / `false`, never a panic, so callers fed by firmware data cannot crash the
//! kernel. Binary operations between masks of different capacity work on the common
//! prefix and return a mask with the capacity of `self`.

use alloc::vec::Vec;
use core::fmt;
use core::hash::{Hash, Hasher};

use crate::CpuId;

/// Words stored inside the mask itself: masks of up to `64 * INLINE_WORDS` CPUs
/// (1,024, the kernel's limit) never touch the heap, so cloning one (every
/// scheduling group holds two) is a copy, not an allocation.
const INLINE_WORDS: usize = 16;

/// The bitset's storage: inline up to [`INLINE_WORDS`] words, else on the heap.
/// Words beyond the mask's own word count are always zero.
#[derive(Clone)]
enum Bits {
    Inline([u64; INLINE_WORDS]),
    Heap(Vec<u64>),
}

/// A set of logical CPUs (`0..nr_cpus`), stored as a `u64` bitset.
#[derive(Clone)]
pub struct CpuMask {
    nr_cpus: usize,
    bits: Bits,
}

impl Default for CpuMask {
    fn default() -> Self {
        Self::new(0)
    }
}

impl PartialEq for CpuMask {
    fn eq(&self, o: &Self) -> bool {
        self.nr_cpus == o.nr_cpus && self.words() == o.words()
    }
}

impl Eq for CpuMask {}

impl Hash for CpuMask {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.nr_cpus.hash(h);
        self.words().hash(h);
    }
}

impl CpuMask {
    /// Empty mask with room for `nr_cpus` CPUs (`cpumask_clear`).
    pub fn new(nr_cpus: usize) -> Self {
        let n = nr_cpus.div_ceil(64);
        let bits = if n <= INLINE_WORDS {
            Bits::Inline([0; INLINE_WORDS])
        } else {
            Bits::Heap(alloc::vec![0; n])
        };
        Self { nr_cpus, bits }
    }

    /// The mask's words (`nr_cpus.div_ceil(64)` of them).
    fn words(&self) -> &[u64] {
        let n = self.nr_cpus.div_ceil(64);
        match &self.bits {
            Bits::Inline(a) => &a[..n.min(INLINE_WORDS)],
            Bits::Heap(v) => v,
        }
    }

    fn words_mut(&mut self) -> &mut [u64] {
        let n = self.nr_cpus.div_ceil(64);
        match &mut self.bits {
            Bits::Inline(a) => &mut a[..n.min(INLINE_WORDS)],
            Bits::Heap(v) => v,
        }
    }

    /// Mask with every CPU `0..nr_cpus` set (`cpumask_setall`).
    pub fn full(nr_cpus: usize) -> Self {
        let mut m = Self::new(nr_cpus);
        for (i, w) in m.words_mut().iter_mut().enumerate() {
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
            && let Some(w) = self.words_mut().get_mut(cpu / 64)
        {
            *w |= 1u64 << (cpu % 64);
        }
    }

    /// Removes `cpu` (`cpumask_clear_cpu`); ignored when out of range.
    pub fn clear(&mut self, cpu: CpuId) {
        if let Some(w) = self.words_mut().get_mut(cpu / 64) {
            *w &= !(1u64 << (cpu % 64));
        }
    }

    /// `cpumask_test_cpu`.
    pub fn contains(&self, cpu: CpuId) -> bool {
        cpu < self.nr_cpus
            && self
                .words()
                .get(cpu / 64)
                .is_some_and(|w| w & (1u64 << (cpu % 64)) != 0)
    }

    /// Number of set CPUs (`cpumask_weight`).
    pub fn weight(&self) -> usize {
        self.words().iter().map(|w| w.count_ones() as usize).sum()
    }

    /// `cpumask_empty`.
    pub fn is_empty(&self) -> bool {
        self.words().iter().all(|&w| w == 0)
    }

    /// Lowest set CPU (`cpumask_first`), `None` when empty.
    pub fn first(&self) -> Option<CpuId> {
        self.iter().next()
    }

    /// Set CPUs in increasing order (`for_each_cpu`).
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            words: self.words(),
            cur: 0,
            base: 0,
            next: 0,
        }
    }

    /// Set CPUs starting at `start` and wrapping around (`for_each_cpu_wrap`):
    /// first the CPUs `>= start` in increasing order, then those `< start`.
    ///
    /// Word by word (the start word's high bits, the later words, the
    /// earlier words, the start word's low bits): no CPU is visited twice
    /// and none is filtered out.
    pub fn iter_wrap(&self, start: CpuId) -> WrapIter<'_> {
        let words = self.words();
        let nw = words.len();
        // A start beyond the capacity: every set CPU is below it, so the
        // order is plain ascending, as from 0.
        let start = if start / 64 >= nw { 0 } else { start };
        let sw = start / 64;
        let low = (1u64 << (start % 64)) - 1;
        WrapIter {
            words,
            cur: words.get(sw).map_or(0, |w| w & !low),
            base: sw * 64,
            sw,
            low,
            k: 0,
        }
    }

    fn zip_with(&self, o: &Self, f: impl Fn(u64, u64) -> u64) -> Self {
        let mut r = self.clone();
        r.zip_assign(o, f);
        r
    }

    fn zip_assign(&mut self, o: &Self, f: impl Fn(u64, u64) -> u64) {
        let ow = o.words();
        for (i, w) in self.words_mut().iter_mut().enumerate() {
            *w = f(*w, ow.get(i).copied().unwrap_or(0));
        }
    }

    /// Intersection (`cpumask_and`).
    pub fn and(&self, o: &Self) -> Self {
        self.zip_with(o, |a, b| a & b)
    }

    /// Union (`cpumask_or`); CPUs of `o` beyond `self`'s capacity are dropped.
    pub fn or(&self, o: &Self) -> Self {
        let mut r = self.clone();
        r.or_assign(o);
        r
    }

    /// In-place intersection: `self = self & o` (no new mask).
    pub fn and_assign(&mut self, o: &Self) {
        self.zip_assign(o, |a, b| a & b);
    }

    /// In-place union: `self = self | o`; CPUs of `o` beyond `self`'s capacity
    /// are dropped.
    pub fn or_assign(&mut self, o: &Self) {
        self.zip_assign(o, |a, b| a | b);
        self.trim();
    }

    /// Difference `self \ o` (`cpumask_andnot`).
    pub fn andnot(&self, o: &Self) -> Self {
        self.zip_with(o, |a, b| a & !b)
    }

    /// `cpumask_intersects`.
    pub fn intersects(&self, o: &Self) -> bool {
        self.words()
            .iter()
            .zip(o.words().iter())
            .any(|(a, b)| a & b != 0)
    }

    /// `cpumask_subset`: every CPU of `self` is in `o`.
    pub fn is_subset(&self, o: &Self) -> bool {
        let ow = o.words();
        self.words()
            .iter()
            .enumerate()
            .all(|(i, &a)| a & !ow.get(i).copied().unwrap_or(0) == 0)
    }

    /// Clears bits at or above `nr_cpus` in the last word.
    fn trim(&mut self) {
        let rem = self.nr_cpus % 64;
        if rem != 0
            && let Some(last) = self.words_mut().last_mut()
        {
            *last &= (1u64 << rem) - 1;
        }
    }
}

/// [`CpuMask::iter`]'s iterator (`for_each_cpu`): set CPUs in increasing
/// order, a word at a time.
pub struct Iter<'a> {
    words: &'a [u64],
    /// Bits of the current word not yet returned.
    cur: u64,
    /// CPU number of the current word's bit 0.
    base: usize,
    /// Index of the next word to load.
    next: usize,
}

impl Iterator for Iter<'_> {
    type Item = CpuId;

    #[inline]
    fn next(&mut self) -> Option<CpuId> {
        loop {
            if let Some(cpu) = take_lowest(&mut self.cur, self.base) {
                return Some(cpu);
            }
            let w = *self.words.get(self.next)?;
            self.cur = w;
            self.base = self.next * 64;
            self.next += 1;
        }
    }
}

/// The lowest set bit of `cur` as a CPU number (`base` + bit), cleared.
#[inline(always)]
fn take_lowest(cur: &mut u64, base: usize) -> Option<CpuId> {
    if *cur == 0 {
        return None;
    }
    let b = cur.trailing_zeros() as usize;
    *cur &= *cur - 1;
    Some(base + b)
}

/// [`CpuMask::iter_wrap`]'s iterator (`for_each_cpu_wrap`).
pub struct WrapIter<'a> {
    words: &'a [u64],
    /// Bits of the current word not yet returned.
    cur: u64,
    /// CPU number of the current word's bit 0.
    base: usize,
    /// Index of the start word.
    sw: usize,
    /// Bits of the start word below the start CPU.
    low: u64,
    /// Words loaded after the first (the start word's low part is the
    /// last, at `k == words.len()`).
    k: usize,
}

impl Iterator for WrapIter<'_> {
    type Item = CpuId;

    #[inline]
    fn next(&mut self) -> Option<CpuId> {
        loop {
            if let Some(cpu) = take_lowest(&mut self.cur, self.base) {
                return Some(cpu);
            }
            let nw = self.words.len();
            if self.k >= nw {
                return None;
            }
            self.k += 1;
            let (wi, m) = if self.k == nw {
                (self.sw, self.low)
            } else {
                let wi = self.sw + self.k;
                (if wi >= nw { wi - nw } else { wi }, u64::MAX)
            };
            self.cur = self.words.get(wi).map_or(0, |w| w & m);
            self.base = wi * 64;
        }
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
    fn iter_and_iter_wrap_orders() {
        use alloc::vec::Vec;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for nr in [1usize, 8, 63, 64, 65, 130, 160, 192, 1100, 2000] {
            for _ in 0..40 {
                let mut m = CpuMask::new(nr);
                for c in 0..nr {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if x.is_multiple_of(3) {
                        m.set(c);
                    }
                }
                let all: Vec<usize> = (0..nr).filter(|&c| m.contains(c)).collect();
                assert_eq!(m.iter().collect::<Vec<_>>(), all, "nr {nr}");
                for start in [0, 1, 63, 64, 65, nr / 2, nr.saturating_sub(1), nr, nr + 70] {
                    let want: Vec<usize> = m
                        .iter()
                        .filter(|&c| c >= start)
                        .chain(m.iter().filter(|&c| c < start))
                        .collect();
                    assert_eq!(
                        m.iter_wrap(start).collect::<Vec<_>>(),
                        want,
                        "nr {nr} start {start}"
                    );
                }
            }
        }
    }

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
    fn inline_and_heap_masks_behave_alike() {
        // 1,024 CPUs fit inline; 1,025 go to the heap. Same answers either way.
        for n in [1024usize, 1025, 4096] {
            let mut a = CpuMask::from_cpus(n, [0, 63, 64, n - 1]);
            let b = CpuMask::from_cpus(n, [63, n - 1]);
            assert_eq!(a.weight(), 4);
            assert_eq!(a.and(&b), b);
            assert!(b.is_subset(&a) && !a.is_subset(&b));
            a.and_assign(&b);
            assert_eq!(a, b);
            a.or_assign(&CpuMask::full(n));
            assert_eq!(a, CpuMask::full(n));
            assert_eq!(format!("{}", b), format!("63,{}", n - 1));
        }
        // Equality and hashing see the CPUs and the capacity, not the storage.
        use core::hash::{Hash, Hasher};
        struct H(u64);
        impl Hasher for H {
            fn finish(&self) -> u64 {
                self.0
            }
            fn write(&mut self, b: &[u8]) {
                for &x in b {
                    self.0 = self.0.wrapping_mul(31).wrapping_add(u64::from(x));
                }
            }
        }
        let h = |m: &CpuMask| {
            let mut s = H(0);
            m.hash(&mut s);
            s.finish()
        };
        let mut x = CpuMask::from_cpus(70, [1, 69]);
        x.clear(69);
        assert_eq!(x, CpuMask::from_cpus(70, [1]));
        assert_eq!(h(&x), h(&CpuMask::from_cpus(70, [1])));
        assert_ne!(CpuMask::new(70), CpuMask::new(71));
        assert_eq!(CpuMask::default(), CpuMask::new(0));
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
