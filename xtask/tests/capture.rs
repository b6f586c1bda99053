//! `cargo xtask report --from LOG` and `compare --baseline-log/--variant-log`
//! on real captured consoles (`fixtures/capture/`, saved by `run
//! --console-log`) and on the messy forms real captures take: firmware
//! and BMC output first, LF or CRLF endings, several boots, a log cut short,
//! a boot cut by a reboot, corrupted lines. Every check goes through the
//! xtask binary, so exit statuses and messages are the user's.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/capture")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn fixture_lines(name: &str) -> Vec<String> {
    String::from_utf8(fixture(name))
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// A fresh scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-capture-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
    /// The `--results` file's lines (empty when it was not written).
    records: Vec<String>,
}

fn xtask(dir: &Path, args: &[&str]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let records = std::fs::read_to_string(dir.join("out.jsonl"))
        .map(|s| s.lines().map(String::from).collect())
        .unwrap_or_default();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        records,
    }
}

/// `report --from` on `log` (written to the scratch dir) with `--results out.jsonl`.
fn report(test: &str, log: &[u8], extra: &[&str]) -> Out {
    let dir = scratch(test);
    std::fs::write(dir.join("console.log"), log).unwrap();
    let mut args = vec!["report", "--from", "console.log", "--results", "out.jsonl"];
    args.extend_from_slice(extra);
    let out = xtask(&dir, &args);
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// OVMF's real output before the kernel's first line, from the UEFI capture.
fn ovmf_output() -> Vec<u8> {
    let log = fixture("hackbench-uefi.log");
    let start = log.windows(5).position(|w| w == b"[cpu0").unwrap();
    assert!(start > 100, "the UEFI capture starts with firmware output");
    log[..start].to_vec()
}

/// `log` cut in the middle of its first line that contains `marker`.
fn cut_in(log: &[u8], marker: &str) -> Vec<u8> {
    let at = log
        .windows(marker.len())
        .position(|w| w == marker.as_bytes())
        .unwrap();
    log[..at + marker.len() + 40].to_vec()
}

#[test]
fn real_captures_give_back_the_records_their_runs_wrote() {
    for name in ["hackbench", "hackbench-eevdf", "hackbench-uefi"] {
        let out = report(name, &fixture(&format!("{name}.log")), &[]);
        assert_eq!(out.code, 0, "{name}: {}{}", out.stdout, out.stderr);
        assert_eq!(
            out.records,
            fixture_lines(&format!("{name}.records.jsonl")),
            "{name}"
        );
        assert!(out.stdout.contains("1 boot(s)"), "{}", out.stdout);
        assert!(
            out.stdout.contains("outcome: success (boot 1 of 1"),
            "{}",
            out.stdout
        );
        assert!(
            out.stdout.contains("hackbench: 1 groups x 20 fds"),
            "{}",
            out.stdout
        );
        // QEMU's TCG says so in CPUID, and xtask told the kernel about icount.
        assert!(
            out.stdout
                .contains("clock: QEMU icount (summed instructions of all vCPUs")
                && out.stdout.contains("hypervisor 'TCGTCGTCGTCG'"),
            "{}",
            out.stdout
        );
    }
}

#[test]
fn a_captured_fault_is_shown_and_sets_the_exit_status() {
    let out = report("fault", &fixture("pagefault.log"), &[]);
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.records, fixture_lines("pagefault.records.jsonl"));
    assert!(
        out.stdout.contains(
            "fault: CPU 0 #PF Page Fault (vector 14) at RIP 0x8000052053, CR2 0xdead0000"
        ) && out
            .stdout
            .contains("(--kernel ELF, the kernel that ran, resolves"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("outcome: EXCEPTION"), "{}", out.stdout);
    // Without icount, under TCG: host time.
    assert!(
        out.stdout
            .contains("clock: host time of QEMU's emulated vCPUs"),
        "{}",
        out.stdout
    );
    let out = report(
        "fault-elf",
        &fixture("pagefault.log"),
        &["--kernel", "no-such.elf"],
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("--kernel no-such.elf: no such file"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_trace_export_is_the_one_the_run_wrote() {
    let dir = scratch("trace");
    std::fs::write(dir.join("console.log"), fixture("hackbench.log")).unwrap();
    for (format, file) in [("chrome", "t.json"), ("ftrace", "t.txt")] {
        let out = xtask(
            &dir,
            &[
                "report",
                "--from",
                "console.log",
                "--trace",
                file,
                "--trace-format",
                format,
            ],
        );
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        assert!(
            out.stdout
                .contains("trace: 2891 events on 2 CPUs, 41 threads"),
            "{}",
            out.stdout
        );
        let records: Vec<serde_json::Value> = fixture_lines("hackbench.records.jsonl")
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let fmt = match format {
            "chrome" => xtask::trace::TraceFormat::Chrome,
            _ => xtask::trace::TraceFormat::Ftrace,
        };
        let expected = dir.join(format!("expected-{file}"));
        xtask::trace::write(&expected, fmt, &records).unwrap();
        assert_eq!(
            std::fs::read(dir.join(file)).unwrap(),
            std::fs::read(&expected).unwrap(),
            "{format}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn firmware_output_and_line_endings_do_not_matter() {
    let base = fixture("hackbench.log");
    assert!(
        base.windows(2).any(|w| w == b"\r\n"),
        "the kernel writes CRLF"
    );
    let expected = fixture_lines("hackbench.records.jsonl");
    let mut messy = b"[SOL Session operational.  Use ~? for help]\r\n".to_vec();
    messy.extend(ovmf_output());
    messy.extend(b"\x1b[0m\xff\xfe garbage that is not UTF-8\r\n");
    messy.extend(&base);
    let lf: Vec<u8> = base.iter().copied().filter(|&b| b != b'\r').collect();
    for (what, log) in [("firmware first", messy), ("LF endings", lf)] {
        let out = report(what, &log, &[]);
        assert_eq!(out.code, 0, "{what}: {}{}", out.stdout, out.stderr);
        assert_eq!(out.records, expected, "{what}");
    }
}

#[test]
fn of_two_boots_the_last_complete_one_is_reported_or_the_one_asked_for() {
    let (a, b) = (fixture("hackbench-eevdf.log"), fixture("hackbench.log"));
    let mut two = a.clone();
    two.extend(ovmf_output());
    two.extend(&b);
    let out = report("two", &two, &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("2 boot(s) in")
            && out
                .stdout
                .contains("reporting boot 2 (the last boot, complete)"),
        "{}",
        out.stdout
    );
    assert_eq!(out.records, fixture_lines("hackbench.records.jsonl"));
    let out = report("two-first", &two, &["--boot", "1"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.records, fixture_lines("hackbench-eevdf.records.jsonl"));
    let out = report("two-third", &two, &["--boot", "3"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("--boot 3: the log holds 2 boot(s)"),
        "{}",
        out.stderr
    );

    // The second boot cut short: the first, complete one is reported.
    let mut cut = a;
    cut.extend(cut_in(&b, "\"type\":\"smp\""));
    let out = report("two-cut", &cut, &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("reporting boot 1 (the last complete boot; --boot 2"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("boot 2: lines 29-44, experiment 'hackbench', 1 records"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("no exit record: the log ends"),
        "{}",
        out.stdout
    );
    assert_eq!(out.records, fixture_lines("hackbench-eevdf.records.jsonl"));
}

#[test]
fn a_truncated_log_reports_what_arrived_and_fails() {
    // Cut inside the first trace record: the hackbench result has arrived.
    let log = cut_in(&fixture("hackbench.log"), "\"type\":\"trace\"");
    let out = report("truncated", &log, &[]);
    assert_eq!(out.code, 8, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("hackbench: 1 groups x 20 fds"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("outcome: TRUNCATED"), "{}", out.stdout);
    assert!(out.stdout.contains("last console lines:"), "{}", out.stdout);
    assert!(
        out.stderr.contains("console.log ends (line ")
            && out.stderr.contains("before the run's end record"),
        "{}",
        out.stderr
    );
    // Every record that arrived whole is written, in order.
    let all = fixture_lines("hackbench.records.jsonl");
    assert!(
        out.records
            .iter()
            .any(|r| r.contains("\"type\":\"hackbench\"")),
        "{:?}",
        out.records
    );
    assert_eq!(out.records[..], all[..out.records.len()]);
    assert!(!out.records.iter().any(|r| r.contains("\"type\":\"exit\"")));
}

#[test]
fn a_boot_cut_by_a_reboot_is_a_reset() {
    let mut log = cut_in(&fixture("hackbench.log"), "\"type\":\"hackbench\"");
    log.extend(b"\r\n");
    log.extend(ovmf_output());
    log.extend(fixture("hackbench-eevdf.log"));
    let out = report("reset", &log, &["--boot", "1"]);
    assert_eq!(out.code, 6, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("outcome: RESET"), "{}", out.stdout);
    assert!(
        out.stderr.contains("boot 2 begins at line"),
        "{}",
        out.stderr
    );
}

#[test]
fn bad_input_is_named_with_a_non_zero_exit() {
    let dir = scratch("bad");
    let out = xtask(&dir, &["report", "--from", "missing.log"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("reading missing.log"), "{}", out.stderr);

    let out = report("no-boot", b"BIOS\r\nGRUB loading\r\n", &[]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("console.log: no boot record in 2 lines"),
        "{}",
        out.stderr
    );

    // A record damaged on the wire (a dropped character): named by its line.
    let text = String::from_utf8(fixture("hackbench.log")).unwrap();
    let n = text
        .lines()
        .position(|l| l.contains("\"type\":\"smp\""))
        .unwrap()
        + 1;
    let damaged = text.replacen("\"type\":\"smp\",", "\"type\":\"smp\"", 1);
    let out = report("damaged", damaged.as_bytes(), &[]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains(&format!("console.log line {n}: malformed record")),
        "{}",
        out.stderr
    );
    assert_eq!(
        out.records.len(),
        fixture_lines("hackbench.records.jsonl").len() - 1
    );

    let out = xtask(&dir, &["run", "--backend", "sim", "--console-log", "c.log"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("--console-log c.log: the simulator has no console"),
        "{}",
        out.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The hackbench times (s) of a records file, as compare reads them.
fn times(records: &str) -> Vec<f64> {
    fixture_lines(records)
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["type"] == "hackbench")
        .map(|r| r["time_ns"].as_u64().unwrap() as f64 / 1e9)
        .collect()
}

#[test]
fn two_captures_compare_as_baseline_and_variant() {
    let dir = scratch("compare");
    let fix = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/capture");
    let mut two = fixture("hackbench.log");
    two.extend(fixture("hackbench-uefi.log"));
    std::fs::write(dir.join("two.log"), &two).unwrap();
    let var = fix.join("hackbench-eevdf.log");
    let out = xtask(
        &dir,
        &[
            "compare",
            "--baseline-log",
            "two.log",
            "--variant-log",
            var.to_str().unwrap(),
            "--results",
            "out.jsonl",
        ],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("hackbench-thread-sockets -- time in seconds"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("QEMU icount (summed instructions of all vCPUs) clock"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("baseline: baseline (2 run(s) from two.log)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("variant:  variant (1 run(s) from"),
        "{}",
        out.stdout
    );
    let samples: Vec<serde_json::Value> = out
        .records
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |config: &str| -> Vec<f64> {
        samples
            .iter()
            .filter(|s| s["config"] == config)
            .map(|s| s["value"].as_f64().unwrap())
            .collect()
    };
    let mut expected = times("hackbench.records.jsonl");
    expected.extend(times("hackbench-uefi.records.jsonl"));
    assert_eq!(of("baseline"), expected);
    assert_eq!(of("variant"), times("hackbench-eevdf.records.jsonl"));

    // Another experiment on one side is refused, naming the log and boot.
    let other = String::from_utf8(fixture("hackbench-eevdf.log"))
        .unwrap()
        .replace("\"experiment\":\"hackbench\"", "\"experiment\":\"stress\"");
    std::fs::write(dir.join("other.log"), other).unwrap();
    let out = xtask(
        &dir,
        &[
            "compare",
            "--baseline-log",
            "two.log",
            "--variant-log",
            "other.log",
        ],
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains(
            "other.log boot 1 ran experiment 'stress', but two.log boot 1 ran 'hackbench'"
        ),
        "{}",
        out.stderr
    );
    let out = xtask(&dir, &["compare", "--baseline-log", "two.log"]);
    assert_eq!(out.code, 2, "--variant-log is required: {}", out.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}
