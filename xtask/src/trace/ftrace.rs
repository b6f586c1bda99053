//! The trace as ftrace text: the lines `trace-cmd report` (or
//! `/sys/kernel/tracing/trace`) prints for the `sched` events, which
//! ui.perfetto.dev and trace_processor open as a "systrace" text trace.
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
//! - `sched_migrate_task`: `comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d`
//!   in the context of the CPU that moved it (the reason is only in the
//!   JSON timeline).
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
//! off the CPU; `X`: never seen again, so exited). Times are the
//! trace clock's seconds with 6 decimals, as trace-cmd prints them; lines
//! are in the global order of the JSON timeline and the latency table.

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
    let summary = TraceSummary {
        events: d.event_count(),
        dropped: d.dropped.values().sum(),
        cpus: d.per_cpu.len(),
        threads: d.names.len(),
    };
    let mut out = String::new();
    out.push_str("# tracer: nop\n#\n");
    let _ = writeln!(
        out,
        "# schedlab scheduler trace: {} events on {} CPUs, {} dropped (past --trace-events)",
        summary.events, summary.cpus, summary.dropped
    );
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
            emit("sched_wakeup", wakeup(tid, target));
        }
        What::Fork { tid, target } => emit("sched_wakeup_new", wakeup(tid, target)),
        What::Migrate { tid, from, to, .. } => emit(
            "sched_migrate_task",
            format!(
                "comm={} pid={tid} prio={PRIO} orig_cpu={from} dest_cpu={to}",
                comm(d, tid)
            ),
        ),
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
            json!({"type": "trace", "cpu": 1, "dropped": 4, "events": [
                [5_000, 0, 2, 0, 0],              // idle -> 2
                [9_000, 0, 0, 2, 0],              // 2 -> idle (woken later: S)
                [1_234_580_000, 2, 2, 1, 50],     // balance: 2 from CPU 1 to CPU 3 (3*16+2)
                [1_234_600_000, 0, 2, 0, 0],      // idle -> 2
                [1_234_700_000, 0, 0, 2, 0]       // 2 -> idle, never seen again
            ]}),
        ];
        let (text, s) = ftrace_text(&records).unwrap();
        assert_eq!((s.events, s.dropped, s.cpus, s.threads), (9, 4, 2, 2));
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
}
