//! The runqueue timeline: an augmented balanced search tree (a treap).
//!
//! Plays the role of Linux's `cfs_rq->tasks_timeline` red-black tree. Nodes are
//! ordered by `(key, seq)`, `seq` the insertion number: `rb_add_cached` sends
//! a key equal to ones already in the tree to their right, so among equal
//! vruntimes (CFS) or deadlines (EEVDF) the entity enqueued first is
//! leftmost and picked first. Each node caches the minimum `aux` value of its
//! subtree (the `RB_DECLARE_CALLBACKS` augmentation of 6.8+). The CFS policy
//! keys by vruntime (`aux` unused); EEVDF keys by virtual deadline with
//! `aux = vruntime`, so "earliest deadline among eligible entities" is one
//! O(log n) descent ([`Timeline::first_matching_aux`], as in `pick_eevdf`).
//! Insert, remove and leftmost are O(log n) expected; nodes live in a slab so
//! the structure does only amortized allocation.

use crate::task::TaskId;
use alloc::vec::Vec;

const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Node {
    key: u64,
    /// Insertion number, unique in this timeline: breaks ties of `key`.
    seq: u64,
    id: TaskId,
    aux: u64,
    min_aux: u64,
    prio: u32,
    left: u32,
    right: u32,
}

/// Augmented ordered set of `(key, seq)` entries, each naming a task, with
/// a subtree-minimum of `aux`.
#[derive(Clone, Debug)]
pub struct Timeline {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    len: usize,
    rng: u32,
    /// The last insertion number handed out.
    seq: u64,
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new()
    }
}

impl Timeline {
    /// Bytes one entity takes: its node and its free-list slot.
    pub const NODE_BYTES: usize = core::mem::size_of::<Node>() + core::mem::size_of::<u32>();

    /// An empty timeline, with room for 8 entities before it first grows.
    pub fn new() -> Self {
        Timeline {
            nodes: Vec::with_capacity(8),
            free: Vec::with_capacity(8),
            root: NIL,
            len: 0,
            rng: 0x9E37_79B9,
            seq: 0,
        }
    }

    /// Room for `n` entities in all (nodes and free list) before the tree
    /// grows again.
    pub fn reserve_total(&mut self, n: usize) {
        self.nodes.reserve_exact(n.saturating_sub(self.nodes.len()));
        let want = self.nodes.capacity();
        self.free
            .reserve_exact(want.saturating_sub(self.free.len()));
    }

    /// Number of entities in the tree.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn next_prio(&mut self) -> u32 {
        // xorshift32: deterministic, good enough for treap priorities.
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        x
    }

    fn less(&self, n: u32, key: u64, seq: u64) -> bool {
        let node = &self.nodes[n as usize];
        (node.key, node.seq) < (key, seq)
    }

    fn pull(&mut self, n: u32) {
        let (l, r) = (self.nodes[n as usize].left, self.nodes[n as usize].right);
        let mut m = self.nodes[n as usize].aux;
        if l != NIL {
            m = m.min(self.nodes[l as usize].min_aux);
        }
        if r != NIL {
            m = m.min(self.nodes[r as usize].min_aux);
        }
        self.nodes[n as usize].min_aux = m;
    }

    /// Split `t` into (< (key,seq), >= (key,seq)).
    fn split(&mut self, t: u32, key: u64, seq: u64) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.less(t, key, seq) {
            let r = self.nodes[t as usize].right;
            let (a, b) = self.split(r, key, seq);
            self.nodes[t as usize].right = a;
            self.pull(t);
            (t, b)
        } else {
            let l = self.nodes[t as usize].left;
            let (a, b) = self.split(l, key, seq);
            self.nodes[t as usize].left = b;
            self.pull(t);
            (a, t)
        }
    }

    /// Merge two treaps where every key of `a` is below every key of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let r = self.nodes[a as usize].right;
            let m = self.merge(r, b);
            self.nodes[a as usize].right = m;
            self.pull(a);
            a
        } else {
            let l = self.nodes[b as usize].left;
            let m = self.merge(a, l);
            self.nodes[b as usize].left = m;
            self.pull(b);
            b
        }
    }

    fn insert_at(&mut self, t: u32, n: u32) -> u32 {
        if t == NIL {
            return n;
        }
        let (key, seq, prio) = {
            let node = &self.nodes[n as usize];
            (node.key, node.seq, node.prio)
        };
        if prio > self.nodes[t as usize].prio {
            let (a, b) = self.split(t, key, seq);
            self.nodes[n as usize].left = a;
            self.nodes[n as usize].right = b;
            self.pull(n);
            return n;
        }
        if self.less(t, key, seq) {
            let r = self.nodes[t as usize].right;
            let x = self.insert_at(r, n);
            self.nodes[t as usize].right = x;
        } else {
            let l = self.nodes[t as usize].left;
            let x = self.insert_at(l, n);
            self.nodes[t as usize].left = x;
        }
        self.pull(t);
        t
    }

    /// Insert task `id` at `key`, after every entry with the same key,
    /// with augmentation value `aux` (`__enqueue_entity`); returns the
    /// entry's insertion number, which [`Self::remove`] and
    /// [`Self::next_after`] take to name it.
    pub fn insert(&mut self, key: u64, id: TaskId, aux: u64) -> u64 {
        let prio = self.next_prio();
        self.seq += 1;
        let seq = self.seq;
        let node = Node {
            key,
            seq,
            id,
            aux,
            min_aux: aux,
            prio,
            left: NIL,
            right: NIL,
        };
        let n = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                // Room for every node on the free list too, so removals
                // never allocate: the tree allocates only when it holds
                // more entities than it ever has.
                let want = self.nodes.capacity();
                if self.free.capacity() < want {
                    self.free.reserve_exact(want - self.free.len());
                }
                (self.nodes.len() - 1) as u32
            }
        };
        self.root = self.insert_at(self.root, n);
        self.len += 1;
        seq
    }

    fn remove_at(&mut self, t: u32, key: u64, seq: u64) -> (u32, bool) {
        if t == NIL {
            return (NIL, false);
        }
        let (tk, tseq) = (self.nodes[t as usize].key, self.nodes[t as usize].seq);
        if (tk, tseq) == (key, seq) {
            let (l, r) = (self.nodes[t as usize].left, self.nodes[t as usize].right);
            self.free.push(t);
            return (self.merge(l, r), true);
        }
        let found;
        if (tk, tseq) < (key, seq) {
            let r = self.nodes[t as usize].right;
            let (x, f) = self.remove_at(r, key, seq);
            self.nodes[t as usize].right = x;
            found = f;
        } else {
            let l = self.nodes[t as usize].left;
            let (x, f) = self.remove_at(l, key, seq);
            self.nodes[t as usize].left = x;
            found = f;
        }
        if found {
            self.pull(t);
        }
        (t, found)
    }

    /// Remove the entry `(key, seq)` (`__dequeue_entity`); returns whether
    /// it was present.
    pub fn remove(&mut self, key: u64, seq: u64) -> bool {
        let (root, found) = self.remove_at(self.root, key, seq);
        self.root = root;
        if found {
            self.len -= 1;
        }
        found
    }

    /// The leftmost entry (`__pick_first_entity`).
    pub fn first(&self) -> Option<(u64, TaskId)> {
        let mut t = self.root;
        if t == NIL {
            return None;
        }
        while self.nodes[t as usize].left != NIL {
            t = self.nodes[t as usize].left;
        }
        let n = &self.nodes[t as usize];
        Some((n.key, n.id))
    }

    /// The entry following `(key, seq)` in order (`__pick_next_entity`).
    pub fn next_after(&self, key: u64, seq: u64) -> Option<(u64, TaskId)> {
        let mut t = self.root;
        let mut best = None;
        while t != NIL {
            let n = &self.nodes[t as usize];
            if (n.key, n.seq) > (key, seq) {
                best = Some((n.key, n.id));
                t = n.left;
            } else {
                t = n.right;
            }
        }
        best
    }

    /// Minimum `aux` over the whole tree (the root's augmented value).
    pub fn min_aux(&self) -> Option<u64> {
        (self.root != NIL).then(|| self.nodes[self.root as usize].min_aux)
    }

    /// The leftmost entry whose `aux` satisfies `ok`, where `ok` must be
    /// monotone (true for all values below some threshold). One descent
    /// using the subtree minima, as `pick_eevdf()` does with eligibility.
    pub fn first_matching_aux(&self, ok: impl Fn(u64) -> bool) -> Option<(u64, TaskId)> {
        let mut t = self.root;
        while t != NIL {
            let n = &self.nodes[t as usize];
            if n.left != NIL && ok(self.nodes[n.left as usize].min_aux) {
                t = n.left;
                continue;
            }
            if ok(n.aux) {
                return Some((n.key, n.id));
            }
            if n.right != NIL && ok(self.nodes[n.right as usize].min_aux) {
                t = n.right;
            } else {
                return None;
            }
        }
        None
    }

    /// In-order iteration (for invariant checks and the load balancer). The
    /// path stack stays inline for trees up to 48 levels deep (a treap of
    /// n nodes is about 2.5 ln n deep), so the balancer's walk does not
    /// allocate.
    pub fn iter(&self) -> impl Iterator<Item = (u64, TaskId, u64)> + '_ {
        let mut stack: crate::inline_vec::InlineVec<u32, 48> = Default::default();
        let mut t = self.root;
        core::iter::from_fn(move || {
            while t != NIL {
                stack.push(t);
                t = self.nodes[t as usize].left;
            }
            let n = stack.pop()?;
            let node = &self.nodes[n as usize];
            t = node.right;
            Some((node.key, node.id, node.aux))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn basic_order_and_removal() {
        let mut t = Timeline::new();
        let mut seqs = Vec::new();
        for (i, k) in [50u64, 10, 30, 10, 70].iter().enumerate() {
            seqs.push(t.insert(*k, TaskId(i as u32), 100 - *k));
        }
        assert_eq!(t.first(), Some((10, TaskId(1))));
        assert_eq!(t.next_after(10, seqs[1]), Some((10, TaskId(3))));
        assert_eq!(t.min_aux(), Some(30));
        assert!(t.remove(10, seqs[1]));
        assert!(!t.remove(10, seqs[1]));
        assert_eq!(t.first(), Some((10, TaskId(3))));
        let keys: Vec<u64> = t.iter().map(|x| x.0).collect();
        assert_eq!(keys, vec![10, 30, 50, 70]);
        assert_eq!(t.len(), 4);
    }

    #[test]
    fn equal_keys_leave_in_insertion_order_whatever_the_ids() {
        // rb_add_cached(): "if (less(node, parent)) left else right", so a
        // key equal to those in the tree goes right of them; the leftmost
        // of equal keys is the one inserted first, not the lowest id.
        let mut t = Timeline::new();
        let s7 = t.insert(5, TaskId(7), 0);
        let s3 = t.insert(5, TaskId(3), 0);
        t.insert(5, TaskId(5), 0);
        assert_eq!(t.first(), Some((5, TaskId(7))));
        assert_eq!(t.first_matching_aux(|a| a == 0), Some((5, TaskId(7))));
        assert_eq!(t.next_after(5, s7), Some((5, TaskId(3))));
        // Taken out and put back (a requeue): now the last of its key.
        assert!(t.remove(5, s7));
        t.insert(5, TaskId(7), 0);
        let order: Vec<TaskId> = t.iter().map(|x| x.1).collect();
        assert_eq!(order, vec![TaskId(3), TaskId(5), TaskId(7)]);
        assert!(t.remove(5, s3));
        assert_eq!(t.first(), Some((5, TaskId(5))));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn matches_btreemap_model(ops in proptest::collection::vec((0u8..3, 0u64..40, 0u32..20, 0u64..100), 1..200)) {
            // The model keys by (key, insertion number); `live` finds an
            // entry to remove by its key and task, as the runqueue does
            // through the entity it looked up.
            let mut t = Timeline::new();
            let mut m: BTreeMap<(u64, u64), (TaskId, u64)> = BTreeMap::new();
            let mut live: BTreeMap<(u64, TaskId), u64> = BTreeMap::new();
            for (op, key, id, aux) in ops {
                let id = TaskId(id);
                match op {
                    0 | 1 => {
                        if let std::collections::btree_map::Entry::Vacant(e) = live.entry((key, id)) {
                            let seq = t.insert(key, id, aux);
                            e.insert(seq);
                            m.insert((key, seq), (id, aux));
                        }
                    }
                    _ => {
                        match live.remove(&(key, id)) {
                            Some(seq) => {
                                prop_assert!(t.remove(key, seq));
                                m.remove(&(key, seq));
                            }
                            None => prop_assert!(!t.remove(key, u64::MAX)),
                        }
                    }
                }
                prop_assert_eq!(t.len(), m.len());
                prop_assert_eq!(t.first(), m.iter().next().map(|(k, v)| (k.0, v.0)));
                prop_assert_eq!(t.min_aux(), m.values().map(|v| v.1).min());
                let thr = aux;
                let want = m.iter().find(|(_, v)| v.1 <= thr).map(|(k, v)| (k.0, v.0));
                prop_assert_eq!(t.first_matching_aux(|a| a <= thr), want);
                let all: Vec<(u64, TaskId)> = t.iter().map(|x| (x.0, x.1)).collect();
                let model: Vec<(u64, TaskId)> = m.iter().map(|(k, v)| (k.0, v.0)).collect();
                prop_assert_eq!(all, model);
                if let Some((&(k, seq), _)) = m.iter().next() {
                    let next = m.range((k, seq + 1)..).next().map(|(k, v)| (k.0, v.0));
                    prop_assert_eq!(t.next_after(k, seq), next);
                }
            }
        }
    }
}
