//! The simulator's [`workloads::Env`]: each operation that can block or
//! take time becomes a request ([`Sys`]) in the shared [`World`] and a
//! `Pending` poll; the engine carries the request out in simulated time and
//! polls the task again with the reply. Object creation and clock reads are
//! immediate.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use sched::{DynPolicy, Scheduler};
use spin::MutexGuard;
use workloads::{Closed, Env, Snapshot, Spawn};

use crate::world::{Barrier, Channel, Reply, Semaphore, Shared, Sys, World};

/// Handle of the simulated machine, given to every simulated task.
#[derive(Clone)]
pub struct SimEnv {
    pub(crate) world: Arc<Shared>,
    pub(crate) sched: Arc<Scheduler<DynPolicy>>,
}

/// [`sent`] as the reply converter of a send.
type SentFn = fn(Reply) -> Result<(), Closed>;

impl SimEnv {
    pub(crate) fn lock(&self) -> MutexGuard<'_, World> {
        self.world.lock()
    }

    fn call(&self, sys: Sys) -> SysCall<'_, Reply, fn(Reply) -> Reply> {
        self.call_then(sys, |r| r)
    }

    /// A request whose reply `then` turns into the call's result. The
    /// `Env` calls return this future itself rather than an `async fn`
    /// around it: one state machine less per poll.
    fn call_then<T, F: Fn(Reply) -> T + Unpin>(&self, sys: Sys, then: F) -> SysCall<'_, T, F> {
        SysCall {
            world: &self.world,
            req: Some(sys),
            then,
        }
    }

    /// A send of `bytes` on `tx`; `copy` false for `sendfile()` (no copy
    /// from the writer, no line transfer to the reader).
    fn send_copying(
        &self,
        tx: &Tx,
        bytes: usize,
        copy: bool,
    ) -> SysCall<'_, Result<(), Closed>, SentFn> {
        let sys = Sys::Send {
            ch: tx.ch,
            left: bytes,
            copy,
            datagram: tx.datagram,
        };
        self.call_then(sys, sent)
    }
}

/// A request in flight: the first poll posts it, the engine's reply
/// completes it. It borrows the environment's handle (no reference count
/// to touch per call).
pub struct SysCall<'a, T, F: Fn(Reply) -> T> {
    world: &'a Shared,
    req: Option<Sys>,
    then: F,
}

impl<T, F: Fn(Reply) -> T + Unpin> Future for SysCall<'_, T, F> {
    type Output = T;
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<T> {
        let m = &self.world.mailbox;
        match self.req.take() {
            Some(r) => {
                m.post(r);
                Poll::Pending
            }
            None => Poll::Ready((self.then)(
                m.take_reply().expect("resumed without a reply"),
            )),
        }
    }
}

/// Write end of a simulated channel.
pub struct Tx {
    ch: usize,
    datagram: bool,
    world: Arc<Shared>,
}

impl Drop for Tx {
    fn drop(&mut self) {
        let mut w = self.world.lock();
        let c = &mut w.channels[self.ch];
        c.writers -= 1;
        if c.writers == 0 {
            self.world.note_closed(&mut w, self.ch);
        }
    }
}

/// Read end of a simulated channel.
pub struct Rx {
    ch: usize,
    datagram: bool,
    world: Arc<Shared>,
}

impl Drop for Rx {
    fn drop(&mut self) {
        let mut w = self.world.lock();
        w.channels[self.ch].reader_open = false;
        self.world.note_closed(&mut w, self.ch);
    }
}

impl Env for SimEnv {
    type Tx = Tx;
    type Rx = Rx;
    type Barrier = usize;
    type Sem = usize;
    /// The thread's serial number (never reused, unlike task ids).
    type Join = u64;

    fn nr_cpus(&self) -> usize {
        self.sched.shared.nr_cpus()
    }

    fn topo(&self) -> &sched::SchedTopo {
        &self.sched.shared.topo
    }

    fn now_ns(&self) -> u64 {
        self.world.mailbox.now()
    }

    fn this_cpu(&self) -> usize {
        self.world.mailbox.cpu()
    }

    fn check_threads(&self, threads: usize) -> Result<(), String> {
        let max = self.sched.shared.cfg.max_tasks;
        let live = self.sched.shared.live_tasks();
        if live + threads > max {
            return Err(format!(
                "{threads} threads with {live} alive exceed the scheduler core's {max} live tasks \
                 (SchedConfig::max_tasks)"
            ));
        }
        Ok(())
    }

    fn snapshot(&self) -> Snapshot {
        let w = self.lock();
        Snapshot {
            now_ns: self.world.mailbox.now(),
            stats: self.sched.stats(),
            cpus: w.counters.clone(),
        }
    }

    fn emit(&self, record: &str) {
        self.lock().records.push(record.to_string());
    }

    fn log(&self, line: fmt::Arguments<'_>) {
        self.lock().console.push(line.to_string());
    }

    fn progress(&self) {
        self.lock().progress += 1;
    }

    fn address_spaces(&self) -> bool {
        true // each Space::Process task has its own (crate::engine: mm)
    }

    fn set_wakee_flips(&self, flips: u32) {
        let cpu = self.world.mailbox.cpu();
        if let Some(p) = self.sched.current(cpu) {
            self.sched
                .set_wakee_flips(p, flips, self.world.mailbox.now());
        }
    }

    async fn spawn<F>(&self, how: Spawn, f: F) -> u64
    where
        F: Future<Output = ()> + Send + 'static,
    {
        match self.call(Sys::Spawn(Box::new((how, Box::pin(f))))).await {
            Reply::Task(t) => t,
            r => unreachable!("spawn answered {r:?}"),
        }
    }

    fn join(&self, j: u64) -> impl Future<Output = ()> + Send {
        self.call_then(Sys::Join(j), |_| ())
    }

    fn channel(&self, capacity: usize) -> (Tx, Rx) {
        let mut w = self.lock();
        let ch = w.channels.len();
        w.channels.push(Channel {
            capacity: capacity.max(1),
            writers: 1,
            reader_open: true,
            ..Channel::default()
        });
        drop(w);
        (
            Tx {
                ch,
                datagram: false,
                world: self.world.clone(),
            },
            Rx {
                ch,
                datagram: false,
                world: self.world.clone(),
            },
        )
    }

    fn send(&self, tx: &Tx, bytes: usize) -> impl Future<Output = Result<(), Closed>> + Send {
        self.send_copying(tx, bytes, true)
    }

    fn sendfile(&self, tx: &Tx, bytes: usize) -> impl Future<Output = Result<(), Closed>> + Send {
        self.send_copying(tx, bytes, false)
    }

    fn datagram_channel(&self, capacity: usize) -> (Tx, Rx) {
        let (mut tx, mut rx) = self.channel(capacity);
        self.lock().channels[tx.ch].datagram = true;
        tx.datagram = true;
        rx.datagram = true;
        (tx, rx)
    }

    fn dropped(&self, rx: &Rx) -> u64 {
        self.lock().channels[rx.ch].dropped
    }

    fn recv(&self, rx: &mut Rx, max: usize) -> impl Future<Output = usize> + Send {
        let sys = Sys::Recv {
            ch: rx.ch,
            max,
            datagram: rx.datagram,
        };
        self.call_then(sys, |r| match r {
            Reply::Bytes(n) => n,
            r => unreachable!("recv answered {r:?}"),
        })
    }

    fn barrier(&self, parties: usize, spin_ns: u64) -> usize {
        let mut w = self.lock();
        w.barriers.push(Barrier {
            parties: parties.max(1),
            spin_ns,
            ..Barrier::default()
        });
        w.barriers.len() - 1
    }

    fn barrier_wait(&self, b: &usize) -> impl Future<Output = bool> + Send {
        self.call_then(Sys::BarrierWait(*b), |r| matches!(r, Reply::Leader(true)))
    }

    fn semaphore(&self, permits: u64) -> usize {
        let mut w = self.lock();
        w.sems.push(Semaphore {
            permits,
            ..Semaphore::default()
        });
        w.sems.len() - 1
    }

    fn down(&self, s: &usize) -> impl Future<Output = ()> + Send {
        self.call_then(Sys::Down(*s), |_| ())
    }

    fn up(&self, s: &usize) -> impl Future<Output = ()> + Send {
        self.call_then(Sys::Up(*s), |_| ())
    }

    fn compute(&self, units: u64, working_set: u64) -> impl Future<Output = ()> + Send {
        self.call_then(Sys::Compute { units, working_set }, |_| ())
    }

    fn sleep(&self, ns: u64) -> impl Future<Output = ()> + Send {
        self.call_then(Sys::Sleep(ns), |_| ())
    }
}

/// A send's result from its reply.
fn sent(r: Reply) -> Result<(), Closed> {
    match r {
        Reply::Sent(true) => Ok(()),
        _ => Err(Closed),
    }
}
