//! `ByteRing`: the kernel pipe's bytes (`kernel/src/sync/pipe.rs`), in a ring of fixed size allocated once at
//! pipe creation. A write copies its bytes in, a read copies them out, each
//! as at most two slice copies (the ring's wrap), with no per-byte work and
//! no allocation.
//!
//! Why not `VecDeque<u8>`, which the pipe used before: its `extend` from a
//! slice and its `drain(..n)` cost about 40 and 50 instructions a message
//! beyond the copies themselves under `--icount 0` (hackbench threads/pipes
//! g4, `tools/qemu-tbprof`; docs/kernel.md, "What a message costs outside
//! the scheduler"), and a pipe needs neither growth nor random access.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::boxed::Box;
use alloc::vec;

/// Bytes in first-in first-out order, at most `capacity` of them.
pub struct ByteRing {
    buf: Box<[u8]>,
    /// Index of the oldest byte (0 whenever the ring is empty, so that
    /// short messages stay contiguous).
    head: usize,
    len: usize,
}

impl ByteRing {
    /// An empty ring holding at most `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        ByteRing {
            buf: vec![0; capacity].into_boxed_slice(),
            head: 0,
            len: 0,
        }
    }

    /// Whether it holds no byte.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes that still fit.
    #[inline]
    pub fn room(&self) -> usize {
        self.buf.len() - self.len
    }

    /// Appends as much of `data` as fits; returns how many bytes.
    #[inline]
    pub fn push(&mut self, data: &[u8]) -> usize {
        let cap = self.buf.len();
        let n = data.len().min(cap - self.len);
        if n == 0 {
            return 0;
        }
        // head + len < 2 * cap: one subtraction instead of a division.
        let tail = match self.head + self.len {
            t if t >= cap => t - cap,
            t => t,
        };
        let first = n.min(cap - tail);
        self.buf[tail..tail + first].copy_from_slice(&data[..first]);
        if first < n {
            self.buf[..n - first].copy_from_slice(&data[first..n]);
        }
        self.len += n;
        n
    }

    /// Moves the oldest bytes into `out`, as many as it holds or fit;
    /// returns how many.
    #[inline]
    pub fn pop(&mut self, out: &mut [u8]) -> usize {
        let cap = self.buf.len();
        let n = out.len().min(self.len);
        if n == 0 {
            return 0;
        }
        let first = n.min(cap - self.head);
        out[..first].copy_from_slice(&self.buf[self.head..self.head + first]);
        if first < n {
            out[first..n].copy_from_slice(&self.buf[..n - first]);
        }
        self.len -= n;
        self.head = match self.head + n {
            _ if self.len == 0 => 0,
            h if h >= cap => h - cap,
            h => h,
        };
        n
    }
}

#[cfg(test)]
mod tests {
    use super::ByteRing;
    use std::collections::VecDeque;

    /// Every capacity up to 9 and random pushes and pops of 0 to cap+2
    /// bytes against a `VecDeque` model: same bytes in the same order, same
    /// counts, same room.
    #[test]
    fn behaves_like_a_bounded_fifo() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut byte = 0u8;
        for cap in 0..=9usize {
            for _ in 0..300 {
                let mut r = ByteRing::with_capacity(cap);
                let mut model: VecDeque<u8> = VecDeque::new();
                for _ in 0..40 {
                    let n = (next() % (cap as u64 + 3)) as usize;
                    if next() % 2 == 0 {
                        let data: Vec<u8> = (0..n)
                            .map(|_| {
                                byte = byte.wrapping_add(1);
                                byte
                            })
                            .collect();
                        let pushed = r.push(&data);
                        assert_eq!(pushed, n.min(cap - model.len()));
                        model.extend(&data[..pushed]);
                    } else {
                        let mut out = vec![0xEE; n];
                        let popped = r.pop(&mut out);
                        assert_eq!(popped, n.min(model.len()));
                        let want: Vec<u8> = model.drain(..popped).collect();
                        assert_eq!(&out[..popped], &want[..]);
                        assert!(out[popped..].iter().all(|&b| b == 0xEE));
                    }
                    assert_eq!(r.is_empty(), model.is_empty());
                    assert_eq!(r.room(), cap - model.len());
                }
            }
        }
    }

    /// A message that wraps the ring comes out whole and in order.
    #[test]
    fn a_message_across_the_wrap_stays_in_order() {
        let mut r = ByteRing::with_capacity(8);
        assert_eq!(r.push(&[1, 2, 3, 4, 5, 6]), 6);
        let mut out = [0u8; 4];
        assert_eq!(r.pop(&mut out), 4);
        assert_eq!(out, [1, 2, 3, 4]);
        // Tail at 6: these six bytes go to 6, 7, 0, 1, 2, 3.
        assert_eq!(r.push(&[7, 8, 9, 10, 11, 12]), 6);
        assert_eq!(r.room(), 0);
        assert_eq!(r.push(&[13]), 0);
        let mut all = [0u8; 10];
        assert_eq!(r.pop(&mut all), 8);
        assert_eq!(&all[..8], &[5, 6, 7, 8, 9, 10, 11, 12]);
        assert!(r.is_empty());
    }
}
