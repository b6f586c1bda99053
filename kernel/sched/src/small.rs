//! `Small`: a vector that keeps up to two items inline. A scheduler
//! operation holds one or two runqueues; keeping them without a heap
//! allocation keeps every operation off the allocator's lock.

use alloc::vec::Vec;

/// Up to two items inline, more on the heap (only whole-machine contexts).
/// Items 0 and 1 always live in `inline` (so the hot cases, an operation
/// holding one or two runqueues, read them with no check of `heap`);
/// items from 2 on live in `heap`.
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
        match i {
            0 => self.inline[0].as_ref(),
            1 => self.inline[1].as_ref(),
            _ => self.heap.get(i - 2),
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        match i {
            0 => self.inline[0].as_mut(),
            1 => self.inline[1].as_mut(),
            _ => self.heap.get_mut(i - 2),
        }
    }

    /// The first item (no index to check).
    #[inline(always)]
    pub(crate) fn first_mut(&mut self) -> Option<&mut T> {
        self.inline[0].as_mut()
    }

    /// The first item.
    #[inline(always)]
    pub(crate) fn first(&self) -> Option<&T> {
        self.inline[0].as_ref()
    }

    /// Insert at `i` (0..=len), shifting later items.
    #[inline]
    pub(crate) fn insert(&mut self, i: usize, x: T) {
        assert!(i <= self.len, "insert past the end");
        if self.len < 2 {
            // Room inline: the hot case (an operation's first or second
            // lock), no call.
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
        // Both inline slots are full: the item that leaves them goes to the
        // front of the heap part.
        match i {
            0 | 1 => {
                let out = self.inline[1].take().expect("full");
                self.heap.insert(0, out);
                if i == 0 {
                    self.inline[1] = self.inline[0].take();
                }
                self.inline[i] = Some(x);
            }
            _ => self.heap.insert(i - 2, x),
        }
        self.len += 1;
    }

    /// Remove item `i`, shifting later items.
    #[inline]
    pub(crate) fn remove(&mut self, i: usize) -> T {
        assert!(i < self.len, "remove past the end");
        if self.len > 2 {
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
        let x = match i {
            0 | 1 => {
                let x = self.inline[i].take().expect("in range");
                if i == 0 {
                    self.inline[0] = self.inline[1].take();
                }
                self.inline[1] = Some(self.heap.remove(0));
                x
            }
            _ => self.heap.remove(i - 2),
        };
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
            n @ 1..=2 => {
                self.len = n - 1;
                self.inline[n - 1].take()
            }
            n => Some(self.remove_cold(n - 1)),
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.inline
            .iter()
            .filter_map(|x| x.as_ref())
            .chain(self.heap.iter())
    }

    /// The item whose key is `k` (a direct look at the two inline slots in
    /// the common case, no index to re-check).
    #[inline]
    pub(crate) fn find_by_key<K: Eq>(&self, k: &K, f: impl Fn(&T) -> K) -> Option<&T> {
        match &self.inline {
            [Some(a), _] if f(a) == *k => Some(a),
            [Some(_), Some(b)] if f(b) == *k => Some(b),
            _ if self.len > 2 => self.heap.iter().find(|x| f(x) == *k),
            _ => None,
        }
    }

    /// [`Self::find_by_key`], mutably.
    #[inline]
    pub(crate) fn find_by_key_mut<K: Eq>(&mut self, k: &K, f: impl Fn(&T) -> K) -> Option<&mut T> {
        match &mut self.inline {
            [Some(a), _] if f(a) == *k => Some(a),
            [Some(_), Some(b)] if f(b) == *k => Some(b),
            _ if self.len > 2 => self.heap.iter_mut().find(|x| f(x) == *k),
            _ => None,
        }
    }

    /// Binary search by a key (items are kept sorted by their callers).
    #[inline]
    pub(crate) fn search_by_key<K: Ord>(&self, k: &K, f: impl Fn(&T) -> K) -> Result<usize, usize> {
        use core::cmp::Ordering::{Equal, Greater, Less};
        match &self.inline {
            [None, _] => Err(0),
            [Some(a), b] => match f(a).cmp(k) {
                Equal => Ok(0),
                Greater => Err(0),
                Less => match b {
                    None => Err(1),
                    Some(b) => match f(b).cmp(k) {
                        Equal => Ok(1),
                        Greater => Err(1),
                        Less => match self.heap.binary_search_by(|x| f(x).cmp(k)) {
                            Ok(i) => Ok(i + 2),
                            Err(i) => Err(i + 2),
                        },
                    },
                },
            },
        }
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
            for (i, v) in model.iter().enumerate() {
                assert_eq!(s.get(i), Some(v));
                assert_eq!(s.find_by_key(v, |x| *x), Some(v));
            }
            assert_eq!(s.get(model.len()), None);
            assert_eq!(s.first(), model.first());
            assert_eq!(s.find_by_key(&99, |x| *x), None);
            if step % 50 == 0 {
                while let Some(v) = s.pop() {
                    assert_eq!(Some(v), model.pop());
                }
            }
        }
    }
}
