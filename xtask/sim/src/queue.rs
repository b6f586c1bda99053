//! The engine's event queue: events ordered by (time, posting order), so
//! events at the same time come out in the order they were posted and a
//! run stays a pure function of its inputs.
//!
//! Why not `std::collections::BinaryHeap<Reverse<(u64, u64, Ev)>>`: its
//! pushes and pops were ~25 % of the simulator's host time on the 160-CPU
//! hackbench case (a few hundred events in flight, ~8 levels, ~400 host
//! instructions per event). Nearly every event is due within microseconds
//! (segment ends, IPIs), so this is a calendar queue:
//! - a ring of [`SLOTS`] buckets of [`1 << WIDTH_SHIFT`](WIDTH_SHIFT) ns
//!   covering the next ~65 µs; each bucket is a list of its events sorted
//!   by key (a new event almost always goes at its tail: it has the
//!   largest sequence number), and a bitmap of non-empty buckets finds
//!   the next one with a few word scans; the lists' entries live in one
//!   small pool, so the queue's memory is a few tens of KiB (a bucket per
//!   allocation spread it over megabytes, one cache miss per event);
//! - events beyond the ring's window (ticks, long sleeps) wait in a binary
//!   heap; every pop takes the smaller of the ring's and the heap's first.
//!
//! The key is `time << 64 | sequence` and sequence numbers are unique, so
//! the order is total and the same as the old heap's (tested against it).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::engine::Ev;

/// Bucket width: 16 ns.
const WIDTH_SHIFT: u32 = 4;
/// Buckets in the ring (a power of two): 4,096 × 16 ns ≈ 65 µs.
const SLOTS: usize = 1 << 12;
const WORDS: usize = SLOTS / 64;
/// End of a bucket's list.
const NIL: u32 = u32::MAX;
/// No key: above every real one (a time of 2^64 - 1 ns is never reached).
const NO_KEY: u128 = u128::MAX;

/// One queued event, its key (`time << 64 | sequence`) and the next entry
/// of its bucket (or of the free list).
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u128,
    ev: Ev,
    next: u32,
}

/// A bucket: a list of entries sorted by key.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    head: u32,
    tail: u32,
}

const EMPTY: Bucket = Bucket {
    head: NIL,
    tail: NIL,
};

/// Where the earliest event is.
enum Min {
    Ring(usize),
    Far,
}

/// Events by (time, posting order).
#[derive(Debug)]
pub(crate) struct EventQueue {
    /// `ring[b % SLOTS]` lists the events of bucket `b` (time >> WIDTH_SHIFT)
    /// in key order, for `base <= b < base + SLOTS`.
    ring: Vec<Bucket>,
    /// The ring's entries and free entries, in one small array (its size is
    /// the most events ever queued in the window at once): the whole queue
    /// stays in the first-level caches.
    pool: Vec<Entry>,
    /// First free entry of `pool`.
    free: u32,
    /// Bit `s` set: `ring[s]` is not empty.
    full: [u64; WORDS],
    /// The bucket of the last event taken out (no event is earlier).
    base: u64,
    /// Events outside the ring's window.
    far: BinaryHeap<Reverse<(u128, Ev)>>,
    /// The key of `far`'s first event (`NO_KEY` when it is empty).
    far_min: u128,
    /// The last sequence number handed out.
    seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            ring: vec![EMPTY; SLOTS],
            pool: Vec::new(),
            free: NIL,
            full: [0; WORDS],
            base: 0,
            far: BinaryHeap::new(),
            far_min: NO_KEY,
            seq: 0,
        }
    }
}

impl EventQueue {
    /// Queues `ev` at time `t`, after every event already queued at `t`.
    pub fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        let key = (u128::from(t) << 64) | u128::from(self.seq);
        let b = t >> WIDTH_SHIFT;
        if b < self.base || b - self.base >= SLOTS as u64 {
            self.far.push(Reverse((key, ev)));
            self.far_min = self.far_min.min(key);
            return;
        }
        let s = (b as usize) & (SLOTS - 1);
        let e = Entry { key, ev, next: NIL };
        let i = match self.free {
            NIL => {
                self.pool.push(e);
                (self.pool.len() - 1) as u32
            }
            f => {
                self.free = self.pool[f as usize].next;
                self.pool[f as usize] = e;
                f
            }
        };
        let bucket = self.ring[s];
        if bucket.head == NIL {
            self.ring[s] = Bucket { head: i, tail: i };
            self.full[s / 64] |= 1 << (s % 64);
        } else if self.pool[bucket.tail as usize].key < key {
            // The usual case: the latest event of its bucket.
            self.pool[bucket.tail as usize].next = i;
            self.ring[s].tail = i;
        } else if key < self.pool[bucket.head as usize].key {
            self.pool[i as usize].next = bucket.head;
            self.ring[s].head = i;
        } else {
            let mut at = bucket.head;
            loop {
                let next = self.pool[at as usize].next;
                if self.pool[next as usize].key > key {
                    self.pool[i as usize].next = next;
                    self.pool[at as usize].next = i;
                    break;
                }
                at = next;
            }
        }
    }

    /// Removes the earliest event if it is due at or before `t_end`.
    pub fn pop_until(&mut self, t_end: u64) -> Option<(u64, Ev)> {
        let (min, key) = match self.first_slot() {
            Some(s) => {
                let rk = self.pool[self.ring[s].head as usize].key;
                if rk < self.far_min {
                    (Min::Ring(s), rk)
                } else {
                    (Min::Far, self.far_min)
                }
            }
            None if self.far_min != NO_KEY => (Min::Far, self.far_min),
            None => return None,
        };
        let t = (key >> 64) as u64;
        if t > t_end {
            return None;
        }
        let ev = match min {
            Min::Ring(s) => {
                let i = self.ring[s].head;
                let e = self.pool[i as usize];
                self.ring[s].head = e.next;
                if e.next == NIL {
                    self.ring[s].tail = NIL;
                    self.full[s / 64] &= !(1 << (s % 64));
                }
                self.pool[i as usize].next = self.free;
                self.free = i;
                e.ev
            }
            Min::Far => {
                let ev = self.far.pop().expect("far event").0.1;
                self.far_min = self.far.peek().map_or(NO_KEY, |Reverse((k, _))| *k);
                ev
            }
        };
        self.base = t >> WIDTH_SHIFT;
        Some((t, ev))
    }

    /// The first non-empty ring slot in window order (from `base`'s slot).
    fn first_slot(&self) -> Option<usize> {
        let start = (self.base as usize) & (SLOTS - 1);
        let (w0, bit) = (start / 64, start % 64);
        let head = self.full[w0] & (!0u64 << bit);
        if head != 0 {
            return Some(w0 * 64 + head.trailing_zeros() as usize);
        }
        for k in 1..WORDS {
            let w = (w0 + k) % WORDS;
            if self.full[w] != 0 {
                return Some(w * 64 + self.full[w].trailing_zeros() as usize);
            }
        }
        // Wrapped round to the start word's lower bits.
        let tail = self.full[w0] & !(!0u64 << bit);
        (tail != 0).then(|| w0 * 64 + tail.trailing_zeros() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workloads::args::Rng;

    /// Same output order as the heap it replaced, on random pushes and pops
    /// with many equal times, near (ring) and far (heap) ones.
    #[test]
    fn same_order_as_binary_heap() {
        let mut rng = Rng::new(7);
        let mut q = EventQueue::default();
        let mut reference = BinaryHeap::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        for round in 0..200_000u64 {
            if !rng.next_u64().is_multiple_of(3) || reference.is_empty() {
                let span = match rng.next_u64() % 4 {
                    0 => 8,
                    1 => 1 << 10,
                    2 => 1 << 18,
                    _ => 1 << 24,
                };
                let t = now + rng.next_u64() % span;
                let ev = Ev::SegEnd((round % 5) as usize, round);
                seq += 1;
                q.push(t, ev);
                reference.push(Reverse((t, seq, ev)));
            } else {
                let Reverse((t, _, ev)) = reference.pop().expect("reference");
                if t > 0 {
                    assert_eq!(q.pop_until(t - 1), None);
                }
                assert_eq!(q.pop_until(t), Some((t, ev)));
                now = t;
            }
        }
        while let Some(Reverse((t, _, ev))) = reference.pop() {
            assert_eq!(q.pop_until(u64::MAX), Some((t, ev)));
        }
        assert_eq!(q.pop_until(u64::MAX), None);
    }
}
