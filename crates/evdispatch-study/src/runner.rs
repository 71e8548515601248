//! The runner: what `evdispatch study` does with its arguments — plan the
//! scenarios this machine can run, calibrate the servers' CPU budget when a
//! load scenario is selected, run the jobs round by round, keep completed
//! scenarios across runs, and write the results and the report.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};

use evdispatch_harness::BenchLock;
use results::{load_record, write_json_atomic, Results, ScenarioRecord, Skip, Status, SCHEMA};
use scenarios::SCENARIOS;
use spec::{Caps, Ctx, Plan, Profile, Scenario, Unavailable};

use crate::cli::{RenderArgs, StudyArgs, StudyCommand};
use crate::{calibrate, claims, diff, env, remote, report, results, scenarios, spec};

/// Judge the claims of a saved run again and write its report into
/// `args.out`, with the results it was drawn from (`results.json`).
fn render(args: &RenderArgs) -> anyhow::Result<()> {
    let saved = diff::load(&args.from)?;
    let mut res: Results = serde_json::from_value(saved)
        .with_context(|| format!("{} is not a study's results", args.from.display()))?;
    res.claims = claims::evaluate(scenarios::claims(), &res.scenarios);
    fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    write_json_atomic(&args.out.join("results.json"), &res)?;
    report::write(&args.out, &res)?;
    println!("{}", args.out.join("index.html").display());
    Ok(())
}

/// A line for the user: above the progress bar, or on standard error when
/// the bar is hidden (not a terminal).
fn say(bar: &ProgressBar, line: String) {
    if bar.is_hidden() {
        eprintln!("{line}");
    } else {
        bar.println(line);
    }
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The `evdispatch` binary whose bench, serve and load the study drives:
/// `$EVDISPATCH_BIN` if set, else this very program.
fn evdispatch_exe() -> anyhow::Result<PathBuf> {
    match std::env::var_os("EVDISPATCH_BIN") {
        Some(p) => Ok(PathBuf::from(p)),
        None => std::env::current_exe()
            .context("cannot find the evdispatch binary (set EVDISPATCH_BIN)"),
    }
}

fn write_documents(www: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(www)?;
    for (name, size) in scenarios::common::DOCUMENTS {
        // Printable, deterministic content of the exact size.
        let body: Vec<u8> = (0..*size)
            .map(|i| b"abcdefghijklmnopqrstuvwxyz0123456789\n"[i % 37])
            .collect();
        fs::write(www.join(name), body)?;
    }
    Ok(())
}

fn record_path(out: &Path, id: &str) -> PathBuf {
    out.join("scenarios").join(format!("{id}.json"))
}

/// Whether a saved record can stand for this run: same profile, same
/// place for the load generators, and complete (or, if not, measured with
/// the same capabilities).
fn keep(saved: &ScenarioRecord, profile: Profile, caps: &Caps, load_host: Option<&str>) -> bool {
    saved.profile == profile.name()
        && saved.load_host.as_deref() == load_host
        && match saved.status {
            Status::Complete => true,
            Status::Interrupted => false,
            Status::Partial | Status::NotMeasured => saved.capabilities == caps.fingerprint(),
        }
}

/// Points measured while other processes used more than this much CPU
/// (% of one core) are run again once.
const DISTURBED_PCT: f64 = 25.0;

/// The most CPU other processes took during any of `points`' runs.
fn disturbance(points: &[results::Point]) -> f64 {
    points
        .iter()
        .filter_map(|p| p.metric("foreign_cpu_pct"))
        .fold(0.0, f64::max)
}

/// Run one scenario's plan, ticking `bar` by estimated seconds. A job
/// whose run was disturbed by other work on the machine (more than
/// [`DISTURBED_PCT`] of a core) is run once more, and the calmer run kept;
/// at most a quarter of a scenario's jobs are repeated.
fn run_scenario(sc: &Scenario, plan: Plan, ctx: &Ctx, bar: &ProgressBar) -> ScenarioRecord {
    let t0 = Instant::now();
    let mut rec = ScenarioRecord {
        id: sc.id.into(),
        status: Status::Complete,
        profile: ctx.profile.name().into(),
        params: plan.params.clone(),
        started_unix: now_unix(),
        duration_s: 0.0,
        git_commit: env::git_commit(),
        capabilities: ctx.caps.fingerprint(),
        points: vec![],
        skipped: plan.skipped.clone(),
        failures: vec![],
        timings: vec![],
        lock_wait_s: 0.0,
        load_host: ctx.load_host.as_ref().map(|h| h.dest.clone()),
        rounds: 1,
    };
    let rounds = plan.rounds.max(1);
    rec.rounds = rounds;
    // Round r runs every job once, in the plan's order: the points of one
    // round are measured close in time, so the claims compare them as pairs
    // and judge each round apart (see `claims::evaluate`).
    let work: Vec<(u32, &spec::Job)> = (1..=rounds)
        .flat_map(|r| plan.jobs.iter().map(move |j| (r, j)))
        .collect();
    let n = work.len();
    let mut retries_left = n / 4;
    for (i, (round, job)) in work.into_iter().enumerate() {
        let label = if rounds > 1 {
            format!("{} (round {round}/{rounds})", job.label)
        } else {
            job.label.clone()
        };
        bar.set_message(format!("{} [{}/{}] {}", sc.id, i + 1, n, label));
        let tw = Instant::now();
        let lock = BenchLock::take(|| {
            bar.set_message(format!(
                "{}: waiting for the benchmark lock (another benchmark runs)",
                sc.id
            ))
        });
        rec.lock_wait_s += tw.elapsed().as_secs_f64();
        let tj = Instant::now();
        let mut runs = 1;
        // Each round's logs apart (`Job::tag`).
        let job = &spec::Job {
            round: if rounds > 1 { round } else { 0 },
            ..job.clone()
        };
        let outcome = match lock {
            Ok(_guard) => {
                let mut out = (sc.run)(ctx, job);
                if let Ok(points) = &out {
                    let d = disturbance(points);
                    if d > DISTURBED_PCT && retries_left > 0 {
                        retries_left -= 1;
                        runs = 2;
                        bar.set_message(format!(
                            "{} [{}/{}] {} (again: other processes took {:.0}% of a core)",
                            sc.id,
                            i + 1,
                            n,
                            label,
                            d
                        ));
                        if let Ok(again) = (sc.run)(ctx, job) {
                            if disturbance(&again) < d {
                                out = Ok(again);
                            }
                        }
                    }
                }
                out
            }
            Err(e) => Err(e),
        };
        rec.timings.push(results::JobTiming {
            label: job.label.clone(),
            round,
            est_s: job.est_s,
            actual_s: tj.elapsed().as_secs_f64(),
            runs,
        });
        match outcome {
            Ok(points) => rec.points.extend(points.into_iter().map(|mut p| {
                p.config
                    .entry(results::ROUND)
                    .or_insert_with(|| json!(round));
                p
            })),
            // A job that cannot run here cannot in any round: said once.
            Err(e) => match e.downcast_ref::<Unavailable>() {
                Some(_) if rec.skipped.iter().any(|s| s.what == job.label) => {}
                Some(u) => rec.skipped.push(Skip {
                    what: job.label.clone(),
                    why: u.0.clone(),
                }),
                None => rec.failures.push(Skip {
                    what: label.clone(),
                    why: format!("{e:#}"),
                }),
            },
        }
        bar.inc((job.est_s * 1000.0) as u64);
    }
    rec.duration_s = t0.elapsed().as_secs_f64();
    rec.status = if rec.points.is_empty() {
        Status::NotMeasured
    } else if rec.skipped.is_empty() && rec.failures.is_empty() {
        Status::Complete
    } else {
        Status::Partial
    };
    rec
}

/// Assemble and write `results.json`, a CSV per scenario beside it
/// (`ID.csv`), `index.html`, `summary.md` and `report.md` from every saved scenario
/// record in `out`.
fn write_report(
    out: &Path,
    profile: Profile,
    peers: &[env::PeerStatus],
    load_host: Option<&remote::LoadHost>,
    cpu_idle: &Value,
    calibration: Option<&spec::Calibration>,
) -> anyhow::Result<Results> {
    let scenarios: Vec<ScenarioRecord> = SCENARIOS
        .iter()
        .filter_map(|s| load_record(&record_path(out, s.id)))
        .collect();
    let mut environment = env::environment();
    environment["cpu_idle"] = cpu_idle.clone();
    environment["cpu_budget"] = match calibration {
        Some(c) => match (&c.budget, &c.no_budget) {
            (Some(b), _) => json!(format!("{b}, {}", c.control.as_deref().unwrap_or("?"))),
            (None, why) => json!(format!("none: {}", why.as_deref().unwrap_or("?"))),
        },
        None => json!("none: not calibrated in this run"),
    };
    if let Some(h) = load_host {
        environment["load_host"] = h.describe();
    }
    let res = Results {
        schema: SCHEMA.into(),
        profile: profile.name().into(),
        environment,
        peers: env::peers_json(peers),
        claims: claims::evaluate(scenarios::claims(), &scenarios),
        scenarios,
        calibration: calibration.cloned(),
    };
    write_json_atomic(&out.join("results.json"), &res)?;
    for rec in &res.scenarios {
        results::write_csv(rec, &out.join(format!("{}.csv", rec.id)))?;
    }
    report::write(out, &res)?;
    Ok(res)
}

/// Hold the CPUs in their shallowest idle state unless `allow_deep` (see
/// `--allow-deep-idle`), and say what was done, for `results.json`.
fn hold_idle(allow_deep: bool) -> (Option<evdispatch_host::ShallowIdle>, Value) {
    let (driver, governor) = evdispatch_host::cpuidle().unzip();
    let (hold, held) = if allow_deep {
        (None, json!("no: --allow-deep-idle"))
    } else {
        match evdispatch_host::ShallowIdle::hold() {
            Ok(h) => (Some(h), json!("yes: PM QoS 0 µs (/dev/cpu_dma_latency)")),
            Err(e) => {
                eprintln!("note: idle CPUs may halt as configured (cannot hold them shallow: /dev/cpu_dma_latency: {e})");
                (None, json!(format!("no: /dev/cpu_dma_latency: {e}")))
            }
        }
    };
    let note = json!({"driver": driver, "governor": governor, "held_shallow": held});
    (hold, note)
}

/// One line saying what the calibration chose.
fn calibration_line(c: &spec::Calibration) -> String {
    let budget = match (&c.budget, &c.no_budget) {
        (Some(b), _) => format!("budget {b}"),
        (None, why) => format!("no budget ({})", why.as_deref().unwrap_or("?")),
    };
    format!(
        "calibration: generator ceiling {:.0} new conn/s, epoll {:.1} µs CPU per reply; {budget}; knee {:.0} conn/s",
        c.generator_ceiling, c.cpu_us_per_reply, c.knee
    )
}

/// Run the command.
pub fn run(args: StudyArgs) -> anyhow::Result<()> {
    match &args.command {
        Some(StudyCommand::Diff(d)) => return diff::run(d),
        Some(StudyCommand::Render(r)) => return render(r),
        None => {}
    }
    let selected: Vec<&'static Scenario> = if args.only.is_empty() {
        SCENARIOS
            .iter()
            .filter(|s| s.runs_by_default(args.profile))
            .collect()
    } else {
        let mut v = Vec::new();
        for id in &args.only {
            match scenarios::find(id) {
                Some(s) => v.push(s),
                None => bail!("unknown scenario '{id}'; choose from: {}", scenarios::ids()),
            }
        }
        v
    };
    let exe = evdispatch_exe()?;
    let mut caps = Caps::probe(&exe);
    let mut peers = env::find_peers(&caps.poller_rows);
    // --list probes the load host but copies nothing there.
    let load_host = if args.list {
        remote::LoadHost::reach(&args.load)?
    } else {
        remote::LoadHost::connect(&args.load, &exe)?
    };
    if let Some(h) = &load_host {
        h.adjust_peers(&mut peers);
        let binary = if h.copied {
            " (copied)"
        } else if args.list && !h.has_binary(&exe)? {
            " (absent or another build: a run copies it)"
        } else {
            ""
        };
        eprintln!(
            "load host {}: {} ({} CPUs); evdispatch in {}{binary}; servers listen on {}",
            h.dest,
            h.probe.uname,
            h.probe.cpus.map_or("?".into(), |c| c.to_string()),
            h.dir,
            h.bind
        );
    }
    caps.set_peers(&peers);
    let needs_budget = selected.iter().any(|s| calibrate::BUDGETED.contains(&s.id));
    if args.list {
        caps.calibration = calibrate::saved(&args.out, &caps.budgets.0);
        println!(
            "{:<3} {:<14} {:>8} {:>6} {:>6}  title (seeds)",
            "#", "id", "planned", "jobs", "rounds"
        );
        for s in SCENARIOS {
            let named = args.only.iter().any(|o| o == s.id);
            let plan = s.plan_for(args.profile, &caps, named);
            println!(
                "{:<3} {:<14} {:>7.0}s {:>6} {:>6}  {} ({}){}",
                scenarios::number(s),
                s.id,
                plan.est_s(),
                plan.jobs.len(),
                plan.rounds,
                s.title,
                s.seeds,
                if s.runs_by_default(args.profile) {
                    ""
                } else {
                    " [only with --only or --profile full]"
                }
            );
            for skip in &plan.skipped {
                println!("{:<41}not measured: {}: {}", "", skip.what, skip.why);
            }
        }
        return Ok(());
    }
    let out = args.out.clone();
    if args.fresh && out.join("scenarios").exists() {
        fs::remove_dir_all(out.join("scenarios"))
            .with_context(|| format!("cannot clear {}", out.display()))?;
    }
    for d in ["scenarios", "logs"] {
        fs::create_dir_all(out.join(d))
            .with_context(|| format!("cannot create {}", out.join(d).display()))?;
    }
    // Absolute from here: the peers (nginx, lighttpd) read their document
    // root relative to their own prefix, not to our working directory.
    let out =
        fs::canonicalize(&out).with_context(|| format!("cannot resolve {}", out.display()))?;
    let www = out.join("www");
    write_documents(&www)?;
    {
        let out = out.clone();
        evdispatch_harness::on_interrupt(move || {
            eprintln!("\ninterrupted: every server and load process stopped; completed scenarios are kept in {}", out.display());
        })?;
    }
    let mut ctx = Ctx {
        profile: args.profile,
        out: out.clone(),
        www,
        logs: out.join("logs"),
        exe,
        caps: caps.clone(),
        load_host,
    };
    let (idle_hold, cpu_idle) = hold_idle(args.allow_deep_idle);
    // The servers' CPU budget, before the plans: their rates are multiples
    // of the calibrated knee.
    if needs_budget {
        let _lock = BenchLock::take(|| eprintln!("calibration: waiting for the benchmark lock"))?;
        eprintln!(
            "calibrating the servers' CPU budget (about {:.0} s unless saved in {})",
            calibrate::est_s(args.profile),
            calibrate::path(&out).display()
        );
        match calibrate::load_or_calibrate(&ctx, args.fresh) {
            Ok(c) => {
                eprintln!("{}", calibration_line(&c));
                caps.calibration = Some(c);
            }
            Err(e) => eprintln!("note: no calibration ({e:#}); the servers run as the host gives"),
        }
        ctx.caps = caps.clone();
    } else {
        caps.calibration = calibrate::saved(&out, &caps.budgets.0);
        ctx.caps = caps.clone();
    }
    let ctx = ctx;
    // Decide what runs.
    let mut todo: Vec<(&Scenario, Plan)> = Vec::new();
    for s in &selected {
        let named = args.only.iter().any(|o| o == s.id);
        let plan = s.plan_for(args.profile, &caps, named);
        // A record of fewer (or more) rounds than the plan asks, e.g. one
        // written before rounds existed, is measured again.
        if let Some(saved) = load_record(&record_path(&out, s.id)).filter(|r| {
            !args.fresh
                && keep(
                    r,
                    args.profile,
                    &caps,
                    ctx.load_host.as_ref().map(|h| h.dest.as_str()),
                )
                && r.rounds == plan.rounds.max(1)
        }) {
            eprintln!(
                "{}: kept from an earlier run ({} points; --fresh re-runs it)",
                s.id,
                saved.points.len()
            );
            continue;
        }
        todo.push((s, plan));
    }
    let total_ms: u64 = todo.iter().map(|(_, p)| (p.est_s() * 1000.0) as u64).sum();
    eprintln!(
        "evdispatch study: profile {}, {} scenario(s) to run, about {:.0} s; output in {}",
        args.profile.name(),
        todo.len(),
        total_ms as f64 / 1000.0,
        out.display()
    );
    let bar = ProgressBar::new(total_ms.max(1));
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {percent:>3}% ETA {eta} {wide_msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let report = || {
        write_report(
            &out,
            args.profile,
            &peers,
            ctx.load_host.as_ref(),
            &cpu_idle,
            ctx.caps.calibration.as_ref(),
        )
    };
    let t_start = Instant::now();
    let ran = todo.len();
    for (s, plan) in todo {
        let rec = run_scenario(s, plan, &ctx, &bar);
        let planned: f64 = rec.timings.iter().map(|t| t.est_s).sum();
        say(&bar, format!(
            "{}: {} — {} points, {} not measured, {} failed, {:.0} s (planned {:.0} s, {:.0} s waiting for the benchmark lock)",
            s.id,
            rec.status.word(),
            rec.points.len(),
            rec.skipped.len(),
            rec.failures.len(),
            rec.duration_s,
            planned,
            rec.lock_wait_s
        ));
        write_json_atomic(&record_path(&out, s.id), &rec)?;
        report()?;
    }
    bar.finish_and_clear();
    let res = report()?;
    drop(idle_hold);
    eprintln!(
        "wall time {:.0} s for {} scenario(s)",
        t_start.elapsed().as_secs_f64(),
        ran
    );
    eprintln!("{}", report::verdict_counts(&res));
    println!("{}", out.join("index.html").display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A saved record stands for a run with the same profile and the load
    /// generators in the same place: results measured with the load here
    /// are measured again for `--load-host`, and the other way round.
    #[test]
    fn a_saved_record_stands_only_for_a_run_with_its_load_host() {
        let caps = Caps::default();
        let mut saved = claims::testkit::rec("poller", vec![]);
        saved.profile = Profile::Quick.name().into();
        saved.capabilities = caps.fingerprint();
        assert!(keep(&saved, Profile::Quick, &caps, None));
        assert!(!keep(&saved, Profile::Full, &caps, None));
        assert!(!keep(&saved, Profile::Quick, &caps, Some("lab@client1")));
        saved.load_host = Some("lab@client1".into());
        assert!(keep(&saved, Profile::Quick, &caps, Some("lab@client1")));
        assert!(!keep(&saved, Profile::Quick, &caps, Some("lab@client2")));
        assert!(!keep(&saved, Profile::Quick, &caps, None));
        saved.status = Status::Interrupted;
        assert!(!keep(&saved, Profile::Quick, &caps, Some("lab@client1")));
    }
}
