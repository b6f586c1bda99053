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
//! Latencies go into log-linear histograms (1.6 % buckets) and are reported
//! at schbench's percentiles (p50, p90, p99, p99.9). Limits: sleeps have
//! tick resolution (a non-zero `sleep_us` sleeps at least one tick), so the
//! default is 0, as in the `-s 0 -n 0` "ttwustress" form used to study
//! wakeup placement; compute is integer work, not schbench's matrix math.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use sched::stats::LatHistogram;

use super::args::{Args, compute};
use super::interval::Interval;
use crate::arch::qemu::ExitCode;
use crate::arch::{percpu, time};
use crate::machine::Machine;
use crate::record::Record;
use crate::sync::{IrqSpinLock, Mutex};
use crate::task::{self, SpawnOptions, WaitQueue};
use crate::watchdog;

/// A worker's mailbox: posted by its messenger with a time stamp.
struct Mailbox {
    posted: bool,
    stamp: u64,
}

struct Worker {
    mail: IrqSpinLock<Mailbox>,
    wq: WaitQueue,
}

struct Messenger {
    /// Workers (index in `workers`) that finished a request.
    done: IrqSpinLock<Vec<usize>>,
    wq: WaitQueue,
    workers: Vec<Worker>,
}

struct Shared {
    stop: AtomicBool,
    cpu_locks: Vec<Mutex<u64>>,
    requests: AtomicU64,
}

/// What one worker measured.
#[derive(Default)]
struct WorkerStats {
    wakeup: LatHistogram,
    request: LatHistogram,
}

fn wait_for_post(w: &Worker, sh: &Shared) -> Option<u64> {
    loop {
        w.wq.prepare();
        {
            let mut m = w.mail.lock();
            if m.posted {
                m.posted = false;
                let stamp = m.stamp;
                drop(m);
                w.wq.finish();
                return Some(stamp);
            }
        }
        if sh.stop.load(Ordering::Acquire) {
            w.wq.finish();
            return None;
        }
        task::block();
    }
}

fn post(w: &Worker) {
    {
        let mut m = w.mail.lock();
        m.posted = true;
        m.stamp = time::now_ns();
    }
    w.wq.wake_one(false);
}

#[allow(clippy::too_many_arguments)]
fn worker(
    me: usize,
    msg: &Messenger,
    sh: &Shared,
    sleep_ns: u64,
    ops: u64,
    work: u64,
    lock_cpu: bool,
) -> WorkerStats {
    let mut st = WorkerStats::default();
    let w = &msg.workers[me];
    while let Some(stamp) = wait_for_post(w, sh) {
        let start = time::now_ns();
        st.wakeup.record(start.saturating_sub(stamp));
        if sleep_ns > 0 {
            task::sleep_ns(sleep_ns);
        }
        for _ in 0..ops {
            if lock_cpu {
                let cpu = percpu::cpu_index() as usize;
                let mut g = sh.cpu_locks[cpu].lock();
                *g = g.wrapping_add(compute(work));
            } else {
                core::hint::black_box(compute(work));
            }
        }
        if sleep_ns > 0 {
            task::sleep_ns(sleep_ns);
        }
        st.request.record(time::now_ns().saturating_sub(start));
        sh.requests.fetch_add(1, Ordering::Relaxed);
        msg.done.lock().push(me);
        msg.wq.wake_one(false);
    }
    st
}

fn messenger(msg: &Messenger, deadline: u64) {
    for w in &msg.workers {
        post(w);
    }
    let mut since = 0u32;
    while time::now_ns() < deadline {
        let batch = loop {
            msg.wq.prepare();
            let b = core::mem::take(&mut *msg.done.lock());
            if !b.is_empty() || time::now_ns() >= deadline {
                break b;
            }
            task::block();
        };
        msg.wq.finish();
        for i in batch {
            post(&msg.workers[i]);
        }
        since += 1;
        if since >= 64 {
            since = 0;
            watchdog::progress();
        }
    }
}

/// Runs the experiment.
pub fn run(m: &Machine, a: &mut Args<'_>) -> Result<ExitCode, String> {
    let nr_cpus = percpu::online().count() as u64;
    let messengers = a.u64("messengers", 1, 1..=64)? as usize;
    let workers = a.u64("workers", nr_cpus, 1..=1024)? as usize;
    let duration_ns = a.u64("duration_ms", 2000, 10..=3_600_000)? * 1_000_000;
    let sleep_ns = a.u64("sleep_us", 0, 0..=1_000_000)? * 1000;
    let ops = a.u64("ops", 5, 0..=1_000_000)?;
    let work = a.u64("work", 2000, 0..=100_000_000)?;
    let lock_cpu = a.choice("cpu_lock", &["on", "off"])? == "on";
    let _ = m;
    log::info!(
        "schbench: {messengers} message thread(s) x {workers} workers, {} ms, sleep {} us, {ops} ops of {work} (per-CPU lock {})",
        duration_ns / 1_000_000,
        sleep_ns / 1000,
        if lock_cpu { "on" } else { "off" }
    );
    let sh = Arc::new(Shared {
        stop: AtomicBool::new(false),
        cpu_locks: (0..crate::arch::percpu::MAX_CPUS)
            .map(|_| Mutex::new(0))
            .collect(),
        requests: AtomicU64::new(0),
    });
    let msgs: Vec<Arc<Messenger>> = (0..messengers)
        .map(|_| {
            Arc::new(Messenger {
                done: IrqSpinLock::new(Vec::new()),
                wq: WaitQueue::new(),
                workers: (0..workers)
                    .map(|_| Worker {
                        mail: IrqSpinLock::new(Mailbox {
                            posted: false,
                            stamp: 0,
                        }),
                        wq: WaitQueue::new(),
                    })
                    .collect(),
            })
        })
        .collect();
    let results = Arc::new(IrqSpinLock::new(WorkerStats::default()));
    watchdog::arm(30_000_000_000);
    let interval = Interval::start();
    let t0 = interval.t0;
    let deadline = t0 + duration_ns;
    let mut handles = Vec::new();
    for (mi, msg) in msgs.iter().enumerate() {
        for wi in 0..workers {
            let (msg, sh, results) = (msg.clone(), sh.clone(), results.clone());
            handles.push(task::spawn(
                SpawnOptions {
                    name: alloc::format!("sb-worker{mi}.{wi}"),
                    ..Default::default()
                },
                move || {
                    let st = worker(wi, &msg, &sh, sleep_ns, ops, work, lock_cpu);
                    let mut r = results.lock();
                    r.wakeup.merge(&st.wakeup);
                    r.request.merge(&st.request);
                },
            ));
        }
        let m2 = msg.clone();
        handles.push(task::spawn(
            SpawnOptions {
                name: alloc::format!("sb-message{mi}"),
                ..Default::default()
            },
            move || messenger(&m2, deadline),
        ));
    }
    // Let the run go, then stop every worker.
    while time::now_ns() < deadline {
        task::sleep_ns(10_000_000);
    }
    sh.stop.store(true, Ordering::Release);
    for msg in &msgs {
        for w in &msg.workers {
            w.wq.wake_all(false);
        }
        msg.wq.wake_all(false);
    }
    for h in handles {
        h.join();
    }
    let elapsed = interval.elapsed_ns();
    let sched = interval.sched_json();
    watchdog::disarm();

    let r = results.lock();
    let requests = sh.requests.load(Ordering::Relaxed);
    let rps = requests * 1_000_000_000 / elapsed.max(1);
    let (mut wake, mut req) = (String::new(), String::new());
    let _ = r.wakeup.write_json(&mut wake);
    let _ = r.request.write_json(&mut req);
    Record::new("schbench")
        .u64("messengers", messengers as u64)
        .u64("workers", workers as u64)
        .u64("sleep_us", sleep_ns / 1000)
        .u64("ops", ops)
        .u64("work", work)
        .bool("cpu_lock", lock_cpu)
        .u64("requests", requests)
        .u64("rps", rps)
        .u64("elapsed_ns", elapsed)
        .raw("wakeup_latency_ns", &wake)
        .raw("request_latency_ns", &req)
        .raw("per_cpu", &interval.per_cpu_json())
        .raw("sched", &sched)
        .emit();
    let us = |v: u64| v / 1000;
    log::info!(
        "Wakeup Latencies percentiles (usec): 50.0th {} 90.0th {} * 99.0th {} 99.9th {} (min {} max {}, {} samples)",
        us(r.wakeup.quantile(500)),
        us(r.wakeup.quantile(900)),
        us(r.wakeup.quantile(990)),
        us(r.wakeup.quantile(999)),
        us(if r.wakeup.count == 0 { 0 } else { r.wakeup.min }),
        us(r.wakeup.max),
        r.wakeup.count
    );
    log::info!(
        "Request Latencies percentiles (usec): 50.0th {} 90.0th {} * 99.0th {} 99.9th {} (min {} max {}, {} samples)",
        us(r.request.quantile(500)),
        us(r.request.quantile(900)),
        us(r.request.quantile(990)),
        us(r.request.quantile(999)),
        us(if r.request.count == 0 {
            0
        } else {
            r.request.min
        }),
        us(r.request.max),
        r.request.count
    );
    log::info!("average rps: {rps}");
    if requests == 0 || r.wakeup.count != requests || r.request.count != requests {
        return Err(alloc::format!(
            "schbench: {requests} requests but {} wakeup and {} request samples",
            r.wakeup.count,
            r.request.count
        ));
    }
    Ok(ExitCode::Success)
}
