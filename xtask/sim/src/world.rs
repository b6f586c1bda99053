//! The state simulated tasks share with the engine: the objects a workload
//! creates (channels, barriers, semaphores), and the mailbox holding the
//! one outstanding request of the task being polled (its "system call")
//! and the reply to it ([`crate::mailbox`]).
//!
//! One host thread runs everything, so the lock around [`World`] is never
//! contended; it exists because the workload's environment handle must be
//! `Send + Sync` like the kernel's. It is a spin lock (`spin::Mutex`, the
//! sched crate's): one locked instruction to take, a plain store to
//! release, no poisoning, where `std::sync::Mutex` takes two locked
//! instructions and checks for panics. The engine still takes it as few
//! times per request as it can, and [`Shared::closed`] says without the
//! lock whether a channel closed (the engine checks after every call).

use spin::{Mutex, MutexGuard};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};

use sched::TaskId;
use workloads::Spawn;

use crate::mailbox::Mailbox;

/// A simulated task's body.
pub type TaskFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A request from the running task to the simulated kernel.
pub enum Sys {
    /// Create a thread (boxed: the other requests are a few words, and a
    /// request is moved several times on its way to the engine).
    Spawn(Box<(Spawn, TaskFuture)>),
    /// Wait for a thread's exit (its simulator serial number).
    Join(u64),
    /// Write `bytes` to channel `ch` (`left` still to write); `copy` =
    /// false for `sendfile()` (the writer copies nothing, and the data's
    /// lines are not hot in the writer's cache); `datagram`: the channel
    /// is a datagram socket (known to the handle, so costing the call
    /// needs no lock).
    Send {
        ch: usize,
        left: usize,
        copy: bool,
        datagram: bool,
    },
    /// Read up to `max` bytes from channel `ch` (`datagram` as for `Send`).
    Recv {
        ch: usize,
        max: usize,
        datagram: bool,
    },
    /// Arrive at a barrier.
    BarrierWait(usize),
    /// A spinning waiter's budget ran out in round `generation` of barrier
    /// `b`: it sleeps unless the round has ended (posted by the engine
    /// after the spin, never by a workload).
    BarrierSleep { b: usize, generation: u64 },
    /// Take a semaphore permit.
    Down(usize),
    /// Return a semaphore permit.
    Up(usize),
    /// CPU work: `units` of the compute loop over `working_set` bytes.
    Compute { units: u64, working_set: u64 },
    /// Sleep `ns`.
    Sleep(u64),
}

/// The answer to a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Done, nothing to return.
    Unit,
    /// A byte count (recv).
    Bytes(usize),
    /// Send result.
    Sent(bool),
    /// Barrier: was this the last arrival?
    Leader(bool),
    /// A new thread (its simulator serial number).
    Task(u64),
}

/// A pipe/socket direction.
#[derive(Debug, Default)]
pub struct Channel {
    /// Capacity (bytes).
    pub capacity: usize,
    /// Bytes queued.
    pub len: usize,
    /// Live write handles.
    pub writers: usize,
    /// The read handle is alive.
    pub reader_open: bool,
    /// CPU of the last write: where the queued data is cache-hot (None:
    /// no CPU wrote it, e.g. `sendfile()` pages).
    pub data_cpu: Option<usize>,
    /// A datagram socket: a write that does not fit whole is dropped, never
    /// waits ([`workloads::Env::datagram_channel`]).
    pub datagram: bool,
    /// Datagrams dropped because the buffer was full.
    pub dropped: u64,
    /// Tasks blocked reading.
    pub read_waiters: VecDeque<TaskId>,
    /// Tasks blocked writing.
    pub write_waiters: VecDeque<TaskId>,
}

/// A reusable barrier.
#[derive(Debug, Default)]
pub struct Barrier {
    /// Parties per round.
    pub parties: usize,
    /// How long an early arrival spins before it sleeps (ns).
    pub spin_ns: u64,
    /// Arrived in this round.
    pub arrived: usize,
    /// Rounds completed.
    pub generation: u64,
    /// Tasks asleep until the round completes.
    pub waiters: Vec<TaskId>,
    /// Tasks spinning (on a CPU or preempted) until the round completes.
    pub spinners: Vec<TaskId>,
}

/// A counting semaphore.
#[derive(Debug, Default)]
pub struct Semaphore {
    /// Permits.
    pub permits: u64,
    /// Tasks blocked in `down`.
    pub waiters: VecDeque<TaskId>,
}

/// The objects simulated tasks share (the request and reply of the task
/// being polled are in [`Mailbox`]).
#[derive(Default)]
pub struct World {
    /// Channels.
    pub channels: Vec<Channel>,
    /// Barriers.
    pub barriers: Vec<Barrier>,
    /// Semaphores.
    pub sems: Vec<Semaphore>,
    /// Channels whose last writer or reader went away during a poll: their
    /// blocked tasks must be woken (end of stream / broken pipe).
    pub closed: Vec<usize>,
    /// Result records emitted.
    pub records: Vec<String>,
    /// Console lines.
    pub console: Vec<String>,
    /// Per-CPU switch and migration counters (the kernel's `cpu_state`).
    pub counters: Vec<workloads::CpuCounters>,
    /// Progress notes from the workload (the watchdog's heartbeat).
    pub progress: u64,
}

/// The world and the flag that says a channel closed, shared by the
/// engine and every simulated task's environment.
#[derive(Default)]
pub struct Shared {
    world: Mutex<World>,
    /// The clock, CPU, request and reply of the task being polled.
    pub mailbox: Mailbox,
    /// Set (under the lock) when [`World::closed`] gets an entry; cleared
    /// when the engine takes the list.
    closed: AtomicBool,
}

impl Shared {
    /// Shares `world`.
    pub fn new(world: World) -> Shared {
        Shared {
            world: Mutex::new(world),
            mailbox: Mailbox::default(),
            closed: AtomicBool::new(false),
        }
    }

    /// The world, locked.
    pub fn lock(&self) -> MutexGuard<'_, World> {
        // One host thread: the lock is always free (a second `lock` while
        // holding it would spin forever, a simulator bug).
        self.world.lock()
    }

    /// Notes, with the world locked as `w`, that channel `ch` closed.
    pub fn note_closed(&self, w: &mut World, ch: usize) {
        w.closed.push(ch);
        self.closed.store(true, Ordering::Relaxed);
    }

    /// Did a channel close since the last [`Shared::take_closed`]? (No
    /// lock: the engine asks after every call.)
    #[inline]
    pub fn any_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// The channels that closed since the last call.
    pub fn take_closed(&self) -> Vec<usize> {
        let mut w = self.lock();
        self.closed.store(false, Ordering::Relaxed);
        std::mem::take(&mut w.closed)
    }
}
