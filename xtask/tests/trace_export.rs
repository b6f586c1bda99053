//! `--trace` exports read back and checked against the kernel's own
//! records (`trace`, `trace_threads`; docs/results.md), decoded here
//! independently of xtask's decoder: the ftrace text line by line, the
//! Chrome JSON's tracks and flows. On hand-built records and on a
//! simulated run (the simulator writes the kernel's records).

use std::collections::{BTreeMap, HashMap};

use clap::Parser;
use serde_json::{Value, json};
use xtask::cli::{Cli, Cmd};
use xtask::trace::TraceFormat;

fn run_args(extra: &[&str]) -> Result<xtask::cli::RunArgs, clap::Error> {
    let mut argv = vec!["xtask", "run", "--backend", "sim"];
    argv.extend_from_slice(extra);
    match Cli::try_parse_from(argv)?.command {
        Cmd::Run(r) => Ok(*r),
        _ => unreachable!(),
    }
}

/// One record event `[ts, kind, a, b, c]` on a CPU.
#[derive(Clone, Copy, Debug)]
struct Rec {
    ts: u64,
    kind: u64,
    a: u64,
    b: u64,
    c: u64,
}

/// The records' names and per-CPU events: all of them, or (see [`cut`])
/// those before the cut if a CPU dropped events.
fn raw(records: &[Value]) -> (HashMap<u64, String>, BTreeMap<u64, Vec<Rec>>) {
    let (names, mut cpus) = raw_all(records);
    if let Some(at) = cut(records) {
        for evs in cpus.values_mut() {
            evs.retain(|e| e.ts < at);
        }
    }
    (names, cpus)
}

/// Where the exports must stop: the earliest last recorded event of the
/// CPUs that dropped events (each keeps its first events).
fn cut(records: &[Value]) -> Option<u64> {
    let (_, cpus) = raw_all(records);
    records
        .iter()
        .filter(|r| r["type"] == "trace" && r["dropped"].as_u64().unwrap_or(0) > 0)
        .map(|r| {
            let cpu = r["cpu"].as_u64().unwrap();
            cpus.get(&cpu).and_then(|e| e.last()).map_or(0, |e| e.ts)
        })
        .min()
}

/// Every recorded event, per CPU.
fn raw_all(records: &[Value]) -> (HashMap<u64, String>, BTreeMap<u64, Vec<Rec>>) {
    let mut names = HashMap::new();
    let mut cpus: BTreeMap<u64, Vec<Rec>> = BTreeMap::new();
    for r in records {
        match r["type"].as_str() {
            Some("trace_threads") => {
                for t in r["threads"].as_array().unwrap() {
                    names.insert(t[0].as_u64().unwrap(), t[1].as_str().unwrap().to_string());
                }
            }
            Some("trace") => {
                let evs = cpus.entry(r["cpu"].as_u64().unwrap()).or_default();
                for e in r["events"].as_array().unwrap() {
                    let f = |i: usize| e[i].as_u64().unwrap();
                    evs.push(Rec {
                        ts: f(0),
                        kind: f(1),
                        a: f(2),
                        b: f(3),
                        c: f(4),
                    });
                }
            }
            _ => {}
        }
    }
    (names, cpus)
}

/// The wakeups that moved their thread, as (CPU, index in the CPU's
/// events) -> the CPU it came from: the thread's CPU (set by its fork,
/// wakeups and migrations; by a switch only for a thread not seen before)
/// differs from the wakeup's target. Events are walked by time, wakeups
/// and forks before switches at the same time, then by CPU.
fn wakeup_moves(cpus: &BTreeMap<u64, Vec<Rec>>) -> HashMap<(u64, usize), u64> {
    let mut all: Vec<(u64, bool, u64, usize, Rec)> = cpus
        .iter()
        .flat_map(|(&cpu, evs)| {
            evs.iter()
                .enumerate()
                .map(move |(i, &e)| (e.ts, e.kind == 0, cpu, i, e))
        })
        .collect();
    all.sort_by_key(|&(ts, switch, cpu, i, _)| (ts, switch, cpu, i));
    let mut at: HashMap<u64, u64> = HashMap::new();
    let mut moves = HashMap::new();
    for (_, _, cpu, i, e) in all {
        match e.kind {
            0 => {
                for tid in [e.a, e.b].into_iter().filter(|&t| t != 0) {
                    at.entry(tid).or_insert(cpu);
                }
            }
            1 => {
                if let Some(from) = at.insert(e.a, e.b).filter(|&f| f != e.b) {
                    moves.insert((cpu, i), from);
                }
            }
            2 => {
                at.insert(e.a, e.c >> 4);
            }
            _ => {
                at.insert(e.a, e.b);
            }
        }
    }
    moves
}

/// One ftrace line, split as Perfetto's systrace tokenizer does: the task
/// is everything before `-PID  [CPU]`, then flags, `SECS.USECS: `, the
/// event name, and `key=value` arguments split on spaces.
#[derive(Debug)]
struct Line {
    task: String,
    pid: u64,
    cpu: u64,
    ts_us: u64,
    event: String,
    args: HashMap<String, String>,
}

fn parse_line(l: &str) -> Result<Line, String> {
    let err = |why: &str| format!("{why}: {l}");
    // The first "-digits spaces [digits]" (the tokenizer's leftmost match).
    let (dash, pid, cpu, rest) = l
        .match_indices('-')
        .find_map(|(i, _)| {
            let after = &l[i + 1..];
            let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let pid = after[..digits].parse::<u64>().ok()?;
            let spaced = &after[digits..];
            let open = spaced.trim_start_matches(' ');
            if open.len() == spaced.len() || !open.starts_with('[') {
                return None;
            }
            let close = open.find(']')?;
            let cpu = open[1..close].parse::<u64>().ok()?;
            Some((i, pid, cpu, &open[close + 1..]))
        })
        .ok_or_else(|| err("no TASK-PID [CPU]"))?;
    let mut words = rest.split_whitespace();
    let flags = words.next().ok_or_else(|| err("no flags"))?;
    let ok_flags = flags.len() == 5
        && flags[..3]
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == '.')
        && flags[3..]
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == '.');
    if !ok_flags {
        return Err(err("bad flags"));
    }
    let ts = words
        .next()
        .and_then(|t| t.strip_suffix(':'))
        .ok_or_else(|| err("no time"))?;
    let (secs, micros) = ts.split_once('.').ok_or_else(|| err("time without '.'"))?;
    if micros.len() != 6 {
        return Err(err("time not in microseconds"));
    }
    let ts_us = secs.parse::<u64>().map_err(|_| err("seconds"))? * 1_000_000
        + micros.parse::<u64>().map_err(|_| err("microseconds"))?;
    let event = words
        .next()
        .and_then(|e| e.strip_suffix(':'))
        .ok_or_else(|| err("no event"))?
        .to_string();
    let args = words
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Ok(Line {
        task: l[..dash].trim().to_string(),
        pid,
        cpu,
        ts_us,
        event,
        args,
    })
}

/// The name a thread has in the text (as the export promises).
fn comm(names: &HashMap<u64, String>, tid: u64, cpu: u64) -> String {
    match names.get(&tid) {
        _ if tid == 0 => format!("swapper/{cpu}"),
        Some(n) if !n.is_empty() => n
            .chars()
            .map(|c| {
                if c.is_whitespace() || c == '=' {
                    '_'
                } else {
                    c
                }
            })
            .collect(),
        _ => "<...>".to_string(),
    }
}

/// Every `sched_*` line against the records: per CPU, the same events in
/// the same order with the same times (to the microsecond), threads and
/// CPUs; lines in time order; each CPU's switches chained (a switch's
/// previous thread is the one the CPU switched to before); each
/// `prev_state` consistent with what the thread does next. A wakeup that
/// moved its thread has its `sched_migrate_task` between `sched_waking`
/// and `sched_wakeup`. When a CPU dropped events, the lines stop at the
/// cut and the header says so.
fn check_ftrace(text: &str, records: &[Value]) -> Result<usize, String> {
    let (names, cpus) = raw(records);
    let moves = wakeup_moves(&cpus);
    let cut_at = cut(records);
    let says_cut = text
        .lines()
        .take_while(|l| l.starts_with('#'))
        .find_map(|l| l.strip_prefix("# trace cut at "));
    match (cut_at, says_cut) {
        (None, None) => {}
        (Some(at), Some(c))
            if c.starts_with(&format!(
                "{}.{:09} s ",
                at / 1_000_000_000,
                at % 1_000_000_000
            )) => {}
        (at, said) => return Err(format!("cut at {at:?}, the header says {said:?}")),
    }
    if !text.starts_with("# tracer: nop\n") {
        return Err("no '# tracer: nop' header".into());
    }
    let lines: Vec<Line> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(parse_line)
        .collect::<Result<_, _>>()?;
    if lines.windows(2).any(|w| w[1].ts_us < w[0].ts_us) {
        return Err("lines out of time order".into());
    }
    let mut got: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for l in &lines {
        let a = |k: &str| l.args.get(k).cloned().unwrap_or_default();
        let key = match l.event.as_str() {
            "sched_switch" => {
                let want_task = if l.pid == 0 {
                    "<idle>".to_string()
                } else {
                    a("prev_comm")
                };
                if a("prev_pid") != l.pid.to_string() || l.task != want_task {
                    return Err(format!("switch not in prev's context: {l:?}"));
                }
                format!(
                    "switch {} {}:{} -> {}:{}",
                    l.ts_us,
                    a("prev_comm"),
                    a("prev_pid"),
                    a("next_comm"),
                    a("next_pid")
                )
            }
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => format!(
                "{} {} {}:{} -> {}",
                l.event,
                l.ts_us,
                a("comm"),
                a("pid"),
                a("target_cpu")
            ),
            "sched_migrate_task" => format!(
                "migrate {} {}:{} {} -> {}",
                l.ts_us,
                a("comm"),
                a("pid"),
                a("orig_cpu"),
                a("dest_cpu")
            ),
            e => return Err(format!("unexpected event {e}")),
        };
        got.entry(l.cpu).or_default().push(key);
    }
    for (&cpu, evs) in &cpus {
        let mut want = Vec::new();
        for (i, e) in evs.iter().enumerate() {
            let us = e.ts / 1000;
            let c = |tid| comm(&names, tid, cpu);
            match e.kind {
                0 => want.push(format!(
                    "switch {us} {}:{} -> {}:{}",
                    c(e.b),
                    e.b,
                    c(e.a),
                    e.a
                )),
                1 => {
                    let line = |ev| format!("{ev} {us} {}:{} -> {:03}", c(e.a), e.a, e.b);
                    want.push(line("sched_waking"));
                    if let Some(from) = moves.get(&(cpu, i)) {
                        want.push(format!("migrate {us} {}:{} {from} -> {}", c(e.a), e.a, e.b));
                    }
                    want.push(line("sched_wakeup"));
                }
                2 => want.push(format!(
                    "migrate {us} {}:{} {} -> {}",
                    c(e.a),
                    e.a,
                    e.b,
                    e.c >> 4
                )),
                3 => want.push(format!(
                    "sched_wakeup_new {us} {}:{} -> {:03}",
                    c(e.a),
                    e.a,
                    e.b
                )),
                k => return Err(format!("record kind {k}")),
            }
        }
        let have = got.remove(&cpu).unwrap_or_default();
        if have != want {
            let at = have.iter().zip(&want).position(|(h, w)| h != w);
            return Err(format!(
                "CPU {cpu}: {} lines for {} record events; first difference at {at:?}: {:?} vs {:?}",
                have.len(),
                want.len(),
                at.map(|i| &have[i]),
                at.map(|i| &want[i])
            ));
        }
        let mut on = None;
        for e in evs.iter().filter(|e| e.kind == 0) {
            if on.is_some_and(|t| t != e.b) {
                return Err(format!(
                    "CPU {cpu} at {}: switch from {} but {on:?} was running",
                    e.ts, e.b
                ));
            }
            on = Some(e.a);
        }
    }
    if let Some(cpu) = got.keys().next() {
        return Err(format!("lines on CPU {cpu}, which has no records"));
    }
    let guesses = check_states(&lines, cut_at.is_some())?;
    // `# N switches before the cut have a prev_state that is a guess ...`
    let said = text
        .lines()
        .take_while(|l| l.starts_with('#'))
        .find_map(|l| {
            let (n, rest) = l.strip_prefix("# ")?.split_once(' ')?;
            rest.starts_with("switches before the cut have a prev_state that is a guess")
                .then(|| n.parse::<usize>().ok())?
        });
    if cut_at.is_some() && said != Some(guesses) {
        return Err(format!(
            "{guesses} guessed states, the header says {said:?}"
        ));
    }
    Ok(lines.len())
}

/// `prev_state`: S = woken while still on the CPU or before anything
/// else happens to it; R = switched in again or migrated (queued) first;
/// X = never seen again. In a cut trace, a switch whose thread is not seen
/// again before the cut has a guessed state (any of them); returns how
/// many.
fn check_states(lines: &[Line], cut: bool) -> Result<usize, String> {
    let mut guesses = 0;
    let arg = |l: &Line, k: &str| l.args.get(k).cloned().unwrap_or_default();
    for (i, l) in lines.iter().enumerate() {
        if l.event != "sched_switch" || l.pid == 0 {
            continue;
        }
        let me = l.pid.to_string();
        let runs = |m: &Line| m.event == "sched_switch" && arg(m, "next_pid") == me;
        let woken = |m: &Line| m.event == "sched_waking" && arg(m, "pid") == me;
        let about = |m: &Line| runs(m) || (m.event != "sched_switch" && arg(m, "pid") == me);
        let last_in = lines[..i].iter().rposition(runs).unwrap_or(0);
        let woken_on_cpu = lines[last_in..i].iter().any(woken);
        let next = lines[i + 1..].iter().find(|m| about(m));
        let state = arg(l, "prev_state");
        if cut && !woken_on_cpu && next.is_none() {
            guesses += 1;
            if !["R", "S", "X"].contains(&state.as_str()) {
                return Err(format!("prev_state {state} of line {i}: {l:?}"));
            }
            continue;
        }
        let ok = match state.as_str() {
            "S" => woken_on_cpu || next.is_some_and(woken),
            "R" => !woken_on_cpu && next.is_some_and(|m| !woken(m)),
            "X" => !woken_on_cpu && next.is_none(),
            _ => false,
        };
        if !ok {
            return Err(format!("prev_state {state} of line {i}: {l:?}"));
        }
    }
    Ok(guesses)
}

/// A v1 flow is named by its id, category and name.
type FlowKey = (String, String, String);

/// The Chrome JSON against the records: named tracks for every CPU and
/// thread, a category on every event, a thread's runs on its track as
/// many as its switch-ins and never overlapping, and every flow start
/// finished once on the wakee's track where one of its runs starts, after
/// that run's slice; as many flows as wakeups and forks followed by a run.
fn check_chrome(trace: &Value, records: &[Value]) -> Result<usize, String> {
    let (names, cpus) = raw(records);
    let ev = trace["traceEvents"].as_array().ok_or("no traceEvents")?;
    let track_named = |pid: u64, name: &str| {
        ev.iter()
            .find(|e| {
                e["ph"] == "M"
                    && e["name"] == "thread_name"
                    && e["pid"] == pid
                    && e["args"]["name"] == name
            })
            .and_then(|e| e["tid"].as_u64())
    };
    for &cpu in cpus.keys() {
        track_named(1, &format!("CPU {cpu}")).ok_or(format!("no track for CPU {cpu}"))?;
    }
    for (tid, name) in &names {
        if track_named(2, name) != Some(*tid) {
            return Err(format!("no track {name} with tid {tid}"));
        }
    }
    if let Some(e) = ev.iter().find(|e| e["ph"] != "M" && !e["cat"].is_string()) {
        return Err(format!("no category: {e}"));
    }
    let mut switch_ins: HashMap<u64, Vec<f64>> = HashMap::new();
    for e in cpus.values().flatten().filter(|e| e.kind == 0 && e.a != 0) {
        switch_ins
            .entry(e.a)
            .or_default()
            .push(e.ts as f64 / 1000.0);
    }
    let mut runs: HashMap<u64, Vec<(f64, f64, usize)>> = HashMap::new();
    for (i, e) in ev
        .iter()
        .enumerate()
        .filter(|(_, e)| e["ph"] == "X" && e["pid"] == 2)
    {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        runs.entry(e["tid"].as_u64().unwrap())
            .or_default()
            .push((ts, ts + dur, i));
    }
    for (tid, starts) in &mut switch_ins {
        let r = runs
            .get_mut(tid)
            .ok_or(format!("thread {tid} ran but has no runs"))?;
        r.sort_by(|a, b| a.0.total_cmp(&b.0));
        starts.sort_by(f64::total_cmp);
        if r.iter().map(|x| x.0).collect::<Vec<_>>() != *starts {
            return Err(format!("thread {tid}: runs differ from its switch-ins"));
        }
        if r.windows(2).any(|w| w[1].0 < w[0].1) {
            return Err(format!("thread {tid}: runs overlap"));
        }
    }
    let mut flow_ends: HashMap<FlowKey, Vec<(usize, &Value)>> = HashMap::new();
    for (j, f) in ev.iter().enumerate().filter(|(_, e)| e["ph"] == "f") {
        let key = (
            f["id"].to_string(),
            f["cat"].to_string(),
            f["name"].to_string(),
        );
        flow_ends.entry(key).or_default().push((j, f));
    }
    let mut flows = 0;
    for (i, s) in ev.iter().enumerate().filter(|(_, e)| e["ph"] == "s") {
        let before = &ev[i - 1];
        if before["ph"] != "i"
            || before["ts"] != s["ts"]
            || (&before["pid"], &before["tid"]) != (&s["pid"], &s["tid"])
        {
            return Err(format!("flow start {s} not after its instant"));
        }
        let key = |e: &Value| {
            (
                e["id"].to_string(),
                e["cat"].to_string(),
                e["name"].to_string(),
            )
        };
        let ends = flow_ends.get(&key(s)).map_or(&[][..], Vec::as_slice);
        let &[(j, f)] = ends else {
            return Err(format!("flow {} has {} ends", s["id"], ends.len()));
        };
        let (tid, ts) = (f["tid"].as_u64().unwrap(), f["ts"].as_f64().unwrap());
        let run = runs.get(&tid).and_then(|r| r.iter().find(|r| r.0 == ts));
        // Read in order, the end comes after its start and right after
        // the run slice on its track (so Perfetto binds it to that run).
        let bound = run.is_some_and(|r| {
            r.2 < j
                && !ev[r.2 + 1..j]
                    .iter()
                    .any(|e| e["pid"] == 2 && e["tid"] == tid && e["ph"] != "f")
        });
        if f["bp"] != "e" || f["pid"] != 2 || !bound || j < i {
            return Err(format!(
                "flow end {f} not at the start of a run of thread {tid}"
            ));
        }
        // The first run after the wakeup.
        let woke = s["ts"].as_f64().unwrap();
        if switch_ins[&tid].iter().any(|&t| woke < t && t < ts) {
            return Err(format!("flow {} skips an earlier run", s["id"]));
        }
        flows += 1;
    }
    let ends = ev.iter().filter(|e| e["ph"] == "f").count();
    if ends != flows {
        return Err(format!("{ends} flow ends for {flows} flow starts"));
    }
    let wakes: Vec<(u64, f64)> = cpus
        .values()
        .flatten()
        .filter(|e| e.kind == 1 || e.kind == 3)
        .map(|e| (e.a, e.ts as f64 / 1000.0))
        .collect();
    let followed = |strict: bool| {
        wakes
            .iter()
            .filter(|(tid, w)| {
                switch_ins
                    .get(tid)
                    .is_some_and(|s| s.iter().any(|&t| t > *w || (!strict && t == *w)))
            })
            .count()
    };
    if flows < followed(true) || flows > followed(false) {
        return Err(format!(
            "{flows} flows for {}..={} wakeups and forks followed by a run",
            followed(true),
            followed(false)
        ));
    }
    // A migration instant on the recording CPU's track for every
    // migration record and every wakeup that moved its thread.
    const REASONS: [&str; 6] = ["wakeup", "fork", "balance", "newidle", "active", "exec"];
    let moves = wakeup_moves(&cpus);
    let mut want: Vec<String> = Vec::new();
    for (&cpu, evs) in &cpus {
        for (i, e) in evs.iter().enumerate() {
            let m = match e.kind {
                2 => (e.b, e.c >> 4, REASONS[(e.c & 15) as usize]),
                1 => match moves.get(&(cpu, i)) {
                    Some(&from) => (from, e.b, "wakeup"),
                    None => continue,
                },
                _ => continue,
            };
            want.push(format!("{} {cpu} {} {}->{} {}", e.ts, e.a, m.0, m.1, m.2));
        }
    }
    let cpu_of_track: HashMap<u64, u64> = cpus
        .keys()
        .filter_map(|&c| Some((track_named(1, &format!("CPU {c}"))?, c)))
        .collect();
    let mut have: Vec<String> = ev
        .iter()
        .filter(|e| e["cat"] == "migration" && e["pid"] == 1)
        .map(|e| {
            let a = &e["args"];
            format!(
                "{} {} {} {}->{} {}",
                (e["ts"].as_f64().unwrap() * 1000.0).round() as u64,
                cpu_of_track[&e["tid"].as_u64().unwrap()],
                a["tid"],
                a["from"],
                a["to"],
                a["reason"].as_str().unwrap_or("?")
            )
        })
        .collect();
    want.sort();
    have.sort();
    if have != want {
        return Err(format!(
            "{} migration instants for {} migrations",
            have.len(),
            want.len()
        ));
    }
    // A cut: in the metadata, and nothing after it.
    let said = trace["otherData"]["trace_cut_ns"].as_str();
    match (cut(records), said) {
        (None, None) => {}
        (Some(at), Some(s)) if s == at.to_string() => {
            let end =
                |e: &Value| e["ts"].as_f64().unwrap_or(0.0) + e["dur"].as_f64().unwrap_or(0.0);
            if let Some(e) = ev.iter().find(|e| end(e) > at as f64 / 1000.0) {
                return Err(format!("{e} past the cut at {at}"));
            }
        }
        (at, said) => return Err(format!("cut at {at:?}, the metadata says {said:?}")),
    }
    Ok(flows)
}

fn hand_built() -> Vec<Value> {
    vec![
        json!({"type": "trace_threads", "threads": [[1, "main"], [2, "hb recv"], [3, "w=3"]]}),
        json!({"type": "trace", "cpu": 0, "chunk": 0, "chunks": 1, "dropped": 0, "events": [
            [1_000, 3, 2, 1, 0],
            [1_500, 3, 3, 0, 0],
            [2_000, 0, 1, 0, 0],
            [3_000, 1, 2, 1, 0],
            [3_100, 0, 3, 1, 0],
            [4_000, 2, 2, 1, 50],
            [4_200, 0, 1, 3, 0],
            [9_000, 0, 0, 1, 0]
        ]}),
        json!({"type": "trace", "cpu": 1, "chunk": 0, "chunks": 1, "dropped": 0, "events": [
            [1_200, 0, 2, 0, 0],
            [2_500, 0, 0, 2, 0],
            [3_400, 0, 2, 0, 0],
            [8_000, 0, 0, 2, 0]
        ]}),
    ]
}

#[test]
fn hand_built_records_read_back_from_both_exports() {
    let records = hand_built();
    let (text, _) = xtask::trace::ftrace_text(&records).unwrap();
    assert_eq!(check_ftrace(&text, &records), Ok(13));
    let (json, _) = xtask::trace::chrome_trace(&records).unwrap();
    // Forks of 2 and 3, the wakeup of 2.
    assert_eq!(check_chrome(&json, &records), Ok(3));
}

#[test]
fn the_checks_catch_a_wrong_export() {
    let records = hand_built();
    let (text, _) = xtask::trace::ftrace_text(&records).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    let mut dropped = lines.clone();
    dropped.remove(n - 2);
    let mut swapped = lines.clone();
    swapped.swap(n - 1, n - 2);
    for (what, bad) in [
        ("a line dropped", dropped.join("\n") + "\n"),
        ("two lines swapped", swapped.join("\n") + "\n"),
        ("another time", text.replacen("0.000003:", "0.000004:", 2)),
        (
            "another state",
            text.replacen("prev_state=S", "prev_state=R", 1),
        ),
        ("a name with a space", text.replace("hb_recv", "hb recv")),
        ("no header", text.replacen("# tracer: nop\n", "", 1)),
    ] {
        assert!(check_ftrace(&bad, &records).is_err(), "{what} passed");
    }
    let (json, _) = xtask::trace::chrome_trace(&records).unwrap();
    let mut no_end = json.clone();
    no_end["traceEvents"]
        .as_array_mut()
        .unwrap()
        .retain(|e| e["ph"] != "f" || e["id"] != 1);
    let mut late_end = json.clone();
    for e in late_end["traceEvents"].as_array_mut().unwrap() {
        if e["ph"] == "f" && e["id"] == 1 {
            e["ts"] = json!(e["ts"].as_f64().unwrap() + 0.1);
        }
    }
    for (what, bad) in [
        ("a flow without end", no_end),
        ("an end off a run", late_end),
    ] {
        assert!(check_chrome(&bad, &records).is_err(), "{what} passed");
    }
}

#[test]
fn the_format_option_is_checked_before_the_run() {
    let path = std::env::temp_dir().join("trace-format-opt.txt");
    let p = path.to_str().unwrap();
    assert_eq!(
        run_args(&["--trace", p]).unwrap().trace_format,
        TraceFormat::Chrome
    );
    assert_eq!(
        run_args(&["--trace", p, "--trace-format", "ftrace"])
            .unwrap()
            .trace_format,
        TraceFormat::Ftrace
    );
    let bad = run_args(&["--trace", p, "--trace-format", "perf"])
        .unwrap_err()
        .to_string();
    assert!(bad.contains("chrome") && bad.contains("ftrace"), "{bad}");
    let alone = run_args(&["--trace-format", "ftrace"])
        .unwrap_err()
        .to_string();
    assert!(alone.contains("--trace <FILE>"), "{alone}");
}

#[test]
fn simulated_runs_exports_match_their_records() {
    let dir = std::env::temp_dir().join(format!("schedlab-trace-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (txt, json) = (dir.join("run.ftrace"), dir.join("run.json"));
    let shapes: [&[&str]; 2] = [
        &[
            "hackbench",
            "--arg",
            "groups=4",
            "--arg",
            "fds=4",
            "--arg",
            "loops=50",
        ],
        &["schbench", "--arg", "workers=16", "--arg", "duration_ms=20"],
    ];
    let mut migrations = 0;
    for shape in shapes {
        let mut argv = vec!["--topology", "2s8-nosmt", "--experiment"];
        argv.extend_from_slice(shape);
        argv.extend(["--trace", txt.to_str().unwrap(), "--trace-format", "ftrace"]);
        let a = run_args(&argv).unwrap();
        let r = xtask::simrun::run(&a, false).expect("runs");
        let s = xtask::trace::write(&txt, a.trace_format, &r.records).unwrap();
        assert_eq!(s.dropped, 0, "{shape:?}: {s:?}");
        let (_, cpus) = raw(&r.records);
        let count = |k: u64| cpus.values().flatten().filter(|e| e.kind == k).count();
        let (switches, wakeups, forks) = (count(0), count(1), count(3));
        assert!(
            switches > 100 && wakeups > 50 && forks > 16,
            "{shape:?}: {switches} {wakeups} {forks}"
        );
        migrations += count(2);
        let text = std::fs::read_to_string(&txt).unwrap();
        let lines = check_ftrace(&text, &r.records).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
        let moved = wakeup_moves(&cpus).len();
        assert!(moved > 0, "{shape:?}: no wakeup moved its thread");
        assert_eq!(lines, switches + 2 * wakeups + moved + count(2) + forks);

        xtask::trace::write(&json, TraceFormat::Chrome, &r.records).unwrap();
        let trace: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let flows = check_chrome(&trace, &r.records).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
        assert!(
            flows > wakeups / 2,
            "{shape:?}: {flows} flows for {wakeups} wakeups"
        );
    }
    assert!(
        migrations > 0,
        "the runs should include balancer migrations"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A simulated run's records (the default machine: 8 CPUs, 2 nodes).
fn sim_records(extra: &[&str]) -> Vec<Value> {
    let path = std::env::temp_dir().join(format!("schedlab-trace-sim-{}.txt", std::process::id()));
    let mut argv = vec!["--trace", path.to_str().unwrap()];
    argv.extend_from_slice(extra);
    let a = run_args(&argv).unwrap();
    xtask::simrun::run(&a, false).expect("runs").records
}

fn record<'a>(records: &'a [Value], kind: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} record"))
}

/// Both exports against the scheduler's own count of migrations by reason
/// (`sched.migrations` of the hackbench record: `set_task_cpu()` on
/// wakeups, the balancer's moves; fork placement counts as "fork", which
/// Linux does not trace as `sched_migrate_task`, as `wake_up_new_task()`
/// sets the CPU without the tracepoint).
///
/// The record counts the timed interval only: from the parent's start
/// snapshot, taken while it runs after every worker checked in, to the end
/// snapshot after its last join. The trace covers the whole run: the
/// forks, and the check-in barrier's release whose wakeups move threads
/// before the interval starts. After the end snapshot the parent only
/// emits the record and returns, so the interval starts at the run's end
/// (`sim_stats.sim_ns`) minus `time_ns`, inside one run of the parent;
/// the test takes that run's switch-in as the start and checks that no
/// wakeup or migration falls between the two, so either would do.
#[test]
fn wakeup_migrations_in_the_exports_add_up_to_the_runs_migration_counts() {
    let records = sim_records(&[
        "--experiment",
        "hackbench",
        "--arg",
        "groups=1",
        "--arg",
        "loops=5",
    ]);
    let hb = record(&records, "hackbench");
    let end = record(&records, "sim_stats")["sim_ns"].as_u64().unwrap();
    let t0 = end - hb["time_ns"].as_u64().unwrap();
    let (names, cpus) = raw(&records);
    assert_eq!(cut(&records), None, "the trace is complete");
    let main = *names.iter().find(|(_, n)| *n == "main").unwrap().0;
    let all: Vec<(u64, u64, Rec)> = cpus
        .iter()
        .flat_map(|(&c, evs)| evs.iter().map(move |&e| (e.ts, c, e)))
        .collect();
    let start = all
        .iter()
        .filter(|(ts, _, e)| e.kind == 0 && e.a == main && *ts <= t0)
        .map(|&(ts, _, _)| ts)
        .max()
        .unwrap();
    assert!(
        all.iter()
            .any(|(ts, _, e)| e.kind == 0 && e.b == main && *ts > t0),
        "main runs at the interval's start"
    );
    assert!(
        !all.iter()
            .any(|(ts, _, e)| (1..=2).contains(&e.kind) && (start..t0).contains(ts)),
        "a wakeup or migration between main's switch-in at {start} and {t0}"
    );
    let want = |reason: &str| -> u64 {
        hb["sched"]["migrations"][reason]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum()
    };

    // ftrace: the migrate lines after main's switch-in at `start`; a
    // wakeup's sits between its sched_waking and sched_wakeup.
    let (text, _) = xtask::trace::ftrace_text(&records).unwrap();
    assert_eq!(check_ftrace(&text, &records).map(|_| ()), Ok(()));
    let lines: Vec<Line> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| parse_line(l).unwrap())
        .collect();
    let arg = |l: &Line, k: &str| l.args.get(k).cloned().unwrap_or_default();
    let from = lines
        .iter()
        .rposition(|l| {
            l.event == "sched_switch"
                && arg(l, "next_pid") == main.to_string()
                && l.ts_us == start / 1000
        })
        .unwrap();
    let at_wakeup = |i: usize| {
        lines[i - 1].event == "sched_waking"
            && lines[i + 1].event == "sched_wakeup"
            && arg(&lines[i - 1], "pid") == arg(&lines[i], "pid")
            && arg(&lines[i], "dest_cpu").parse::<u64>().ok()
                == arg(&lines[i - 1], "target_cpu").parse().ok()
    };
    let migrate: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].event == "sched_migrate_task")
        .collect();
    let in_interval = |i: &&usize| **i > from;
    let wakeup_lines = migrate
        .iter()
        .filter(in_interval)
        .filter(|&&i| at_wakeup(i))
        .count() as u64;
    let other_lines = migrate
        .iter()
        .filter(in_interval)
        .filter(|&&i| !at_wakeup(i))
        .count() as u64;
    let wakeup_all = migrate.iter().filter(|&&i| at_wakeup(i)).count() as u64;
    let others = ["balance", "newidle", "active", "exec"];
    let want_others: u64 = others.iter().map(|r| want(r)).sum();
    eprintln!(
        "ftrace: {} migrate lines ({wakeup_all} at wakeups); in the interval {wakeup_lines} at wakeups, \
         {other_lines} others; record: total {}, wakeup {}, others {want_others}, fork {}",
        migrate.len(),
        hb["sched"]["migrations"]["total"],
        want("wakeup"),
        want("fork")
    );
    assert_eq!(wakeup_lines, want("wakeup"));
    assert_eq!(
        wakeup_lines,
        hb["sched"]["wake"]["nr_wakeups_migrate"].as_u64().unwrap()
    );
    assert_eq!(other_lines, want_others);
    assert!(wakeup_lines > 0 && other_lines > 0);
    assert_eq!(
        wakeup_lines + other_lines + want("fork"),
        hb["sched"]["migrations"]["total"].as_u64().unwrap()
    );

    // Chrome: migration instants by reason on the CPU tracks, and forks
    // placed off their parent's CPU.
    let (json, _) = xtask::trace::chrome_trace(&records).unwrap();
    check_chrome(&json, &records).unwrap();
    let ev = json["traceEvents"].as_array().unwrap();
    let after = |e: &&Value| (e["ts"].as_f64().unwrap() * 1000.0).round() as u64 >= start;
    let mut by_reason: BTreeMap<String, u64> = BTreeMap::new();
    for e in ev
        .iter()
        .filter(|e| e["cat"] == "migration" && e["pid"] == 1)
        .filter(after)
    {
        *by_reason
            .entry(e["args"]["reason"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    for r in ["wakeup", "balance", "newidle", "active", "exec"] {
        assert_eq!(
            by_reason.get(r).copied().unwrap_or(0),
            want(r),
            "{r}: {by_reason:?}"
        );
    }
    let forks_moved = ev
        .iter()
        .filter(|e| e["cat"] == "fork" && e["ph"] == "i" && e["pid"] == 1)
        .filter(after)
        .filter(|e| e["args"]["placed_on"] != e["args"]["parent_cpu"])
        .count() as u64;
    assert_eq!(forks_moved, want("fork"));
    eprintln!("chrome, in the interval: {by_reason:?}, forks placed elsewhere {forks_moved}");
}

/// A run traced with a small `--trace-events` against the same
/// (deterministic) run traced in full: the cut export is the full
/// export's beginning, line for line, except for the states the header
/// counts as guesses; no thread is called exited that shows up again in
/// the records; the header and the Chrome metadata say where and why the
/// trace was cut, and nothing follows the cut.
#[test]
fn a_trace_with_drops_is_cut_where_every_cpus_events_are_complete() {
    let shape = [
        "--experiment",
        "hackbench",
        "--arg",
        "groups=1",
        "--arg",
        "loops=5",
    ];
    let full = sim_records(&shape);
    assert_eq!(cut(&full), None);
    let (full_text, _) = xtask::trace::ftrace_text(&full).unwrap();
    let full_lines: Vec<&str> = full_text.lines().filter(|l| !l.starts_with('#')).collect();
    let state = |l: &str| {
        let i = l.find("prev_state=").map(|i| i + "prev_state=".len());
        i.map(|i| (l[..i].to_string() + &l[i + 1..], l[i..i + 1].to_string()))
    };
    let mut wrong_guesses = 0;
    for cap in ["100", "200"] {
        let mut argv = shape.to_vec();
        argv.extend(["--trace-events", cap]);
        let records = sim_records(&argv);
        let at = cut(&records).expect("events were dropped");
        let (_, all) = raw_all(&records);

        let (text, s) = xtask::trace::ftrace_text(&records).unwrap();
        check_ftrace(&text, &records).unwrap_or_else(|e| panic!("{cap}: {e}"));
        let c = s.cut.clone().unwrap();
        let recorded: usize = all.values().map(Vec::len).sum();
        assert_eq!(c.at_ns, at);
        assert_eq!(c.recorded_after as usize, recorded - s.events);
        assert_eq!(c.left_out, c.recorded_after + s.dropped);
        assert!(
            text.lines().any(|l| l.starts_with("# trace cut at ")
                && l.contains("because events were dropped")
                && l.contains(&format!("{} events are left out", c.left_out))),
            "{cap}: the header does not say why and how much"
        );
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(lines.len() < full_lines.len());
        let parsed: Vec<Line> = lines.iter().map(|l| parse_line(l).unwrap()).collect();
        for (i, (&l, &f)) in lines.iter().zip(&full_lines).enumerate() {
            if l == f {
                continue;
            }
            // Only a state can differ, and only on a switch whose thread
            // does nothing else before the cut.
            let (l_rest, l_state) = state(l).unwrap_or_else(|| panic!("{cap}: {l} vs {f}"));
            let (f_rest, f_state) = state(f).unwrap();
            assert_eq!(l_rest, f_rest, "{cap}: line {i}");
            let pid = parsed[i].pid.to_string();
            let later = parsed[i + 1..]
                .iter()
                .any(|m| m.args.get("pid") == Some(&pid) || m.args.get("next_pid") == Some(&pid));
            assert!(
                !later,
                "{cap}: line {i} is not a guess but says {l_state}, not {f_state}"
            );
            wrong_guesses += 1;
        }
        // X only for a thread the records never show again.
        for l in parsed
            .iter()
            .filter(|l| l.args.get("prev_state").is_some_and(|s| s == "X"))
        {
            let switched_out = all[&l.cpu]
                .iter()
                .filter(|e| e.kind == 0 && e.b == l.pid && e.ts / 1000 == l.ts_us)
                .map(|e| e.ts)
                .max()
                .unwrap();
            // Switched in, woken, moved or forked later (`a` is the thread).
            let seen = all
                .values()
                .flatten()
                .any(|e| e.a == l.pid && e.ts > switched_out);
            assert!(!seen, "{cap}: {} called exited but seen again", l.pid);
        }

        let (json, js) = xtask::trace::chrome_trace(&records).unwrap();
        check_chrome(&json, &records).unwrap_or_else(|e| panic!("{cap}: {e}"));
        assert_eq!(js, s);
        let meta = &json["otherData"];
        assert_eq!(meta["events_left_out"], c.left_out.to_string());
        assert_eq!(meta["trace_cut"], json!(c.note));
        eprintln!(
            "--trace-events {cap}: cut at {} ns, {} events kept, {} left out ({} dropped, {} recorded after)",
            c.at_ns, s.events, c.left_out, s.dropped, c.recorded_after
        );
    }
    eprintln!("guessed states that differ from the full trace: {wrong_guesses}");
}
