//! The catalogue of experiments the kernel can run, shared with xtask so that
//! `cargo xtask run --experiment NAME` is validated before QEMU starts.

/// Name and one-line description of an experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExperimentInfo {
    /// Name used on the command line and in the boot configuration.
    pub name: &'static str,
    /// What it does, for `--help` and `cargo xtask list`.
    pub description: &'static str,
    /// Exists only to test fault handling; expected to fail.
    pub test_only: bool,
}

/// Every experiment, the default (`tour`) first.
pub const EXPERIMENTS: &[ExperimentInfo] = &[
    ExperimentInfo {
        name: "tour",
        description: "the default: the machine check of `boot`, then a short hackbench (2 groups x 4 fds x 50 loops, threads over sockets) reported with its wakeup and migration decisions",
        test_only: false,
    },
    ExperimentInfo {
        name: "boot",
        description: "bring the machine up, print the banner and the boot record, exit",
        test_only: false,
    },
    ExperimentInfo {
        name: "stress",
        description: "thousands of threads: compute, sleep, pipes, socketpairs, mutexes, barriers, forks; books must balance (args: threads, duration_ms, seed)",
        test_only: false,
    },
    ExperimentInfo {
        name: "latency",
        description: "pipe ping-pong round trips at each topology distance, and the context-switch cost (args: rounds)",
        test_only: false,
    },
    ExperimentInfo {
        name: "calibrate",
        description: "measure what a simulator cost profile needs: context switch, wakeup latency, IPI and cache-line transfer by topology distance, refill after migration by working-set size, memory latency by NUMA node; `cargo xtask profile --from LOG` turns the log into a profile (args: rounds, chase_mib)",
        test_only: false,
    },
    ExperimentInfo {
        name: "fpu-check",
        description: "threads keep x87/SSE registers across preemption, sleeps and migrations and check them; non-FPU threads alongside (args: threads, duration_ms)",
        test_only: false,
    },
    ExperimentInfo {
        name: "hackbench",
        description: "hackbench / perf bench sched messaging, thread mode: groups of fds senders and fds receivers exchanging messages; timed like hackbench, with the scheduler's decisions during the run (args: groups, fds, loops, datasize, transport=socket|pipe)",
        test_only: false,
    },
    ExperimentInfo {
        name: "schbench",
        description: "schbench v1 shape: message threads post requests to workers; wakeup and request latency percentiles (p50/p90/p99/p99.9) and RPS (args: messengers, workers, duration_ms, sleep_us, ops, work, cpu_lock=on|off)",
        test_only: false,
    },
    ExperimentInfo {
        name: "netperf",
        description: "netperf loopback pairs over socketpairs: TCP_RR/UDP_RR transactions/s, TCP_STREAM/TCP_MAERTS/TCP_SENDFILE/UDP_STREAM Mbit/s received (args: test=TCP_RR|TCP_STREAM|TCP_MAERTS|TCP_SENDFILE|UDP_STREAM|UDP_RR, pairs, duration_ms, request, response, send_size, placement)",
        test_only: false,
    },
    ExperimentInfo {
        name: "tbench",
        description: "tbench (dbench over sockets) shape: client/server pairs replaying SMB-like request/reply sizes, the server computing a little per request; MB/sec of ReadX/WriteX payload (args: clients, duration_ms, work)",
        test_only: false,
    },
    ExperimentInfo {
        name: "nas",
        description: "NAS OpenMP shape (BT/LU/SP/UA): fork a team, compute phases separated by barriers, join; time, Mop/s and fork spread (args: threads, phases, work, imbalance_pct, working_set_kib, spin_us)",
        test_only: false,
    },
    ExperimentInfo {
        name: "test-panic",
        description: "panic deliberately (tests the panic path)",
        test_only: true,
    },
    ExperimentInfo {
        name: "test-pagefault",
        description: "write to an unmapped address (tests the exception path)",
        test_only: true,
    },
    ExperimentInfo {
        name: "test-stuck",
        description: "a thread bound to the last CPU spins with interrupts off (tests the heartbeat watchdog)",
        test_only: true,
    },
    ExperimentInfo {
        name: "test-deadlock",
        description: "two threads wait for each other forever (tests the progress watchdog)",
        test_only: true,
    },
    ExperimentInfo {
        name: "test-hang",
        description: "every CPU spins with interrupts off, beyond the watchdog (tests the host timeout)",
        test_only: true,
    },
];

/// Looks an experiment up by name.
pub fn find_experiment(name: &str) -> Option<&'static ExperimentInfo> {
    EXPERIMENTS.iter().find(|e| e.name == name)
}
