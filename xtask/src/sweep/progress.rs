//! The sweep's progress line on stderr: runs done / failed / running,
//! elapsed time and an estimate to finish (from this invocation's pace, so
//! parallel runs are accounted for), printed when a run ends and at least
//! every [`HEARTBEAT`] while runs are going.

use std::time::{Duration, Instant};

/// Longest silence while runs are going.
pub const HEARTBEAT: Duration = Duration::from_secs(30);

/// Counts of one invocation over a sweep.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Runs in the matrix.
    pub total: usize,
    /// Runs that had succeeded before this invocation.
    pub before: usize,
    pub ok: usize,
    pub failed: usize,
    pub running: usize,
    start: Instant,
}

impl Progress {
    pub fn new(total: usize, before: usize) -> Progress {
        Progress {
            total,
            before,
            ok: 0,
            failed: 0,
            running: 0,
            start: Instant::now(),
        }
    }

    /// Runs neither done before nor finished in this invocation.
    pub fn left(&self) -> usize {
        self.total - self.before - self.ok - self.failed
    }

    /// The progress line, e.g. `[12/40] 11 ok, 1 failed, 2 running; 3m10s
    /// elapsed, about 7m05s to go`.
    pub fn line(&self) -> String {
        let finished = self.ok + self.failed;
        let elapsed = self.start.elapsed();
        let eta = if finished == 0 {
            "no estimate yet".to_string()
        } else {
            let per_run = elapsed.as_secs_f64() / finished as f64;
            format!(
                "about {} to go",
                hms(Duration::from_secs_f64(per_run * self.left() as f64))
            )
        };
        format!(
            "[{}/{}] {} ok{}, {} failed, {} running; {} elapsed, {eta}",
            self.before + finished,
            self.total,
            self.before + self.ok,
            if self.before > 0 {
                format!(" ({} from before)", self.before)
            } else {
                String::new()
            },
            self.failed,
            self.running,
            hms(elapsed),
        )
    }
}

/// `1h02m03s`, `3m10s`, `42s`.
pub fn hms(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_counts_and_times() {
        let mut p = Progress::new(40, 10);
        assert_eq!(p.left(), 30);
        assert!(
            p.line().starts_with(
                "[10/40] 10 ok (10 from before), 0 failed, 0 running; 0s elapsed, no estimate yet"
            ),
            "{}",
            p.line()
        );
        p.ok = 4;
        p.failed = 1;
        p.running = 2;
        assert_eq!(p.left(), 25);
        assert!(
            p.line()
                .starts_with("[15/40] 14 ok (10 from before), 1 failed, 2 running;"),
            "{}",
            p.line()
        );
        assert!(p.line().contains("to go"), "{}", p.line());
        assert_eq!(hms(Duration::from_secs(42)), "42s");
        assert_eq!(hms(Duration::from_secs(190)), "3m10s");
        assert_eq!(hms(Duration::from_secs(3723)), "1h02m03s");
    }
}
