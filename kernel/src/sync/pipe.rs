//! A Unix-like pipe: a bounded byte ring with blocking `read`/`write`, and a
//! bidirectional socketpair-like channel made of two pipes. Like Linux's
//! pipe_write, writers wake readers with WF_SYNC (the writer usually goes on
//! to wait for the answer), which is what wake_affine's sync path is about.

use alloc::sync::Arc;

use bytering::ByteRing;

use super::IrqSpinLock;
use crate::task::{self, WF_NONE, WaitQueue, WakeFlags};

struct State {
    buf: ByteRing,
    writer_open: bool,
    reader_open: bool,
}

struct Inner {
    state: IrqSpinLock<State>,
    readers: WaitQueue,
    writers: WaitQueue,
}

/// Write end of a pipe.
pub struct PipeWriter(Arc<Inner>);
/// Read end of a pipe.
pub struct PipeReader(Arc<Inner>);

/// Creates a pipe holding at most `capacity` bytes.
pub fn pipe(capacity: usize) -> (PipeWriter, PipeReader) {
    let inner = Arc::new(Inner {
        state: IrqSpinLock::new(State {
            buf: ByteRing::with_capacity(capacity),
            writer_open: true,
            reader_open: true,
        }),
        // Room for one blocked reader and one blocked writer per end.
        readers: WaitQueue::new(),
        writers: WaitQueue::new(),
    });
    (PipeWriter(inner.clone()), PipeReader(inner))
}

/// Error of a write whose reader is gone (EPIPE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokenPipe;

impl PipeWriter {
    /// Writes all of `data`, blocking while the pipe is full.
    pub fn write(&self, mut data: &[u8]) -> Result<(), BrokenPipe> {
        let p = &self.0;
        while !data.is_empty() {
            let wrote = {
                let mut s = p.state.lock();
                if !s.reader_open {
                    drop(s);
                    // Off the writers' queue if an earlier pass queued this
                    // thread (a thread waits on one queue at a time).
                    p.writers.finish();
                    return Err(BrokenPipe);
                }
                let n = s.buf.push(data);
                if n == 0 {
                    p.writers.prepare();
                }
                n
            };
            if wrote == 0 {
                task::block();
                continue;
            }
            p.writers.finish();
            data = &data[wrote..];
            p.readers.wake_one(WakeFlags::SYNC);
        }
        Ok(())
    }
}

impl PipeWriter {
    /// Writes all of `data` if it fits now, else nothing: a datagram to a
    /// full receive buffer is dropped (false). Never blocks.
    pub fn try_write_all(&self, data: &[u8]) -> Result<bool, BrokenPipe> {
        let p = &self.0;
        {
            let mut s = p.state.lock();
            if !s.reader_open {
                return Err(BrokenPipe);
            }
            if s.buf.room() < data.len() {
                return Ok(false);
            }
            s.buf.push(data);
        }
        p.readers.wake_one(WakeFlags::SYNC);
        Ok(true)
    }
}

impl PipeReader {
    /// Reads at least one byte (up to `out.len()`), blocking while empty;
    /// returns 0 at end of file (writer closed and pipe drained), and at
    /// once for an empty `out`, as Linux's `read(fd, buf, 0)` does.
    pub fn read(&self, out: &mut [u8]) -> usize {
        if out.is_empty() {
            return 0;
        }
        let p = &self.0;
        loop {
            {
                let mut s = p.state.lock();
                if !s.buf.is_empty() {
                    // At most two slice copies (the ring's wrap).
                    let n = s.buf.pop(out);
                    drop(s);
                    p.readers.finish();
                    p.writers.wake_one(WakeFlags::SYNC);
                    return n;
                }
                if !s.writer_open {
                    drop(s);
                    p.readers.finish();
                    return 0;
                }
                p.readers.prepare();
            }
            task::block();
        }
    }

    /// Reads exactly `out.len()` bytes; false on end of file first.
    pub fn read_exact(&self, out: &mut [u8]) -> bool {
        let mut done = 0;
        while done < out.len() {
            let n = self.read(&mut out[done..]);
            if n == 0 {
                return false;
            }
            done += n;
        }
        true
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        self.0.state.lock().writer_open = false;
        self.0.readers.wake_all(WF_NONE);
    }
}

impl Drop for PipeReader {
    fn drop(&mut self) {
        self.0.state.lock().reader_open = false;
        self.0.writers.wake_all(WF_NONE);
    }
}

/// One end of a bidirectional channel (like a socketpair).
pub struct Socket {
    tx: PipeWriter,
    rx: PipeReader,
}

/// Two connected sockets: what one writes, the other reads.
pub fn socketpair(capacity: usize) -> (Socket, Socket) {
    let (a_tx, b_rx) = pipe(capacity);
    let (b_tx, a_rx) = pipe(capacity);
    (Socket { tx: a_tx, rx: a_rx }, Socket { tx: b_tx, rx: b_rx })
}

impl Socket {
    /// Sends all of `data`.
    pub fn send(&self, data: &[u8]) -> Result<(), BrokenPipe> {
        self.tx.write(data)
    }

    /// Receives exactly `out.len()` bytes; false if the peer closed first.
    pub fn recv_exact(&self, out: &mut [u8]) -> bool {
        self.rx.read_exact(out)
    }
}
