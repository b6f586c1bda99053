//! The trace as ftrace text: the layout of `/sys/kernel/tracing/trace`
//! with the `nop` tracer and the `sched` events enabled (a `# tracer: nop`
//! header, the latency-format column legend, one line per event), which
//! Perfetto's systrace text importer reads (ui.perfetto.dev,
//! trace_processor). It is not what `trace-cmd report` prints: trace-cmd
//! records a binary `trace.dat` and its `report` prints its own layout
//! (its own columns, and event plugins that print `sched_switch`
//! differently); KernelShark opens only `trace.dat`, so neither reads this
//! file.
//!
//! Each line is Linux's `trace_print_context` + `trace_print_lat_fmt` +
//! `trace_print_time` (kernel/trace/trace_output.c),
//! `"%16s-%-7d [%03d] %s %5lu.%06lu: %s: "`, then the event's `TP_printk`
//! from include/trace/events/sched.h:
//!
//! - `sched_switch`: `prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s
//!   ==> next_comm=%s next_pid=%d next_prio=%d`, printed in the previous
//!   thread's context;
//! - `sched_waking`, `sched_wakeup` (the `sched_wakeup_template` since Linux
//!   4.x: `comm=%s pid=%d prio=%d target_cpu=%03d`), both in the waker's
//!   context on the waker's CPU at the wakeup's time (the kernel wakes and
//!   enqueues in one step);
//! - `sched_wakeup_new` (same fields) in the parent's context;
//! - `sched_migrate_task`: `comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d`,
//!   for a balancer or exec move in the context of the CPU that moved it
//!   (the reason is only in the JSON timeline), and for a wakeup that put
//!   its thread on another CPU than the one it last ran or was queued on,
//!   between that wakeup's `sched_waking` and `sched_wakeup`, as Linux's
//!   `try_to_wake_up()` calls `set_task_cpu()` (which traces it) between
//!   the two. The kernel records only the wakeup's target; the thread's
//!   CPU is followed through its fork, wakeups and migrations
//!   ([`super::timeline`]). Fork placement is not printed as a migration,
//!   as in Linux (`wake_up_new_task()` sets the CPU without the
//!   tracepoint): it is `sched_wakeup_new`'s `target_cpu`.
//!
//! Perfetto's reader (src/trace_processor/importers/systrace:
//! systrace_trace_parser.cc, systrace_line_tokenizer.cc,
//! systrace_line_parser.cc) needs "# tracer" in the first bytes, skips
//! lines starting with '#', finds
//! `-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*([a-zA-Z.]{3}[0-9a-f.]{1,2}\s*)?(\d+\.\d+):\s+(\S+):`
//! (the task name is everything before it) and splits the arguments on
//! spaces, then each on '='; it reads `sched_switch` and `sched_waking`.
//! So names lose whitespace and '=' (each becomes '_'), an unnamed thread
//! is `<...>` (ftrace's unknown comm), and names are not cut to Linux's
//! 15 characters.
//!
//! What the kernel does not record is filled in as Linux would print it:
//! the idle task is `<idle>-0` as the line's task and `swapper/N` in the
//! fields; every priority is 120 (nice 0); the flags are `d....` (every
//! event is recorded with interrupts off; the other flags are unknown);
//! `prev_state` is inferred (`R`: ran again, or was moved by the balancer,
//! with no wakeup in between; `S`: woken before that, or while on its way
//! off the CPU; `X`: never seen again, so exited). Times are the trace
//! clock's seconds with 6 decimals, as the trace file prints them; lines
//! are in the global order of the JSON timeline and the latency table.
//!
//! When a CPU dropped events (past `--trace-events`) the text stops at the
//! cut ([`super::decode::Cut`]: before it, every CPU's events are all
//! there), and the header says where, why, and how many events are left
//! out. A switch whose thread does nothing else before the cut has a
//! guessed `prev_state`, read off the events recorded after the cut
//! (which miss the dropped ones); the header counts them.

use std::fmt::Write as _;

use anyhow::Result;
use serde_json::Value;

use super::TraceSummary;
use super::decode::{Decoded, What, decode};
use super::timeline::{self, Left, Step};

/// Priority printed for every thread (Linux's nice 0).
const PRIO: u32 = 120;

/// Builds the ftrace text from a run's records; errors if the run carried
/// no trace.
pub fn ftrace_text(records: &[Value]) -> Result<(String, TraceSummary)> {
    let d = decode(records)?;
    let t = timeline::build(&d);
    let summary = TraceSummary::of(&d);
    let mut out = String::new();
    out.push_str("# tracer: nop\n#\n");
    let _ = writeln!(
        out,
        "# schedlab scheduler trace: {} events on {} CPUs, {} dropped (past --trace-events)",
        summary.events, summary.cpus, summary.dropped
    );
    if let Some(c) = &d.cut {
        let _ = writeln!(out, "# trace {}", c.describe());
        let _ = writeln!(
            out,
            "# {} switches before the cut have a prev_state that is a guess: their thread does nothing else before the cut, \
             and the events recorded after it miss the dropped ones (S: it left its CPU idle or its next recorded event is a wakeup; \
             R: it ran again or was moved; X: never seen again)",
            t.guessed
        );
    }
    out.push_str(concat!(
        "#\n",
        "#                                _-----=> irqs-off/BH-disabled\n",
        "#                               / _----=> need-resched\n",
        "#                              | / _---=> hardirq/softirq\n",
        "#                              || / _--=> preempt-depth\n",
        "#                              ||| / _-=> migrate-disable\n",
        "#                              |||| /     delay\n",
        "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n",
        "#              | |         |   |||||     |         |\n",
    ));
    for s in &t.steps {
        line(&mut out, &d, s);
    }
    Ok((out, summary))
}

/// The line(s) of one event.
fn line(out: &mut String, d: &Decoded, s: &Step) {
    let e = s.ev;
    let task = |tid: u64| {
        if tid == 0 {
            "<idle>".to_string()
        } else {
            comm(d, tid)
        }
    };
    // Whose context the line is printed in.
    let context = match e.what {
        What::Switch { prev, .. } => prev,
        _ => s.running,
    };
    let mut emit = |event: &str, body: String| {
        let _ = writeln!(
            out,
            "{:>16}-{:<7} [{:03}] d.... {:>5}.{:06}: {event}: {body}",
            task(context),
            context,
            e.cpu,
            e.ts / 1_000_000_000,
            e.ts % 1_000_000_000 / 1000,
        );
    };
    let field_comm = |tid: u64| {
        if tid == 0 {
            format!("swapper/{}", e.cpu)
        } else {
            comm(d, tid)
        }
    };
    let wakeup = |tid: u64, target: u64| {
        format!(
            "comm={} pid={tid} prio={PRIO} target_cpu={target:03}",
            comm(d, tid)
        )
    };
    let migrate = |tid: u64, from: u64, to: u64| {
        format!(
            "comm={} pid={tid} prio={PRIO} orig_cpu={from} dest_cpu={to}",
            comm(d, tid)
        )
    };
    match e.what {
        What::Switch { next, prev } => {
            let state = match s.left {
                None | Some(Left::Runnable) => "R",
                Some(Left::Sleeping) => "S",
                Some(Left::Gone) => "X",
            };
            emit(
                "sched_switch",
                format!(
                    "prev_comm={} prev_pid={prev} prev_prio={PRIO} prev_state={state} ==> next_comm={} next_pid={next} next_prio={PRIO}",
                    field_comm(prev),
                    field_comm(next)
                ),
            );
        }
        What::Wakeup { tid, target, .. } => {
            emit("sched_waking", wakeup(tid, target));
            if let Some(from) = s.migrated_from {
                emit("sched_migrate_task", migrate(tid, from, target));
            }
            emit("sched_wakeup", wakeup(tid, target));
        }
        What::Fork { tid, target } => emit("sched_wakeup_new", wakeup(tid, target)),
        What::Migrate { tid, from, to, .. } => emit("sched_migrate_task", migrate(tid, from, to)),
    }
}

/// A thread's name as one token: whitespace and '=' become '_' (Perfetto
/// splits the line on them); unnamed threads are `<...>`.
fn comm(d: &Decoded, tid: u64) -> String {
    match d.names.get(&tid) {
        None => "<...>".to_string(),
        Some(n) if n.is_empty() => "<...>".to_string(),
        Some(n) => n
            .chars()
            .map(|c| {
                if c.is_whitespace() || c == '=' {
                    '_'
                } else {
                    c
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_are_trace_cmds_sched_events() {
        let records = vec![
            json!({"type": "trace_threads", "threads": [[1, "main"], [2, "hb recv=0"]]}),
            json!({"type": "trace", "cpu": 0, "dropped": 0, "events": [
                [1_000, 3, 2, 1, 0],              // main forks 2 onto CPU 1
                [2_500, 0, 1, 0, 0],              // idle -> main
                [1_234_567_891, 1, 2, 1, 1],      // main wakes 2 onto CPU 1
                [1_300_000_000, 0, 0, 1, 0]       // main -> idle, never seen again
            ]}),
            json!({"type": "trace", "cpu": 1, "dropped": 0, "events": [
                [5_000, 0, 2, 0, 0],              // idle -> 2
                [9_000, 0, 0, 2, 0],              // 2 -> idle (woken later: S)
                [1_234_580_000, 2, 2, 1, 50],     // balance: 2 from CPU 1 to CPU 3 (3*16+2)
                [1_234_600_000, 0, 2, 0, 0],      // idle -> 2
                [1_234_700_000, 0, 0, 2, 0]       // 2 -> idle, never seen again
            ]}),
        ];
        let (text, s) = ftrace_text(&records).unwrap();
        assert_eq!((s.events, s.dropped, s.cpus, s.threads), (9, 0, 2, 2));
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("# tracer: nop"));
        let events: Vec<&str> = lines.filter(|l| !l.starts_with('#')).collect();
        let want = [
            "          <idle>-0       [000] d....     0.000001: sched_wakeup_new: comm=hb_recv_0 pid=2 prio=120 target_cpu=001",
            "          <idle>-0       [000] d....     0.000002: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=main next_pid=1 next_prio=120",
            "          <idle>-0       [001] d....     0.000005: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hb_recv_0 next_pid=2 next_prio=120",
            "       hb_recv_0-2       [001] d....     0.000009: sched_switch: prev_comm=hb_recv_0 prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120",
            "            main-1       [000] d....     1.234567: sched_waking: comm=hb_recv_0 pid=2 prio=120 target_cpu=001",
            "            main-1       [000] d....     1.234567: sched_wakeup: comm=hb_recv_0 pid=2 prio=120 target_cpu=001",
            "          <idle>-0       [001] d....     1.234580: sched_migrate_task: comm=hb_recv_0 pid=2 prio=120 orig_cpu=1 dest_cpu=3",
            "          <idle>-0       [001] d....     1.234600: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hb_recv_0 next_pid=2 next_prio=120",
            "       hb_recv_0-2       [001] d....     1.234700: sched_switch: prev_comm=hb_recv_0 prev_pid=2 prev_prio=120 prev_state=X ==> next_comm=swapper/1 next_pid=0 next_prio=120",
            "            main-1       [000] d....     1.300000: sched_switch: prev_comm=main prev_pid=1 prev_prio=120 prev_state=X ==> next_comm=swapper/0 next_pid=0 next_prio=120",
        ];
        assert_eq!(events, want);
        assert!(
            text.ends_with('\n'),
            "Perfetto drops an unterminated last line"
        );
    }

    #[test]
    fn unnamed_threads_are_ftraces_unknown_comm() {
        let records = vec![json!({"type": "trace", "cpu": 2, "dropped": 0, "events": [
            [7, 0, 9, 0, 0]
        ]})];
        let (text, _) = ftrace_text(&records).unwrap();
        assert!(
            text.contains(
                "[002] d....     0.000000: sched_switch: prev_comm=swapper/2 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=<...> next_pid=9"
            ),
            "{text}"
        );
        assert!(ftrace_text(&[json!({"type": "boot"})]).is_err());
    }

    #[test]
    fn a_wakeup_that_moves_its_thread_prints_sched_migrate_task_between_waking_and_wakeup() {
        let records = vec![
            json!({"type": "trace_threads", "threads": [[1, "main"], [2, "w"]]}),
            json!({"type": "trace", "cpu": 0, "dropped": 0, "events": [
                [1_000, 3, 2, 1, 0],      // main forks w onto CPU 1
                [9_000, 1, 2, 0, 1]       // main wakes w onto CPU 0 (sync)
            ]}),
            json!({"type": "trace", "cpu": 1, "dropped": 0, "events": [
                [2_000, 0, 2, 0, 0],      // idle -> w
                [3_000, 0, 0, 2, 0]       // w -> idle
            ]}),
        ];
        let (text, _) = ftrace_text(&records).unwrap();
        let events: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            &events[3..],
            [
                "          <idle>-0       [000] d....     0.000009: sched_waking: comm=w pid=2 prio=120 target_cpu=000",
                "          <idle>-0       [000] d....     0.000009: sched_migrate_task: comm=w pid=2 prio=120 orig_cpu=1 dest_cpu=0",
                "          <idle>-0       [000] d....     0.000009: sched_wakeup: comm=w pid=2 prio=120 target_cpu=000",
            ]
        );
    }

    #[test]
    fn a_trace_with_drops_is_cut_and_says_so() {
        let records = vec![
            json!({"type": "trace_threads", "threads": [[1, "a"], [2, "b"]]}),
            json!({"type": "trace", "cpu": 0, "dropped": 0, "events": [
                [1_000, 0, 1, 0, 0],          // idle -> a
                [5_000, 0, 0, 1, 0],          // a -> idle: woken past the cut
                [8_000, 1, 1, 0, 0],
                [9_000, 0, 1, 0, 0]
            ]}),
            json!({"type": "trace", "cpu": 1, "dropped": 7, "events": [
                [2_000, 0, 2, 0, 0],          // idle -> b
                [3_000, 0, 0, 2, 0],          // b -> idle: never seen again
                [6_000, 0, 2, 0, 0]           // the cut: CPU 1's last kept event
            ]}),
        ];
        let (text, s) = ftrace_text(&records).unwrap();
        assert_eq!((s.events, s.dropped), (4, 7));
        let cut = s.cut.clone().unwrap();
        assert_eq!(
            (cut.at_ns, cut.recorded_after, cut.left_out),
            (6_000, 3, 10)
        );
        let header: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
        assert!(
            header.contains(&"# trace cut at 0.000006000 s because events were dropped: CPU 1 (of 1 CPUs that dropped events past --trace-events) kept none after then; every CPU's events before the cut are here, 10 events are left out (7 dropped by the recorder, 3 recorded at or after the cut)"),
            "{text}"
        );
        assert!(
            header
                .iter()
                .any(|l| l
                    .starts_with("# 2 switches before the cut have a prev_state that is a guess")),
            "{text}"
        );
        let events: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(events.len(), 4);
        assert!(
            events[3].contains(
                "0.000005: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S"
            ),
            "{}",
            events[3]
        );
        assert!(
            events[2].contains(
                "0.000003: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S"
            ),
            "left CPU 1 idle: {}",
            events[2]
        );
        assert!(!text.contains("prev_state=X"));
    }
}
