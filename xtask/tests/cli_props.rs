//! The command line never panics: every numeric option of `cargo xtask run`,
//! with any value clap accepts (and text it does not), gives either a machine
//! and a boot configuration or an error message, on both backends.

use clap::Parser;
use proptest::prelude::*;
use xtask::cli::{Cli, Cmd};

/// Values that reach the checks: small, edge and huge counts.
fn count() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..=8).prop_map(|n| n.to_string()),
        (0u32..=300).prop_map(|n| n.to_string()),
        Just(u32::MAX.to_string()),
        Just("65536".to_string()),
        any::<u32>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        "[0-9a-z#=,-]{0,6}",
    ]
}

/// Everything `cargo xtask run` checks before building or booting.
fn check(argv: &[String]) {
    let Ok(cli) = Cli::try_parse_from(argv) else {
        return;
    };
    let Cmd::Run(args) = cli.command else {
        panic!("not a run command")
    };
    // (the QEMU arguments exist only for a validated, QEMU-backed machine)
    if let (Ok(q), xtask::cli::Backend::Qemu) = (args.qemu(), args.backend) {
        let _ = q.machine.qemu_args();
        let _ = q.machine.node_memory_mib();
    }
    let _ = args.boot_config();
    // A simulated machine of 65..=1024 CPUs builds and validates a topology
    // of that size (slow in a debug build); smaller and refused ones are
    // cheap.
    let sim_cost = args.machine().map_or(0, |m| m.cpus());
    if args.backend == xtask::cli::Backend::Qemu || !(65..=1024).contains(&sim_cost) {
        let _ = xtask::preflight::check(&args);
        if args.backend == xtask::cli::Backend::Sim {
            let _ = xtask::simrun::config(&args);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn numeric_options_never_panic(
        values in proptest::collection::vec(proptest::option::of(count()), 13),
        sim in any::<bool>(),
        trace in any::<bool>(),
    ) {
        let flags = [
            "--smp", "--sockets", "--dies", "--cores", "--threads", "--numa-nodes",
            "--memory", "--icount", "--seed", "--timeout", "--hz", "--trace-events",
            "--arg",
        ];
        let mut argv: Vec<String> = ["cargo-xtask", "run"].iter().map(|s| s.to_string()).collect();
        for (flag, v) in flags.iter().zip(&values) {
            if let Some(v) = v {
                argv.push(flag.to_string());
                argv.push(if *flag == "--arg" { format!("groups={v}") } else { v.clone() });
            }
        }
        if sim {
            argv.extend(["--backend".to_string(), "sim".to_string()]);
        }
        if trace {
            argv.extend(["--trace".to_string(), std::env::temp_dir().join("cli-props-trace.json").display().to_string()]);
        }
        argv.extend(["--experiment".to_string(), "hackbench".to_string()]);
        check(&argv);
    }
}

#[test]
fn the_reported_cases_are_errors_naming_the_flag() {
    let err = |argv: &[&str]| {
        let mut v = vec!["cargo-xtask", "run"];
        v.extend_from_slice(argv);
        let Cmd::Run(args) = Cli::try_parse_from(v).unwrap().command else {
            unreachable!()
        };
        args.qemu()
            .and_then(|_| args.boot_config().map(|_| ()))
            .unwrap_err()
            .to_string()
    };
    let e = err(&["--sockets", "65536", "--cores", "65536"]);
    assert!(e.contains("4294967296 CPUs"), "{e}");
    let e = err(&["--smp", "0"]);
    assert_eq!(e, "--smp must be at least 1");
    let e = err(&["--label", "base#line"]);
    assert!(e.starts_with("--label \"base#line\": contains '#'"), "{e}");
    let e = err(&["--experiment", "hackbench#x"]);
    assert!(e.contains("--experiment") && e.contains("'#'"), "{e}");
    let e = err(&["--arg", "groups=1,loops=2"]);
    assert!(e.contains("one --arg per pair"), "{e}");
    // 3 sockets over 3 nodes with the default 512 MiB: split 171/171/170.
    let mut v = vec!["cargo-xtask", "run", "--sockets", "3", "--numa-nodes", "3"];
    v.truncate(6);
    let Cmd::Run(args) = Cli::try_parse_from(v).unwrap().command else {
        unreachable!()
    };
    assert_eq!(
        args.qemu().unwrap().machine.node_memory_mib(),
        [171, 171, 170]
    );
}
