//! tbench in the simulator: on one CPU with the scheduling costs at zero,
//! an operation costs its four socket calls, the copies of its request and
//! reply on both sides, and the server's work; the record's totals must
//! account for the elapsed time.

mod common;
use common::*;

fn u(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

#[test]
fn one_cpu_time_is_the_sum_of_the_calls_copies_and_server_work() {
    let p = calls_only();
    let k = &p.kernel;
    for work in [0u64, 2000] {
        let mut c = config(
            machine(1, 1, 1),
            "tbench",
            &format!("clients:1,duration_ms:20,warmup_ms:0,work:{work}"),
        );
        c.profile = calls_only();
        let r = record(&run(&c), "tbench");
        let ops = u(&r, "ops") as f64;
        let bytes = (u(&r, "request_bytes") + u(&r, "reply_bytes")) as f64;
        // Each byte is copied twice (writer, reader); same CPU: no transfer.
        let want = ops * (4.0 * k.syscall_ns + work as f64 * p.cpu.compute_unit_ns)
            + 2.0 * bytes * k.copy_ns_per_byte;
        let got = u(&r, "elapsed_ns") as f64;
        assert!(
            (got - want).abs() < 0.01 * want,
            "work {work}: {got} ns elapsed, the calls account for {want:.0}"
        );
        assert_eq!(
            u(&r, "mb_per_sec_x100"),
            u(&r, "bytes") * 100_000 / u(&r, "elapsed_ns")
        );
    }
}

#[test]
fn tbench_runs_with_default_costs_and_more_clients_than_cpus() {
    for clients in [1, 4, 16] {
        let o = run(&config(
            machine(1, 2, 2),
            "tbench",
            &format!("clients:{clients},duration_ms:10"),
        ));
        let r = record(&o, "tbench");
        assert_eq!(u(&r, "clients"), clients);
        assert!(u(&r, "ops") > 0);
        assert_eq!(record(&o, "sim_stats")["violations"], 0);
    }
}
