//! The environment a workload runs in: what a benchmark program asks of its
//! operating system (threads, pipes/sockets, barriers, semaphores, CPU work,
//! sleep, a clock), as one trait with two implementations:
//!
//! - the kernel's (`kernel/src/experiments/env.rs`): every call is a real
//!   kernel operation on a real kernel thread and completes before the
//!   future is first polled, so a trivial `block_on` runs the workload;
//! - the host simulator's (`xtask/sim`): every call is a request to a
//!   discrete-event engine that charges modelled CPU time, blocks and wakes
//!   simulated tasks through the same `sched` crate, and completes the future
//!   when the simulated operation is done.
//!
//! Operations that can block or take time are `async`; the rest (creating
//! objects, reading the clock) are plain calls. Every returned future is
//! `Send` because kernel threads migrate between CPUs.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::future::Future;

use sched::stats::SchedStats;

/// The other end of a channel is gone (`EPIPE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Closed;

/// Whose address space a new task runs in: what a switch to it costs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Space {
    /// A thread of the spawning task's process (`clone(CLONE_VM)`): a
    /// switch between it and its siblings keeps the page tables.
    #[default]
    Thread,
    /// A new process (`fork()`): its own address space, so a switch to it
    /// from another process loads new page tables (`switch_mm`).
    Process,
    /// A kernel thread (kworker): no user address space; it borrows the
    /// previous task's (lazy TLB), so switching to it loads nothing.
    Kernel,
}

/// How a new thread starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spawn {
    /// Thread name (shown in traces and reports).
    pub name: String,
    /// Bound to this CPU for life (`sched_setaffinity` to one CPU / `taskset -c`);
    /// `None` = fork placement decides.
    pub pinned: Option<usize>,
    /// Thread, process or kernel thread.
    pub space: Space,
    /// Nice value, -20..=19 (`setpriority(2)` on the new thread before it
    /// first runs): its weight is the core's `sched_prio_to_weight` entry.
    pub nice: i32,
}

impl Spawn {
    /// An unpinned thread called `name`.
    pub fn named(name: String) -> Spawn {
        Spawn {
            name,
            pinned: None,
            space: Space::Thread,
            nice: 0,
        }
    }
}

/// One CPU's scheduling counters at a moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuCounters {
    /// Logical CPU.
    pub cpu: u32,
    /// Context switches so far.
    pub switches: u64,
    /// Tasks migrated onto this CPU so far.
    pub migrations_in: u64,
    /// Switches that loaded another address space's page tables so far
    /// (`switch_mm`; 0 where every task shares one).
    pub mm_switches: u64,
}

/// The scheduler's counters at a moment (the start or end of a measured
/// interval).
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The environment's clock (ns).
    pub now_ns: u64,
    /// Machine-wide scheduler statistics.
    pub stats: SchedStats,
    /// Per-CPU switch and migration counters.
    pub cpus: Vec<CpuCounters>,
}

/// What a workload may ask of its environment. See the module docs.
pub trait Env: Clone + Send + Sync + 'static {
    /// Write end of a channel; dropping the last one ends the stream.
    type Tx: Send + Sync + 'static;
    /// Read end of a channel.
    type Rx: Send + 'static;
    /// A reusable barrier.
    type Barrier: Send + Sync + 'static;
    /// A counting semaphore.
    type Sem: Send + Sync + 'static;
    /// Handle to wait for a thread's end.
    type Join: Send + 'static;

    /// Online CPUs.
    fn nr_cpus(&self) -> usize;
    /// The machine as the scheduler sees it (CPUs, SMT siblings, LLCs, nodes).
    fn topo(&self) -> &sched::SchedTopo;
    /// The clock (ns): TSC time in the kernel, simulated time in the simulator.
    fn now_ns(&self) -> u64;
    /// The CPU the calling thread runs on now.
    fn this_cpu(&self) -> usize;
    /// The scheduler's counters now.
    fn snapshot(&self) -> Snapshot;
    /// Whether `threads` more threads can run at once here, checked by a
    /// workload before it creates any: Err names the limit (the scheduler
    /// core's live-task table; in the kernel also the heap their stacks and
    /// runqueue room need), so a run too big for the machine fails at once
    /// with a message instead of part-way through its forks.
    fn check_threads(&self, threads: usize) -> Result<(), String>;
    /// Makes `rx`'s read buffer hold `max` bytes now, before a measured
    /// interval, so that no later `recv` of up to `max` bytes allocates (the
    /// kernel's reader copies into a buffer, as a program's `read` does
    /// into one it allocated at start). Nothing to do where a receive copies
    /// nowhere (the simulator).
    fn reserve_recv(&self, _rx: &mut Self::Rx, _max: usize) {}
    /// Heap allocations made so far, on any CPU, where the environment
    /// counts them (the kernel's heap); None elsewhere (the simulator's
    /// tasks allocate nothing of their own). A record's `heap_allocs` is
    /// its measured interval's count: the kernel's wait, wake, block and
    /// switch paths are meant to make none.
    fn heap_allocations(&self) -> Option<u64> {
        None
    }
    /// Emits a result record (one JSON object).
    fn emit(&self, record: &str);
    /// A console line (the benchmark's own output).
    fn log(&self, line: fmt::Arguments<'_>);
    /// Tells the watchdog the workload made progress.
    fn progress(&self);
    /// True when a [`Space::Process`] task gets its own address space here
    /// (the simulator); false where every task shares one (the kernel today),
    /// so process-mode shapes refuse to run rather than measure threads.
    fn address_spaces(&self) -> bool;
    /// Sets the calling thread's `wakee_flips` (decay stamp now): the
    /// launching process's, which the threads it forks inherit
    /// (`Scheduler::set_wakee_flips`).
    fn set_wakee_flips(&self, flips: u32);

    /// Creates a thread running `f` (`clone()` + `wake_up_new_task()`).
    fn spawn<F>(&self, how: Spawn, f: F) -> impl Future<Output = Self::Join> + Send
    where
        F: Future<Output = ()> + Send + 'static;
    /// Waits until the thread has exited.
    fn join(&self, j: Self::Join) -> impl Future<Output = ()> + Send;

    /// A pipe/socket direction holding `capacity` bytes; both ends wake the
    /// other with WF_SYNC, as `pipe_write()` and `sock_def_readable()` do.
    fn channel(&self, capacity: usize) -> (Self::Tx, Self::Rx);
    /// Writes `bytes` bytes, blocking while the channel is full.
    fn send(&self, tx: &Self::Tx, bytes: usize) -> impl Future<Output = Result<(), Closed>> + Send;
    /// Reads up to `max` bytes, blocking while the channel is empty; 0 =
    /// every writer is gone and the channel is drained.
    fn recv(&self, rx: &mut Self::Rx, max: usize) -> impl Future<Output = usize> + Send;
    /// Writes `bytes` bytes without copying them from the caller, as
    /// `sendfile()` does (the socket references page-cache pages): blocks
    /// while the channel is full, like [`Env::send`]; the reader still
    /// copies. The simulator charges the writer no per-byte copy and the
    /// reader no cache-line transfer from the writer's CPU (the writer never
    /// touched the bytes); the kernel's channel is a byte ring, so there it
    /// copies like `send`.
    fn sendfile(
        &self,
        tx: &Self::Tx,
        bytes: usize,
    ) -> impl Future<Output = Result<(), Closed>> + Send;

    /// A datagram (UDP) socket direction whose receive buffer holds
    /// `capacity` bytes. [`Env::send`] on it never blocks: a message that
    /// does not fit whole in the free buffer is dropped and counted
    /// ([`Env::dropped`]), and the call still succeeds, as `sendto()` does
    /// when the receiving socket's queue is full. [`Env::recv`] is as for a
    /// channel; messages of one size read with `max` = that size come out
    /// one per call. Both ends pay the datagram path's cost in the
    /// simulator (cheaper than a stream socket's; docs/simulator.md).
    fn datagram_channel(&self, capacity: usize) -> (Self::Tx, Self::Rx);
    /// Messages dropped so far because the receive buffer of `rx` was full
    /// (UDP's `RcvbufErrors`); always 0 for a stream channel.
    fn dropped(&self, rx: &Self::Rx) -> u64;

    /// A barrier for `parties` threads. A thread that is not the last to
    /// arrive first spins for up to `spin_ns` of its CPU time, polling for
    /// the release without sleeping (libgomp's `GOMP_SPINCOUNT` busy wait),
    /// then sleeps until the last arrival wakes it; 0 sleeps at once.
    fn barrier(&self, parties: usize, spin_ns: u64) -> Self::Barrier;
    /// Waits for the others; true in exactly one thread per round (the last
    /// to arrive, which releases the spinners and wakes the sleepers).
    fn barrier_wait(&self, b: &Self::Barrier) -> impl Future<Output = bool> + Send;

    /// A semaphore holding `permits`.
    fn semaphore(&self, permits: u64) -> Self::Sem;
    /// Takes a permit, blocking while there is none (futex wait).
    fn down(&self, s: &Self::Sem) -> impl Future<Output = ()> + Send;
    /// Returns a permit and wakes one waiter (futex wake, no WF_SYNC).
    fn up(&self, s: &Self::Sem) -> impl Future<Output = ()> + Send;

    /// `units` iterations of integer work over a `working_set` of bytes.
    fn compute(&self, units: u64, working_set: u64) -> impl Future<Output = ()> + Send;
    /// Sleeps at least `ns` (nanosleep).
    fn sleep(&self, ns: u64) -> impl Future<Output = ()> + Send;
}

/// Reads exactly `n` bytes; false when the stream ends first.
pub async fn recv_exact<E: Env>(env: &E, rx: &mut E::Rx, n: usize) -> bool {
    let mut got = 0;
    while got < n {
        let k = env.recv(rx, n - got).await;
        if k == 0 {
            return false;
        }
        got += k;
    }
    true
}
