//! Slowloris: thousands of clients sending their request a byte a second
//! (never finishing before the header timeout) beside a normal keep-alive
//! load. The normal clients' p99 under attack is compared with a baseline
//! without the slow ones, taken before and again after the attack (their
//! mean); the `full` profile makes five such rounds (baseline, attack,
//! baseline, attack, …) and takes the median of their ratios, reported
//! with its distribution-free 90% interval. A window (baseline or attack)
//! in which the hypervisor took more than [`super::STEAL_LIMIT_PCT`] of a
//! CPU is measured again (at most twice), the dropped ones reported. A few timed
//! probes (a byte a second too) measure, in every round, when the server
//! closes them against its header timeout.
//!
//! A control (quick and full profiles): before the first attack, the same
//! slow clients attack a second server instead (ours, on the load CPU at
//! the lowest priority, standing for another machine) while the normal
//! clients keep talking to the measured one, followed by a baseline. On a
//! two-CPU machine the attack traffic itself (its kernel work, its
//! generator) lands on the CPUs the measurement uses; the control shows how
//! much of the normal clients' p99 that alone costs. It is reported, not
//! judged: the judged figure stays the normal clients' p99 under attack ÷
//! without.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use evdispatch_harness::{median, median_interval, ServerProcess};
use evdispatch_load::{cmdline::LoadCommand, Rate};
use evdispatch_server::cmdline::ServeCommand;
use serde_json::{json, Value};

use super::measure::{
    fds_down_to, load, p99_ms, start_ours, start_target, stop, targets, unstolen, workload_errors,
    Baseline, Unstolen,
};
use super::report::{Run, ScenarioReport};
use crate::env::Env;
use crate::json::num;
use crate::site::Site;

/// How late after the header timeout a slow client may be closed, seconds.
pub const LATE_S: f64 = 1.5;

/// Run the scenario on every model and nginx.
pub fn run(env: &Env) -> anyhow::Result<ScenarioReport> {
    let mut rep = ScenarioReport::new(
        "slowloris",
        "slowloris (byte-a-second clients beside a normal load)",
    );
    let site = Site::create()?;
    let p = env.profile;
    let slow: u64 = p.pick(500, 5000, 5000);
    let header_s: u64 = p.pick(2, 5, 5);
    let clients: u64 = p.pick(8, 32, 32);
    let rate: u64 = p.pick(200, 1000, 1000);
    let base_s: f64 = p.pick(2.0, 8.0, 10.0);
    let attack_s: f64 = p.pick(4.0, 15.0, 25.0);
    // The control's one window: long enough for a p99 of thousands of
    // samples (the full profile's two hours hold no more).
    let control_s = attack_s / 2.0;
    // Attacks, each between two baselines: one window's p99 on this
    // machine moves ×2–3 between repeats of the same load, so one attack
    // against one baseline can pass or fail on noise. The figure is the
    // median of the rounds' ratios, every round reported beside it; five
    // rounds give the median a 90% interval from the lowest to the highest
    // (three would give none).
    let rounds: usize = p.pick(1, 1, 5);
    let control = p.pick(false, true, true);
    // The slow clients arrive over one header timeout (see below); the
    // measurement starts once they all hold a connection.
    let warmup_s: f64 = header_s as f64 + 1.0;
    let probes = 20;
    let header = ServeCommand {
        header_timeout: Some(Duration::from_secs(header_s)),
        ..ServeCommand::default()
    };
    // The control's second server: ours (epoll) on the load CPU at the
    // lowest priority, a stand-in for another machine that an attack can be
    // pointed at instead of the measured server.
    let sink = if control {
        start_ours(env, &site, "epoll", &header, env.cpus().1, true)
            .map_err(|e| rep.skip("control", format!("the second server cannot start: {e:#}")))
            .ok()
    } else {
        None
    };
    for target in targets(env) {
        let ours = ServeCommand {
            threads: Some((slow + 2 * clients + 64) as usize),
            ..header.clone()
        };
        let Some((server, name, label)) = start_target(env, &site, &mut rep, &target, &ours, |c| {
            c.max_connections = (slow + clients + 1024) as u32;
            c.request_timeout_s = header_s as u32;
        }) else {
            continue;
        };
        let normal = LoadCommand {
            persistent: Some(clients),
            rate: Some(Rate::PerSecond(rate as f64)),
            ..LoadCommand::default()
        };
        let base_args = LoadCommand {
            duration: Some(Duration::from_secs_f64(base_s)),
            ..normal.clone()
        };
        let fds_idle = super::measure::fds_of(&server.pids());
        let who = format!("slowloris {name} {label}");
        // Every measured window goes through `unstolen`; what it dropped is
        // listed here.
        let mut dropped = Dropped::default();
        let baseline = |what: &str| -> anyhow::Result<Unstolen<Value>> {
            // The slow clients of the window before have gone (their load
            // has exited; the server lets go of their connections).
            fds_down_to(&server.pids(), fds_idle + 8);
            env.say(format!("{who}: {what} {base_s} s"));
            unstolen(env, &format!("{who}: {what}"), || {
                load(env, &server, "/six.txt", &base_args)
            })
        };
        // One attack on `attacked` once the slow clients of the one before
        // have gone from it (at most `fds` descriptors open).
        let attack =
            |what: &str, attacked: &ServerProcess, fds: usize, secs: f64, probes: usize| {
                let pids = attacked.pids();
                unstolen(env, &format!("{who}: {what}"), || {
                    fds_down_to(&pids, fds);
                    attack_round(
                        env, &server, attacked, &normal, slow, header_s, warmup_s, secs, probes,
                    )
                })
            };
        let mut bases: Vec<(Value, f64)> = Vec::new();
        dropped.keep_baseline(&mut bases, baseline("baseline")?);
        // The control: the attack pointed elsewhere, then a baseline.
        let elsewhere = match &sink {
            Some(sink) => {
                env.say(format!(
                    "{who}: control: {slow} slow clients attack a second server for {control_s} s"
                ));
                let r = attack("control", sink, 16, control_s, 0)?;
                let r = dropped.keep_round("control", r);
                fds_down_to(&sink.pids(), 16);
                dropped.keep_baseline(&mut bases, baseline("control: baseline again")?);
                Some((r.0.normal, r.1))
            }
            None => None,
        };
        // Attack i lies between bases[before + i - 1] and bases[before + i].
        let before = bases.len() - 1;
        let mut attacks = Vec::new();
        let mut attack_steal = Vec::new();
        let mut slow_loads = Vec::new();
        let mut closed: Vec<f64> = Vec::new();
        for round in 1..=rounds {
            env.say(format!(
                "{who}: round {round}/{rounds}: {slow} slow clients (1 byte/s, header timeout {header_s} s) for {attack_s} s"
            ));
            let what = format!("round {round}/{rounds}");
            let r = attack(&what, &server, fds_idle + 8, attack_s, probes)?;
            let (r, steal) = dropped.keep_round(&format!("attack {round}"), r);
            attacks.push(r.normal);
            attack_steal.push(steal);
            slow_loads.push(r.slow);
            closed.extend(r.closes.iter().flatten());
            let b = baseline(&format!("{what}: baseline again"))?;
            dropped.keep_baseline(&mut bases, b);
        }
        let stats = stop(server)?;
        let mut run = Run::new(name, &label);
        let (bases, base_steal): (Vec<Value>, Vec<f64>) = bases.into_iter().unzip();
        let base_ms: Vec<f64> = bases.iter().map(p99_ms).collect();
        let attack_ms: Vec<f64> = attacks.iter().map(p99_ms).collect();
        // Each attack against the mean of the baselines either side of it.
        let round_ratios: Vec<f64> = attacks
            .iter()
            .zip(bases[before..].windows(2))
            .map(|(a, b)| Baseline::of(&b[0], &b[1]).ratio(p99_ms(a)))
            .collect();
        let (ratio_lo, ratio, ratio_hi) = median_interval(&mut round_ratios.clone(), 0.9);
        let p99_base = median(&mut base_ms.clone());
        let p99_attack = median(&mut attack_ms.clone());
        let first_last = Baseline::of(&bases[0], &bases[bases.len() - 1]);
        // The control: its p99 against the baselines either side, and the
        // attacks' against it.
        let elsewhere_steal = elsewhere.as_ref().map(|e| e.1);
        let elsewhere = elsewhere.map(|e| e.0);
        let elsewhere_ms = elsewhere.as_ref().map(p99_ms);
        let elsewhere_ratio = elsewhere_ms.map(|e| Baseline::of(&bases[0], &bases[1]).ratio(e));
        let errors: u64 = attacks
            .iter()
            .chain(&bases)
            .chain(&elsewhere)
            .chain(&dropped.loads)
            .map(|l| workload_errors(l, &["persistent"]))
            .sum();
        let slow_sum = |k: &str| slow_loads.iter().map(|l| num(l, k)).sum::<f64>();
        let slow_max = |k: &str| slow_loads.iter().map(|l| num(l, k)).fold(0.0, f64::max);
        let attack_median =
            |k: &str| median(&mut attacks.iter().map(|a| num(a, k)).collect::<Vec<_>>());
        let first = closed.iter().copied().fold(f64::INFINITY, f64::min);
        let last = closed.iter().copied().fold(0.0, f64::max);
        let all_probes = probes * rounds;
        let h = header_s as f64;
        run.figures = json!({
            "slow_clients": slow,
            "header_timeout_s": header_s,
            "normal_clients": clients,
            "rate": rate,
            "rounds": rounds,
            "baseline_s": base_s,
            "attack_s": attack_s,
            "control_s": if control { control_s } else { 0.0 },
            "p99_baseline_ms": p99_base,
            "p99_baseline_before_ms": first_last.before_ms,
            "p99_baseline_after_ms": first_last.after_ms,
            "p99_baseline_repeat": first_last.repeat(),
            "p99_baseline_windows_ms": base_ms,
            "p99_attack_ms": p99_attack,
            "p99_attack_windows_ms": attack_ms,
            "p99_elsewhere_ms": elsewhere_ms,
            "p99_ratio_elsewhere": elsewhere_ratio,
            "p99_attack_over_elsewhere": elsewhere_ms.map(|e| p99_attack / e),
            "p99_ratio": ratio,
            "p99_ratio_rounds": round_ratios,
            "p99_ratio_worst_round": round_ratios.iter().copied().fold(0.0, f64::max),
            "reply_rate_attack": attack_median("reply_rate"),
            "normal_errors": errors,
            "slow_errors": slow_loads.iter().map(|l| workload_errors(l, &["slow"])).sum::<u64>(),
            "slow_replies": slow_sum("slow_replies"),
            "slow_connections_peak": slow_max("connections_peak"),
            "slow_generator_cpu_pct": slow_max("generator_cpu_pct"),
            "probes": all_probes,
            "probes_closed": closed.len(),
            "probe_close_first_s": if closed.is_empty() { 0.0 } else { first },
            "probe_close_last_s": last,
            "server_cpu_attack_pct": attack_median("server_cpu_pct"),
            "server_header_timed_out": num(&stats, "connections.header_timed_out"),
            "server_408": num(&stats, "requests.by_status.408"),
            // The server's event-loop turns over the whole run (ours only):
            // how often it was busy or stalled long enough to delay a reply.
            "server_turns_256us": num(&stats, "turns.at_least_256us"),
            "server_turns_1ms": num(&stats, "turns.at_least_1ms"),
            "server_turns": num(&stats, "turns.count"),
            "server_turn_longest_ms": num(&stats, "turns.longest.us") / 1e3,
            "generator_saturated": attacks.iter().any(|a| a["generator_saturated"] == Value::Bool(true)),
        });
        // The windows' steal, and those measured again for it.
        let stolen = dropped.listed.len();
        if let Value::Object(m) = &mut run.figures {
            m.extend([
                ("p99_ratio_interval_90".into(), json!([ratio_lo, ratio_hi])),
                ("steal_pct_baseline_windows".into(), json!(base_steal)),
                ("steal_pct_attack_windows".into(), json!(attack_steal)),
                ("steal_pct_elsewhere".into(), json!(elsewhere_steal)),
                ("windows_stolen".into(), json!(stolen)),
                (
                    "windows_measured_again".into(),
                    Value::Array(dropped.listed),
                ),
            ]);
        }
        run.check(
            &format!(
                "normal clients' p99 under attack / baseline (mean of the baselines either side; median of {rounds} round(s))"
            ),
            ratio,
            "≤ 2",
            ratio <= 2.0,
        );
        run.check("normal clients' errors", errors, "0", errors == 0);
        run.check(
            "probes closed by the server",
            json!({"closed": closed.len(), "probes": all_probes}),
            "all",
            closed.len() == all_probes,
        );
        run.check(
            "first probe closed after, s",
            if closed.is_empty() { 0.0 } else { first },
            &format!("≥ {h} (header timeout)"),
            !closed.is_empty() && first >= h - 0.05,
        );
        run.check(
            "last probe closed after, s",
            last,
            &format!("≤ {}", h + LATE_S),
            !closed.is_empty() && last <= h + LATE_S,
        );
        if name == "evdispatch" {
            let cut = num(&stats, "connections.header_timed_out");
            run.check(
                "connections cut at the header timeout (server stats)",
                cut,
                &format!("≥ {}", slow * rounds as u64),
                cut >= (slow * rounds as u64) as f64,
            );
        }
        let what = format!(
            "slowloris {name} {label}: p99 {p99_base:.2} -> {p99_attack:.2} ms (rounds {}{}; {stolen} window(s) measured again for steal), probes closed at {first:.2}..{last:.2} s",
            round_ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(" "),
            elsewhere_ratio.map_or(String::new(), |r| format!("; attack elsewhere {r:.2}")),
        );
        rep.add(env, run, what);
    }
    if let Some(sink) = sink {
        stop(sink)?;
    }
    Ok(rep.finish())
}

/// Windows measured again for their steal: which, how stolen and their
/// p99 (reported), and their loads (whose errors still count).
#[derive(Default)]
struct Dropped {
    listed: Vec<Value>,
    loads: Vec<Value>,
}

impl Dropped {
    fn note(&mut self, window: &str, dropped: impl IntoIterator<Item = (Value, f64)>) {
        for (load, steal) in dropped {
            self.listed
                .push(json!({"window": window, "steal_pct": steal, "p99_ms": p99_ms(&load)}));
            self.loads.push(load);
        }
    }

    /// Note baseline `u`'s dropped attempts (as the `bases.len() + 1`th
    /// baseline) and add its kept one, with its steal, to `bases`.
    fn keep_baseline(&mut self, bases: &mut Vec<(Value, f64)>, u: Unstolen<Value>) {
        self.note(&format!("baseline {}", bases.len() + 1), u.dropped);
        bases.push((u.value, u.steal_pct));
    }

    /// Note attack `u`'s dropped attempts (their normal clients' loads);
    /// its kept one and that one's steal.
    fn keep_round(&mut self, window: &str, u: Unstolen<Round>) -> (Round, f64) {
        self.note(window, u.dropped.into_iter().map(|(r, s)| (r.normal, s)));
        (u.value, u.steal_pct)
    }
}

/// What one attack measured.
struct Round {
    /// The normal clients' load summary.
    normal: Value,
    /// The slow clients' load summary.
    slow: Value,
    /// Each probe's seconds from connect to close (`None`: not closed).
    closes: Vec<Option<f64>>,
}

/// One attack: the slow clients (sent to `attacked`: the measured `server`,
/// or for the control a second one) from a load process of their own, the
/// normal load beside them on `server`, and the timed probes.
#[allow(clippy::too_many_arguments)]
fn attack_round(
    env: &Env,
    server: &ServerProcess,
    attacked: &ServerProcess,
    normal: &LoadCommand,
    slow: u64,
    header_s: u64,
    warmup_s: f64,
    attack_s: f64,
    probes: usize,
) -> anyhow::Result<Round> {
    // The slow clients come from a load process of their own, as from
    // other machines: the normal clients' latency is then the server's
    // doing, not their generator's busy with 5,000 reconnects.
    let attack_args = LoadCommand {
        warmup: Some(Duration::from_secs_f64(warmup_s)),
        duration: Some(Duration::from_secs_f64(attack_s)),
        ..normal.clone()
    };
    // At the lowest priority on the shared load CPU: the attackers stand
    // for other machines and must not delay the measured clients'
    // generator (the server's cost of them is what counts). They arrive
    // over one header timeout, as independent clients would: connected in
    // one burst, all 5,000 would time out and reconnect together every
    // header timeout, a connection flood rather than slowloris (and an
    // artefact of one generator).
    let slow_args = LoadCommand {
        background: true,
        slow: Some(slow),
        slow_bytes: Some(1),
        slow_interval: Some(Duration::from_secs(1)),
        slow_ramp: Some(Duration::from_secs(header_s)),
        duration: Some(Duration::from_secs_f64(warmup_s + attack_s + 1.0)),
        ..LoadCommand::default()
    };
    let addr = attacked.addr();
    std::thread::scope(|s| {
        let hs = s.spawn(|| load(env, attacked, "/six.txt", &slow_args));
        // The slow clients connect first; the normal load's warm-up
        // covers the rest of their setup.
        std::thread::sleep(Duration::from_millis(500));
        let h = s.spawn(|| load(env, server, "/six.txt", &attack_args));
        std::thread::sleep(Duration::from_secs_f64(warmup_s * 0.75));
        let closes = probe_closes(addr, probes, Duration::from_secs(header_s + 10));
        let normal = h.join().expect("the load thread");
        let slow = hs.join().expect("the slow clients' thread");
        Ok(Round {
            normal: normal?,
            slow: slow?,
            closes,
        })
    })
}

/// Open `n` connections that send a request a byte a second, and return
/// for each the seconds from its connect to the server closing it (or
/// answering it, which for an unfinished request is the 408 before the
/// close); `None` if still open after `limit`.
pub fn probe_closes(addr: SocketAddr, n: usize, limit: Duration) -> Vec<Option<f64>> {
    let req = b"GET /index.html HTTP/1.1\r\nHost: t\r\nUser-Agent: a-very-slow-client\r\n\r\n";
    struct P {
        s: Option<TcpStream>,
        t0: Instant,
        sent: usize,
        closed: Option<f64>,
    }
    let mut ps: Vec<P> = (0..n)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .map(|s| {
            let _ = s.set_nonblocking(true);
            P {
                s: Some(s),
                t0: Instant::now(),
                sent: 0,
                closed: None,
            }
        })
        .collect();
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    while start.elapsed() < limit && ps.iter().any(|p| p.closed.is_none()) {
        for p in ps.iter_mut().filter(|p| p.closed.is_none()) {
            let Some(s) = p.s.as_mut() else { continue };
            let due = p.t0.elapsed().as_secs() as usize + 1;
            let mut gone = false;
            while p.sent < due.min(req.len()) {
                match s.write(&req[p.sent..p.sent + 1]) {
                    Ok(_) => p.sent += 1,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => {
                        gone = true;
                        break;
                    }
                }
            }
            match s.read(&mut buf) {
                Ok(_) => gone = true, // EOF, or the 408 sent before the close
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => gone = true,
            }
            if gone {
                p.closed = Some(p.t0.elapsed().as_secs_f64());
                p.s = None;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out: Vec<Option<f64>> = ps.iter().map(|p| p.closed).collect();
    out.resize(n, None);
    out
}
