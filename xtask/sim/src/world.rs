//! The state simulated tasks share with the engine: the objects a workload
//! creates (channels, barriers, semaphores), the one outstanding request of
//! the task being polled (its "system call") and the reply to it.
//!
//! One host thread runs everything, so the lock around [`World`] is never
//! contended; it exists because the workload's environment handle must be
//! `Send + Sync` like the kernel's.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use sched::TaskId;
use workloads::Spawn;

/// A simulated task's body.
pub type TaskFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A request from the running task to the simulated kernel.
pub enum Sys {
    /// Create a thread.
    Spawn(Spawn, TaskFuture),
    /// Wait for a thread's exit (its simulator serial number).
    Join(u64),
    /// Write `bytes` to channel `ch` (`left` still to write); `copy` =
    /// false for `sendfile()` (the writer copies nothing, and the data's
    /// lines are not hot in the writer's cache).
    Send { ch: usize, left: usize, copy: bool },
    /// Read up to `max` bytes from channel `ch`.
    Recv { ch: usize, max: usize },
    /// Arrive at a barrier.
    BarrierWait(usize),
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
    /// Arrived in this round.
    pub arrived: usize,
    /// Tasks waiting for the round to complete.
    pub waiters: Vec<TaskId>,
}

/// A counting semaphore.
#[derive(Debug, Default)]
pub struct Semaphore {
    /// Permits.
    pub permits: u64,
    /// Tasks blocked in `down`.
    pub waiters: VecDeque<TaskId>,
}

/// Objects and the request slot.
#[derive(Default)]
pub struct World {
    /// Simulated time of the poll in progress.
    pub now: u64,
    /// CPU of the task being polled.
    pub cpu: usize,
    /// The outstanding request of the task being polled.
    pub slot: Option<Sys>,
    /// The reply the task being polled receives.
    pub reply: Option<Reply>,
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
