//! The mailbox between the engine and the task it is polling: the clock
//! and CPU the task reads, the one request ("system call") it posts, and
//! the reply it gets back.
//!
//! Why not fields of the locked [`crate::world::World`]: every request
//! went through that lock four times (the engine set the clock and reply,
//! the task took the reply and posted the next request, the engine took
//! it), and even an uncontended lock is two locked atomic instructions.
//! Here every field is an atomic word used with `Relaxed` loads and stores,
//! which on one host thread are plain moves. A request or reply is packed
//! into words; only a spawn, which carries the new thread's body, goes
//! through a lock (a few per run).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use workloads::Spawn;

use crate::world::{Reply, Sys, TaskFuture};

/// No reply / no request.
const NONE: u64 = 0;

// Request tags.
const SPAWN: u64 = 1;
const JOIN: u64 = 2;
const SEND: u64 = 3;
const SENDFILE: u64 = 4;
const RECV: u64 = 5;
const BARRIER: u64 = 6;
const DOWN: u64 = 7;
const UP: u64 = 8;
const COMPUTE: u64 = 9;
const SLEEP: u64 = 10;
const BARRIER_SLEEP: u64 = 11;
/// Added to `SEND`, `SENDFILE`, `RECV`: the channel is a datagram socket.
const DATAGRAM: u64 = 0x100;

// Reply tags (low 3 bits; the value above them).
const R_UNIT: u64 = 1;
const R_BYTES: u64 = 2;
const R_SENT: u64 = 3;
const R_LEADER: u64 = 4;
const R_TASK: u64 = 5;
const R_SHIFT: u32 = 3;

/// See the module docs.
#[derive(Default)]
pub struct Mailbox {
    /// Simulated time of the poll in progress.
    now: AtomicU64,
    /// CPU of the task being polled.
    cpu: AtomicUsize,
    /// The reply the task being polled receives (packed; `NONE`).
    reply: AtomicU64,
    /// The outstanding request: tag (`NONE` = none) and two words.
    req: [AtomicU64; 3],
    /// A spawn request's thread.
    spawn: Mutex<Option<Box<(Spawn, TaskFuture)>>>,
}

impl Mailbox {
    /// Simulated time of the poll in progress.
    pub fn now(&self) -> u64 {
        self.now.load(Relaxed)
    }

    /// CPU of the task being polled.
    pub fn cpu(&self) -> usize {
        self.cpu.load(Relaxed)
    }

    /// Engine, before a poll: the clock, the CPU, the reply; no request yet.
    pub fn start_poll(&self, now: u64, cpu: usize, reply: Option<Reply>) {
        self.now.store(now, Relaxed);
        self.cpu.store(cpu, Relaxed);
        self.reply.store(reply.map_or(NONE, pack_reply), Relaxed);
        self.req[0].store(NONE, Relaxed);
    }

    /// Task: the reply to its request (None if there is none).
    pub fn take_reply(&self) -> Option<Reply> {
        let r = self.reply.load(Relaxed);
        self.reply.store(NONE, Relaxed);
        unpack_reply(r)
    }

    /// Task: posts its request.
    pub fn post(&self, sys: Sys) {
        let (tag, a, b) = match sys {
            Sys::Spawn(s) => {
                *self.spawn.lock().expect("spawn slot") = Some(s);
                (SPAWN, 0, 0)
            }
            Sys::Join(serial) => (JOIN, serial, 0),
            Sys::Send {
                ch,
                left,
                copy,
                datagram,
            } => (
                if copy { SEND } else { SENDFILE } | dgram(datagram),
                ch as u64,
                left as u64,
            ),
            Sys::Recv { ch, max, datagram } => (RECV | dgram(datagram), ch as u64, max as u64),
            Sys::BarrierWait(b) => (BARRIER, b as u64, 0),
            Sys::BarrierSleep { b, generation } => (BARRIER_SLEEP, b as u64, generation),
            Sys::Down(s) => (DOWN, s as u64, 0),
            Sys::Up(s) => (UP, s as u64, 0),
            Sys::Compute { units, working_set } => (COMPUTE, units, working_set),
            Sys::Sleep(ns) => (SLEEP, ns, 0),
        };
        self.req[1].store(a, Relaxed);
        self.req[2].store(b, Relaxed);
        self.req[0].store(tag, Relaxed);
    }

    /// Engine, after a poll: the request posted (None if none was).
    pub fn take_request(&self) -> Option<Sys> {
        let tag = self.req[0].load(Relaxed);
        self.req[0].store(NONE, Relaxed);
        let (a, b) = (self.req[1].load(Relaxed), self.req[2].load(Relaxed));
        let datagram = tag & DATAGRAM != 0;
        Some(match tag & !DATAGRAM {
            NONE => return None,
            SPAWN => Sys::Spawn(self.spawn.lock().expect("spawn slot").take()?),
            JOIN => Sys::Join(a),
            SEND | SENDFILE => Sys::Send {
                ch: a as usize,
                left: b as usize,
                copy: tag & !DATAGRAM == SEND,
                datagram,
            },
            RECV => Sys::Recv {
                ch: a as usize,
                max: b as usize,
                datagram,
            },
            BARRIER => Sys::BarrierWait(a as usize),
            BARRIER_SLEEP => Sys::BarrierSleep {
                b: a as usize,
                generation: b,
            },
            DOWN => Sys::Down(a as usize),
            UP => Sys::Up(a as usize),
            COMPUTE => Sys::Compute {
                units: a,
                working_set: b,
            },
            SLEEP => Sys::Sleep(a),
            _ => unreachable!("mailbox: request tag {tag}"),
        })
    }
}

fn dgram(datagram: bool) -> u64 {
    if datagram { DATAGRAM } else { 0 }
}

fn pack_reply(r: Reply) -> u64 {
    let (tag, v) = match r {
        Reply::Unit => (R_UNIT, 0),
        Reply::Bytes(n) => (R_BYTES, n as u64),
        Reply::Sent(ok) => (R_SENT, u64::from(ok)),
        Reply::Leader(l) => (R_LEADER, u64::from(l)),
        Reply::Task(serial) => (R_TASK, serial),
    };
    assert!(v < 1 << (64 - R_SHIFT), "mailbox: reply {r:?} too large");
    v << R_SHIFT | tag
}

fn unpack_reply(r: u64) -> Option<Reply> {
    let v = r >> R_SHIFT;
    Some(match r & ((1 << R_SHIFT) - 1) {
        NONE => return None,
        R_UNIT => Reply::Unit,
        R_BYTES => Reply::Bytes(v as usize),
        R_SENT => Reply::Sent(v != 0),
        R_LEADER => Reply::Leader(v != 0),
        R_TASK => Reply::Task(v),
        t => unreachable!("mailbox: reply tag {t}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_round_trip() {
        let m = Mailbox::default();
        for r in [
            None,
            Some(Reply::Unit),
            Some(Reply::Bytes(0)),
            Some(Reply::Bytes(usize::MAX >> 3)),
            Some(Reply::Sent(true)),
            Some(Reply::Sent(false)),
            Some(Reply::Leader(true)),
            Some(Reply::Leader(false)),
            Some(Reply::Task(12_345)),
        ] {
            m.start_poll(7, 3, r);
            assert_eq!((m.now(), m.cpu()), (7, 3));
            assert_eq!(m.take_reply(), r);
            assert_eq!(m.take_reply(), None);
        }
    }

    fn describe(s: &Sys) -> String {
        match s {
            Sys::Spawn(b) => format!("spawn {}", b.0.name),
            Sys::Join(j) => format!("join {j}"),
            Sys::Send {
                ch,
                left,
                copy,
                datagram,
            } => format!("send {ch} {left} {copy} {datagram}"),
            Sys::Recv { ch, max, datagram } => format!("recv {ch} {max} {datagram}"),
            Sys::BarrierWait(b) => format!("barrier {b}"),
            Sys::BarrierSleep { b, generation } => format!("barrier-sleep {b} {generation}"),
            Sys::Down(d) => format!("down {d}"),
            Sys::Up(u) => format!("up {u}"),
            Sys::Compute { units, working_set } => format!("compute {units} {working_set}"),
            Sys::Sleep(ns) => format!("sleep {ns}"),
        }
    }

    #[test]
    fn requests_round_trip() {
        let m = Mailbox::default();
        m.start_poll(0, 0, None);
        assert!(m.take_request().is_none());
        for s in [
            Sys::Join(9),
            Sys::Send {
                ch: 2,
                left: 100,
                copy: true,
                datagram: false,
            },
            Sys::Send {
                ch: 3,
                left: 1 << 40,
                copy: false,
                datagram: true,
            },
            Sys::Recv {
                ch: 4,
                max: 4096,
                datagram: true,
            },
            Sys::Recv {
                ch: 5,
                max: 1,
                datagram: false,
            },
            Sys::BarrierWait(5),
            Sys::BarrierSleep {
                b: 5,
                generation: u64::MAX,
            },
            Sys::Down(6),
            Sys::Up(7),
            Sys::Compute {
                units: u64::MAX,
                working_set: 1 << 20,
            },
            Sys::Sleep(1_000_000),
        ] {
            let want = describe(&s);
            m.post(s);
            let got = m.take_request().expect("posted");
            assert_eq!(describe(&got), want);
            assert!(m.take_request().is_none());
        }
        let how = Spawn {
            name: "t".into(),
            pinned: Some(1),
            space: workloads::Space::Kernel,
            nice: 0,
        };
        m.post(Sys::Spawn(Box::new((how, Box::pin(async {})))));
        match m.take_request() {
            Some(Sys::Spawn(s)) => assert_eq!(s.0.pinned, Some(1)),
            _ => panic!("spawn lost"),
        }
    }
}
