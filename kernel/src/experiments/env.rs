//! The kernel's [`workloads::Env`]: every operation is the real kernel
//! operation on the calling kernel thread (pipes, barriers, semaphores,
//! spawn/join, sleep), done before the future is first polled, so
//! [`workloads::block_on_ready`] runs a workload to completion on one thread.
//!
//! `Space::Process` gives the new thread a new address space (its own PML4,
//! `mm::space`), `Space::Thread` its parent's (None for a kernel thread's
//! child), `Space::Kernel` none.
//!
//! `compute` runs the integer loop of `workloads::args::compute`; its
//! working-set argument only matters to the simulator's cache model (the
//! loop touches registers, not memory), which docs/simulator.md states.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::future::Future;
use core::sync::atomic::{AtomicU64, Ordering};

use workloads::{Closed, CpuCounters, Env, Snapshot, Space, Spawn, block_on_ready};

use crate::arch::{percpu, time};
use crate::mm::space::{self, AddressSpace};
use crate::record::{Emit, Record, emit_json};
use crate::sync::pipe::{PipeReader, PipeWriter};
use crate::sync::{Barrier, Semaphore, pipe};
use crate::task::{self, JoinHandle, SpawnOptions};
use crate::watchdog;

/// Bytes every `send` copies from (hackbench writes constant bytes too).
static SOURCE: [u8; 64 * 1024] = [0x5A; 64 * 1024];

/// The kernel environment (no state: everything lives in the kernel).
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelEnv;

/// A channel's write end; a datagram channel's carries its drop counter.
pub struct Tx {
    writer: PipeWriter,
    dropped: Option<Arc<AtomicU64>>,
}

/// A channel's read end with the reader's buffer (and, for a datagram
/// channel, the count of datagrams dropped because it was full).
pub struct Rx {
    reader: PipeReader,
    buf: Vec<u8>,
    dropped: Option<Arc<AtomicU64>>,
}

impl Env for KernelEnv {
    type Tx = Tx;
    type Rx = Rx;
    type Barrier = Barrier;
    type Sem = Semaphore;
    type Join = JoinHandle;

    fn nr_cpus(&self) -> usize {
        percpu::online().count()
    }

    fn topo(&self) -> &sched::SchedTopo {
        &task::sched::core().shared.topo
    }

    fn now_ns(&self) -> u64 {
        time::now_ns()
    }

    fn this_cpu(&self) -> usize {
        percpu::cpu_index() as usize
    }

    fn snapshot(&self) -> Snapshot {
        let cpus = percpu::online()
            .map(|p| {
                let cs = task::sched::cpu_state(p.cpu as usize);
                CpuCounters {
                    cpu: p.cpu,
                    switches: cs.switches.load(Ordering::Relaxed),
                    migrations_in: cs.migrations_in.load(Ordering::Relaxed),
                    mm_switches: cs.mm_switches.load(Ordering::Relaxed),
                }
            })
            .collect();
        let stats = task::sched::stats();
        Snapshot {
            now_ns: time::now_ns(),
            stats,
            cpus,
        }
    }

    fn heap_allocations(&self) -> Option<u64> {
        Some(crate::mm::heap::allocations())
    }

    fn reserve_recv(&self, rx: &mut Rx, max: usize) {
        if rx.buf.len() < max {
            rx.buf.resize(max, 0);
        }
    }

    fn check_threads(&self, threads: usize) -> Result<(), String> {
        task::check_room_for_threads(threads)
    }

    fn emit(&self, record: &str) {
        emit_json(record);
    }

    fn log(&self, line: fmt::Arguments<'_>) {
        log::info!(target: "workload", "{line}");
    }

    fn progress(&self) {
        watchdog::progress();
    }

    fn address_spaces(&self) -> bool {
        true // a PML4 per process (`mm::space`, docs/kernel.md)
    }

    fn set_wakee_flips(&self, flips: u32) {
        if let Some(t) = task::sched::current() {
            task::sched::core().set_wakee_flips(t.task, flips, time::now_ns());
        }
    }

    fn spawn<F>(&self, how: Spawn, f: F) -> impl Future<Output = JoinHandle> + Send
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let space = match how.space {
            Space::Process => Some(AddressSpace::new()),
            Space::Thread => task::sched::current().and_then(|t| t.space.clone()),
            Space::Kernel => None,
        };
        let opts = SpawnOptions {
            name: how.name,
            pinned: how.pinned,
            nice: how.nice,
            space,
            ..Default::default()
        };
        core::future::ready(task::spawn(opts, move || block_on_ready(f)))
    }

    async fn join(&self, j: JoinHandle) {
        j.join();
    }

    fn channel(&self, capacity: usize) -> (Tx, Rx) {
        let (writer, reader) = pipe(capacity);
        (
            Tx {
                writer,
                dropped: None,
            },
            Rx {
                reader,
                // Sized by the workload before its measured interval
                // (`reserve_recv`), so no `recv` inside it allocates.
                buf: Vec::new(),
                dropped: None,
            },
        )
    }

    async fn send(&self, tx: &Tx, bytes: usize) -> Result<(), Closed> {
        if let Some(dropped) = &tx.dropped {
            // A datagram: queued whole or dropped whole, never waiting.
            let big;
            let data = if bytes <= SOURCE.len() {
                &SOURCE[..bytes]
            } else {
                big = alloc::vec![0x5A; bytes];
                &big[..]
            };
            if !tx.writer.try_write_all(data).map_err(|_| Closed)? {
                dropped.fetch_add(1, Ordering::Relaxed);
            }
            return Ok(());
        }
        let mut left = bytes;
        while left > 0 {
            let n = left.min(SOURCE.len());
            tx.writer.write(&SOURCE[..n]).map_err(|_| Closed)?;
            left -= n;
        }
        Ok(())
    }

    /// The kernel's channel is a byte ring: the bytes are copied as by
    /// `send` (the zero-copy saving is modelled by the simulator only).
    async fn sendfile(&self, tx: &Tx, bytes: usize) -> Result<(), Closed> {
        self.send(tx, bytes).await
    }

    fn datagram_channel(&self, capacity: usize) -> (Tx, Rx) {
        let (mut tx, mut rx) = self.channel(capacity);
        let dropped = Arc::new(AtomicU64::new(0));
        tx.dropped = Some(dropped.clone());
        rx.dropped = Some(dropped);
        (tx, rx)
    }

    fn dropped(&self, rx: &Rx) -> u64 {
        rx.dropped.as_ref().map_or(0, |d| d.load(Ordering::Relaxed))
    }

    async fn recv(&self, rx: &mut Rx, max: usize) -> usize {
        if rx.buf.len() < max {
            rx.buf.resize(max, 0);
        }
        rx.reader.read(&mut rx.buf[..max])
    }

    fn barrier(&self, parties: usize, spin_ns: u64) -> Barrier {
        Barrier::with_spin(parties, spin_ns)
    }

    async fn barrier_wait(&self, b: &Barrier) -> bool {
        let leader = b.wait();
        // `--seed`: released threads restart with seed-derived jitter.
        task::jitter::after_release();
        leader
    }

    fn semaphore(&self, permits: u64) -> Semaphore {
        Semaphore::new(permits)
    }

    async fn down(&self, s: &Semaphore) {
        s.down();
    }

    async fn up(&self, s: &Semaphore) {
        s.up();
    }

    async fn compute(&self, units: u64, _working_set: u64) {
        core::hint::black_box(workloads::args::compute(units));
    }

    async fn sleep(&self, ns: u64) {
        task::sleep_ns(ns);
    }
}

/// Runs a workload on this kernel thread under the progress watchdog. A
/// workload that made processes is followed by an `address_spaces` record:
/// after every CPU left the spaces it kept loaded lazily, all of them must
/// have been freed (their PML4 frames back in the allocator).
pub fn run(w: workloads::Workload) -> Result<(), String> {
    let (created0, freed0) = space::counts();
    watchdog::arm(30_000_000_000);
    let r = block_on_ready(w.run(&KernelEnv));
    watchdog::disarm();
    if space::counts().0 == created0 {
        return r;
    }
    let lazy_cpus = task::sched::leave_lazy_mms();
    let (created, freed) = space::counts();
    let (created, freed) = (created - created0, freed - freed0);
    Record::new("address_spaces")
        .u64("created", created)
        .u64("freed", freed)
        .u64("lazy_cpus", lazy_cpus as u64)
        .emit();
    r?;
    if freed != created {
        return Err(alloc::format!(
            "address spaces: {created} created, {freed} freed after the run (a page table leaked)"
        ));
    }
    Ok(())
}
