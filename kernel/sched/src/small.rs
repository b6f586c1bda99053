//! `Small`: a vector that keeps up to two items inline. A scheduler
//! operation holds one or two runqueues; keeping them without a heap
//! allocation keeps every operation off the allocator's lock.

use alloc::vec::Vec;

/// Up to two items inline, more on the heap (only whole-machine contexts).
pub(crate) enum Small<T> {
    /// Zero to two items, in order, `[Some.., None..]`.
    Inline([Option<T>; 2]),
    /// Three or more.
    Heap(Vec<T>),
}

impl<T> Default for Small<T> {
    fn default() -> Self {
        Small::Inline([None, None])
    }
}

impl<T> Small<T> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Small::Inline(a) => a.iter().filter(|x| x.is_some()).count(),
            Small::Heap(v) => v.len(),
        }
    }

    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        match self {
            Small::Inline(a) => a.get(i).and_then(|x| x.as_ref()),
            Small::Heap(v) => v.get(i),
        }
    }

    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        match self {
            Small::Inline(a) => a.get_mut(i).and_then(|x| x.as_mut()),
            Small::Heap(v) => v.get_mut(i),
        }
    }

    /// Insert at `i` (0..=len), shifting later items.
    pub(crate) fn insert(&mut self, i: usize, x: T) {
        let n = self.len();
        assert!(i <= n, "insert past the end");
        match self {
            Small::Inline(a) if n < 2 => {
                if i == 0 && n == 1 {
                    a[1] = a[0].take();
                }
                a[i] = Some(x);
            }
            Small::Inline(a) => {
                let mut v: Vec<T> = Vec::with_capacity(4);
                v.extend(a.iter_mut().filter_map(|x| x.take()));
                v.insert(i, x);
                *self = Small::Heap(v);
            }
            Small::Heap(v) => v.insert(i, x),
        }
    }

    /// Remove item `i`, shifting later items.
    pub(crate) fn remove(&mut self, i: usize) -> T {
        match self {
            Small::Inline(a) => {
                let x = a[i].take().expect("remove past the end");
                if i == 0 {
                    a[0] = a[1].take();
                }
                x
            }
            Small::Heap(v) => v.remove(i),
        }
    }

    /// Remove the last item.
    pub(crate) fn pop(&mut self) -> Option<T> {
        match self.len() {
            0 => None,
            n => Some(self.remove(n - 1)),
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        let (a, v): (&[Option<T>], &[T]) = match self {
            Small::Inline(a) => (a, &[]),
            Small::Heap(v) => (&[], v),
        };
        a.iter().filter_map(|x| x.as_ref()).chain(v.iter())
    }

    /// Binary search by a key (items are kept sorted by their callers).
    pub(crate) fn search_by_key<K: Ord>(&self, k: &K, f: impl Fn(&T) -> K) -> Result<usize, usize> {
        let n = self.len();
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match f(self.get(mid).expect("in range")).cmp(k) {
                core::cmp::Ordering::Less => lo = mid + 1,
                core::cmp::Ordering::Greater => hi = mid,
                core::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }
}

#[cfg(test)]
mod tests {
    use super::Small;
    use alloc::vec::Vec;

    #[test]
    fn behaves_like_a_sorted_vec() {
        let mut s: Small<u32> = Small::default();
        let mut model: Vec<u32> = Vec::new();
        let mut x = 12345u32;
        for step in 0..2000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let k = (x >> 16) % 8;
            match s.search_by_key(&k, |v| *v) {
                Ok(i) if step % 3 != 0 => {
                    assert_eq!(s.remove(i), model.remove(i));
                }
                Ok(_) => {}
                Err(i) => {
                    s.insert(i, k);
                    model.insert(i, k);
                }
            }
            assert_eq!(s.len(), model.len());
            assert_eq!(s.iter().copied().collect::<Vec<_>>(), model);
            if step % 50 == 0 {
                while let Some(v) = s.pop() {
                    assert_eq!(Some(v), model.pop());
                }
            }
        }
    }
}
