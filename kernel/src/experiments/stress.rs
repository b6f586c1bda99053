//! `stress`: many threads on every CPU doing random mixes of compute, sleep,
//! pipe and socketpair traffic, mutexes, barriers, forks and exits for a set
//! duration; then the books must balance exactly: every thread created
//! exited, every message and byte sent was received, every mutex increment
//! landed, and every CPU switched contexts.
//!
//! That last check is exact, not a hope about where the scheduler put the
//! workers: one extra thread per CPU is bound there and sleeps and yields in
//! a loop, so it must be switched in and out on its CPU for the run to end.
//! (A check on the free workers alone failed on 48-CPU guests under host
//! load: with vCPUs starved by the host, balancing rightly kept a few CPUs
//! without work while the books balanced.)
//!
//! Arguments: `threads` (workers, default 1024), `duration_ms` (default 2000),
//! `seed` (default 1).
//!
//! Workers come in groups of 8: a pipe producer and consumer, a socketpair
//! client and echo server, and four "mixers" that loop over compute, sleep,
//! yield, a group mutex, a group barrier and forking short-lived children.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::arch::qemu::ExitCode;
use crate::arch::{percpu, time};
use crate::machine::Machine;
use crate::record::{Emit, Record, json_array};
use crate::sync::{Barrier, Mutex, Semaphore, pipe, socketpair};
use crate::task::{self, SpawnOptions};
use crate::watchdog;
use workloads::args::{Args, Rng, compute};

const GROUP: usize = workloads::kernel_only::Stress::GROUP;
const MIXERS: usize = 4;

/// The books every worker writes into.
#[derive(Default)]
struct Books {
    spawned: AtomicU64,
    finished: AtomicU64,
    forks: AtomicU64,
    messages_sent: AtomicU64,
    messages_received: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    mutex_increments: AtomicU64,
    barrier_rounds: AtomicU64,
    sleeps: AtomicU64,
}

struct Group {
    counter: Mutex<u64>,
    /// At most two mixers of a group in a heavy compute section at once.
    heavy: Semaphore,
    barrier: Barrier,
    /// First barrier round after which the mixers stop (u64::MAX = not yet).
    stop_round: AtomicU64,
}

fn spawn_worker(
    books: &Arc<Books>,
    name: String,
    f: impl FnOnce() + Send + 'static,
) -> task::JoinHandle {
    books.spawned.fetch_add(1, Ordering::Relaxed);
    let b = books.clone();
    task::spawn(
        SpawnOptions {
            name,
            ..Default::default()
        },
        move || {
            f();
            b.finished.fetch_add(1, Ordering::Relaxed);
        },
    )
}

fn producer(books: &Books, tx: crate::sync::pipe::PipeWriter, deadline: u64, mut rng: Rng) {
    let mut msg = [0u8; 258];
    while time::now_ns() < deadline {
        let len = 1 + rng.below(256) as usize;
        msg[..2].copy_from_slice(&(len as u16).to_le_bytes());
        for (i, b) in msg[2..2 + len].iter_mut().enumerate() {
            *b = (i as u8) ^ (len as u8);
        }
        if tx.write(&msg[..2 + len]).is_err() {
            break;
        }
        books.messages_sent.fetch_add(1, Ordering::Relaxed);
        books.bytes_sent.fetch_add(len as u64, Ordering::Relaxed);
        watchdog::progress();
        if rng.below(4) == 0 {
            compute(rng.below(2000));
        }
    }
}

fn consumer(books: &Books, rx: crate::sync::pipe::PipeReader) -> Result<(), String> {
    let mut head = [0u8; 2];
    let mut body = [0u8; 256];
    while rx.read_exact(&mut head) {
        let len = u16::from_le_bytes(head) as usize;
        if !(1..=256).contains(&len) || !rx.read_exact(&mut body[..len]) {
            return Err(alloc::format!("pipe framing broken: length {len}"));
        }
        if body[..len]
            .iter()
            .enumerate()
            .any(|(i, &b)| b != (i as u8) ^ (len as u8))
        {
            return Err(String::from("pipe message corrupted"));
        }
        books.messages_received.fetch_add(1, Ordering::Relaxed);
        books
            .bytes_received
            .fetch_add(len as u64, Ordering::Relaxed);
    }
    Ok(())
}

fn mixer(books: &Arc<Books>, g: &Group, leader: bool, deadline: u64, mut rng: Rng) {
    let mut round = 0u64;
    loop {
        for _ in 0..1 + rng.below(4) {
            match rng.below(6) {
                0 => {
                    g.heavy.down();
                    compute(500 + rng.below(20_000));
                    g.heavy.up();
                }
                1 => {
                    books.sleeps.fetch_add(1, Ordering::Relaxed);
                    task::sleep_ns(1_000_000 + rng.below(4_000_000));
                }
                2 => task::yield_now(),
                3 => {
                    *g.counter.lock() += 1;
                    books.mutex_increments.fetch_add(1, Ordering::Relaxed);
                }
                4 => {
                    books.forks.fetch_add(1, Ordering::Relaxed);
                    let work = rng.below(5_000);
                    spawn_worker(books, String::from("child"), move || {
                        compute(work);
                    })
                    .join();
                }
                _ => {
                    let n = rng.below(3) + 1;
                    let handles: Vec<_> = (0..n)
                        .map(|_| {
                            books.forks.fetch_add(1, Ordering::Relaxed);
                            spawn_worker(books, String::from("sleeper"), || {
                                task::sleep_ns(1_000_000)
                            })
                        })
                        .collect();
                    handles.into_iter().for_each(task::JoinHandle::join);
                }
            }
        }
        // All members agree on when to stop: the leader names the round
        // before entering its barrier, everyone checks after leaving it. (A
        // plain flag would let a fast leader stop the next round while a slow
        // member still reads the previous one.)
        if leader && time::now_ns() >= deadline {
            g.stop_round.store(round, Ordering::Release);
        }
        if g.barrier.wait() {
            books.barrier_rounds.fetch_add(1, Ordering::Relaxed);
            watchdog::progress();
        }
        if g.stop_round.load(Ordering::Acquire) <= round {
            break;
        }
        round += 1;
    }
}

/// A thread bound to `cpu` that sleeps and yields there until `deadline`
/// (at least once), so that CPU provably switches contexts.
fn spawn_pinned_visitor(books: &Arc<Books>, cpu: usize, deadline: u64) -> task::JoinHandle {
    books.spawned.fetch_add(1, Ordering::Relaxed);
    let b = books.clone();
    task::spawn(
        SpawnOptions {
            name: alloc::format!("visit{cpu}"),
            pinned: Some(cpu),
            ..Default::default()
        },
        move || {
            loop {
                task::sleep_ns(1_000_000);
                task::yield_now();
                if time::now_ns() >= deadline {
                    break;
                }
            }
            b.finished.fetch_add(1, Ordering::Relaxed);
        },
    )
}

/// Runs the experiment.
pub fn run(_m: &Machine, args: &mut Args<'_>) -> Result<ExitCode, String> {
    let workloads::kernel_only::Stress {
        threads,
        duration_ns,
        seed,
    } = workloads::kernel_only::Stress::from_args(args)?;
    let groups = threads.div_ceil(GROUP);
    // The workers and one visitor per CPU are alive at once from the start
    // (their children come and go): they must fit before any is made.
    task::check_room_for_threads(groups * GROUP + crate::arch::percpu::online().count())
        .map_err(|e| alloc::format!("stress: {e}"))?;
    log::info!(
        "stress: {} worker threads in {groups} groups for {} ms",
        groups * GROUP,
        duration_ns / 1_000_000
    );

    let books = Arc::new(Books::default());
    let failures = Arc::new(crate::sync::IrqSpinLock::new(Vec::<String>::new()));
    let (created0, exited0) = task::sched::thread_counts();
    watchdog::arm(30_000_000_000);
    let start = time::now_ns();
    let deadline = start + duration_ns;
    let mut handles = Vec::new();
    let mut group_state = Vec::new();
    for gi in 0..groups {
        let g = Arc::new(Group {
            counter: Mutex::new(0),
            heavy: Semaphore::new(2),
            barrier: Barrier::new(MIXERS),
            stop_round: AtomicU64::new(u64::MAX),
        });
        group_state.push(g.clone());
        let base = seed
            .wrapping_mul(1_000_003)
            .wrapping_add(gi as u64 * GROUP as u64);
        let (tx, rx) = pipe(1024);
        let b = books.clone();
        handles.push(spawn_worker(
            &books,
            alloc::format!("prod{gi}"),
            move || producer(&b, tx, deadline, Rng::new(base)),
        ));
        let (b, f) = (books.clone(), failures.clone());
        handles.push(spawn_worker(
            &books,
            alloc::format!("cons{gi}"),
            move || {
                if let Err(e) = consumer(&b, rx) {
                    f.lock().push(e);
                }
            },
        ));
        let (client, server) = socketpair(256);
        let b = books.clone();
        handles.push(spawn_worker(
            &books,
            alloc::format!("client{gi}"),
            move || {
                let mut rng = Rng::new(base + 1);
                let mut buf = [0u8; 32];
                while time::now_ns() < deadline {
                    let tag = rng.next_u64().to_le_bytes();
                    buf[..8].copy_from_slice(&tag);
                    if client.send(&buf).is_err() {
                        break;
                    }
                    b.messages_sent.fetch_add(1, Ordering::Relaxed);
                    b.bytes_sent.fetch_add(32, Ordering::Relaxed);
                    if !client.recv_exact(&mut buf) || buf[..8] != tag {
                        break;
                    }
                    b.messages_received.fetch_add(1, Ordering::Relaxed);
                    b.bytes_received.fetch_add(32, Ordering::Relaxed);
                    watchdog::progress();
                }
            },
        ));
        let b = books.clone();
        handles.push(spawn_worker(
            &books,
            alloc::format!("server{gi}"),
            move || {
                let mut buf = [0u8; 32];
                while server.recv_exact(&mut buf) {
                    b.messages_received.fetch_add(1, Ordering::Relaxed);
                    b.bytes_received.fetch_add(32, Ordering::Relaxed);
                    if server.send(&buf).is_err() {
                        break;
                    }
                    b.messages_sent.fetch_add(1, Ordering::Relaxed);
                    b.bytes_sent.fetch_add(32, Ordering::Relaxed);
                }
            },
        ));
        for k in 0..MIXERS {
            let (b, g) = (books.clone(), g.clone());
            handles.push(spawn_worker(
                &books,
                alloc::format!("mix{gi}.{k}"),
                move || mixer(&b, &g, k == 0, deadline, Rng::new(base + 2 + k as u64)),
            ));
        }
        watchdog::progress();
    }
    for p in percpu::online() {
        handles.push(spawn_pinned_visitor(&books, p.cpu as usize, deadline));
    }
    for h in handles {
        h.join();
        watchdog::progress();
    }
    let elapsed = time::now_ns() - start;
    watchdog::disarm();
    let (created1, exited1) = task::sched::thread_counts();
    report(
        &books,
        &group_state,
        &failures.lock(),
        created1 - created0,
        exited1 - exited0,
        elapsed,
    )
}

fn report(
    books: &Books,
    groups: &[Arc<Group>],
    failures: &[String],
    created: u64,
    exited: u64,
    elapsed: u64,
) -> Result<ExitCode, String> {
    let v = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let counted: u64 = groups.iter().map(|g| *g.counter.lock()).sum();
    let mut problems: Vec<String> = failures.to_vec();
    let mut check = |ok: bool, what: String| {
        if !ok {
            problems.push(what);
        }
    };
    check(
        v(&books.spawned) == v(&books.finished),
        alloc::format!(
            "spawned {} but {} finished",
            v(&books.spawned),
            v(&books.finished)
        ),
    );
    // The experiment's own threads plus nothing else were created meanwhile.
    check(
        created == v(&books.spawned),
        alloc::format!(
            "scheduler created {created} threads, experiment spawned {}",
            v(&books.spawned)
        ),
    );
    check(
        created == exited,
        alloc::format!("scheduler: {created} threads created but {exited} exited"),
    );
    check(
        v(&books.messages_sent) == v(&books.messages_received),
        alloc::format!(
            "{} messages sent, {} received",
            v(&books.messages_sent),
            v(&books.messages_received)
        ),
    );
    check(
        v(&books.bytes_sent) == v(&books.bytes_received),
        alloc::format!(
            "{} bytes sent, {} received",
            v(&books.bytes_sent),
            v(&books.bytes_received)
        ),
    );
    check(
        counted == v(&books.mutex_increments),
        alloc::format!(
            "mutex counters {counted} != increments {}",
            v(&books.mutex_increments)
        ),
    );

    let mut idle_cpus = Vec::new();
    let per_cpu = json_array(percpu::online(), |w, p| {
        let cs = task::sched::cpu_state(p.cpu as usize);
        let (sw, mig) = (
            cs.switches.load(Ordering::Relaxed),
            cs.migrations_in.load(Ordering::Relaxed),
        );
        if sw == 0 {
            idle_cpus.push(p.cpu);
        }
        write!(
            w,
            "{{\"cpu\":{},\"context_switches\":{sw},\"migrations_in\":{mig},\"ticks\":{}}}",
            p.cpu,
            p.ticks.load(Ordering::Relaxed)
        )
    });
    check(
        idle_cpus.is_empty(),
        alloc::format!("CPUs without a context switch: {idle_cpus:?}"),
    );
    let sched_stats = task::sched::stats_json();
    Record::new("stress")
        .u64("threads_created", created)
        .u64("threads_exited", exited)
        .u64("forks", v(&books.forks))
        .u64("messages_sent", v(&books.messages_sent))
        .u64("messages_received", v(&books.messages_received))
        .u64("bytes_sent", v(&books.bytes_sent))
        .u64("bytes_received", v(&books.bytes_received))
        .u64("mutex_increments", v(&books.mutex_increments))
        .u64("barrier_rounds", v(&books.barrier_rounds))
        .u64("sleeps", v(&books.sleeps))
        .u64("elapsed_ns", elapsed)
        .raw("per_cpu", &per_cpu)
        .raw(
            "sched",
            if sched_stats.is_empty() {
                "null"
            } else {
                &sched_stats
            },
        )
        .bool("balanced", problems.is_empty())
        .emit();
    if problems.is_empty() {
        log::info!(
            "stress: books balance: {created} threads, {} messages / {} bytes each way, {} mutex increments, {} barrier rounds in {} ms",
            v(&books.messages_sent),
            v(&books.bytes_sent),
            v(&books.mutex_increments),
            v(&books.barrier_rounds),
            elapsed / 1_000_000
        );
        Ok(ExitCode::Success)
    } else {
        Err(problems.join("; "))
    }
}
