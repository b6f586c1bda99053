//! `InlineVec`: the short lists a scheduler operation returns (CPUs to
//! reschedule, tasks moved) kept inline, so the wakeup, block, tick and
//! schedule paths never take the kernel's heap lock.
//!
//! An operation reschedules at most a handful of CPUs (the wakee's, an
//! active-balance source per domain level, an exec or active-balance
//! destination) and usually moves zero or one task, so a few inline slots
//! hold every common result. Past `N` items the list spills to the heap: a
//! balance pass that pulls a batch of tasks pays one allocation for the
//! batch instead of being refused; a list made [`InlineVec::with_spare`]
//! spills into the spare's room instead, and [`InlineVec::into_spare`]
//! gives that room back, so a caller that recycles its spares (the core's
//! balancing lists, `Rq::migr_spares`) never allocates for a batch that
//! fits. `tests/no_alloc.rs` checks that the hot paths do not allocate.

use alloc::vec::Vec;
use core::fmt;

/// Up to `N` `Copy` items inline, more on the heap. Reads as a slice.
#[derive(Clone)]
pub struct InlineVec<T: Copy + Default, const N: usize> {
    len: usize,
    inline: [T; N],
    /// Every item once spilled (then `inline` is unused).
    spill: Vec<T>,
}

impl<T: Copy + Default, const N: usize> InlineVec<T, N> {
    /// An empty list (no allocation).
    pub fn new() -> Self {
        InlineVec {
            len: 0,
            inline: [T::default(); N],
            spill: Vec::new(),
        }
    }

    /// An empty list whose spill goes into `spare`'s room (its items are
    /// dropped).
    pub fn with_spare(mut spare: Vec<T>) -> Self {
        spare.clear();
        InlineVec {
            len: 0,
            inline: [T::default(); N],
            spill: spare,
        }
    }

    /// The spill's room, emptied, for [`InlineVec::with_spare`]: no
    /// allocation behind it if the list never spilled and had no spare.
    pub fn into_spare(mut self) -> Vec<T> {
        self.spill.clear();
        self.spill
    }

    /// Items held inline before the list spills (`N`).
    pub const fn inline_capacity(&self) -> usize {
        N
    }

    /// Room for spilled items without allocating.
    pub fn spare_room(&self) -> usize {
        self.spill.capacity()
    }

    /// Whether the items have moved to the heap.
    pub fn spilled(&self) -> bool {
        !self.spill.is_empty()
    }

    /// Append `x`.
    pub fn push(&mut self, x: T) {
        if !self.spilled() && self.len < N {
            self.inline[self.len] = x;
        } else {
            if !self.spilled() {
                self.spill.reserve(2 * N.max(1));
                self.spill.extend_from_slice(&self.inline[..self.len]);
            }
            self.spill.push(x);
        }
        self.len += 1;
    }

    /// Remove and return the last item.
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        if self.spilled() {
            // Emptied, the spill keeps its room (not spilled any more).
            return self.spill.pop();
        }
        Some(self.inline[self.len])
    }

    /// Append `x` unless it is already present (a set of CPUs).
    pub fn insert(&mut self, x: T)
    where
        T: PartialEq,
    {
        if !self.contains(&x) {
            self.push(x);
        }
    }

    /// Keep the items for which `f` holds, in order.
    pub fn retain(&mut self, mut f: impl FnMut(&T) -> bool) {
        if self.spilled() {
            self.spill.retain(|x| f(x));
            self.len = self.spill.len();
            return;
        }
        let mut kept = 0;
        for i in 0..self.len {
            let x = self.inline[i];
            if f(&x) {
                self.inline[kept] = x;
                kept += 1;
            }
        }
        self.len = kept;
    }

    /// The items as a slice.
    pub fn as_slice(&self) -> &[T] {
        if self.spilled() {
            &self.spill
        } else {
            &self.inline[..self.len]
        }
    }
}

impl<T: Copy + Default, const N: usize> Default for InlineVec<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Default, const N: usize> core::ops::Deref for InlineVec<T, N> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Copy + Default + PartialEq, const N: usize> PartialEq for InlineVec<T, N> {
    fn eq(&self, o: &Self) -> bool {
        self.as_slice() == o.as_slice()
    }
}

impl<T: Copy + Default + PartialEq, const N: usize> PartialEq<Vec<T>> for InlineVec<T, N> {
    fn eq(&self, o: &Vec<T>) -> bool {
        self.as_slice() == o.as_slice()
    }
}

impl<T: Copy + Default + Eq, const N: usize> Eq for InlineVec<T, N> {}

impl<T: Copy + Default + fmt::Debug, const N: usize> fmt::Debug for InlineVec<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<T: Copy + Default, const N: usize> Extend<T> for InlineVec<T, N> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, it: I) {
        for x in it {
            self.push(x);
        }
    }
}

impl<T: Copy + Default, const N: usize> FromIterator<T> for InlineVec<T, N> {
    fn from_iter<I: IntoIterator<Item = T>>(it: I) -> Self {
        let mut v = Self::new();
        v.extend(it);
        v
    }
}

impl<'a, T: Copy + Default, const N: usize> IntoIterator for &'a InlineVec<T, N> {
    type Item = &'a T;
    type IntoIter = core::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

/// Owning iterator of an [`InlineVec`].
pub struct IntoIter<T: Copy + Default, const N: usize> {
    v: InlineVec<T, N>,
    at: usize,
}

impl<T: Copy + Default, const N: usize> Iterator for IntoIter<T, N> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        let x = self.v.as_slice().get(self.at).copied();
        self.at += 1;
        x
    }
}

impl<T: Copy + Default, const N: usize> IntoIterator for InlineVec<T, N> {
    type Item = T;
    type IntoIter = IntoIter<T, N>;
    fn into_iter(self) -> Self::IntoIter {
        IntoIter { v: self, at: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::InlineVec;
    use alloc::vec::Vec;

    #[test]
    fn stays_inline_up_to_n_then_spills_in_order() {
        let mut v: InlineVec<u32, 3> = InlineVec::new();
        for i in 0..3 {
            v.push(i);
        }
        assert!(!v.spilled());
        assert_eq!(&*v, &[0, 1, 2]);
        v.push(3);
        v.push(4);
        assert!(v.spilled());
        assert_eq!(&*v, &[0, 1, 2, 3, 4]);
        assert_eq!(v.clone().into_iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert_eq!(v.pop(), Some(4));
        while v.pop().is_some() {}
        assert!(v.is_empty() && !v.spilled());
        v.push(9);
        assert_eq!(&*v, &[9]);
    }

    #[test]
    fn a_spare_takes_the_spill_and_comes_back_with_its_room() {
        let mut v: InlineVec<u32, 2> = InlineVec::with_spare(Vec::with_capacity(16));
        assert!(!v.spilled() && v.spare_room() >= 16);
        let room = v.spare_room();
        for i in 0..10 {
            v.push(i);
        }
        assert!(v.spilled());
        assert_eq!(&*v, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(v.spare_room(), room, "a batch that fits does not grow it");
        while v.pop().is_some() {}
        assert!(!v.spilled() && v.spare_room() == room);
        v.push(7);
        assert_eq!(&*v, &[7]);
        let back = v.into_spare();
        assert!(back.is_empty() && back.capacity() == room);
        let w: InlineVec<u32, 2> = InlineVec::with_spare(alloc::vec![1, 2, 3]);
        assert!(w.is_empty() && !w.spilled());
    }

    #[test]
    fn retain_and_insert_keep_order_and_uniqueness() {
        let mut v: InlineVec<usize, 4> = InlineVec::new();
        for c in [5, 1, 5, 7, 1, 2] {
            v.insert(c);
        }
        assert_eq!(&*v, &[5, 1, 7, 2]);
        v.retain(|&c| c != 1);
        assert_eq!(&*v, &[5, 7, 2]);
        let mut w: InlineVec<usize, 2> = (0..6).collect();
        w.retain(|&c| c % 2 == 0);
        assert_eq!(&*w, &[0, 2, 4]);
        w.retain(|_| false);
        assert!(w.is_empty() && !w.spilled());
        assert_eq!(InlineVec::<usize, 2>::new(), w);
    }
}
