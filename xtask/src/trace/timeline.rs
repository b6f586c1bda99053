//! What the trace's events mean together, from one walk in the global order
//! ([`Decoded::merged`]): the thread each CPU was running at every event,
//! the stretches threads ran, the switch-in each wakeup or fork led to,
//! the wakeups that moved their thread to another CPU, and the state each
//! switched-out thread was left in. The exports (Chrome JSON, ftrace text)
//! and the latency table all read this.

use std::collections::{HashMap, HashSet};

use super::decode::{Decoded, Event, What};

/// The state a switch left its previous thread in. The kernel does not
/// record it; it is read off what the thread does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Left {
    /// Still runnable: it ran again, or the balancer moved it, with no
    /// wakeup in between (preempted or yielded).
    Runnable,
    /// Blocked: a wakeup came before it ran again (or while it was on its
    /// way off the CPU).
    Sleeping,
    /// Never seen again in the trace: it exited. When the trace was cut
    /// (a CPU dropped events), the events recorded after the cut are read
    /// too, so a thread that only shows up again after the cut is not
    /// taken for gone.
    Gone,
}

/// One event with what the walk learned about it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step {
    pub ev: Event,
    /// The thread running on the event's CPU just before it (0 = idle).
    pub running: u64,
    /// A wakeup or fork: the step of its thread's first switch-in after it.
    pub led_to: Option<usize>,
    /// A wakeup that moved its thread: the CPU the thread last ran or was
    /// queued on, which differs from the wakeup's target (the kernel's
    /// `set_task_cpu()` during `try_to_wake_up()`, counted as a "wakeup"
    /// migration; the trace records only the target).
    pub migrated_from: Option<u64>,
    /// A switch away from a thread: the state that thread was left in.
    pub left: Option<Left>,
}

/// A stretch a thread ran on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slice {
    pub cpu: u64,
    pub tid: u64,
    pub start: u64,
    /// `None`: still running when the CPU's trace ends (or at the cut).
    pub end: Option<u64>,
}

pub(crate) struct Timeline {
    pub steps: Vec<Step>,
    /// In order of their switch-in.
    pub slices: Vec<Slice>,
    /// The last event's time, or the cut's when the trace was cut.
    pub last_ts: u64,
    /// Switches whose `left` is a guess: the trace was cut and the thread
    /// was not seen again before the cut (0 when the trace is complete).
    pub guessed: usize,
}

pub(crate) fn build(d: &Decoded) -> Timeline {
    // Before a CPU's first switch it runs that switch's previous thread.
    let mut running: HashMap<u64, u64> = d
        .per_cpu
        .iter()
        .map(|(&cpu, events)| {
            let first = events.iter().find_map(|e| match e.what {
                What::Switch { prev, .. } => Some(prev),
                _ => None,
            });
            (cpu, first.unwrap_or(0))
        })
        .collect();
    let mut steps: Vec<Step> = Vec::with_capacity(d.event_count());
    let mut slices: Vec<Slice> = Vec::new();
    let mut open: HashMap<u64, usize> = HashMap::new(); // cpu -> slice
    let mut on_cpu: HashMap<u64, u64> = running
        .iter()
        .filter(|&(_, &tid)| tid != 0)
        .map(|(&cpu, &tid)| (tid, cpu))
        .collect(); // tid -> cpu
    let mut waking: HashMap<u64, Vec<usize>> = HashMap::new(); // tid -> wakeup/fork steps
    let mut switched_out: HashMap<u64, usize> = HashMap::new(); // tid -> switch step
    let mut woken_on_cpu: HashSet<u64> = HashSet::new();
    // tid -> the CPU it last ran or was queued on (the scheduler's
    // task_cpu()): set by forks, wakeups and migrations, the only events
    // that change it. A switch only tells it for a thread seen first there
    // (one that existed before the trace started): in the kernel, the
    // wakee's CPU can record its switch-in a little before the waker
    // records the wakeup.
    let mut last_cpu: HashMap<u64, u64> = on_cpu.clone();
    for (i, ev) in d.merged().into_iter().enumerate() {
        let cpu = ev.cpu;
        steps.push(Step {
            ev,
            running: running.get(&cpu).copied().unwrap_or(0),
            led_to: None,
            migrated_from: None,
            left: None,
        });
        match ev.what {
            What::Wakeup { tid, .. } | What::Fork { tid, .. } => {
                waking.entry(tid).or_default().push(i);
                if let What::Fork { target, .. } = ev.what {
                    last_cpu.insert(tid, target);
                }
                if let What::Wakeup { target, .. } = ev.what {
                    if let Some(from) = last_cpu.insert(tid, target)
                        && from != target
                    {
                        steps[i].migrated_from = Some(from);
                    }
                    if let Some(j) = switched_out.remove(&tid) {
                        steps[j].left = Some(Left::Sleeping);
                    } else if on_cpu.contains_key(&tid) {
                        // The kernel marks a thread blocked before it
                        // switches away; a waker on another CPU can come
                        // in between.
                        woken_on_cpu.insert(tid);
                    }
                }
            }
            What::Migrate { tid, to, .. } => {
                last_cpu.insert(tid, to);
                // The balancer moves queued threads only.
                if let Some(j) = switched_out.remove(&tid) {
                    steps[j].left = Some(Left::Runnable);
                }
            }
            What::Switch { next, prev } => {
                for tid in [next, prev] {
                    if tid != 0 {
                        last_cpu.entry(tid).or_insert(cpu);
                    }
                }
                let ran = open.remove(&cpu).map(|s| {
                    slices[s].end = Some(ev.ts);
                    slices[s].tid
                });
                for tid in ran.into_iter().chain([prev]) {
                    if on_cpu.get(&tid) == Some(&cpu) {
                        on_cpu.remove(&tid);
                    }
                }
                if prev != 0 {
                    if woken_on_cpu.remove(&prev) {
                        steps[i].left = Some(Left::Sleeping);
                    } else {
                        switched_out.insert(prev, i);
                    }
                }
                if next != 0 {
                    if let Some(j) = switched_out.remove(&next) {
                        steps[j].left = Some(Left::Runnable);
                    }
                    woken_on_cpu.remove(&next);
                    for w in waking.remove(&next).unwrap_or_default() {
                        steps[w].led_to = Some(i);
                    }
                    open.insert(cpu, slices.len());
                    on_cpu.insert(next, cpu);
                    slices.push(Slice {
                        cpu,
                        tid: next,
                        start: ev.ts,
                        end: None,
                    });
                }
                running.insert(cpu, next);
            }
        }
    }
    // Threads switched out and not seen again before the cut: the events
    // recorded after it are all there is to go on, and they miss what the
    // CPUs that dropped events did, so the state is a guess. A thread that
    // shows up again did not exit; one that left its CPU idle did not stay
    // runnable (a runnable thread stays on its runqueue and is picked
    // before idle), so it blocked; otherwise it blocked if its next
    // recorded event is a wakeup, else it was preempted. One never seen
    // again is taken to have exited.
    let guessed = switched_out.len();
    if d.cut.is_some() {
        for ev in d.merged_past_cut() {
            if switched_out.is_empty() {
                break;
            }
            let (tid, left) = match ev.what {
                What::Wakeup { tid, .. } => (tid, Left::Sleeping),
                What::Migrate { tid, .. } => (tid, Left::Runnable),
                What::Switch { next, .. } => (next, Left::Runnable),
                What::Fork { .. } => continue,
            };
            if let Some(j) = switched_out.remove(&tid) {
                let to_idle = matches!(steps[j].ev.what, What::Switch { next: 0, .. });
                steps[j].left = Some(if to_idle { Left::Sleeping } else { left });
            }
        }
    }
    for j in switched_out.into_values() {
        steps[j].left = Some(Left::Gone);
    }
    let last_ts = match d.cut {
        Some(c) => c.at,
        None => steps.iter().map(|s| s.ev.ts).max().unwrap_or(0),
    };
    Timeline {
        steps,
        slices,
        guessed: if d.cut.is_some() { guessed } else { 0 },
        last_ts,
    }
}

#[cfg(test)]
mod tests {
    use super::super::decode::decode;
    use super::*;
    use serde_json::json;

    #[test]
    fn the_walk_links_wakeups_to_runs_and_infers_left_states() {
        let records = vec![
            json!({"type": "trace", "cpu": 0, "dropped": 0, "events": [
                [50, 3, 2, 1, 0],    // 1 forks 2 onto CPU 1 (1 already running)
                [100, 0, 3, 1, 0],   // 1 -> 3: 1 left runnable (runs again at 400)
                [150, 1, 4, 1, 0],   // 3 wakes 4 onto CPU 1
                [200, 0, 0, 3, 0],   // 3 -> idle: 3 is woken at 300, so it slept
                [300, 1, 3, 0, 0],   // idle (an interrupt) wakes 3 onto CPU 0
                [400, 0, 1, 0, 0],   // idle -> 1
                [500, 0, 3, 1, 0]    // 1 -> 3: 1 never seen again: gone
            ]}),
            json!({"type": "trace", "cpu": 1, "dropped": 0, "events": [
                [120, 0, 2, 0, 0],   // idle -> 2 (the fork's run)
                [180, 0, 4, 2, 0],   // 2 -> 4 (the wakeup's run); 2 was woken while running
                [600, 0, 0, 4, 0]    // 4 -> idle, still runnable
            ]}),
            json!({"type": "trace", "cpu": 2, "dropped": 0, "events": [
                [170, 1, 2, 1, 0],   // wakes 2 while it still runs on CPU 1
                [650, 2, 4, 1, 35]   // newidle pulls 4 from CPU 1 (4 was queued)
            ]}),
        ];
        let t = build(&decode(&records).unwrap());
        let at = |cpu: u64, ts: u64| {
            t.steps
                .iter()
                .position(|s| s.ev.cpu == cpu && s.ev.ts == ts)
                .unwrap()
        };
        let s = |cpu, ts| t.steps[at(cpu, ts)];
        assert_eq!(s(0, 50).running, 1, "CPU 0 ran 1 before its first switch");
        assert_eq!(s(0, 50).led_to, Some(at(1, 120)));
        assert_eq!(s(0, 150).running, 3);
        assert_eq!(s(0, 150).led_to, Some(at(1, 180)));
        assert_eq!(s(0, 300).running, 0);
        assert_eq!(s(0, 300).led_to, Some(at(0, 500)));
        assert_eq!(s(2, 170).led_to, None, "2 never runs again");
        assert_eq!(s(0, 100).left, Some(Left::Runnable));
        assert_eq!(s(0, 200).left, Some(Left::Sleeping));
        assert_eq!(s(0, 500).left, Some(Left::Gone));
        assert_eq!(s(1, 180).left, Some(Left::Sleeping), "woken on its way out");
        assert_eq!(s(1, 600).left, Some(Left::Runnable), "migrated, not woken");
        assert_eq!(s(0, 400).left, None, "idle has no state");
        assert_eq!(
            t.slices
                .iter()
                .map(|s| (s.cpu, s.tid, s.start, s.end))
                .collect::<Vec<_>>(),
            vec![
                (0, 3, 100, Some(200)),
                (1, 2, 120, Some(180)),
                (1, 4, 180, Some(600)),
                (0, 1, 400, Some(500)),
                (0, 3, 500, None),
            ]
        );
        assert_eq!(t.last_ts, 650);
    }

    #[test]
    fn a_wakeup_onto_another_cpu_than_the_threads_last_is_a_migration() {
        let records = vec![
            json!({"type": "trace", "cpu": 0, "dropped": 0, "events": [
                [10, 3, 2, 1, 0],    // fork 2 onto CPU 1
                [40, 1, 2, 0, 0],    // wake 2 onto CPU 0: from CPU 1
                [50, 0, 2, 0, 0],    // idle -> 2
                [60, 0, 0, 2, 0],    // 2 -> idle
                [70, 1, 2, 0, 0],    // wake 2 onto CPU 0 again: no move
                [75, 0, 2, 0, 0],    // idle -> 2
                [80, 0, 0, 2, 0],    // 2 -> idle
                [85, 1, 9, 1, 0],    // wake 9 (never seen before): no move known
                [90, 2, 2, 0, 18],   // a migration of 2 from CPU 0 to CPU 1 (1 * 16 + balance)
                [95, 1, 2, 1, 0],    // wake 2 onto CPU 1: where the balancer put it
                [99, 1, 2, 2, 0]     // wake 2 onto CPU 2 (it was not running): from CPU 1
            ]}),
            json!({"type": "trace", "cpu": 1, "dropped": 0, "events": [
                [20, 0, 2, 0, 0],    // idle -> 2 on CPU 1
                [30, 0, 0, 2, 0]     // 2 -> idle
            ]}),
        ];
        let t = build(&decode(&records).unwrap());
        let moved: Vec<(u64, Option<u64>)> = t
            .steps
            .iter()
            .filter(|s| matches!(s.ev.what, What::Wakeup { .. }))
            .map(|s| (s.ev.ts, s.migrated_from))
            .collect();
        assert_eq!(
            moved,
            [
                (40, Some(1)),
                (70, None),
                (85, None),
                (95, None),
                (99, Some(1))
            ]
        );
        assert!(
            t.steps
                .iter()
                .all(|s| s.migrated_from.is_none() || matches!(s.ev.what, What::Wakeup { .. }))
        );
        assert_eq!(t.guessed, 0);
    }

    #[test]
    fn past_a_cut_states_are_read_off_the_later_records_and_counted_as_guesses() {
        let records = vec![
            json!({"type": "trace", "cpu": 0, "dropped": 5, "events": [
                [100, 0, 1, 0, 0],   // idle -> 1
                [200, 0, 2, 1, 0],   // 1 -> 2: woken after the cut: S (a guess)
                [300, 0, 3, 2, 0],   // 2 -> 3: runs again after the cut: R (a guess)
                [400, 0, 0, 3, 0],   // 3 -> idle: runs again after the cut, but left
                                     //   its CPU idle, so it blocked: S (a guess)
                [500, 0, 4, 0, 0],   // idle -> 4 ...
                [600, 0, 0, 4, 0],   // ... 4 -> idle: never seen again: X (a guess)
                [700, 0, 5, 0, 0]    // idle -> 5: the cut (CPU 0 kept nothing later)
            ]}),
            json!({"type": "trace", "cpu": 1, "dropped": 0, "events": [
                [150, 0, 6, 0, 0],   // idle -> 6
                [250, 0, 0, 6, 0],   // 6 -> idle, woken before the cut: S (known)
                [260, 1, 6, 1, 0],
                [800, 1, 1, 1, 0],   // past the cut: wakes 1
                [810, 0, 2, 0, 0],   // idle -> 2
                [820, 0, 3, 2, 0]    // 2 -> 3
            ]}),
        ];
        let t = build(&decode(&records).unwrap());
        let left = |ts: u64| {
            t.steps
                .iter()
                .find(|s| s.ev.ts == ts && matches!(s.ev.what, What::Switch { .. }))
                .and_then(|s| s.left)
        };
        assert_eq!(left(200), Some(Left::Sleeping));
        assert_eq!(left(300), Some(Left::Runnable));
        assert_eq!(left(400), Some(Left::Sleeping));
        assert_eq!(left(600), Some(Left::Gone));
        assert_eq!(left(250), Some(Left::Sleeping));
        assert!(
            t.steps.iter().all(|s| s.ev.ts < 700),
            "nothing from the cut on"
        );
        assert_eq!(t.guessed, 4);
        assert_eq!(t.last_ts, 700, "runs still open end at the cut");
        assert_eq!(
            t.slices.last().map(|s| (s.tid, s.end)),
            Some((4, Some(600)))
        );
    }
}
