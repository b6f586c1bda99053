//! `ByteRing`: a pipe's bytes, in a ring of fixed size allocated once at
//! pipe creation. A write copies its bytes in, a read copies them out, each
//! as at most two slice copies (the ring's wrap), with no per-byte work and
//! no allocation.
//!
//! Why not `VecDeque<u8>`, which the pipe used before: its `extend` from a
//! slice and its `drain(..n)` cost about 40 and 50 instructions a message
//! beyond the copies themselves under `--icount 0` (hackbench threads/pipes
//! g4, `tools/qemu-tbprof`; docs/kernel.md, "What a message costs outside
//! the scheduler"), and a pipe needs neither growth nor random access.

use alloc::boxed::Box;
use alloc::vec;

/// Bytes in first-in first-out order, at most `capacity` of them.
pub(super) struct ByteRing {
    buf: Box<[u8]>,
    /// Index of the oldest byte (0 whenever the ring is empty, so that
    /// short messages stay contiguous).
    head: usize,
    len: usize,
}

impl ByteRing {
    /// An empty ring holding at most `capacity` bytes.
    pub(super) fn with_capacity(capacity: usize) -> Self {
        ByteRing {
            buf: vec![0; capacity].into_boxed_slice(),
            head: 0,
            len: 0,
        }
    }

    /// Whether it holds no byte.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes that still fit.
    #[inline]
    pub(super) fn room(&self) -> usize {
        self.buf.len() - self.len
    }

    /// Appends as much of `data` as fits; returns how many bytes.
    #[inline]
    pub(super) fn push(&mut self, data: &[u8]) -> usize {
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
    pub(super) fn pop(&mut self, out: &mut [u8]) -> usize {
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
