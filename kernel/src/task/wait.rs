//! Wait queues: the one way a thread sleeps until some condition holds.
//!
//! Protocol (Linux's prepare_to_wait / schedule / finish_wait), in one of
//! two forms:
//! ```text
//! loop {                            // a condition read without a lock
//!     wq.prepare();                 // enqueue self, then a full barrier
//!     if condition() { break }      // (JoinHandle::join)
//!     task::block();                // sleeps unless a wakeup already arrived
//! }
//! wq.finish();
//!
//! loop {                            // a condition under the primitive's lock
//!     { let s = lock();             // (pipe, semaphore, barrier, mutex)
//!       if condition(&s) { break }
//!       wq.prepare(); }             // still under that lock
//!     task::block();
//! }
//! wq.finish();
//! ```
//! Checking a lockless condition *before* `prepare` is not allowed: a
//! wakeup between the check and the enqueue would be lost.
//!
//! A waker changes the condition, then calls `wake_one`/`wake_all`. A wakeup
//! that lands between `prepare` and `block` is remembered by the scheduler
//! (`wake_pending`) and makes `block` return at once, so none is ever lost.
//!
//! The common case costs no lock: a waker whose queue is empty (a pipe
//! write to a reader that is running) and a `finish` by a thread that never
//! waited (a read that found data) only load the waiter count, as Linux's
//! `wq_has_sleeper` and `finish_wait`'s `list_empty_careful` do. The count
//! is changed under the queue lock with the list; `prepare` publishes its
//! increment with a full barrier before the caller checks its condition,
//! and a waker issues one after changing the condition and before loading
//! the count (the pairing of `set_current_state` and `wq_has_sleeper`'s
//! `smp_mb`), so a waiter either sees the new condition or is counted.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering, fence};

use super::thread::Thread;
use super::{sched, wake};
use crate::sync::IrqSpinLock;
use ::sched::WakeFlags;

/// Threads waiting for one condition.
pub struct WaitQueue {
    waiters: IrqSpinLock<Waiters>,
    /// `waiters.list.len()`, changed under its lock, read without it.
    count: AtomicUsize,
}

/// The queue proper and an empty list with room, which `wake_all` swaps in
/// so that the waiters who queue again (every barrier round) find room and
/// do not allocate.
struct Waiters {
    list: Vec<Arc<Thread>>,
    spare: Vec<Arc<Thread>>,
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitQueue {
    /// An empty queue.
    pub const fn new() -> Self {
        WaitQueue {
            waiters: IrqSpinLock::new(Waiters {
                list: Vec::new(),
                spare: Vec::new(),
            }),
            count: AtomicUsize::new(0),
        }
    }

    /// An empty queue with room for `n` waiters, so that its first `n`
    /// waiters do not allocate (Linux's wait-queue entries live on the
    /// waiter's stack and never allocate; a pipe's reader or a thread's
    /// joiner would otherwise allocate when it first waits, inside a
    /// benchmark's timed phase).
    pub fn with_capacity(n: usize) -> Self {
        WaitQueue {
            waiters: IrqSpinLock::new(Waiters {
                list: Vec::with_capacity(n),
                spare: Vec::with_capacity(n),
            }),
            count: AtomicUsize::new(0),
        }
    }

    /// Adds the current thread (once) before it checks its condition.
    pub fn prepare(&self) {
        let me = sched::current().expect("waiting outside a thread");
        let mut w = self.waiters.lock();
        if !w.list.iter().any(|t| Arc::ptr_eq(t, &me)) {
            w.list.push(me);
            self.count.store(w.list.len(), Ordering::Relaxed);
        }
        // The waiter's half of the barrier pair (module docs): its
        // condition check comes after the count a waker will read.
        fence(Ordering::SeqCst);
    }

    /// Removes the current thread (after its condition held). A thread
    /// that is not queued sees a count without its own entry, and a count
    /// of 0 means it is not queued (its own increment is visible to it, and
    /// the count stays at least 1 while it is queued): no lock then.
    pub fn finish(&self) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        if let Some(me) = sched::current() {
            let mut w = self.waiters.lock();
            w.list.retain(|t| !Arc::ptr_eq(t, &me));
            self.count.store(w.list.len(), Ordering::Relaxed);
        }
    }

    /// Whether anyone may be waiting (`wq_has_sleeper`): after the full
    /// barrier that orders the caller's condition change before the load.
    fn has_sleeper(&self) -> bool {
        fence(Ordering::SeqCst);
        self.count.load(Ordering::Relaxed) != 0
    }

    /// Wakes the longest waiter with the caller's `flags`; false if nobody
    /// waited.
    pub fn wake_one(&self, flags: WakeFlags) -> bool {
        if !self.has_sleeper() {
            return false;
        }
        let t = {
            let mut w = self.waiters.lock();
            if w.list.is_empty() {
                None
            } else {
                let t = w.list.remove(0);
                self.count.store(w.list.len(), Ordering::Relaxed);
                Some(t)
            }
        };
        match t {
            Some(t) => {
                wake::wake(&t, flags);
                true
            }
            None => false,
        }
    }

    /// Wakes every waiter with the caller's `flags`; returns how many.
    ///
    /// The waiters are taken out under the lock and woken outside it (a
    /// wakeup under an IRQ lock could not preempt the waker at once); the
    /// spare list goes in their place and the emptied one comes back as the
    /// spare, so a steady state of waits and `wake_all`s allocates nothing.
    pub fn wake_all(&self, flags: WakeFlags) -> usize {
        if !self.has_sleeper() {
            return 0;
        }
        let mut all = {
            let mut w = self.waiters.lock();
            self.count.store(0, Ordering::Relaxed);
            let spare = core::mem::take(&mut w.spare);
            core::mem::replace(&mut w.list, spare)
        };
        for t in &all {
            wake::wake(t, flags);
        }
        let n = all.len();
        // Drop the references outside the lock (a last one frees a thread).
        all.clear();
        let mut w = self.waiters.lock();
        if w.spare.capacity() < all.capacity() {
            w.spare = all;
        }
        n
    }
}
