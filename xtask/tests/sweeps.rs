//! Sweep directories end to end through the `xtask` binary, on the
//! simulator backend (fast, deterministic): an interrupted sweep resumes
//! and re-runs only what it lacks; `--jobs 2` gives the same records as
//! `--jobs 1`; `--from DIR` renders and names missing runs; a directory is
//! never reused for another sweep; and the Slurm engine runs the matrix as
//! a job array on a real one-node cluster on localhost.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// 3 ops x 4 runs x 2 configurations = 24 runs.
const SWEEP: &[&str] = &[
    "compare",
    "--backend",
    "sim",
    "--experiment",
    "hackbench",
    "--arg",
    "loops=20",
    "--arg",
    "fds=4",
    "--sweep",
    "groups=1,2,3",
    "--runs",
    "4",
    "--variant-features",
    "WA_IDLE_PREV",
];
const RUNS: usize = 24;

fn xtask(args: &[&str], extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
    c.args(args).args(extra);
    c
}

fn out(mut c: Command) -> (i32, String, String) {
    let o: Output = c.output().expect("xtask starts");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-sweeps-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn results(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("runs")).map_or(0, |rd| {
        rd.filter_map(Result::ok)
            .filter(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.ends_with(".json") && !n.contains("records")
            })
            .count()
    })
}

/// Task `i`'s metric values and records, the parts of a result that must
/// not depend on how or when the run was made.
fn run_of(dir: &Path, i: usize) -> (serde_json::Value, String) {
    let r: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!("runs/{i:05}.json"))).expect("result"),
    )
    .expect("result is JSON");
    assert_eq!(r["success"], true, "task {i}: {r}");
    let records =
        std::fs::read_to_string(dir.join(format!("runs/{i:05}.records.jsonl"))).expect("records");
    (r["values"].clone(), records)
}

#[test]
fn an_interrupted_sweep_resumes_and_parallel_runs_change_nothing() {
    let (a, b) = (scratch("jobs1"), scratch("jobs2"));
    let (rc, stdout, stderr) = out(xtask(SWEEP, &["--jobs", "1", "--dir", a.to_str().unwrap()]));
    assert_eq!(rc, 0, "{stderr}");
    assert!(stdout.contains("Amean"), "{stdout}");
    assert_eq!(results(&a), RUNS);

    // Interrupt a --jobs 2 sweep part way.
    let mut child = xtask(SWEEP, &["--jobs", "2", "--dir", b.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while results(&b) < 4 {
        assert!(t0.elapsed() < Duration::from_secs(120), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "SIGINT ends xtask with 128 + 2");
    let kept = results(&b);
    assert!(kept < RUNS, "interrupted before the end ({kept} results)");

    // The same command resumes: only the missing runs are run.
    let (rc, _, stderr) = out(xtask(SWEEP, &["--jobs", "2", "--dir", b.to_str().unwrap()]));
    assert_eq!(rc, 0, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{RUNS} runs, {kept} done before, {} to run",
            RUNS - kept
        )),
        "{stderr}"
    );
    for i in 0..RUNS {
        assert_eq!(
            run_of(&a, i),
            run_of(&b, i),
            "task {i}: jobs 1 vs resumed jobs 2"
        );
    }

    // --from renders without running; a missing run is named.
    let (rc, stdout, _) = out(xtask(&["compare", "--from", b.to_str().unwrap()], &[]));
    assert_eq!(rc, 0);
    assert!(
        stdout.contains("Amean") && stdout.contains("machine:"),
        "{stdout}"
    );
    std::fs::remove_file(b.join("runs/00005.json")).unwrap();
    let (rc, stdout, _) = out(xtask(&["compare", "--from", b.to_str().unwrap()], &[]));
    assert_eq!(rc, 1, "a sweep with a missing run is not complete");
    assert!(
        stdout.contains("1 of 24 runs have no result")
            && stdout.contains("task 5 (variant op 1 run 3): missing"),
        "{stdout}"
    );

    // Another sweep in the same directory is refused before anything runs.
    let mut other: Vec<&str> = SWEEP.to_vec();
    *other.last_mut().unwrap() = "WA_IDLE";
    let (rc, _, stderr) = out(xtask(&other, &["--dir", a.to_str().unwrap()]));
    assert_eq!(rc, 2);
    assert!(stderr.contains("holds another sweep"), "{stderr}");
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn the_slurm_engine_runs_the_matrix_as_one_job_array() {
    const TEST: &str = "sweeps::the_slurm_engine_runs_the_matrix_as_one_job_array";
    if let Err(e) = xtask::prereq::ensure_slurm() {
        xtask::skips::record(TEST, &format!("Slurm cannot be installed here: {e:#}"));
        return;
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n");
    if !matches!(root, Ok(true)) {
        // slurmd must run as root to start jobs as their users.
        xtask::skips::record(TEST, "not root: the localhost cluster's slurmd needs root");
        return;
    }
    let cluster = xtask::slurmlab::LocalCluster::start(&scratch("cluster"))
        .expect("a one-node Slurm cluster on localhost");
    let slurm = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
        c.args(args).env("SLURM_CONF", &cluster.conf);
        c
    };
    let small: Vec<&str> = SWEEP
        .iter()
        .map(|a| {
            if *a == "groups=1,2,3" {
                "groups=1,2"
            } else {
                a
            }
        })
        .map(|a| if a == "4" { "2" } else { a })
        .collect();
    let (s, l) = (scratch("slurm"), scratch("local"));
    let config = s.with_extension("conf");
    std::fs::write(
        &config,
        "# sbatch options\npartition = debug\ntime=00:10:00\n",
    )
    .unwrap();
    let with = |dir: &Path, extra: &[&str]| {
        let mut v: Vec<String> = small.iter().map(|x| x.to_string()).collect();
        v.extend(["--dir".to_string(), dir.display().to_string()]);
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let argv = with(
        &s,
        &[
            "--engine",
            "slurm",
            "--jobs",
            "2",
            "--slurm-config",
            config.to_str().unwrap(),
            "--slurm",
            "job-name=schedlab-test",
        ],
    );
    let (rc, stdout, stderr) = out(slurm(&argv.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(rc, 0, "{stdout}\n{stderr}");
    assert!(stderr.contains("submitted job array"), "{stderr}");
    assert!(stdout.contains("Amean"), "{stdout}");
    assert!(
        s.join("bin/xtask").is_file(),
        "the build is copied once, up front"
    );
    let jobs = std::fs::read_to_string(s.join("slurm/jobs.txt")).unwrap();
    assert_eq!(jobs.lines().count(), 1, "one job array: {jobs}");

    // The same matrix run locally gives the same results.
    let argv = with(&l, &["--jobs", "2"]);
    let (rc, _, stderr) = out(slurm(&argv.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(rc, 0, "{stderr}");
    for i in 0..8 {
        assert_eq!(run_of(&s, i), run_of(&l, i), "task {i}: Slurm vs local");
    }

    // Resume through Slurm without waiting: only the missing runs are
    // submitted; --from reports until they are in.
    for i in [1, 6] {
        std::fs::remove_file(s.join(format!("runs/{i:05}.json"))).unwrap();
    }
    let argv = with(&s, &["--engine", "slurm", "--no-wait"]);
    let (rc, _, stderr) = out(slurm(&argv.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(rc, 0, "{stderr}");
    assert!(
        stderr.contains("8 runs, 6 done before, 2 to run"),
        "{stderr}"
    );
    assert!(stderr.contains("(tasks 1,6)"), "{stderr}");
    // Again at once: runs still queued are waited for, not submitted twice
    // (or, if the array was that quick, nothing is left to run).
    let (rc, _, stderr) = out(slurm(&argv.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(rc, 0, "{stderr}");
    assert!(
        stderr.contains("not submitted again") || stderr.contains("8 done before, 0 to run"),
        "{stderr}"
    );
    let jobs = std::fs::read_to_string(s.join("slurm/jobs.txt")).unwrap();
    assert_eq!(jobs.lines().count(), 2, "no third array: {jobs}");
    let t0 = Instant::now();
    loop {
        let (rc, stdout, _) = out(slurm(&["compare", "--from", s.to_str().unwrap()]));
        if rc == 0 {
            assert!(stdout.contains("Amean"), "{stdout}");
            break;
        }
        assert!(stdout.contains("have no result"), "{stdout}");
        assert!(
            t0.elapsed() < Duration::from_secs(180),
            "the array never finished: {stdout}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    for i in [1, 6] {
        assert_eq!(run_of(&s, i), run_of(&l, i), "resumed task {i}");
    }

    // sbatch options xtask sets itself are refused before anything runs.
    let argv = with(&s, &["--engine", "slurm", "--slurm", "array=0-3"]);
    let (rc, _, stderr) = out(slurm(&argv.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(rc, 2);
    assert!(stderr.contains("--array is set by xtask"), "{stderr}");
    drop(cluster);
    for d in [&s, &l] {
        let _ = std::fs::remove_dir_all(d);
    }
}
