//! Signal-queue storm: a signal mechanism with `RLIMIT_SIGPENDING` = 16
//! (set in the server process only), offered more than it can serve.
//!
//! First a short closed loop finds the knee (the most replies/s this
//! server and generator reach); then persistent connections are offered
//! 1.25× that, open loop, for the storm's length. Lost = requests sent −
//! replies; a stall is a run of empty 0.25 s reply intervals, or a reply
//! slower than the limit from its actual send.

use std::time::Duration;

use evdispatch_load::{cmdline::LoadCommand, Rate};
use evdispatch_server::cmdline::ServeCommand;
use serde_json::json;

use super::measure::{load, longest_gap_s, start_or_skip, stop};
use super::report::{Run, ScenarioReport};
use crate::env::{Env, SIGNAL_MODELS};
use crate::json::num;
use crate::site::Site;

/// The queue limit of the storm.
pub const SIGPENDING: u64 = 16;
/// Longest stall tolerated, seconds.
pub const MAX_STALL_S: f64 = 1.0;

/// Run the storm on every signal mechanism selected.
pub fn run(env: &Env) -> anyhow::Result<ScenarioReport> {
    let mut rep = ScenarioReport::new(
        "storm",
        "signal-queue storm (RLIMIT_SIGPENDING 16, above the knee)",
    );
    let signal: Vec<String> = SIGNAL_MODELS.iter().map(|s| s.to_string()).collect();
    let asked = if env.models_given {
        &env.models
    } else {
        &signal
    };
    let (models, others): (Vec<String>, Vec<String>) = asked
        .iter()
        .cloned()
        .partition(|m| SIGNAL_MODELS.contains(&m.as_str()));
    for m in others {
        rep.skip(
            m,
            "no signal queue: the storm applies to rtsig, rtsig-batch, rtsig-perfd and hybrid",
        );
    }
    rep.skip("nginx", "no RT-signal mechanism (removed in nginx 1.9.13)");
    let site = Site::create()?;
    let p = env.profile;
    let conns: u64 = p.pick(50, 200, 200);
    let duration: f64 = p.pick(4.0, 60.0, 60.0);
    let calibrate: f64 = p.pick(2.0, 3.0, 5.0);
    for model in models {
        env.say(format!(
            "storm {model}: finding the knee ({calibrate} s closed loop)"
        ));
        let ours = ServeCommand {
            rlimit_sigpending: Some(SIGPENDING),
            ..ServeCommand::default()
        };
        let Some(server) = start_or_skip(env, &site, &mut rep, &model, &ours) else {
            continue;
        };
        let index = |args: LoadCommand| load(env, &server, "/index.html", &args);
        let knee = index(LoadCommand {
            rate: Some(Rate::Max),
            connections: Some(conns),
            duration: Some(Duration::from_secs_f64(calibrate)),
            ..LoadCommand::default()
        })?;
        let knee_rate = num(&knee, "reply_rate");
        let offered = (knee_rate * 1.25).max(100.0).round();
        env.say(format!(
            "storm {model}: knee {knee_rate:.0}/s; offering {offered:.0}/s on {conns} persistent connections for {duration} s"
        ));
        let storm = index(LoadCommand {
            persistent: Some(conns),
            rate: Some(Rate::PerSecond(offered)),
            duration: Some(Duration::from_secs_f64(duration)),
            interval: Some(Duration::from_millis(250)),
            // Above the knee the generator's backlog grows all run long;
            // the drain must outlast it, or the requests in flight when it
            // ends would count as lost.
            timeout: Some(Duration::from_secs_f64(duration.max(10.0))),
            ..LoadCommand::default()
        })?;
        let stats = stop(server)?;
        let mut run = Run::new("evdispatch", &model);
        let requests = num(&storm, "requests");
        let replies = num(&storm, "replies");
        let errors = num(&storm, "errors_total");
        let lost = requests - replies;
        let gap = longest_gap_s(&storm);
        let slowest_s = num(&storm, "latency_uncorrected_us.max") / 1e6;
        let overflows = num(&stats, "poller.overflows");
        let recoveries = num(&stats, "poller.recoveries");
        let switches = num(&stats, "poller.mode_switches");
        run.figures = json!({
            "knee_replies_per_s": knee_rate,
            "offered_per_s": offered,
            "connections": conns,
            "duration_s": num(&storm, "duration_s"),
            "requests": requests,
            "replies": replies,
            "lost": lost,
            "errors": errors,
            // Which errors: a timeout is a request the server never
            // answered; a reset or close, a connection it dropped.
            "errors_timeout": num(&storm, "errors.timeout"),
            "errors_reset": num(&storm, "errors.reset"),
            "errors_server_closed": num(&storm, "errors.server_closed"),
            "reply_rate": num(&storm, "reply_rate"),
            "rate_min": num(&storm, "rate_intervals.min"),
            "longest_gap_s": gap,
            "latency_uncorrected_max_ms": slowest_s * 1e3,
            "latency_uncorrected_p99_ms": num(&storm, "latency_uncorrected_us.p99") / 1e3,
            "latency_p99_ms": super::measure::p99_ms(&storm),
            "missed_slots": num(&storm, "missed_slots"),
            "unsent_at_end": num(&storm, "unsent_at_end"),
            "server_cpu_pct": num(&storm, "server_cpu_pct"),
            "generator_saturated": storm["generator_saturated"],
            "overflows": overflows,
            "recoveries": recoveries,
            "mode_switches": switches,
            "signals_dequeued": num(&stats, "poller.signals_dequeued"),
            "stale_dropped": num(&stats, "poller.stale_dropped"),
            "server_requests": num(&stats, "requests.total"),
        });
        run.check("lost requests", lost, "0", lost == 0.0 && requests > 0.0);
        run.check("errors", errors, "0", errors == 0.0);
        run.check(
            "longest stall (empty 0.25 s intervals), s",
            gap,
            "< 1",
            gap < MAX_STALL_S,
        );
        run.check(
            "slowest reply from its send, s",
            slowest_s,
            "< 1",
            slowest_s < MAX_STALL_S,
        );
        // The storm must have happened: hybrid leaves signal mode instead
        // of overflowing, which counts as its answer to the storm.
        // (rtsig-perfd overflows too: a queue of 16 is far below one signal
        // per connection, and an armed connection queues one per request.)
        let stormed = overflows > 0.0 || (model == "hybrid" && switches > 0.0);
        run.check(
            "queue overflowed (or hybrid switched to epoll)",
            json!({"overflows": overflows, "mode_switches": switches}),
            "> 0",
            stormed,
        );
        run.check(
            "every overflow recovered",
            json!({"overflows": overflows, "recoveries": recoveries}),
            "recoveries = overflows",
            recoveries == overflows,
        );
        let what = format!(
            "storm {model}: {requests:.0} requests, {lost:.0} lost, {errors:.0} errors, gap {gap:.2} s, {overflows:.0} overflows / {recoveries:.0} recoveries"
        );
        rep.add(env, run, what);
    }
    Ok(rep.finish())
}
