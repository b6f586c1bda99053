//! A deterministic toy [`Env`] for host tests of the shapes' rules: one CPU,
//! round-robin, every task polled once per round; each poll advances the
//! clock by [`TURN_NS`]. An operation takes effect when called, then costs
//! its task `turns` polls (per task name and operation, [`Costs`]); a task
//! that must wait (a full stream, an empty channel, a barrier) polls again
//! next round. No scheduler, no cost model: the tests check what the
//! workload does (who sends on which channel, what is dropped, who waits),
//! not how fast.
//!
//! Every channel operation is logged ([`Op`]) with the calling task's name.
#![allow(dead_code)]

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use sched::SchedTopo;
use sched::stats::SchedStats;
use workloads::{Closed, Env, Snapshot, Spawn, Workload};

/// Simulated time per poll.
pub const TURN_NS: u64 = 100;
/// A run that polls more than this is stuck (a lost wakeup or a deadlock).
const MAX_POLLS: u64 = 50_000_000;

/// What an operation costs, in polls of its task after it took effect.
#[derive(Clone, Debug)]
pub struct Costs {
    /// (task-name prefix, operation, polls): the first match wins;
    /// operations are "send", "sendfile", "recv".
    pub rules: Vec<(&'static str, &'static str, u32)>,
}

impl Costs {
    /// Every operation one poll.
    pub fn uniform() -> Costs {
        Costs { rules: Vec::new() }
    }

    /// `op` of the tasks whose name starts with `prefix` costs `polls`.
    pub fn with(mut self, prefix: &'static str, op: &'static str, polls: u32) -> Costs {
        self.rules.push((prefix, op, polls));
        self
    }

    fn turns(&self, task: &str, op: &str) -> u32 {
        self.rules
            .iter()
            .find(|(p, o, _)| task.starts_with(p) && *o == op)
            .map_or(1, |r| r.2)
    }
}

/// One channel operation as it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    /// The calling task.
    pub task: String,
    /// "send", "sendfile", "recv" or "compute".
    pub kind: &'static str,
    /// Channel number (creation order; 0 for compute).
    pub chan: usize,
    /// Bytes written, or read (0 = end of stream).
    pub bytes: usize,
    /// The call had to wait at least once (full stream channel, or empty
    /// channel for a read).
    pub waited: bool,
    /// A datagram that did not fit and was dropped.
    pub dropped: bool,
    /// The channel is a datagram channel.
    pub datagram: bool,
}

/// A task's body.
type Body = Pin<Box<dyn Future<Output = ()> + Send>>;

#[derive(Default)]
struct Chan {
    capacity: usize,
    len: usize,
    writers: usize,
    reader_open: bool,
    datagram: bool,
    dropped: u64,
}

#[derive(Default)]
struct Bar {
    parties: usize,
    arrived: usize,
    generation: u64,
}

struct State {
    now: u64,
    current: String,
    names: Vec<String>,
    done: Vec<bool>,
    spawned: Vec<(usize, Body)>,
    chans: Vec<Chan>,
    bars: Vec<Bar>,
    sems: Vec<u64>,
    records: Vec<String>,
    console: Vec<String>,
    ops: Vec<Op>,
    costs: Costs,
}

/// The toy environment.
#[derive(Clone)]
pub struct Mock {
    st: Arc<Mutex<State>>,
    topo: Arc<SchedTopo>,
}

/// Yields once (the task is polled again next round).
struct Yield(bool);

impl Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

fn yield_now() -> Yield {
    Yield(false)
}

/// Write end.
pub struct Tx {
    ch: usize,
    st: Arc<Mutex<State>>,
}

impl Drop for Tx {
    fn drop(&mut self) {
        self.st.lock().unwrap().chans[self.ch].writers -= 1;
    }
}

/// Read end.
pub struct Rx {
    ch: usize,
    st: Arc<Mutex<State>>,
}

impl Drop for Rx {
    fn drop(&mut self) {
        self.st.lock().unwrap().chans[self.ch].reader_open = false;
    }
}

impl Mock {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap()
    }

    async fn pay(&self, op: &str) {
        let n = {
            let s = self.lock();
            s.costs.turns(&s.current, op)
        };
        for _ in 0..n {
            yield_now().await;
        }
    }

    fn log(&self, kind: &'static str, chan: usize, bytes: usize, waited: bool, dropped: bool) {
        let mut s = self.lock();
        let op = Op {
            task: s.current.clone(),
            kind,
            chan,
            bytes,
            waited,
            dropped,
            datagram: s.chans.get(chan).is_some_and(|c| c.datagram),
        };
        s.ops.push(op);
    }

    async fn stream_send(&self, tx: &Tx, bytes: usize, kind: &'static str) -> Result<(), Closed> {
        let mut left = bytes;
        let mut waited = false;
        loop {
            {
                let mut s = self.lock();
                let c = &mut s.chans[tx.ch];
                if !c.reader_open {
                    return Err(Closed);
                }
                let n = left.min(c.capacity - c.len);
                c.len += n;
                left -= n;
            }
            if left == 0 {
                break;
            }
            waited = true;
            yield_now().await;
        }
        self.log(kind, tx.ch, bytes, waited, false);
        self.pay(kind).await;
        Ok(())
    }
}

/// What a run left behind.
pub struct Run {
    /// The workload's result.
    pub result: Result<(), String>,
    /// Emitted records (JSON).
    pub records: Vec<String>,
    /// Console lines.
    pub console: Vec<String>,
    /// Every channel operation in order.
    pub ops: Vec<Op>,
    /// Simulated time at the end.
    pub now: u64,
}

impl Run {
    /// The record of type `kind`, parsed.
    pub fn record(&self, kind: &str) -> serde_json::Value {
        self.records
            .iter()
            .map(|r| serde_json::from_str::<serde_json::Value>(r).expect("a record is JSON"))
            .find(|v| v["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} record in {:?}", self.records))
    }

    /// The operations of tasks whose name starts with `task`, of `kind`.
    pub fn ops_of<'a>(&'a self, task: &'a str, kind: &'a str) -> impl Iterator<Item = &'a Op> + 'a {
        self.ops
            .iter()
            .filter(move |o| o.task.starts_with(task) && o.kind == kind)
    }
}

/// Runs experiment `name` with `args` on a one-socket, `cpus`-core machine
/// (no SMT) under `costs`.
pub fn run(name: &str, args: &str, cpus: u32, costs: Costs) -> Run {
    let mut spec = topology::SyntheticSpec::simple(1, cpus, 1);
    spec.nodes = 1;
    let topo = SchedTopo::synthetic(&spec).expect("a valid machine");
    let nr = topo.nr_cpus;
    let w = Workload::parse(name, args, nr)
        .expect("a workload")
        .expect("valid arguments");
    let env = Mock {
        st: Arc::new(Mutex::new(State {
            now: 0,
            current: "main".into(),
            names: vec!["main".into()],
            done: vec![false],
            spawned: Vec::new(),
            chans: Vec::new(),
            bars: Vec::new(),
            sems: Vec::new(),
            records: Vec::new(),
            console: Vec::new(),
            ops: Vec::new(),
            costs,
        })),
        topo: Arc::new(topo),
    };
    let result = Arc::new(Mutex::new(None));
    let (e, r) = (env.clone(), result.clone());
    let main: Body = Box::pin(async move {
        let out = w.run(&e).await;
        *r.lock().unwrap() = Some(out);
    });
    let mut tasks: Vec<Option<Body>> = vec![Some(main)];
    let mut cx = Context::from_waker(Waker::noop());
    let mut polls = 0u64;
    while result.lock().unwrap().is_none() {
        for i in 0..tasks.len() {
            let Some(mut f) = tasks[i].take() else {
                continue;
            };
            {
                let mut s = env.lock();
                s.current = s.names[i].clone();
                s.now += TURN_NS;
            }
            polls += 1;
            assert!(polls < MAX_POLLS, "stuck after {polls} polls");
            match f.as_mut().poll(&mut cx) {
                Poll::Ready(()) => {
                    drop(f); // may drop channel ends: outside the lock
                    env.lock().done[i] = true;
                }
                Poll::Pending => tasks[i] = Some(f),
            }
            let new = std::mem::take(&mut env.lock().spawned);
            for (id, f) in new {
                assert_eq!(id, tasks.len());
                tasks.push(Some(f));
            }
        }
    }
    let out = result.lock().unwrap().take().unwrap();
    let s = env.lock();
    Run {
        result: out,
        records: s.records.clone(),
        console: s.console.clone(),
        ops: s.ops.clone(),
        now: s.now,
    }
}

impl Env for Mock {
    type Tx = Tx;
    type Rx = Rx;
    type Barrier = usize;
    type Sem = usize;
    type Join = usize;

    fn nr_cpus(&self) -> usize {
        self.topo.nr_cpus
    }

    fn topo(&self) -> &SchedTopo {
        &self.topo
    }

    fn check_threads(&self, _threads: usize) -> Result<(), String> {
        Ok(()) // the mock's threads are futures: no limit
    }

    fn now_ns(&self) -> u64 {
        self.lock().now
    }

    fn this_cpu(&self) -> usize {
        0
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            now_ns: self.now_ns(),
            stats: SchedStats::new(self.topo.nr_cpus),
            cpus: Vec::new(),
        }
    }

    fn emit(&self, record: &str) {
        self.lock().records.push(record.to_string());
    }

    fn log(&self, line: fmt::Arguments<'_>) {
        self.lock().console.push(line.to_string());
    }

    fn progress(&self) {}

    fn address_spaces(&self) -> bool {
        false
    }

    fn set_wakee_flips(&self, _flips: u32) {
        // No scheduler behind the mock: placement is not what it tests.
    }

    fn spawn<F>(&self, how: Spawn, f: F) -> impl Future<Output = usize> + Send
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let mut s = self.lock();
        let id = s.names.len();
        s.names.push(how.name);
        s.done.push(false);
        s.spawned.push((id, Box::pin(f)));
        core::future::ready(id)
    }

    async fn join(&self, j: usize) {
        while !self.lock().done[j] {
            yield_now().await;
        }
    }

    fn channel(&self, capacity: usize) -> (Tx, Rx) {
        let mut s = self.lock();
        let ch = s.chans.len();
        s.chans.push(Chan {
            capacity,
            writers: 1,
            reader_open: true,
            ..Chan::default()
        });
        (
            Tx {
                ch,
                st: self.st.clone(),
            },
            Rx {
                ch,
                st: self.st.clone(),
            },
        )
    }

    async fn send(&self, tx: &Tx, bytes: usize) -> Result<(), Closed> {
        let datagram = self.lock().chans[tx.ch].datagram;
        if !datagram {
            return self.stream_send(tx, bytes, "send").await;
        }
        let dropped = {
            let mut s = self.lock();
            let c = &mut s.chans[tx.ch];
            if !c.reader_open {
                return Err(Closed);
            }
            if c.capacity - c.len >= bytes {
                c.len += bytes;
                false
            } else {
                c.dropped += 1;
                true
            }
        };
        self.log("send", tx.ch, bytes, false, dropped);
        self.pay("send").await;
        Ok(())
    }

    async fn recv(&self, rx: &mut Rx, max: usize) -> usize {
        let mut waited = false;
        loop {
            let got = {
                let mut s = self.lock();
                let c = &mut s.chans[rx.ch];
                if c.len > 0 {
                    let n = c.len.min(max);
                    c.len -= n;
                    Some(n)
                } else if c.writers == 0 {
                    Some(0)
                } else {
                    None
                }
            };
            if let Some(n) = got {
                self.log("recv", rx.ch, n, waited, false);
                if n > 0 {
                    self.pay("recv").await;
                }
                return n;
            }
            waited = true;
            yield_now().await;
        }
    }

    async fn sendfile(&self, tx: &Tx, bytes: usize) -> Result<(), Closed> {
        self.stream_send(tx, bytes, "sendfile").await
    }

    fn datagram_channel(&self, capacity: usize) -> (Tx, Rx) {
        let (tx, rx) = self.channel(capacity);
        self.lock().chans[tx.ch].datagram = true;
        (tx, rx)
    }

    fn dropped(&self, rx: &Rx) -> u64 {
        self.lock().chans[rx.ch].dropped
    }

    // The mock's waiters poll (yield) until the release: spinning and
    // sleeping are the same here.
    fn barrier(&self, parties: usize, _spin_ns: u64) -> usize {
        let mut s = self.lock();
        s.bars.push(Bar {
            parties,
            ..Bar::default()
        });
        s.bars.len() - 1
    }

    async fn barrier_wait(&self, b: &usize) -> bool {
        let generation = {
            let mut s = self.lock();
            let bar = &mut s.bars[*b];
            bar.arrived += 1;
            if bar.arrived == bar.parties {
                bar.arrived = 0;
                bar.generation += 1;
                return true;
            }
            bar.generation
        };
        while self.lock().bars[*b].generation == generation {
            yield_now().await;
        }
        false
    }

    fn semaphore(&self, permits: u64) -> usize {
        let mut s = self.lock();
        s.sems.push(permits);
        s.sems.len() - 1
    }

    async fn down(&self, sem: &usize) {
        loop {
            {
                let mut s = self.lock();
                if s.sems[*sem] > 0 {
                    s.sems[*sem] -= 1;
                    return;
                }
            }
            yield_now().await;
        }
    }

    async fn up(&self, sem: &usize) {
        self.lock().sems[*sem] += 1;
    }

    async fn compute(&self, units: u64, _working_set: u64) {
        // `bytes` carries the units.
        self.log("compute", usize::MAX, units as usize, false, false);
        yield_now().await;
    }

    async fn sleep(&self, ns: u64) {
        let until = self.now_ns() + ns;
        while self.now_ns() < until {
            yield_now().await;
        }
    }
}

/// A record field as u64.
pub fn u(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}
