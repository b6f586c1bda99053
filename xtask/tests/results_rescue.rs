//! A finished run's records are never dropped: when `--results FILE` passes
//! the preflight check but cannot be written when the run ends (here
//! `/dev/full`, which opens for writing and fails every write with ENOSPC,
//! as a disk that filled up during the run does), the report is still
//! printed, the records go to a rescue file in the temporary folder, the
//! error names it, and the status says the reporting failed (2) after a
//! successful run. Through the xtask binary, on the simulator backend
//! (fast, and deterministic, so the rescued records can be compared with
//! those of a run that wrote its file normally).

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-rescue-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const RUN: &[&str] = &[
    "run",
    "--backend",
    "sim",
    "--experiment",
    "hackbench",
    "--arg",
    "groups=1",
    "--arg",
    "fds=2",
    "--arg",
    "loops=5",
    "--seed",
    "4",
];

fn xtask(tmp: &Path, results: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(RUN)
        .args(["--results", results])
        .env("TMPDIR", tmp)
        .output()
        .unwrap()
}

#[test]
fn records_survive_a_results_file_that_cannot_be_written() {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: this system has no /dev/full");
        return;
    }
    let dir = scratch("full");
    let o = xtask(&dir, "/dev/full");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(2),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains("outcome: success"),
        "the report must still be printed:\n{stdout}"
    );
    let rescued: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("schedlab-results-")
        })
        .collect();
    assert_eq!(rescued.len(), 1, "one rescue file in TMPDIR: {rescued:?}");
    assert!(
        stderr.contains("/dev/full") && stderr.contains(&*rescued[0].to_string_lossy()),
        "the error names the file that failed and the rescue file:\n{stderr}"
    );

    // The rescued records are the run's, whole: the same as a run that
    // wrote its results file normally.
    let good = dir.join("good.jsonl");
    let o2 = xtask(&dir, good.to_str().unwrap());
    assert_eq!(o2.status.code(), Some(0));
    let a = std::fs::read_to_string(&rescued[0]).unwrap();
    let b = std::fs::read_to_string(&good).unwrap();
    assert!(a.lines().count() >= 4, "too few records rescued:\n{a}");
    assert_eq!(a, b, "rescued records differ from a normal run's");
    let _ = std::fs::remove_dir_all(&dir);
}
