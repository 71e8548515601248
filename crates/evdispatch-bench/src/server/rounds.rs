//! The run of `bench server`: every scenario on every server, round after
//! round, then the analysis.

use anyhow::{bail, Context};
use evdispatch_harness::{find, Tool};

use super::analysis;
use super::measure;
use super::outcome::{Outcome, ServerInfo, Skipped};
use super::plan::{Contestant, Plan, Scenario, ServerArgs};
use super::report;

/// Run `evdispatch bench server`.
pub fn run(args: ServerArgs) -> anyhow::Result<()> {
    let plan = Plan::new(&args)?;
    let outcome = measure_all(plan)?;
    crate::output::emit(&outcome, args.json, args.save.as_deref(), report::print)
}

/// Every measurement of `plan`, then the summaries.
pub fn measure_all(mut plan: Plan) -> anyhow::Result<Outcome> {
    if let Err(e) = find(Tool::Wrk) {
        if plan.scenarios.iter().any(|s| *s != Scenario::Memory) {
            bail!("{e} (every scenario but memory runs wrk)");
        }
    }
    let mut skipped = Vec::new();
    let mut contestants = Vec::new();
    for &c in &plan.contestants {
        if let Contestant::Peer(p, _) = c {
            if let Err(e) = find(p.tool()) {
                skipped.push(Skipped {
                    server: c.name(),
                    reason: e.to_string(),
                });
                continue;
            }
        }
        contestants.push(c);
    }
    if plan.fresh_netns {
        if let Err(e) = crate::sys::fresh_netns() {
            eprintln!(
                "note: cannot create a network namespace ({e}); measuring in this one, where \
                 TIME_WAIT sockets of one run outlive it into the next"
            );
            plan.fresh_netns = false;
        }
    }
    let bench = measure::Bench::new(&plan)?;
    let steps = (0..plan.rounds)
        .flat_map(|_| plan.scenarios.iter())
        .map(|&s| contestants.iter().filter(|c| c.runs(s)).count())
        .sum::<usize>() as u64;
    let bar = crate::output::progress_bar(steps, true, true);
    let mut runs = Vec::new();
    let mut servers: Vec<ServerInfo> = Vec::new();
    for round in 0..plan.rounds {
        for &scenario in &plan.scenarios {
            for k in 0..contestants.len() {
                // Rotated by one per round.
                let c = contestants[(k + round) % contestants.len()];
                if !c.runs(scenario) {
                    continue;
                }
                bar.set_message(format!(
                    "round {}/{}: {} on {}",
                    round + 1,
                    plan.rounds,
                    scenario.name(),
                    c.name()
                ));
                if plan.fresh_netns {
                    crate::sys::fresh_netns().context("a fresh network namespace")?;
                }
                let (run, version) = bench.run(scenario, c, round);
                if let Some(e) = &run.error {
                    bar.suspend(|| eprintln!("{} {}: {e}", scenario.name(), c.name()));
                }
                if let Some(v) = version {
                    if !servers.iter().any(|s| s.name == c.name()) {
                        servers.push(ServerInfo {
                            name: c.name(),
                            kind: match c {
                                Contestant::Ours(..) => "ours",
                                Contestant::Peer(..) => "peer",
                                Contestant::Floor(_) => "floor",
                            },
                            version: v,
                        });
                    }
                }
                runs.push(run);
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    let analysis = analysis::analyse(&plan, &runs);
    Ok(Outcome {
        schema: "evdispatch-bench-server/1",
        machine: crate::machine::machine(),
        plan,
        servers,
        skipped,
        runs,
        analysis,
    })
}
