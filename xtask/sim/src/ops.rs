//! What each request costs and does: the simulated kernel's system calls.
//!
//! A request first costs CPU time on the caller (its entry cost, from the
//! profile, jittered by the seed); then its effect happens at once, at the
//! end of that work: data moves, tasks wake (`try_to_wake_up` through the
//! `sched` crate, WF_SYNC for pipes and sockets as in `pipe_write()` /
//! `sock_def_readable()`, plain for futex-style objects), or the caller
//! blocks (`deactivate_task`) and retries when woken. A read charges the
//! copy and the transfer of the message's lines from the writer's CPU after
//! it knows how much it got; each wakeup charges the waker `wakeup_ns`.

use sched::{Start, TaskId, TaskPolicy};

use crate::cache;
use crate::engine::{After, Engine, Ev};
use crate::trace::Kind;
use crate::world::{Reply, Sys};

/// What follows an effect.
pub(crate) enum Next {
    /// The call returns this.
    Reply(Reply),
    /// More CPU work (ns), then this.
    Work(u64, After),
    /// The caller sleeps (what it waits for, for reports); it has set what
    /// it does when woken.
    Block(&'static str),
}

impl Engine {
    /// Entry cost (ns, before jitter) of a request.
    pub(crate) fn request_cost(&mut self, sys: &Sys, p: TaskId, cpu: usize) -> f64 {
        let k = &self.prof.kernel;
        match *sys {
            Sys::Spawn(..) => k.fork_ns,
            Sys::Join(_) | Sys::BarrierWait(_) | Sys::Down(_) | Sys::Up(_) => k.futex_ns,
            // Not a request: the end of a spin (charged as the spin itself).
            Sys::BarrierSleep { .. } => 0.0,
            Sys::Send {
                left,
                copy,
                datagram,
                ..
            } => {
                let entry = if datagram {
                    k.datagram_syscall_ns
                } else {
                    k.syscall_ns
                };
                // sendfile(): the pages are referenced, not copied.
                entry
                    + if copy {
                        left as f64 * k.copy_ns_per_byte
                    } else {
                        0.0
                    }
            }
            Sys::Recv { datagram, .. } => {
                if datagram {
                    k.datagram_syscall_ns
                } else {
                    k.syscall_ns
                }
            }
            Sys::Sleep(_) => k.syscall_ns,
            Sys::Compute { units, working_set } => {
                let mut ns = units as f64 * self.prof.cpu.compute_unit_ns;
                let node = self.sched.shared.topo.cpus[cpu].node;
                let t = self.task(p);
                if t.ws != working_set {
                    // A new working set is first touched here, from memory,
                    // and placed on this CPU's node.
                    t.ws = working_set;
                    t.mem_node = node;
                    ns += cache::first_touch_ns(&self.prof, working_set);
                }
                let mem_node = self.task(p).mem_node;
                let (stream, remote) =
                    cache::beyond_llc_ns(&self.prof, &self.geometry(), working_set, mem_node, cpu);
                if remote {
                    self.remote_memory_computes += 1;
                }
                ns + stream
            }
        }
    }

    /// Replies after `wakeups` wakeups: their cost first.
    fn reply_after_wakeups(&mut self, wakeups: usize, r: Reply) -> Next {
        if wakeups == 0 {
            return Next::Reply(r);
        }
        let ns = self.cost(self.prof.kernel.wakeup_ns * wakeups as f64);
        Next::Work(ns, After::Reply(r))
    }

    /// The last arrival on `releaser` ends spinner `q`'s busy wait: what is
    /// left of its spin (not the charges added on top of it, such as a
    /// switch-in's refill) becomes the transfer of the barrier's cache line
    /// from the releaser's CPU to the spinner's (last) CPU, after which its
    /// wait returns. A spinner on a CPU restarts its segment with that; a
    /// preempted one finds it when it runs again. Neither needs a wakeup.
    #[inline(never)]
    fn release_spinner(&mut self, q: TaskId, releaser: usize) {
        let last = self.task(q).last_cpu;
        let on_cpu = last.filter(|&c| self.cpus[c].curr == Some(q));
        let seen_at = last.unwrap_or(releaser);
        let line = cache::transfer_ns(&self.prof, &self.geometry(), 1, Some(releaser), seen_at);
        let ns = self.cost(line);
        if let Some(c) = on_cpu {
            self.account(c);
        }
        let t = self.task(q);
        t.left = t.left - t.spin + ns;
        t.spin = 0;
        t.after = After::Reply(Reply::Leader(false));
        if let Some(c) = on_cpu {
            // Out of its pause loop, it takes its share of the core again.
            self.sync_smt(c);
            self.start_segment(c);
        }
    }

    /// `Sys::BarrierWait`: the last arrival releases the spinners and wakes
    /// the sleepers; an early one spins (if the barrier has a budget) or
    /// sleeps. Off the hot path: kept out of `effect`'s body.
    #[inline(never)]
    fn barrier_wait(&mut self, b: usize, p: TaskId, cpu: usize) -> Next {
        enum Arrival {
            Last(Vec<TaskId>, Vec<TaskId>),
            Spin(u64, u64),
            Sleep,
        }
        let arrival = {
            let mut w = self.world.lock();
            let bar = &mut w.barriers[b];
            bar.arrived += 1;
            if bar.arrived == bar.parties {
                bar.arrived = 0;
                bar.generation += 1;
                Arrival::Last(
                    std::mem::take(&mut bar.waiters),
                    std::mem::take(&mut bar.spinners),
                )
            } else if bar.spin_ns > 0 {
                bar.spinners.push(p);
                Arrival::Spin(bar.spin_ns, bar.generation)
            } else {
                bar.waiters.push(p);
                Arrival::Sleep
            }
        };
        match arrival {
            Arrival::Last(waiters, spinners) => {
                for q in spinners {
                    self.release_spinner(q, cpu);
                }
                let n = waiters.len();
                for q in waiters {
                    self.wake(q, cpu, false);
                }
                self.reply_after_wakeups(n, Reply::Leader(true))
            }
            // A spin budget is a count of polls, not jittered.
            Arrival::Spin(ns, generation) => {
                // The budget is its work from now (as `Next::Work` sets
                // it), so the re-rating's accounting keeps the spin part.
                let t = self.task(p);
                t.spin = ns;
                t.left = ns;
                // Into its pause loop: its siblings get the core back.
                self.sync_smt(cpu);
                Next::Work(ns, After::Do(Sys::BarrierSleep { b, generation }))
            }
            Arrival::Sleep => self.block(p, 0.0, After::Reply(Reply::Leader(false)), "barrier"),
        }
    }

    /// `Sys::BarrierSleep`: a spinner's budget ran out in round
    /// `generation`; it sleeps.
    #[inline(never)]
    fn barrier_sleep(&mut self, b: usize, generation: u64, p: TaskId) -> Next {
        let released = {
            let mut w = self.world.lock();
            let bar = &mut w.barriers[b];
            if bar.generation == generation {
                bar.spinners.retain(|&q| q != p);
                bar.waiters.push(p);
                false
            } else {
                true
            }
        };
        // A release replaces this continuation (`release_spinner`),
        // so the round is still open here.
        debug_assert!(!released, "a released spinner ran out of spin");
        if released {
            return Next::Reply(Reply::Leader(false));
        }
        self.block(p, 0.0, After::Reply(Reply::Leader(false)), "barrier")
    }

    /// Blocks `p`; when woken it does `then` after `retry_ns` of work.
    fn block(&mut self, p: TaskId, retry_ns: f64, then: After, what: &'static str) -> Next {
        let ns = self.cost(retry_ns);
        let t = self.task(p);
        t.left = ns;
        t.after = then;
        Next::Block(what)
    }

    /// Carries out request `sys` of `p` running on `cpu`.
    pub(crate) fn effect(&mut self, sys: Sys, p: TaskId, cpu: usize) -> Next {
        let now = self.now;
        match sys {
            Sys::Spawn(spawn) => {
                let (how, fut) = *spawn;
                // As the kernel's `task::spawn`: reserve an id, then
                // `start_task` from the parent's CPU, placed by fork
                // balancing or bound to the pinned CPU.
                let start = match how.pinned {
                    Some(c) if c < self.cpus.len() => Start::Bound(c),
                    Some(c) => {
                        self.fatal = Some(format!(
                            "spawn '{}': pinned to CPU {c}, but the machine has {}",
                            how.name,
                            self.cpus.len()
                        ));
                        return Next::Block("fatal");
                    }
                    None => Start::Fork,
                };
                let Some(id) = self.sched.reserve_task() else {
                    self.fatal = Some(format!(
                        "spawn '{}': more than {} tasks alive (SchedConfig::max_tasks)",
                        how.name, self.sched.shared.cfg.max_tasks
                    ));
                    return Next::Block("fatal");
                };
                let r = self.sched.start_task(
                    id,
                    Some(p),
                    cpu,
                    start,
                    how.nice,
                    TaskPolicy::Normal,
                    now,
                );
                let parent_mm = self.task(p).mm;
                let mm = crate::mm::child_mm(how.space, parent_mm, &mut self.next_mm);
                let serial = self.add_task(r.task, fut, mm);
                if let Some(t) = self.trace.as_mut() {
                    t.name(serial + 1, &how.name);
                }
                if self.trace.is_some() {
                    self.trace(cpu, Kind::Fork, serial + 1, r.cpu as u64, 0);
                }
                for c in r.resched {
                    self.send_resched(cpu, c);
                }
                Next::Reply(Reply::Task(serial))
            }
            Sys::Join(serial) => {
                if self.exited.contains(&serial) {
                    return Next::Reply(Reply::Unit);
                }
                self.joiners.entry(serial).or_default().push(p);
                self.block(p, 0.0, After::Reply(Reply::Unit), "join")
            }
            Sys::Send {
                ch,
                left,
                copy,
                datagram,
            } => {
                let (sent, woken) = {
                    let mut w = self.world.lock();
                    let c = &mut w.channels[ch];
                    if !c.reader_open {
                        return Next::Reply(Reply::Sent(false));
                    }
                    if c.datagram {
                        // udp_sendmsg() succeeds either way; the receiving
                        // socket queues the whole datagram or drops it
                        // (__udp_enqueue_schedule_skb, RcvbufErrors).
                        let q = if left <= c.capacity - c.len {
                            c.len += left;
                            c.data_cpu = Some(cpu);
                            c.read_waiters.pop_front()
                        } else {
                            c.dropped += 1;
                            None
                        };
                        drop(w);
                        if let Some(q) = q {
                            self.wake(q, cpu, true);
                        }
                        return self
                            .reply_after_wakeups(usize::from(q.is_some()), Reply::Sent(true));
                    }
                    let n = left.min(c.capacity - c.len);
                    c.len += n;
                    if n > 0 {
                        c.data_cpu = if copy { Some(cpu) } else { None };
                    }
                    // pipe_write(): one exclusive reader is woken (WF_SYNC).
                    let q = if n > 0 {
                        c.read_waiters.pop_front()
                    } else {
                        None
                    };
                    (n, q)
                };
                if let Some(q) = woken {
                    self.wake(q, cpu, true);
                }
                let rest = left - sent;
                if rest == 0 {
                    return self
                        .reply_after_wakeups(usize::from(woken.is_some()), Reply::Sent(true));
                }
                if woken.is_some() {
                    // Pay for the wakeup now, then find the pipe still full.
                    let ns = self.cost(self.prof.kernel.wakeup_ns);
                    return Next::Work(
                        ns,
                        After::Do(Sys::Send {
                            ch,
                            left: rest,
                            copy,
                            datagram,
                        }),
                    );
                }
                self.world.lock().channels[ch].write_waiters.push_back(p);
                // Woken, the writer goes on inside the same call.
                self.block(
                    p,
                    0.0,
                    After::Do(Sys::Send {
                        ch,
                        left: rest,
                        copy,
                        datagram,
                    }),
                    "send",
                )
            }
            Sys::Recv { ch, max, datagram } => {
                let (got, eof, from, woken) = {
                    let mut w = self.world.lock();
                    let c = &mut w.channels[ch];
                    if c.len > 0 {
                        let n = c.len.min(max);
                        c.len -= n;
                        // pipe_read(): one exclusive writer is woken (WF_SYNC).
                        (n, false, c.data_cpu, c.write_waiters.pop_front())
                    } else {
                        if c.writers > 0 {
                            c.read_waiters.push_back(p);
                        }
                        (0, c.writers == 0, None, None)
                    }
                };
                if got == 0 {
                    if eof {
                        return Next::Reply(Reply::Bytes(0));
                    }
                    // Woken, the reader goes on inside the same call.
                    return self.block(p, 0.0, After::Do(Sys::Recv { ch, max, datagram }), "recv");
                }
                if let Some(q) = woken {
                    self.wake(q, cpu, true);
                }
                let copy = got as f64 * self.prof.kernel.copy_ns_per_byte
                    + cache::transfer_ns(&self.prof, &self.geometry(), got, from, cpu)
                    + self.prof.kernel.wakeup_ns * usize::from(woken.is_some()) as f64;
                let ns = self.cost(copy);
                Next::Work(ns, After::Reply(Reply::Bytes(got)))
            }
            Sys::BarrierWait(b) => self.barrier_wait(b, p, cpu),
            Sys::BarrierSleep { b, generation } => self.barrier_sleep(b, generation, p),
            Sys::Down(s) => {
                let got = {
                    let mut w = self.world.lock();
                    let sem = &mut w.sems[s];
                    if sem.permits > 0 {
                        sem.permits -= 1;
                        true
                    } else {
                        sem.waiters.push_back(p);
                        false
                    }
                };
                if got {
                    return Next::Reply(Reply::Unit);
                }
                // Woken, the waiter retries inside the same call.
                self.block(p, 0.0, After::Do(Sys::Down(s)), "semaphore")
            }
            Sys::Up(s) => {
                let q = {
                    let mut w = self.world.lock();
                    let sem = &mut w.sems[s];
                    sem.permits += 1;
                    sem.waiters.pop_front()
                };
                let woken = usize::from(q.is_some());
                if let Some(q) = q {
                    self.wake(q, cpu, false);
                }
                self.reply_after_wakeups(woken, Reply::Unit)
            }
            Sys::Compute { .. } => Next::Reply(Reply::Unit),
            Sys::Sleep(ns) => {
                self.push(now + ns.max(1), Ev::Timer(p));
                self.block(p, 0.0, After::Reply(Reply::Unit), "sleep")
            }
        }
    }
}
