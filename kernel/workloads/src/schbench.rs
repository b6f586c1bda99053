//! schbench (Chris Mason's v1.x structure): `messengers` message threads,
//! each owning `workers` worker threads. A messenger posts a request to
//! every idle worker (stamping the time) and sleeps until workers report
//! back; a worker wakes, records its **wakeup latency** (post → running),
//! runs the request — `sleep_us` of sleep, `ops` rounds of compute each
//! under a per-CPU lock (preempting or migrating a worker mid-round makes
//! the next user of that CPU's lock wait, as in schbench), `sleep_us`
//! again — records its **request latency**, reports to its messenger and
//! waits for the next post. Requests per second over the run is the RPS.
//!
//! Posts and reports are futex-style: a per-worker semaphore the messenger
//! `up`s after stamping, a per-messenger semaphore each finishing worker
//! `up`s after raising its done flag (no WF_SYNC, like `futex_wake`).
//! Latencies go into log-linear histograms (1.6 % buckets) and are reported
//! at schbench's percentiles (p50, p90, p99, p99.9). Limits: kernel sleeps
//! have tick resolution (a non-zero `sleep_us` sleeps at least one tick),
//! so the default is 0, as in the `-s 0 -n 0` "ttwustress" form used to
//! study wakeup placement; compute is integer work, not schbench's matrix
//! math.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use sched::stats::LatHistogram;

use crate::args::Args;
use crate::env::{Env, Spawn};
use crate::interval::Interval;
use crate::json::Record;
use crate::noise::{Noise, NoiseWorkers};

/// schbench's options.
#[derive(Clone, Debug)]
pub struct Params {
    /// `-m`: message threads.
    pub messengers: usize,
    /// `-t`: workers per message thread (default: one per CPU).
    pub workers: usize,
    /// `-r`: run time.
    pub duration_ns: u64,
    /// Sleep before and after the compute (`-s`).
    pub sleep_ns: u64,
    /// Compute rounds per request.
    pub ops: u64,
    /// Work units per round.
    pub work: u64,
    /// Each round under the CPU's lock.
    pub cpu_lock: bool,
    /// Per-CPU kworker noise.
    pub noise: Noise,
}

impl Params {
    /// Reads the experiment's arguments.
    pub fn from_args(a: &mut Args<'_>, nr_cpus: usize) -> Result<Params, String> {
        Ok(Params {
            messengers: a.u64("messengers", 1, 1..=64)? as usize,
            workers: a.u64("workers", nr_cpus as u64, 1..=1024)? as usize,
            duration_ns: a.u64("duration_ms", 2000, 10..=3_600_000)? * 1_000_000,
            sleep_ns: a.u64("sleep_us", 0, 0..=1_000_000)? * 1000,
            ops: a.u64("ops", 5, 0..=1_000_000)?,
            work: a.u64("work", 2000, 0..=100_000_000)?,
            cpu_lock: a.choice("cpu_lock", &["on", "off"])? == "on",
            noise: Noise::from_args(a)?,
        })
    }
}

struct Worker<E: Env> {
    /// Time of the post being served.
    stamp: AtomicU64,
    /// Posted by the messenger.
    post: E::Sem,
    /// Finished a request; the messenger reposts it.
    done: AtomicBool,
}

struct Messenger<E: Env> {
    /// Raised by finishing workers.
    reports: E::Sem,
    workers: Vec<Worker<E>>,
}

struct Shared<E: Env> {
    stop: AtomicBool,
    cpu_locks: Vec<E::Sem>,
    requests: AtomicU64,
}

/// What workers measured.
#[derive(Default)]
struct WorkerStats {
    wakeup: LatHistogram,
    request: LatHistogram,
}

async fn post<E: Env>(env: &E, w: &Worker<E>) {
    w.stamp.store(env.now_ns(), Ordering::Release);
    env.up(&w.post).await;
}

async fn worker<E: Env>(
    env: &E,
    me: usize,
    msg: &Messenger<E>,
    sh: &Shared<E>,
    p: &Params,
) -> WorkerStats {
    let mut st = WorkerStats::default();
    let w = &msg.workers[me];
    loop {
        env.down(&w.post).await;
        if sh.stop.load(Ordering::Acquire) {
            break;
        }
        let start = env.now_ns();
        st.wakeup
            .record(start.saturating_sub(w.stamp.load(Ordering::Acquire)));
        if p.sleep_ns > 0 {
            env.sleep(p.sleep_ns).await;
        }
        for _ in 0..p.ops {
            if p.cpu_lock {
                let lock = &sh.cpu_locks[env.this_cpu()];
                env.down(lock).await;
                env.compute(p.work, 0).await;
                env.up(lock).await;
            } else {
                env.compute(p.work, 0).await;
            }
        }
        if p.sleep_ns > 0 {
            env.sleep(p.sleep_ns).await;
        }
        st.request.record(env.now_ns().saturating_sub(start));
        sh.requests.fetch_add(1, Ordering::Relaxed);
        w.done.store(true, Ordering::Release);
        env.up(&msg.reports).await;
    }
    st
}

async fn messenger<E: Env>(env: &E, msg: &Messenger<E>, sh: &Shared<E>, deadline: u64) {
    for w in &msg.workers {
        post(env, w).await;
    }
    let mut since = 0u32;
    while env.now_ns() < deadline && !sh.stop.load(Ordering::Acquire) {
        env.down(&msg.reports).await;
        for w in &msg.workers {
            if w.done.swap(false, Ordering::AcqRel) {
                post(env, w).await;
            }
        }
        since += 1;
        if since >= 64 {
            since = 0;
            env.progress();
        }
    }
}

/// Runs schbench and emits its `schbench` record.
pub async fn run<E: Env>(env: &E, p: Params) -> Result<(), String> {
    env.check_threads(p.messengers * (p.workers + 1) + p.noise.threads(env.nr_cpus()))
        .map_err(|e| format!("schbench: {} x {} workers: {e}", p.messengers, p.workers))?;
    env.log(format_args!(
        "schbench: {} message thread(s) x {} workers, {} ms, sleep {} us, {} ops of {} (per-CPU lock {})",
        p.messengers,
        p.workers,
        p.duration_ns / 1_000_000,
        p.sleep_ns / 1000,
        p.ops,
        p.work,
        if p.cpu_lock { "on" } else { "off" }
    ));
    let sh = Arc::new(Shared::<E> {
        stop: AtomicBool::new(false),
        cpu_locks: (0..env.nr_cpus()).map(|_| env.semaphore(1)).collect(),
        requests: AtomicU64::new(0),
    });
    let msgs: Vec<Arc<Messenger<E>>> = (0..p.messengers)
        .map(|_| {
            Arc::new(Messenger {
                reports: env.semaphore(0),
                workers: (0..p.workers)
                    .map(|_| Worker {
                        stamp: AtomicU64::new(0),
                        post: env.semaphore(0),
                        done: AtomicBool::new(false),
                    })
                    .collect(),
            })
        })
        .collect();
    let results = Arc::new(spin::Mutex::new(WorkerStats::default()));
    let noise = NoiseWorkers::start(env, p.noise).await;
    let interval = Interval::start(env);
    let deadline = interval.t0() + p.duration_ns;
    let mut handles = Vec::new();
    for (mi, msg) in msgs.iter().enumerate() {
        for wi in 0..p.workers {
            let (e, msg, sh, results, p2) = (
                env.clone(),
                msg.clone(),
                sh.clone(),
                results.clone(),
                p.clone(),
            );
            let body = async move {
                let st = worker(&e, wi, &msg, &sh, &p2).await;
                let mut r = results.lock();
                r.wakeup.merge(&st.wakeup);
                r.request.merge(&st.request);
            };
            handles.push(
                env.spawn(Spawn::named(format!("sb-worker{mi}.{wi}")), body)
                    .await,
            );
        }
        let (e, m2, sh2) = (env.clone(), msg.clone(), sh.clone());
        let body = async move { messenger(&e, &m2, &sh2, deadline).await };
        handles.push(
            env.spawn(Spawn::named(format!("sb-message{mi}")), body)
                .await,
        );
    }
    // Let the run go, then stop every worker.
    while env.now_ns() < deadline {
        env.sleep(10_000_000).await;
    }
    sh.stop.store(true, Ordering::Release);
    for msg in &msgs {
        for w in &msg.workers {
            env.up(&w.post).await;
        }
        env.up(&msg.reports).await;
    }
    for h in handles {
        env.join(h).await;
    }
    let end = interval.end(env);
    let elapsed = end.elapsed_ns;
    noise.stop(env).await;

    let r = results.lock();
    let requests = sh.requests.load(Ordering::Relaxed);
    let rps = requests * 1_000_000_000 / elapsed.max(1);
    let (mut wake, mut req) = (String::new(), String::new());
    let _ = r.wakeup.write_json(&mut wake);
    let _ = r.request.write_json(&mut req);
    let rec = Record::new("schbench")
        .u64("messengers", p.messengers as u64)
        .u64("workers", p.workers as u64)
        .u64("sleep_us", p.sleep_ns / 1000)
        .u64("ops", p.ops)
        .u64("work", p.work)
        .bool("cpu_lock", p.cpu_lock)
        .u64("requests", requests)
        .u64("rps", rps)
        .u64("elapsed_ns", elapsed)
        .raw("wakeup_latency_ns", &wake)
        .raw("request_latency_ns", &req)
        .raw("per_cpu", &end.per_cpu_json)
        .opt_u64("heap_allocs", end.heap_allocs)
        .raw("sched", &end.sched_json());
    env.emit(&rec.finish());
    let us = |v: u64| v / 1000;
    for (name, h) in [("Wakeup", &r.wakeup), ("Request", &r.request)] {
        env.log(format_args!(
            "{name} Latencies percentiles (usec): 50.0th {} 90.0th {} * 99.0th {} 99.9th {} (min {} max {}, {} samples)",
            us(h.quantile(500)),
            us(h.quantile(900)),
            us(h.quantile(990)),
            us(h.quantile(999)),
            us(if h.count == 0 { 0 } else { h.min }),
            us(h.max),
            h.count
        ));
    }
    env.log(format_args!("average rps: {rps}"));
    if requests == 0 || r.wakeup.count != requests || r.request.count != requests {
        return Err(format!(
            "schbench: {requests} requests but {} wakeup and {} request samples",
            r.wakeup.count, r.request.count
        ));
    }
    Ok(())
}
