//! The discrete-event engine: simulated CPUs, each with its own clock
//! position, running simulated tasks under the `sched` crate.
//!
//! Events (time-ordered, ties in the order they were posted, so a run is a
//! pure function of its inputs and seed; [`crate::queue`] keeps them):
//! - `Tick(cpu)`: `sched_tick()` every `tick_ns` on every CPU;
//! - `SegEnd(cpu, generation)`: the running task finished the CPU work of its
//!   current step (a stale generation means it was preempted or re-rated);
//! - `Resched(cpu)`: a reschedule IPI arrives (after the IPI latency by
//!   distance, plus idle exit when the target was idle);
//! - `Timer(task)`: a sleep expires;
//! - `NohzKick(cpu)`: an idle-load-balancer kick IPI arrives (NOHZ_IDLE).
//!
//! With NOHZ_IDLE an idle CPU stops its tick (`Scheduler::nohz_idle_enter`)
//! and a task that starts on it restarts the tick on the tick grid.
//!
//! A running task alternates CPU work (`left`, in ns at full speed,
//! progressing at the CPU's rate: lower while its SMT sibling also runs) and
//! effects carried out when the work is done (see [`crate::ops`]). Context
//! switches and cache refills are charged as extra work of the task that
//! switches in. Everything the scheduler decides comes from the same calls
//! the kernel makes: `wake_up_new_task`, `try_to_wake_up`, `schedule`,
//! `block`, `exit`, `tick`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::task::{Context, Waker};

use sched::task::Tasks as _;
use sched::{DynPolicy, Scheduler, TaskId, TaskState};
use workloads::args::Rng;

use crate::cache::{self, DataHome, Geometry};
use crate::env::SimEnv;
use crate::mm::{CpuMm, MmStats};
use crate::profile::Profile;
use crate::queue::EventQueue;
use crate::trace::{Kind, Trace};
use crate::world::{Reply, Shared, Sys, TaskFuture, World};

/// What a CPU takes of its SMT core's throughput, least first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum SmtLoad {
    /// Idle (halted): nothing.
    #[default]
    Idle,
    /// Its task spins in a barrier's `pause` loop.
    Spins,
    /// Its task runs.
    Runs,
}

/// An event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Ev {
    Tick(usize),
    SegEnd(usize, u64),
    Resched(usize),
    Timer(TaskId),
    NohzKick(usize),
}

/// What a task does when its current CPU work is done.
pub(crate) enum After {
    /// Poll its future (the reply, if any, is in `reply`).
    Poll,
    /// Carry out this request.
    Do(Sys),
    /// Deliver this reply, then poll.
    Reply(Reply),
}

/// A simulated task.
pub(crate) struct Task {
    pub fut: Option<TaskFuture>,
    pub serial: u64,
    pub left: u64,
    /// Of `left`, the part that is a barrier spin: charges added on top
    /// (a switch-in's refill, a timer interrupt) are worked off first, and
    /// a release cuts only this part (see `ops::release_spinner`).
    pub spin: u64,
    pub after: After,
    pub reply: Option<Reply>,
    pub ws: u64,
    /// The node whose memory holds the working set (where it was first
    /// touched; see [`crate::cache`]).
    pub mem_node: u32,
    pub home: DataHome,
    pub last_cpu: Option<usize>,
    pub waiting: &'static str,
    /// Address space (None = kernel thread); see [`crate::mm`].
    pub mm: Option<u64>,
}

/// A simulated CPU.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cpu {
    pub generation: u64,
    pub curr: Option<TaskId>,
    /// The trace's thread number of `curr` (0 = idle), kept when it exits
    /// so the switch away from an exiting task names it, as the kernel's
    /// trace does.
    pub curr_tid: u64,
    pub seg_start: u64,
    /// Speed in per-mille of full speed.
    pub rate: u64,
    /// This CPU's load as its SMT siblings' rates last took it
    /// ([`Engine::rerate_siblings`]); [`Engine::sync_smt`] re-rates when the
    /// CPU's load has moved away from it.
    pub smt_rated: SmtLoad,
    /// Eviction clock: bytes of working sets switched in here.
    pub touched: u64,
    pub ipi_pending: bool,
    pub local_resched: bool,
    /// NOHZ_IDLE: the tick is stopped (idle).
    pub tick_stopped: bool,
    /// A `Tick` event for this CPU is queued.
    pub tick_queued: bool,
    /// Loaded address space and live ASIDs.
    pub mm: CpuMm,
}

/// The engine.
pub struct Engine {
    pub(crate) sched: Arc<Scheduler<DynPolicy>>,
    pub(crate) prof: Profile,
    pub(crate) slit: Vec<Vec<u32>>,
    pub(crate) world: Arc<Shared>,
    pub(crate) env: SimEnv,
    pub(crate) now: u64,
    events: EventQueue,
    pub(crate) cpus: Vec<Cpu>,
    pub(crate) tasks: Vec<Option<Task>>,
    pub(crate) next_serial: u64,
    pub(crate) exited: BTreeSet<u64>,
    pub(crate) joiners: BTreeMap<u64, Vec<TaskId>>,
    rng: Rng,
    pub(crate) tick_ns: u64,
    /// Timers and IPIs in flight (a run with none, no runnable task and
    /// unfinished work is deadlocked).
    pending_wakes: u64,
    /// Events processed.
    pub events_done: u64,
    /// Of those, segment ends made stale by a preemption or a rate change.
    pub stale_events: u64,
    /// The scheduler trace (`--trace`), if recorded.
    pub(crate) trace: Option<Trace>,
    /// A condition that ends the run as a failure (e.g. too many tasks).
    pub(crate) fatal: Option<String>,
    /// The last address space handed out.
    pub(crate) next_mm: u64,
    /// Address-space switches and TLB refills.
    pub(crate) mm_stats: MmStats,
    /// `compute` calls whose beyond-cache part streamed from another
    /// node's memory.
    pub(crate) remote_memory_computes: u64,
}

impl Engine {
    pub(crate) fn new(
        sched: Scheduler<DynPolicy>,
        prof: Profile,
        slit: Vec<Vec<u32>>,
        seed: u64,
    ) -> Engine {
        let n = sched.shared.nr_cpus();
        let sched = Arc::new(sched);
        let world = Arc::new(Shared::new(World {
            counters: (0..n)
                .map(|cpu| workloads::CpuCounters {
                    cpu: cpu as u32,
                    ..Default::default()
                })
                .collect(),
            ..World::default()
        }));
        let env = SimEnv {
            world: world.clone(),
            sched: sched.clone(),
        };
        let tick_ns = sched.shared.cfg.tunables.tick_ns;
        let mut e = Engine {
            sched,
            prof,
            slit,
            world,
            env,
            now: 0,
            events: EventQueue::default(),
            cpus: vec![
                Cpu {
                    rate: 1000,
                    tick_queued: true,
                    ..Cpu::default()
                };
                n
            ],
            tasks: Vec::new(),
            next_serial: 0,
            exited: BTreeSet::new(),
            joiners: BTreeMap::new(),
            rng: Rng::new(seed ^ 0x5C4E_D51A),
            tick_ns,
            pending_wakes: 0,
            events_done: 0,
            stale_events: 0,
            trace: None,
            fatal: None,
            next_mm: 0,
            mm_stats: MmStats::default(),
            remote_memory_computes: 0,
        };
        for cpu in 0..n {
            e.push(tick_ns, Ev::Tick(cpu));
        }
        e
    }

    pub(crate) fn geometry(&self) -> Geometry<'_> {
        Geometry {
            topo: &self.sched.shared.topo,
            slit: &self.slit,
        }
    }

    pub(crate) fn push(&mut self, t: u64, e: Ev) {
        if matches!(e, Ev::Timer(_) | Ev::Resched(_) | Ev::NohzKick(_)) {
            self.pending_wakes += 1;
        }
        self.events.push(t, e);
    }

    /// A modelled cost with the seed's jitter, rounded to ns.
    pub(crate) fn cost(&mut self, ns: f64) -> u64 {
        if ns <= 0.0 {
            return 0;
        }
        let j = self.prof.noise.jitter;
        let f = if j > 0.0 {
            let u = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            1.0 + j * (2.0 * u - 1.0)
        } else {
            1.0
        };
        crate::round::round_u64(ns * f)
    }

    pub(crate) fn task(&mut self, p: TaskId) -> &mut Task {
        self.tasks[p.0 as usize]
            .as_mut()
            .expect("simulator: unknown task")
    }

    /// Registers a new task's body under the scheduler's id.
    pub(crate) fn add_task(&mut self, p: TaskId, fut: TaskFuture, mm: Option<u64>) -> u64 {
        let i = p.0 as usize;
        if self.tasks.len() <= i {
            self.tasks.resize_with(i + 1, || None);
        }
        let serial = self.next_serial;
        self.next_serial += 1;
        self.tasks[i] = Some(Task {
            fut: Some(fut),
            serial,
            left: 0,
            spin: 0,
            after: After::Poll,
            reply: None,
            ws: 0,
            mem_node: 0,
            home: DataHome::default(),
            last_cpu: None,
            waiting: "",
            mm,
        });
        serial
    }

    /// Processes the next event; false when none is left or `t_end` is reached.
    pub(crate) fn step(&mut self, t_end: u64) -> bool {
        let Some((t, e)) = self.events.pop_until(t_end) else {
            return false;
        };
        self.now = t;
        self.events_done += 1;
        match e {
            Ev::Tick(cpu) => self.tick(cpu),
            Ev::SegEnd(cpu, generation) => {
                if generation == self.cpus[cpu].generation {
                    // The segment's work is done: what `account` would
                    // subtract is all of it.
                    self.cpus[cpu].seg_start = self.now;
                    if let Some(p) = self.cpus[cpu].curr {
                        let t = self.task(p);
                        t.left = 0;
                        if t.spin != 0 {
                            t.spin = 0;
                        }
                    }
                    // The budget ran out: the thread leaves its pause loop
                    // (and goes to sleep). An `account` at this very ns may
                    // have cleared `spin` already, so the rated load says.
                    self.sync_after_account(cpu);
                    self.run_after(cpu);
                } else {
                    self.stale_events += 1;
                }
            }
            Ev::Resched(cpu) => {
                self.pending_wakes -= 1;
                self.cpus[cpu].ipi_pending = false;
                if self.cpus[cpu].curr.is_none() || self.sched.need_resched(cpu) {
                    self.reschedule(cpu);
                }
            }
            Ev::NohzKick(cpu) => {
                self.pending_wakes -= 1;
                self.nohz_kick(cpu);
            }
            Ev::Timer(p) => {
                self.pending_wakes -= 1;
                if let Some((TaskState::Sleeping, cpu)) = self.task_state(p) {
                    // An hrtimer fires on the CPU that armed it: the
                    // interrupt costs whatever runs there `timer_ns`, the
                    // wakeup comes from that CPU, and a reschedule it asks
                    // for happens at interrupt exit.
                    if let Some(q) = self.cpus[cpu].curr {
                        self.account(cpu);
                        self.sync_after_account(cpu);
                        let c = self.cost(self.prof.kernel.timer_ns);
                        self.task(q).left += c;
                        self.start_segment(cpu);
                    }
                    self.wake(p, cpu, false);
                    if self.cpus[cpu].local_resched {
                        self.reschedule(cpu);
                    }
                }
            }
        }
        true
    }

    /// True when nothing can ever run again (every task blocked with no
    /// timer or IPI in flight).
    pub(crate) fn deadlocked(&self) -> bool {
        self.pending_wakes == 0
            && self.cpus.iter().all(|c| c.curr.is_none())
            && (0..self.cpus.len()).all(|c| self.sched.shared.snap(c).nr_running() == 0)
    }

    // Off the hot path (a few % of events): kept out of `step`'s body.
    #[inline(never)]
    fn tick(&mut self, cpu: usize) {
        self.cpus[cpu].tick_queued = false;
        if self.cpus[cpu].tick_stopped {
            // Stopped since this tick was programmed: it does not fire.
            return;
        }
        self.account(cpu);
        self.sync_after_account(cpu);
        let r = self.sched.tick(cpu, self.now);
        self.after_interrupt(cpu, &r);
        if !self.cpus[cpu].tick_stopped {
            let t = self.now + self.tick_ns;
            self.push(t, Ev::Tick(cpu));
            self.cpus[cpu].tick_queued = true;
        }
    }

    /// NOHZ_IDLE: `cpu` stays idle after an interrupt with its tick running;
    /// its idle loop stops the tick if the core says so.
    fn idle_loop(&mut self, cpu: usize) {
        if self.sched.nohz_idle()
            && !self.cpus[cpu].tick_stopped
            && self.sched.nohz_idle_enter(cpu, self.now)
        {
            self.cpus[cpu].tick_stopped = true;
        }
    }

    /// NOHZ_IDLE: a task starts on `cpu` whose tick is stopped
    /// (`tick_nohz_idle_exit`): the tick restarts at the next tick-grid
    /// point, unless its event is still queued.
    fn restart_tick(&mut self, cpu: usize) {
        self.cpus[cpu].tick_stopped = false;
        if !self.cpus[cpu].tick_queued {
            let t = (self.now / self.tick_ns + 1) * self.tick_ns;
            self.push(t, Ev::Tick(cpu));
            self.cpus[cpu].tick_queued = true;
        }
    }

    /// The idle-load-balancer kick from `from` to `to` (a call-function
    /// IPI to an idle CPU: the IPI latency by distance plus its idle exit).
    #[inline(never)]
    fn send_kick(&mut self, from: usize, to: usize) {
        let lat = self.ipi_latency(from, to);
        self.push(self.now + lat, Ev::NohzKick(to));
    }

    /// An IPI's jittered latency from `from` to `to`: by distance, plus the
    /// idle exit when `to` is idle.
    fn ipi_latency(&mut self, from: usize, to: usize) -> u64 {
        let g = self.geometry();
        let mut lat = self
            .prof
            .ipi_ns(g.topo.distance(from, to), g.slit(from, to));
        if self.cpus[to].curr.is_none() {
            lat += self.prof.wakeup.idle_exit_ns;
        }
        self.cost(lat).max(1)
    }

    /// The kick arrived: `cpu` balances for the tickless CPUs if it is
    /// still idle, then reschedules if it pulled work.
    #[inline(never)]
    fn nohz_kick(&mut self, cpu: usize) {
        self.account(cpu);
        self.sync_after_account(cpu);
        let r = self.sched.nohz_kick(cpu, self.now);
        self.after_interrupt(cpu, &r);
    }

    /// What a tick or a kick on `cpu` asked for: its moves traced, the kick
    /// and the reschedule IPIs sent, `cpu` rescheduled if it must be, and,
    /// back in the idle loop after the interrupt, the tick may stop.
    fn after_interrupt(&mut self, cpu: usize, r: &sched::TickResult) {
        self.trace_migrations(cpu, &r.migrations);
        if let Some(ilb) = r.nohz_kick {
            self.send_kick(cpu, ilb);
        }
        let mut local = r.need_resched;
        for &c in &r.resched {
            if c == cpu {
                local = true;
            } else {
                self.send_resched(cpu, c);
            }
        }
        if local || self.cpus[cpu].local_resched {
            self.reschedule(cpu);
        }
        if self.cpus[cpu].curr.is_none() {
            self.idle_loop(cpu);
        }
    }

    /// A spin that ended (its budget used up at this very ns, by an
    /// `account` or at its segment's end) takes the CPU out of its pause
    /// loop for its siblings too.
    #[inline]
    fn sync_after_account(&mut self, cpu: usize) {
        if self.cpus[cpu].smt_rated == SmtLoad::Spins {
            self.sync_smt(cpu);
        }
    }

    /// Progress of the running task since its segment started.
    pub(crate) fn account(&mut self, cpu: usize) {
        let c = &self.cpus[cpu];
        let (start, rate, curr) = (c.seg_start, c.rate, c.curr);
        self.cpus[cpu].seg_start = self.now;
        // The current task may have just exited (its slot is empty).
        if let Some(p) = curr
            && let Some(Some(t)) = self.tasks.get_mut(p.0 as usize)
        {
            let done = (self.now - start) * rate / 1000;
            t.left = t.left.saturating_sub(done);
            // Only spinners (rare) store: no write on the common path.
            if t.spin > t.left {
                t.spin = t.left;
            }
        }
    }

    /// Starts (or restarts) the running task's CPU work.
    pub(crate) fn start_segment(&mut self, cpu: usize) {
        self.cpus[cpu].generation += 1;
        self.cpus[cpu].seg_start = self.now;
        let Some(p) = self.cpus[cpu].curr else {
            return;
        };
        let left = self.task(p).left;
        let rate = self.cpus[cpu].rate;
        // Full speed (the common case) divides by a constant, which the
        // compiler turns into a multiplication; same value either way.
        let end = self.now
            + if rate == 1000 {
                (left * 1000).div_ceil(1000)
            } else {
                (left * 1000).div_ceil(rate)
            };
        let generation = self.cpus[cpu].generation;
        self.push(end, Ev::SegEnd(cpu, generation));
    }

    /// A reschedule request from `from` to `to`: local, or an IPI.
    // Off the hot path (a few % of events): kept out of `step`'s body.
    #[inline(never)]
    pub(crate) fn send_resched(&mut self, from: usize, to: usize) {
        if from == to {
            self.cpus[to].local_resched = true;
            return;
        }
        if self.cpus[to].ipi_pending {
            return;
        }
        self.cpus[to].ipi_pending = true;
        let lat = self.ipi_latency(from, to);
        self.push(self.now + lat, Ev::Resched(to));
    }

    /// The trace's thread number of `p` (0 = idle or gone).
    pub(crate) fn tid(&self, p: Option<TaskId>) -> u64 {
        p.and_then(|p| self.tasks.get(p.0 as usize))
            .and_then(|t| t.as_ref())
            .map_or(0, |t| t.serial + 1)
    }

    /// Records a trace event on `cpu` now (no-op when not tracing).
    pub(crate) fn trace(&mut self, cpu: usize, kind: Kind, a: u64, b: u64, c: u64) {
        let now = self.now;
        if let Some(t) = self.trace.as_mut() {
            t.event(cpu, now, kind, a, b, c);
        }
    }

    // Off the hot path (a few % of events): kept out of `step`'s body.
    #[inline(never)]
    fn trace_migrations(&mut self, cpu: usize, moved: &[sched::core::Migration]) {
        if self.trace.is_none() {
            return;
        }
        for m in moved {
            let to = ((m.to as u64) << 4) | m.reason as u64;
            let tid = self.tid(Some(m.task));
            self.trace(cpu, Kind::Migrate, tid, m.from as u64, to);
        }
    }

    /// The core's state and CPU of `p` (None if it is not alive): what
    /// `Scheduler::try_task` tells, under the same lock, without copying
    /// the whole task.
    fn task_state(&self, p: TaskId) -> Option<(TaskState, usize)> {
        let core = self
            .sched
            .shared
            .lock_task(p, self.sched.shared.nr_cpus())?;
        core.tasks.get(p).map(|t| (t.state, t.cpu))
    }

    /// `try_to_wake_up(q)` from `waker_cpu`.
    // Off the hot path (a few % of events): kept out of `step`'s body.
    #[inline(never)]
    pub(crate) fn wake(&mut self, q: TaskId, waker_cpu: usize, sync: bool) {
        if !matches!(self.task_state(q), Some((TaskState::Sleeping, _))) {
            return;
        }
        self.task(q).waiting = "";
        let r = self.sched.wake_up(q, waker_cpu, sync, self.now);
        if self.trace.is_some() {
            let tid = self.tid(Some(q));
            self.trace(waker_cpu, Kind::Wakeup, tid, r.cpu as u64, u64::from(sync));
        }
        for c in r.resched {
            self.send_resched(waker_cpu, c);
        }
    }

    /// `__schedule()` on `cpu` and the switch it decides.
    pub(crate) fn reschedule(&mut self, cpu: usize) {
        self.switch(cpu, false);
    }

    /// The running task of `cpu` blocks, and `cpu` reschedules: the core's
    /// `block` and `schedule` under one acquisition of its runqueue lock
    /// (`block_and_schedule`, as the kernel's own blocking path does).
    fn block_and_reschedule(&mut self, cpu: usize) {
        self.switch(cpu, true);
    }

    // Off the hot path (a few % of events): kept out of `step`'s body.
    #[inline(never)]
    fn switch(&mut self, cpu: usize, block: bool) {
        self.account(cpu);
        self.cpus[cpu].local_resched = false;
        let prev = self.cpus[cpu].curr;
        let sw = if block {
            self.sched.block_and_schedule(cpu, self.now).1
        } else {
            self.sched.schedule(cpu, self.now)
        };
        self.trace_migrations(cpu, &sw.migrations);
        for &c in &sw.resched {
            if c != cpu {
                self.send_resched(cpu, c);
            }
        }
        let next = sw.next;
        if prev != next {
            self.world.lock().counters[cpu].switches += 1;
            if self.trace.is_some() {
                let (a, b) = (self.tid(next), self.cpus[cpu].curr_tid);
                self.trace(cpu, Kind::Switch, a, b, 0);
            }
            if let Some(p) = prev
                && let Some(t) = self.tasks[p.0 as usize].as_mut()
            {
                t.home = DataHome {
                    cpu: Some(cpu),
                    mark: self.cpus[cpu].touched,
                };
            }
            if let Some(n) = next {
                let moved = {
                    let t = self.task(n);
                    let moved = t.last_cpu.is_some_and(|l| l != cpu);
                    t.last_cpu = Some(cpu);
                    moved
                };
                if moved {
                    self.world.lock().counters[cpu].migrations_in += 1;
                }
                let (ws, home, mm) = {
                    let t = self.task(n);
                    (t.ws, t.home, t.mm)
                };
                let mm_ns = self.switch_mm(cpu, mm, ws);
                let refill = cache::refill_ns(
                    &self.prof,
                    &self.geometry(),
                    ws,
                    home,
                    cpu,
                    self.cpus[cpu].touched,
                );
                let extra = self.cost(self.prof.kernel.context_switch_ns)
                    + self.cost(refill)
                    + self.cost(mm_ns);
                self.task(n).left += extra;
                self.cpus[cpu].touched += ws;
            }
        }
        self.cpus[cpu].curr = next;
        self.cpus[cpu].curr_tid = self.tid(next);
        self.sync_smt(cpu);
        self.start_segment(cpu);
        if next.is_none() {
            // `do_idle` starts again after every `schedule_idle`, tick
            // stopped or not: the core's idle entry runs each time.
            if self.sched.nohz_idle() && self.sched.nohz_idle_enter(cpu, self.now) {
                self.cpus[cpu].tick_stopped = true;
            }
        } else if self.cpus[cpu].tick_stopped {
            self.restart_tick(cpu);
        }
    }

    /// What `cpu` takes of its SMT core: nothing when idle, the pause loop
    /// of a barrier spin (its running task has spin budget left, see
    /// [`Task::spin`]; the charges worked off on top of it count with it),
    /// or the core's shared throughput when its task runs.
    pub(crate) fn smt_load(&self, cpu: usize) -> SmtLoad {
        match self.cpus[cpu].curr {
            None => SmtLoad::Idle,
            Some(p) => match self.tasks.get(p.0 as usize) {
                Some(Some(t)) if t.spin != 0 => SmtLoad::Spins,
                _ => SmtLoad::Runs,
            },
        }
    }

    /// Re-rates `cpu`'s core if the CPU's load is no longer the one its
    /// siblings' rates were computed from.
    pub(crate) fn sync_smt(&mut self, cpu: usize) {
        if self.smt_load(cpu) != self.cpus[cpu].smt_rated {
            self.rerate_siblings(cpu);
        }
    }

    /// The speed (per mille) the SMT rule gives `cpu` from its own load and
    /// its siblings' now (see [`Self::rerate_siblings`]).
    pub(crate) fn smt_rate(&self, cpu: usize) -> u64 {
        let others = self.sched.shared.topo.smt[cpu]
            .iter()
            .filter(|&o| o != cpu)
            .map(|o| self.smt_load(o))
            .max()
            .unwrap_or(SmtLoad::Idle);
        let speed = match (self.smt_load(cpu), others) {
            (SmtLoad::Spins, _) | (_, SmtLoad::Idle) => 1.0,
            (_, SmtLoad::Spins) => self.prof.cpu.smt_spin_speed,
            (_, SmtLoad::Runs) => self.prof.cpu.smt_shared_speed,
        };
        (speed * 1000.0).round().max(1.0) as u64
    }

    /// SMT: a CPU started or stopped running or spinning; the speeds of
    /// its core's threads change. A thread runs at `smt_shared_speed` while
    /// a sibling runs, at `smt_spin_speed` while siblings only spin, else
    /// at full speed; a spinner's own polls run at full speed (a `pause`
    /// loop's pace is the instruction's latency, not the core's share).
    // Off the hot path (a few % of events): kept out of `step`'s body.
    #[inline(never)]
    pub(crate) fn rerate_siblings(&mut self, cpu: usize) {
        // The scheduler's own handle: its topology stays borrowed while the
        // CPUs change (no list of the siblings to allocate per call).
        let sched = Arc::clone(&self.sched);
        let sibs = &sched.shared.topo.smt[cpu];
        for s in sibs.iter() {
            self.cpus[s].smt_rated = self.smt_load(s);
            let rate = self.smt_rate(s);
            if rate != self.cpus[s].rate {
                self.account(s);
                self.cpus[s].rate = rate;
                if s != cpu && self.cpus[s].curr.is_some() {
                    self.start_segment(s);
                }
            }
        }
    }

    /// The running task's work is done: carry out what follows, polling the
    /// task for its next request, until it needs CPU time or leaves the CPU.
    pub(crate) fn run_after(&mut self, cpu: usize) {
        loop {
            let Some(p) = self.cpus[cpu].curr else {
                return;
            };
            let after = std::mem::replace(&mut self.task(p).after, After::Poll);
            match after {
                After::Reply(r) => {
                    self.task(p).reply = Some(r);
                }
                After::Poll => {
                    if !self.poll(p, cpu) {
                        return; // exited
                    }
                    if self.task(p).left > 0 {
                        self.start_segment(cpu);
                        return;
                    }
                    continue;
                }
                After::Do(sys) => match self.effect(sys, p, cpu) {
                    crate::ops::Next::Reply(r) => {
                        self.task(p).reply = Some(r);
                    }
                    crate::ops::Next::Work(ns, then) => {
                        let t = self.task(p);
                        t.left = ns;
                        t.after = then;
                        if ns > 0 {
                            self.start_segment(cpu);
                            return;
                        }
                        continue;
                    }
                    crate::ops::Next::Block(what) => {
                        self.task(p).waiting = what;
                        self.block_and_reschedule(cpu);
                        return;
                    }
                },
            }
            // A reply was delivered: the call returns. A wakeup that
            // preempts this task takes effect here, at syscall exit.
            self.drain_closed(cpu);
            if self.cpus[cpu].local_resched || self.sched.need_resched(cpu) {
                self.reschedule(cpu);
                return;
            }
        }
    }

    /// Polls `p` on `cpu`: true with its next request stored (`after` =
    /// `Do`, `left` = its cost), false when it exited (the CPU rescheduled).
    fn poll(&mut self, p: TaskId, cpu: usize) -> bool {
        let (now, world) = (self.now, &self.world);
        let t = self.tasks[p.0 as usize]
            .as_mut()
            .expect("simulator: unknown task");
        world.mailbox.start_poll(now, cpu, t.reply.take());
        let fut = t.fut.as_mut().expect("task polled without a body");
        let mut cx = Context::from_waker(Waker::noop());
        if fut.as_mut().poll(&mut cx).is_ready() {
            t.fut = None; // may close channels (drops outside the world lock)
            self.exit(p, cpu);
            return false;
        }
        let sys = self
            .world
            .mailbox
            .take_request()
            .expect("a simulated task waited on something other than its environment");
        self.drain_closed(cpu);
        let ns = self.request_cost(&sys, p, cpu);
        let c = self.cost(ns);
        let t = self.task(p);
        t.left = c;
        t.after = After::Do(sys);
        true
    }

    // Off the hot path (a few % of events): kept out of `step`'s body.
    #[inline(never)]
    fn exit(&mut self, p: TaskId, cpu: usize) {
        let serial = self.task(p).serial;
        self.tasks[p.0 as usize] = None;
        self.sched.exit(cpu, self.now);
        self.exited.insert(serial);
        for q in self.joiners.remove(&serial).unwrap_or_default() {
            if let Some(t) = self.tasks[q.0 as usize].as_mut() {
                t.after = After::Reply(Reply::Unit);
            }
            self.wake(q, cpu, false);
        }
        self.drain_closed(cpu);
        self.reschedule(cpu);
    }

    /// Wakes everyone blocked on channels whose last writer or reader went away.
    #[inline]
    fn drain_closed(&mut self, cpu: usize) {
        if self.world.any_closed() {
            self.wake_closed(cpu);
        }
    }

    #[inline(never)]
    fn wake_closed(&mut self, cpu: usize) {
        for ch in self.world.take_closed() {
            let waiters: Vec<TaskId> = {
                let mut w = self.world.lock();
                let c = &mut w.channels[ch];
                c.read_waiters
                    .drain(..)
                    .chain(c.write_waiters.drain(..))
                    .collect()
            };
            for q in waiters {
                self.wake(q, cpu, false);
            }
        }
    }
}
