mod common;
use common::*;

#[test]
fn hackbench_runs() {
    let c = config(machine(2, 2, 2), "hackbench", "groups:2,fds:4,loops:20");
    let o = run(&c);
    let h = record(&o, "hackbench");
    eprintln!("{}", o.console.join("\n"));
    eprintln!("{h}");
    assert_eq!(h["messages"], 2 * 4 * 4 * 20);
}
