//! What the trace's events mean together, from one walk in the global order
//! ([`Decoded::merged`]): the thread each CPU was running at every event,
//! the stretches threads ran, the switch-in each wakeup or fork led to, and
//! the state each switched-out thread was left in. The exports (Chrome
//! JSON, ftrace text) and the latency table all read this.

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
    /// Never seen again in the trace: it exited (or its later events were
    /// dropped).
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
    /// A switch away from a thread: the state that thread was left in.
    pub left: Option<Left>,
}

/// A stretch a thread ran on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slice {
    pub cpu: u64,
    pub tid: u64,
    pub start: u64,
    /// `None`: still running when the CPU's trace ends.
    pub end: Option<u64>,
}

pub(crate) struct Timeline {
    pub steps: Vec<Step>,
    /// In order of their switch-in.
    pub slices: Vec<Slice>,
    /// The last event's time.
    pub last_ts: u64,
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
    for (i, ev) in d.merged().into_iter().enumerate() {
        let cpu = ev.cpu;
        steps.push(Step {
            ev,
            running: running.get(&cpu).copied().unwrap_or(0),
            led_to: None,
            left: None,
        });
        match ev.what {
            What::Wakeup { tid, .. } | What::Fork { tid, .. } => {
                waking.entry(tid).or_default().push(i);
                if matches!(ev.what, What::Wakeup { .. }) {
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
            What::Migrate { tid, .. } => {
                // The balancer moves queued threads only.
                if let Some(j) = switched_out.remove(&tid) {
                    steps[j].left = Some(Left::Runnable);
                }
            }
            What::Switch { next, prev } => {
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
    for j in switched_out.into_values() {
        steps[j].left = Some(Left::Gone);
    }
    let last_ts = steps.iter().map(|s| s.ev.ts).max().unwrap_or(0);
    Timeline {
        steps,
        slices,
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
}
