//! `Small`: a vector that keeps up to two items inline. A scheduler
//! operation holds one or two runqueues; keeping them without a heap
//! allocation keeps every operation off the allocator's lock.

use alloc::vec::Vec;

/// Up to two items inline, more on the heap (only whole-machine contexts).
/// Items are in `inline[..len]` while `heap` is empty, else all in `heap`.
pub(crate) struct Small<T> {
    len: usize,
    inline: [Option<T>; 2],
    heap: Vec<T>,
}

impl<T> Default for Small<T> {
    fn default() -> Self {
        Small {
            len: 0,
            inline: [None, None],
            heap: Vec::new(),
        }
    }
}

impl<T> Small<T> {
    /// One item.
    #[inline]
    pub(crate) fn one(x: T) -> Self {
        Small {
            len: 1,
            inline: [Some(x), None],
            heap: Vec::new(),
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        if self.heap.is_empty() {
            self.inline.get(i).and_then(|x| x.as_ref())
        } else {
            self.heap.get(i)
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if self.heap.is_empty() {
            self.inline.get_mut(i).and_then(|x| x.as_mut())
        } else {
            self.heap.get_mut(i)
        }
    }

    /// Insert at `i` (0..=len), shifting later items.
    #[inline]
    pub(crate) fn insert(&mut self, i: usize, x: T) {
        assert!(i <= self.len, "insert past the end");
        if self.len < 2 && self.heap.is_empty() {
            // Inline and room left: the hot case (an operation's first or
            // second lock), no call.
            if i == 0 && self.len == 1 {
                self.inline[1] = self.inline[0].take();
            }
            self.inline[i] = Some(x);
            self.len += 1;
        } else {
            self.insert_cold(i, x);
        }
    }

    #[cold]
    #[inline(never)]
    fn insert_cold(&mut self, i: usize, x: T) {
        if self.heap.is_empty() {
            let mut v: Vec<T> = Vec::with_capacity(4);
            v.extend(self.inline.iter_mut().filter_map(|x| x.take()));
            v.insert(i, x);
            self.heap = v;
        } else {
            self.heap.insert(i, x);
        }
        self.len += 1;
    }

    /// Remove item `i`, shifting later items.
    #[inline]
    pub(crate) fn remove(&mut self, i: usize) -> T {
        assert!(i < self.len, "remove past the end");
        if !self.heap.is_empty() {
            return self.remove_cold(i);
        }
        self.len -= 1;
        let x = self.inline[i].take().expect("in range");
        if i == 0 {
            self.inline[0] = self.inline[1].take();
        }
        x
    }

    #[cold]
    #[inline(never)]
    fn remove_cold(&mut self, i: usize) -> T {
        self.len -= 1;
        let x = self.heap.remove(i);
        if self.heap.is_empty() {
            self.heap = Vec::new();
        }
        x
    }

    /// Remove the last item.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        match self.len {
            0 => None,
            // Inline: the last item moves out, nothing shifts.
            n @ 1..=2 if self.heap.is_empty() => {
                self.len = n - 1;
                self.inline[n - 1].take()
            }
            n => Some(self.remove_cold(n - 1)),
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        let (a, v): (&[Option<T>], &[T]) = if self.heap.is_empty() {
            (&self.inline, &[])
        } else {
            (&[], &self.heap)
        };
        a.iter().filter_map(|x| x.as_ref()).chain(v.iter())
    }

    /// The item whose key is `k` (a direct look at the two inline slots in
    /// the common case, no index to re-check).
    #[inline]
    pub(crate) fn find_by_key<K: Eq>(&self, k: &K, f: impl Fn(&T) -> K) -> Option<&T> {
        if self.heap.is_empty() {
            match &self.inline {
                [Some(a), _] if f(a) == *k => Some(a),
                [Some(_), Some(b)] if f(b) == *k => Some(b),
                _ => None,
            }
        } else {
            self.heap.iter().find(|x| f(x) == *k)
        }
    }

    /// [`Self::find_by_key`], mutably.
    #[inline]
    pub(crate) fn find_by_key_mut<K: Eq>(&mut self, k: &K, f: impl Fn(&T) -> K) -> Option<&mut T> {
        if self.heap.is_empty() {
            match &mut self.inline {
                [Some(a), _] if f(a) == *k => Some(a),
                [Some(_), Some(b)] if f(b) == *k => Some(b),
                _ => None,
            }
        } else {
            self.heap.iter_mut().find(|x| f(x) == *k)
        }
    }

    /// Binary search by a key (items are kept sorted by their callers).
    #[inline]
    pub(crate) fn search_by_key<K: Ord>(&self, k: &K, f: impl Fn(&T) -> K) -> Result<usize, usize> {
        use core::cmp::Ordering::{Equal, Greater, Less};
        if self.heap.is_empty() {
            return match &self.inline {
                [None, _] => Err(0),
                [Some(a), b] => match f(a).cmp(k) {
                    Equal => Ok(0),
                    Greater => Err(0),
                    Less => match b {
                        None => Err(1),
                        Some(b) => match f(b).cmp(k) {
                            Equal => Ok(1),
                            Greater => Err(1),
                            Less => Err(2),
                        },
                    },
                },
            };
        }
        self.heap.binary_search_by(|x| f(x).cmp(k))
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
