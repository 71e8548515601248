//! A CPU budget bounds a busy child: under 20% of a core, a shell spinning
//! for ever gets about a fifth of a second of CPU per second, and its group
//! is gone once the child is. Skips, saying why, where no cgroup can be
//! made (no cpu controller mounted, not root).

use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use evdispatch_harness::{cpu_control, BudgetGroup, ChildGroup, CpuBudget};

#[test]
fn a_busy_child_under_a_fifth_of_a_core_gets_about_a_fifth() {
    if let Err(why) = cpu_control() {
        println!("skipped: no CPU budget here: {why}");
        return;
    }
    let budget = CpuBudget::new(0.2);
    let group = BudgetGroup::create(budget).unwrap();
    let path = group.path().to_path_buf();
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "while :; do :; done"]);
    group.attach(&mut cmd).unwrap();
    let child = ChildGroup::spawn(cmd, "a busy shell").unwrap();
    let pid = child.pid();
    assert_eq!(group.pids(), vec![pid], "the child joined its group");
    let stats0 = group
        .stats()
        .expect("a budgeted group has bandwidth statistics");
    let cpu0 = evdispatch_host::process_cpu_time(pid).unwrap();
    let t0 = Instant::now();
    thread::sleep(Duration::from_millis(1500));
    let cpu = (evdispatch_host::process_cpu_time(pid).unwrap() - cpu0).as_secs_f64();
    let wall = t0.elapsed().as_secs_f64();
    let stats = group.stats().unwrap().since(&stats0);
    drop(child);
    let rate = cpu / wall;
    println!(
        "{budget}: {rate:.3} of a core; {} of {} periods throttled",
        stats.throttled, stats.periods
    );
    assert!(
        rate <= 0.2 * 1.25,
        "a 20% budget let it use {rate:.3} of a core"
    );
    assert!(rate >= 0.05, "it hardly ran: {rate:.3} of a core");
    assert!(
        stats.throttled * 2 > stats.periods,
        "a spinning child is throttled in most periods: {stats:?}"
    );
    drop(group);
    assert!(!path.exists(), "{} outlived its group", path.display());
}
