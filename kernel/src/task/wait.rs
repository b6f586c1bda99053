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
//! The queue is intrusive, as Linux's: each thread carries its own link
//! ([`WaitLink`]: which queue it is on and the next waiter), so queueing,
//! waking and dequeueing never allocate, however many threads wait on one
//! queue (twenty hackbench senders on one receiver's pipe). A thread is on
//! at most one queue at a time. `wake_all` wakes under the queue's lock, as
//! Linux's `__wake_up_common` does: a woken thread that queues again (the
//! next barrier round) waits for the lock instead of relinking a chain the
//! waker is still walking; the waker's own preemption, if a wakee should
//! run on its CPU, comes after the lock is released.
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
use core::sync::atomic::{AtomicUsize, Ordering, fence};

use super::thread::Thread;
use super::{api, sched, wake};
use crate::arch::irq;
use crate::sync::IrqSpinLock;
use ::sched::WakeFlags;

/// A thread's place in the wait queue it is on (Linux's
/// `wait_queue_entry`, which lives on the waiter's stack; here in the
/// thread, since a thread waits on one queue at a time).
pub struct WaitLink {
    /// The queue it is on (its address; 0 = none). Written under that
    /// queue's lock; read without it by `finish`: only a waker removes a
    /// thread from a queue, so a value other than the queue's own means
    /// the thread is off it.
    on: AtomicUsize,
    /// The next waiter on that queue (under that queue's lock; the inner
    /// lock only lets the type system see it, it is never contended).
    next: spin::Mutex<Option<Arc<Thread>>>,
}

impl WaitLink {
    /// Not on any queue.
    pub const fn new() -> Self {
        WaitLink {
            on: AtomicUsize::new(0),
            next: spin::Mutex::new(None),
        }
    }
}

impl Default for WaitLink {
    fn default() -> Self {
        Self::new()
    }
}

/// Threads waiting for one condition, oldest first.
pub struct WaitQueue {
    waiters: IrqSpinLock<Waiters>,
    /// `waiters.len`, changed under its lock, read without it.
    count: AtomicUsize,
}

/// The chain of waiters through their [`WaitLink`]s. `tail` is the last
/// waiter only when there are two or more (with one, it is `head`): a
/// queue's usual single waiter (a pipe's reader) costs one reference and
/// no link update.
struct Waiters {
    head: Option<Arc<Thread>>,
    tail: Option<Arc<Thread>>,
    len: usize,
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
                head: None,
                tail: None,
                len: 0,
            }),
            count: AtomicUsize::new(0),
        }
    }

    /// This queue's identity in a [`WaitLink`]: its address (a queue
    /// cannot move while a thread between `prepare` and `finish` borrows
    /// it).
    fn id(&self) -> usize {
        self as *const WaitQueue as usize
    }

    /// Adds the current thread (once) before it checks its condition.
    pub fn prepare(&self) {
        let me = sched::current().expect("waiting outside a thread");
        let id = self.id();
        let mut w = self.waiters.lock();
        let on = me.wait.on.load(Ordering::Relaxed);
        if on != id {
            assert!(
                on == 0,
                "thread '{}' waits on two wait queues at once",
                me.name
            );
            debug_assert!(me.wait.next.lock().is_none());
            me.wait.on.store(id, Ordering::Relaxed);
            let last = w.tail.take().or_else(|| w.head.clone());
            match last {
                None => w.head = Some(me),
                Some(last) => {
                    *last.wait.next.lock() = Some(me.clone());
                    w.tail = Some(me);
                }
            }
            w.len += 1;
            self.count.store(w.len, Ordering::Relaxed);
        }
        drop(w);
        // The waiter's half of the barrier pair (module docs): its
        // condition check comes after the count a waker will read.
        fence(Ordering::SeqCst);
    }

    /// Removes the current thread (after its condition held). No lock when
    /// nobody waits (a count without its own entry, see `prepare`) or when
    /// a waker already took it off.
    #[inline]
    pub fn finish(&self) {
        // Acquire: pairs with the Release of a waker's count store, which
        // follows its `on = 0`, so a thread that returns here sees itself
        // off this queue before it prepares on another.
        if self.count.load(Ordering::Acquire) != 0 {
            self.finish_queued();
        }
    }

    /// [`Self::finish`] when someone waits (out of line: a pipe calls
    /// `finish` twice per message, and the queue is nearly always empty).
    #[inline(never)]
    fn finish_queued(&self) {
        let Some(me) = sched::current() else {
            return;
        };
        let id = self.id();
        if me.wait.on.load(Ordering::Relaxed) != id {
            return;
        }
        let mut w = self.waiters.lock();
        if me.wait.on.load(Ordering::Relaxed) != id {
            return;
        }
        // Unlink: find the predecessor (queues are short; the common case,
        // a woken waiter, never gets here).
        let next = me.wait.next.lock().take();
        let first = w.head.take().expect("a queued thread on an empty queue");
        if Arc::ptr_eq(&first, &me) {
            w.head = next;
        } else {
            w.head = Some(first.clone());
            let mut prev = first;
            loop {
                let after = prev
                    .wait
                    .next
                    .lock()
                    .clone()
                    .expect("queued thread not in its queue");
                if Arc::ptr_eq(&after, &me) {
                    let last = next.is_none();
                    *prev.wait.next.lock() = next;
                    if last {
                        w.tail = Some(prev);
                    }
                    break;
                }
                prev = after;
            }
        }
        if w.len <= 2 {
            // One waiter left (or none): it is the head.
            w.tail = None;
        }
        me.wait.on.store(0, Ordering::Relaxed);
        w.len -= 1;
        self.count.store(w.len, Ordering::Relaxed);
    }

    /// Whether anyone may be waiting (`wq_has_sleeper`): after the full
    /// barrier that orders the caller's condition change before the load.
    #[inline]
    fn has_sleeper(&self) -> bool {
        fence(Ordering::SeqCst);
        self.count.load(Ordering::Relaxed) != 0
    }

    /// Takes the oldest waiter off the chain (under the lock).
    fn pop(&self, w: &mut Waiters) -> Option<Arc<Thread>> {
        let t = w.head.take()?;
        if w.len > 1 {
            w.head = t.wait.next.lock().take();
            if w.len == 2 {
                // The one left is the head.
                w.tail = None;
            }
        }
        t.wait.on.store(0, Ordering::Relaxed);
        w.len -= 1;
        self.count.store(w.len, Ordering::Release);
        Some(t)
    }

    /// Wakes the longest waiter with the caller's `flags`; false if nobody
    /// waited. The wakeup itself is outside the lock (this call holds the
    /// only reference to the wakee's link once it is off the chain).
    #[inline]
    pub fn wake_one(&self, flags: WakeFlags) -> bool {
        self.has_sleeper() && self.wake_one_queued(flags)
    }

    /// [`Self::wake_one`] once someone may wait (out of line, as
    /// [`Self::finish_queued`]).
    #[inline(never)]
    fn wake_one_queued(&self, flags: WakeFlags) -> bool {
        let t = self.pop(&mut self.waiters.lock());
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
    /// Under the lock (module docs); if a wakee should run on this CPU now,
    /// the caller is preempted after the lock is released, unless it had
    /// interrupts off.
    pub fn wake_all(&self, flags: WakeFlags) -> usize {
        if !self.has_sleeper() {
            return 0;
        }
        let mut n = 0;
        let mut preempt = false;
        {
            let mut w = self.waiters.lock();
            while let Some(t) = self.pop(&mut w) {
                preempt |= wake::wake_no_preempt(&t, flags);
                n += 1;
            }
        }
        if preempt && irq::are_enabled() {
            api::preempt_point();
        }
        n
    }
}
