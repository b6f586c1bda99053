//! `--engine local`: the sweep's runs on this host, up to `--jobs` host
//! cores busy at once. A run occupies as many cores as it runs host threads
//! ([`super::plan::weight`]: one for an `--icount` QEMU or a simulator run,
//! one per vCPU for multi-threaded TCG, capped at `--jobs`). Runs start in
//! matrix order; a run that needs more free cores than there are waits
//! for them rather than being overtaken, so a big run is never starved.
//! With `isolate`, each run is a child process, so a crash ends one run.

use std::sync::{Condvar, Mutex};

use anyhow::Result;

use super::dir::{Header, SweepDir};
use super::plan::Task;
use super::progress::{HEARTBEAT, Progress};
use crate::launch::Launcher;

/// Runs `todo` (tasks not yet done) in `dir`; returns the final counts.
/// An error that stops the sweep itself (an unwritable directory) ends it
/// after the runs in flight.
pub fn run(
    dir: &SweepDir,
    header: &Header,
    todo: &[Task],
    launcher: Option<&Launcher>,
    jobs: u32,
    isolate: Option<&std::path::Path>,
    mut progress: Progress,
) -> Result<Progress> {
    let weights: Vec<u32> = todo
        .iter()
        .map(|t| super::argv::from_words(&t.args).map(|r| super::plan::weight(&r).min(jobs)))
        .collect::<Result<_>>()?;
    struct State {
        next: usize,
        free: u32,
        progress: Progress,
        fatal: Option<anyhow::Error>,
    }
    let state = Mutex::new(State {
        next: 0,
        free: jobs,
        progress: progress.clone(),
        fatal: None,
    });
    let cv = Condvar::new();
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(todo.len() as u32) {
            s.spawn(|| {
                loop {
                    let (i, w) = {
                        let mut st = lock();
                        loop {
                            if st.fatal.is_some() || st.next >= todo.len() {
                                return;
                            }
                            let w = weights[st.next];
                            if w <= st.free {
                                st.free -= w;
                                st.next += 1;
                                st.progress.running += 1;
                                break (st.next - 1, w);
                            }
                            st = cv.wait(st).unwrap_or_else(|e| e.into_inner());
                        }
                    };
                    let t = &todo[i];
                    let res = match isolate {
                        Some(exe) => super::exec::execute_in_child(dir, t, exe),
                        None => super::exec::execute(dir, header, t, launcher),
                    };
                    let mut st = lock();
                    st.free += w;
                    st.progress.running -= 1;
                    match res {
                        Ok(r) => {
                            let what = if r.success {
                                st.progress.ok += 1;
                                "ok".to_string()
                            } else {
                                st.progress.failed += 1;
                                format!(
                                    "FAILED ({}; log: {})",
                                    r.error.as_deref().unwrap_or(&r.outcome),
                                    dir.log_path(t.task).display()
                                )
                            };
                            eprintln!(
                                "xtask: {} | task {} {}{} op {} run {}: {what}, {:.1} s",
                                st.progress.line(),
                                t.task,
                                if t.part.is_empty() {
                                    String::new()
                                } else {
                                    format!("{} ", t.part)
                                },
                                t.config,
                                t.op,
                                t.run,
                                r.wall_s
                            );
                        }
                        Err(e) => {
                            eprintln!("xtask: task {}: {e:#}; stopping the sweep", t.task);
                            st.fatal.get_or_insert(e);
                        }
                    }
                    cv.notify_all();
                }
            });
        }
        // The heartbeat: a line at least every HEARTBEAT while runs go on.
        let mut st = lock();
        loop {
            if st.progress.running == 0 && (st.next >= todo.len() || st.fatal.is_some()) {
                break;
            }
            let (g, timeout) = cv
                .wait_timeout(st, HEARTBEAT)
                .unwrap_or_else(|e| e.into_inner());
            st = g;
            if timeout.timed_out() {
                eprintln!("xtask: {}", st.progress.line());
            }
        }
    });
    let st = state.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = st.fatal {
        return Err(e);
    }
    progress = st.progress;
    Ok(progress)
}
