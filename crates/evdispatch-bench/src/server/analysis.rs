//! What a run's rounds add up to: summaries over rounds, ratios to the best
//! peer and to the floors paired within rounds, the access log's cost, range
//! over whole, HTTPS over plain, and the [`TARGETS`] judged ([`Verdict`]). In that order: the
//! row types, the targets and their verdicts, then [`Analysis`].

use std::collections::BTreeMap;

use serde::Serialize;

use evdispatch_harness::median;

use super::measure::Run;
use super::plan::{Plan, Scenario, LOGGED};

/// Median and range of one figure of one server in one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryRow {
    /// Scenario.
    pub scenario: Scenario,
    /// Server.
    pub server: String,
    /// True for a peer.
    pub peer: bool,
    /// True for a floor server.
    pub floor: bool,
    /// Figure name.
    pub figure: String,
    /// Median over rounds.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// `(max - min) / median`, the spread over rounds.
    pub spread: f64,
    /// Rounds that measured it.
    pub n: usize,
}

/// A server ÷ a reference (one of ours ÷ the best peer in `ratios`; any
/// server ÷ the lower floor in `floor_multiples`), each round's own values
/// paired.
#[derive(Debug, Clone, Serialize)]
pub struct RatioRow {
    /// Scenario.
    pub scenario: Scenario,
    /// Figure compared.
    pub figure: String,
    /// Our server.
    pub server: String,
    /// True when lower is better (CPU time), false when higher is (rates).
    pub lower_is_better: bool,
    /// Median of the rounds' ratios.
    pub median: f64,
    /// Smallest ratio.
    pub min: f64,
    /// Largest ratio.
    pub max: f64,
    /// Each round: the reference, its value, the server's, the ratio.
    pub rounds: Vec<RatioRound>,
}

/// One round of a [`RatioRow`].
#[derive(Debug, Clone, Serialize)]
pub struct RatioRound {
    /// Round.
    pub round: usize,
    /// The reference of that round: the best peer (in `ratios`) or the
    /// lower floor (in `floor_multiples`).
    pub best_peer: String,
    /// Its value.
    pub best_value: f64,
    /// Ours.
    pub value: f64,
    /// `value / best_value`.
    pub ratio: f64,
}

/// Figures compared with the best peer: scenario, figure, lower is better.
const VERSUS_PEERS: &[(Scenario, &str, bool)] = &[
    (Scenario::Keepalive, "cpu_us_per_request", true),
    (Scenario::Keepalive, "requests_per_sec", false),
    (Scenario::Close, "cpu_us_per_connection", true),
    (Scenario::Close, "connections_per_sec", false),
    (Scenario::HttpsKeepalive, "cpu_us_per_request", true),
    (Scenario::HttpsFull, "handshakes_per_cpu_s", false),
    (Scenario::HttpsResumed, "handshakes_per_cpu_s", false),
    (Scenario::HttpsLarge, "bytes_per_cpu_s", false),
    (Scenario::HttpsIdle, "bytes_per_idle_connection", true),
];

/// A bound a target puts on a value.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The value must be at most this.
    AtMost(f64),
    /// The value must be at least this.
    AtLeast(f64),
}

impl Bound {
    fn holds(self, v: f64) -> bool {
        match self {
            Bound::AtMost(x) => v <= x,
            Bound::AtLeast(x) => v >= x,
        }
    }

    fn text(self) -> String {
        match self {
            Bound::AtMost(x) => format!("<= {x}"),
            Bound::AtLeast(x) => format!(">= {x}"),
        }
    }
}

/// What a target's figure is divided by before it is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Against {
    /// Nothing: the figure itself.
    Itself,
    /// The best peer of the same round.
    BestPeer,
    /// The lower floor of the same round.
    Floor,
    /// The same server's `whole` in the same round (a `range` figure).
    Whole,
    /// The same server's plain `keepalive` in the same round (an
    /// `https-keepalive` figure).
    Plain,
    /// nginx's own added cost in the same round (an access-log cost).
    NginxLogCost,
}

/// One figure a target bounds, for each of our servers.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Target {
    /// Short name.
    pub id: &'static str,
    /// What is asked, in words.
    pub what: &'static str,
    /// Scenarios the figure comes from (the first that has it).
    pub scenarios: &'static [Scenario],
    /// The figure.
    pub figure: &'static str,
    /// What the figure is judged against.
    pub against: Against,
    /// The bound.
    pub bound: Bound,
}

/// The targets every run is judged against.
pub const TARGETS: &[Target] = &[
    Target {
        id: "keepalive-cpu",
        what: "keep-alive: server CPU per request <= 0.9 x the best peer's",
        scenarios: &[Scenario::Keepalive],
        figure: "cpu_us_per_request",
        against: Against::BestPeer,
        bound: Bound::AtMost(0.9),
    },
    Target {
        id: "keepalive-cpu-85",
        what: "keep-alive, access log off: server CPU per request <= 0.85 x the best peer's (for the best model)",
        scenarios: &[Scenario::Keepalive],
        figure: "cpu_us_per_request",
        against: Against::BestPeer,
        bound: Bound::AtMost(0.85),
    },
    Target {
        id: "keepalive-floor",
        what: "keep-alive: server CPU per request <= 1.10 x the lower floor's (for the best model)",
        scenarios: &[Scenario::Keepalive],
        figure: "cpu_us_per_request",
        against: Against::Floor,
        bound: Bound::AtMost(1.10),
    },
    Target {
        id: "range-cpu",
        what: "a 64 KiB range of a 1 MiB file: CPU per request <= 1.05 x a whole 64 KiB file's (the same bytes; 5% for noise)",
        scenarios: &[Scenario::Range],
        figure: "cpu_us_per_request",
        against: Against::Whole,
        bound: Bound::AtMost(1.05),
    },
    Target {
        id: "access-log-cost",
        what: "keep-alive: CPU per request added by --access-log <= nginx's added by its access_log",
        scenarios: &[Scenario::Keepalive],
        figure: ACCESS_LOG_ADDED,
        against: Against::NginxLogCost,
        bound: Bound::AtMost(1.0),
    },
    Target {
        id: "keepalive-rps",
        what: "keep-alive: requests/s >= the best peer's",
        scenarios: &[Scenario::Keepalive],
        figure: "requests_per_sec",
        against: Against::BestPeer,
        bound: Bound::AtLeast(1.0),
    },
    Target {
        id: "close-cpu",
        what: "Connection: close: server CPU per connection <= 0.9 x the best peer's",
        scenarios: &[Scenario::Close],
        figure: "cpu_us_per_connection",
        against: Against::BestPeer,
        bound: Bound::AtMost(0.9),
    },
    Target {
        id: "https-keepalive-cpu",
        what: "keep-alive over HTTPS: server CPU per request <= 0.9 x nginx's",
        scenarios: &[Scenario::HttpsKeepalive],
        figure: "cpu_us_per_request",
        against: Against::BestPeer,
        bound: Bound::AtMost(0.9),
    },
    Target {
        id: "https-keepalive-over-plain",
        what: "keep-alive over HTTPS: server CPU per request <= 1.3 x its own over plain HTTP",
        scenarios: &[Scenario::HttpsKeepalive],
        figure: "cpu_us_per_request",
        against: Against::Plain,
        bound: Bound::AtMost(1.3),
    },
    Target {
        id: "https-full-handshakes",
        what: "a new connection per request, TLS 1.3, ECDSA P-256: full handshakes per server CPU-second >= nginx's",
        scenarios: &[Scenario::HttpsFull],
        figure: "handshakes_per_cpu_s",
        against: Against::BestPeer,
        bound: Bound::AtLeast(1.0),
    },
    Target {
        id: "https-resumed-handshakes",
        what: "a new connection per request, resumed: handshakes per server CPU-second >= nginx's",
        scenarios: &[Scenario::HttpsResumed],
        figure: "handshakes_per_cpu_s",
        against: Against::BestPeer,
        bound: Bound::AtLeast(1.0),
    },
    Target {
        id: "https-large-bytes",
        what: "a 1 MiB file over HTTPS: bytes per server CPU-second >= nginx's",
        scenarios: &[Scenario::HttpsLarge],
        figure: "bytes_per_cpu_s",
        against: Against::BestPeer,
        bound: Bound::AtLeast(1.0),
    },
    Target {
        id: "https-idle-memory",
        what: "idle TLS connections: user-space memory per connection <= nginx's",
        scenarios: &[Scenario::HttpsIdle],
        figure: "bytes_per_idle_connection",
        against: Against::BestPeer,
        bound: Bound::AtMost(1.0),
    },
    Target {
        id: "idle-throughput",
        what: "idle connections held: throughput >= 0.95 x its own with none",
        scenarios: &[Scenario::Idle],
        figure: "rps_ratio",
        against: Against::Itself,
        bound: Bound::AtLeast(0.95),
    },
    Target {
        id: "idle-p99",
        what: "idle connections held: open-loop p99 <= 1.2 x its own with none",
        scenarios: &[Scenario::Idle],
        figure: "p99_ratio",
        against: Against::Itself,
        bound: Bound::AtMost(1.2),
    },
    Target {
        id: "idle-p99-own",
        what: "(attribution, not a target of its own) p99 with the connections held <= 1.2 x with them held by another process",
        scenarios: &[Scenario::Idle],
        figure: "p99_own_ratio",
        against: Against::Itself,
        bound: Bound::AtMost(1.2),
    },
    Target {
        id: "idle-memory",
        what: "user-space memory per idle connection <= 256 bytes",
        scenarios: &[Scenario::Idle, Scenario::Memory],
        figure: "bytes_per_idle_connection",
        against: Against::Itself,
        bound: Bound::AtMost(256.0),
    },
];

/// A target judged for one of our servers.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// Target id.
    pub id: &'static str,
    /// What is asked.
    pub what: &'static str,
    /// Our server.
    pub server: String,
    /// The bound, as text (`<= 0.9`).
    pub bound: String,
    /// Median (of the ratio, for targets against the best peer); `None`
    /// when not measured.
    pub median: Option<f64>,
    /// Smallest over rounds.
    pub min: Option<f64>,
    /// Largest over rounds.
    pub max: Option<f64>,
    /// Rounds measured.
    pub n: usize,
    /// The median meets the bound (`None`: not measured).
    pub met: Option<bool>,
    /// Every round meets it.
    pub every_round: bool,
}

/// Median and range of `values` (unsorted).
fn stats(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    let m = median(&mut v);
    (
        m,
        v.first().copied().unwrap_or(f64::NAN),
        v.last().copied().unwrap_or(f64::NAN),
    )
}

/// What [`analyse`] finds: the figures of `bench server`'s JSON after its
/// runs.
#[derive(Debug, Serialize)]
pub struct Analysis {
    /// Per scenario, server and figure: median and range over rounds.
    pub summary: Vec<SummaryRow>,
    /// Our servers ÷ the best peer, paired within rounds.
    pub ratios: Vec<RatioRow>,
    /// Every server's keep-alive CPU per request ÷ the lower floor of the
    /// same round (`best_peer` names that floor here).
    pub floor_multiples: Vec<RatioRow>,
    /// Every server's `range` CPU per request ÷ its `whole`, paired within
    /// rounds (`best_peer` names the `whole` run here).
    pub range_over_whole: Vec<RatioRow>,
    /// Every server's `https-keepalive` CPU per request ÷ its plain
    /// `keepalive`, paired within rounds (`best_peer` names the plain run
    /// here).
    pub https_over_plain: Vec<RatioRow>,
    /// What each `NAME+log` adds to `NAME`'s keep-alive CPU per request.
    pub access_log_costs: Vec<LogCostRow>,
    /// Our servers' added cost ÷ nginx's, paired within rounds.
    pub log_cost_vs_nginx: Vec<RatioRow>,
    /// The targets, judged.
    pub targets: Vec<Verdict>,
}

/// The figure name of an access log's added cost.
const ACCESS_LOG_ADDED: &str = "access_log_added_cpu_us";

/// What a server's access log adds to its keep-alive CPU per request:
/// `NAME+log` minus `NAME`, paired within rounds.
#[derive(Debug, Clone, Serialize)]
pub struct LogCostRow {
    /// The server (without `+log`).
    pub server: String,
    /// True for a peer.
    pub peer: bool,
    /// Median over rounds of the added µs per request.
    pub median_added_us: f64,
    /// Smallest.
    pub min_added_us: f64,
    /// Largest.
    pub max_added_us: f64,
    /// Each round: CPU µs per request off, on, and the difference.
    pub rounds: Vec<LogCostRound>,
}

/// One round of a [`LogCostRow`].
#[derive(Debug, Clone, Serialize)]
pub struct LogCostRound {
    /// Round.
    pub round: usize,
    /// Without the access log.
    pub off_us: f64,
    /// With it.
    pub on_us: f64,
    /// `on_us - off_us`.
    pub added_us: f64,
}

/// The keep-alive CPU per request of `server` in `round`, if measured.
fn keepalive_cpu(runs: &[Run], server: &str, round: usize, scenario: Scenario) -> Option<f64> {
    runs.iter()
        .find(|r| {
            r.round == round && r.scenario == scenario && r.server == server && r.error.is_none()
        })
        .and_then(|r| r.figures.get("cpu_us_per_request").copied())
        .filter(|v| v.is_finite())
}

/// Every server's keep-alive CPU per request in `scenario` ÷ its own in
/// `reference` of the same round (`range` ÷ `whole`, `https-keepalive` ÷
/// `keepalive`).
fn own_ratio(plan: &Plan, runs: &[Run], scenario: Scenario, reference: Scenario) -> Vec<RatioRow> {
    let mut rows = Vec::new();
    for server in &plan.servers {
        let rounds: Vec<RatioRound> = (0..plan.rounds)
            .filter_map(|round| {
                let v = keepalive_cpu(runs, server, round, scenario)?;
                let w = keepalive_cpu(runs, server, round, reference)?;
                (w > 0.0).then(|| RatioRound {
                    round,
                    best_peer: format!("{server} {}", reference.name()),
                    best_value: w,
                    value: v,
                    ratio: v / w,
                })
            })
            .collect();
        let figure = (scenario, "cpu_us_per_request", true);
        rows.extend(ratio_row(figure, server, rounds));
    }
    rows
}

/// The rounds summarised as a [`RatioRow`]; `None` without any.
fn ratio_row(
    (scenario, figure, lower): (Scenario, &str, bool),
    server: &str,
    rounds: Vec<RatioRound>,
) -> Option<RatioRow> {
    if rounds.is_empty() {
        return None;
    }
    let (m, lo, hi) = stats(&rounds.iter().map(|r| r.ratio).collect::<Vec<_>>());
    Some(RatioRow {
        scenario,
        figure: figure.to_string(),
        server: server.to_string(),
        lower_is_better: lower,
        median: m,
        min: lo,
        max: hi,
        rounds,
    })
}

/// For every `NAME+log` beside `NAME`: the added cost per round; and for
/// ours, the added cost ÷ nginx's of the same round.
fn access_log_costs(plan: &Plan, runs: &[Run]) -> (Vec<LogCostRow>, Vec<RatioRow>) {
    let mut costs = Vec::new();
    for logged in plan.servers.iter().filter(|s| s.ends_with(LOGGED)) {
        let base = logged.trim_end_matches(LOGGED);
        if !plan.servers.iter().any(|s| s == base) {
            continue;
        }
        let rounds: Vec<LogCostRound> = (0..plan.rounds)
            .filter_map(|round| {
                let off = keepalive_cpu(runs, base, round, Scenario::Keepalive)?;
                let on = keepalive_cpu(runs, logged, round, Scenario::Keepalive)?;
                Some(LogCostRound {
                    round,
                    off_us: off,
                    on_us: on,
                    added_us: on - off,
                })
            })
            .collect();
        if rounds.is_empty() {
            continue;
        }
        let (m, lo, hi) = stats(&rounds.iter().map(|r| r.added_us).collect::<Vec<_>>());
        costs.push(LogCostRow {
            server: base.to_string(),
            peer: runs.iter().any(|r| r.server == base && r.peer),
            median_added_us: m,
            min_added_us: lo,
            max_added_us: hi,
            rounds,
        });
    }
    let mut versus = Vec::new();
    if let Some(nginx) = costs.iter().find(|c| c.server == "nginx") {
        for ours in costs.iter().filter(|c| !c.peer) {
            let rounds: Vec<RatioRound> = ours
                .rounds
                .iter()
                .filter_map(|o| {
                    let n = nginx.rounds.iter().find(|n| n.round == o.round)?;
                    // A cost nginx does not show above the noise leaves
                    // nothing to divide by.
                    (n.added_us > 0.0).then(|| RatioRound {
                        round: o.round,
                        best_peer: "nginx".into(),
                        best_value: n.added_us,
                        value: o.added_us,
                        ratio: o.added_us / n.added_us,
                    })
                })
                .collect();
            let name = format!("{}{}", ours.server, LOGGED);
            let figure = (Scenario::Keepalive, ACCESS_LOG_ADDED, true);
            versus.extend(ratio_row(figure, &name, rounds));
        }
    }
    (costs, versus)
}

/// For each server `subject` accepts, in plan order: its `figure` in
/// `scenario` ÷ the best value among the runs `reference` accepts in the
/// same round (the lowest when `lower`, else the highest).
fn paired(
    plan: &Plan,
    runs: &[Run],
    (scenario, figure, lower): (Scenario, &str, bool),
    subject: impl Fn(&Run) -> bool,
    reference: impl Fn(&Run) -> bool,
) -> Vec<RatioRow> {
    let mut rows = Vec::new();
    let servers = plan.servers.iter().filter(|s| {
        runs.iter()
            .any(|r| r.scenario == scenario && &r.server == *s && subject(r))
    });
    for server in servers {
        let mut rounds = Vec::new();
        for round in 0..plan.rounds {
            let value = |r: &Run| r.figures.get(figure).copied().filter(|v| v.is_finite());
            let in_round =
                |r: &&Run| r.round == round && r.scenario == scenario && r.error.is_none();
            let Some(v) = runs
                .iter()
                .filter(in_round)
                .find(|r| &r.server == server)
                .and_then(value)
            else {
                continue;
            };
            let best = runs
                .iter()
                .filter(in_round)
                .filter(|r| reference(r))
                .filter_map(|r| value(r).map(|x| (r.server.clone(), x)))
                .min_by(|a, b| {
                    if lower {
                        a.1.total_cmp(&b.1)
                    } else {
                        b.1.total_cmp(&a.1)
                    }
                });
            if let Some((peer, b)) = best {
                if b > 0.0 {
                    rounds.push(RatioRound {
                        round,
                        best_peer: peer,
                        best_value: b,
                        value: v,
                        ratio: v / b,
                    });
                }
            }
        }
        rows.extend(ratio_row((scenario, figure, lower), server, rounds));
    }
    rows
}

/// The figure divided by the floor: keep-alive CPU per request.
const VERSUS_FLOOR: (Scenario, &str, bool) = (Scenario::Keepalive, "cpu_us_per_request", true);

/// Summaries, paired ratios and verdicts.
pub(super) fn analyse(plan: &Plan, runs: &[Run]) -> Analysis {
    // (scenario, server, figure) -> values, in server order of the plan.
    // (scenario, server, figure) -> (peer, floor, values)
    type Groups = BTreeMap<(Scenario, usize, String), (bool, bool, Vec<f64>)>;
    let mut groups = Groups::new();
    let order = |name: &str| {
        plan.servers
            .iter()
            .position(|s| s == name)
            .unwrap_or(usize::MAX)
    };
    for r in runs.iter().filter(|r| r.error.is_none()) {
        for (fig, &v) in &r.figures {
            if v.is_finite() {
                groups
                    .entry((r.scenario, order(&r.server), fig.clone()))
                    .or_insert((r.peer, r.floor, Vec::new()))
                    .2
                    .push(v);
            }
        }
    }
    let summary: Vec<SummaryRow> = groups
        .into_iter()
        .map(|((scenario, idx, figure), (peer, floor, values))| {
            let (m, lo, hi) = stats(&values);
            SummaryRow {
                scenario,
                server: plan.servers.get(idx).cloned().unwrap_or_default(),
                peer,
                floor,
                figure,
                median: m,
                min: lo,
                max: hi,
                spread: if m != 0.0 { (hi - lo) / m } else { 0.0 },
                n: values.len(),
            }
        })
        .collect();

    let ours = |r: &Run| !r.peer && !r.floor;
    let ratios: Vec<RatioRow> = VERSUS_PEERS
        .iter()
        .flat_map(|&t| paired(plan, runs, t, ours, |r: &Run| r.peer))
        .collect();
    // Every server, the other floor included, against the lower floor.
    let floor_multiples = paired(plan, runs, VERSUS_FLOOR, |_: &Run| true, |r: &Run| r.floor);
    let range_over_whole = own_ratio(plan, runs, Scenario::Range, Scenario::Whole);
    let https_over_plain = own_ratio(plan, runs, Scenario::HttpsKeepalive, Scenario::Keepalive);
    let (access_log_costs, log_cost_vs_nginx) = access_log_costs(plan, runs);

    let mut verdicts = Vec::new();
    let our_servers: Vec<&String> = plan
        .servers
        .iter()
        .filter(|s| runs.iter().any(|r| &r.server == *s && ours(r)))
        .collect();
    for t in TARGETS {
        if !t.scenarios.iter().any(|s| plan.scenarios.contains(s)) {
            continue;
        }
        for server in &our_servers {
            let against = match t.against {
                Against::Itself => None,
                Against::BestPeer => Some(&ratios),
                Against::Floor => Some(&floor_multiples),
                Against::Whole => Some(&range_over_whole),
                Against::Plain => Some(&https_over_plain),
                Against::NginxLogCost => Some(&log_cost_vs_nginx),
            };
            let values: Vec<f64> = if let Some(rows) = against {
                rows.iter()
                    .find(|r| {
                        t.scenarios.contains(&r.scenario)
                            && r.figure == t.figure
                            && &&r.server == server
                    })
                    .map(|r| r.rounds.iter().map(|x| x.ratio).collect())
                    .unwrap_or_default()
            } else {
                runs.iter()
                    .filter(|r| {
                        t.scenarios.contains(&r.scenario)
                            && &&r.server == server
                            && r.error.is_none()
                    })
                    .filter_map(|r| r.figures.get(t.figure).copied())
                    .filter(|v| v.is_finite())
                    .collect()
            };
            let (m, lo, hi) = stats(&values);
            let measured = !values.is_empty();
            verdicts.push(Verdict {
                id: t.id,
                what: t.what,
                server: server.to_string(),
                bound: t.bound.text(),
                median: measured.then_some(m),
                min: measured.then_some(lo),
                max: measured.then_some(hi),
                n: values.len(),
                met: measured.then(|| t.bound.holds(m)),
                every_round: measured && values.iter().all(|&v| t.bound.holds(v)),
            });
        }
    }
    Analysis {
        summary,
        ratios,
        floor_multiples,
        range_over_whole,
        https_over_plain,
        access_log_costs,
        log_cost_vs_nginx,
        targets: verdicts,
    }
}

#[cfg(test)]
mod tests {
    use super::super::plan::Contestant;
    use super::*;

    fn run(
        round: usize,
        scenario: Scenario,
        server: &str,
        peer: bool,
        figs: &[(&str, f64)],
    ) -> Run {
        Run {
            round,
            scenario,
            server: server.into(),
            peer,
            floor: server.starts_with("floor-"),
            figures: figs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            notes: Vec::new(),
            error: None,
        }
    }

    fn plan(servers: &[&str], rounds: usize) -> Plan {
        let args = <crate::server::ServerArgs as clap::FromArgMatches>::from_arg_matches(
            &<crate::server::ServerArgs as clap::Args>::augment_args(clap::Command::new("t"))
                .get_matches_from([
                    "t",
                    "--servers",
                    &servers.join(","),
                    "--binary",
                    "/bin/true",
                ]),
        )
        .unwrap();
        let mut p = Plan::new(&args).unwrap();
        p.rounds = rounds;
        p
    }

    /// Ratios pair each round with that round's best peer, and the
    /// verdicts follow the bounds both ways.
    #[test]
    fn paired_ratios_and_verdicts() {
        let mut p = plan(&["epoll", "nginx", "h2o"], 2);
        p.scenarios = vec![Scenario::Close];
        let k = Scenario::Close;
        let fig = "cpu_us_per_connection";
        let runs = vec![
            run(0, k, "epoll", false, &[(fig, 8.0)]),
            run(0, k, "nginx", true, &[(fig, 12.0)]),
            run(0, k, "h2o", true, &[(fig, 10.0)]),
            // A slower round: everything doubled, and nginx best this time.
            run(1, k, "epoll", false, &[(fig, 19.0)]),
            run(1, k, "nginx", true, &[(fig, 20.0)]),
            run(1, k, "h2o", true, &[(fig, 24.0)]),
        ];
        let Analysis {
            summary,
            ratios,
            targets: verdicts,
            ..
        } = analyse(&p, &runs);
        let s = summary
            .iter()
            .find(|r| r.server == "epoll" && r.figure == fig)
            .unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (13.5, 8.0, 19.0, 2));
        let r = ratios.iter().find(|r| r.figure == fig).unwrap();
        assert_eq!(r.rounds[0].best_peer, "h2o");
        assert_eq!(r.rounds[1].best_peer, "nginx");
        assert!((r.rounds[0].ratio - 0.8).abs() < 1e-12);
        assert!((r.rounds[1].ratio - 0.95).abs() < 1e-12);
        assert!((r.median - 0.875).abs() < 1e-12);
        let v = verdicts.iter().find(|v| v.id == "close-cpu").unwrap();
        assert_eq!(v.met, Some(true));
        assert!(!v.every_round, "round 2 (0.95) misses 0.9");
        // Targets of scenarios not planned are not listed.
        assert!(verdicts.iter().all(|v| v.id.starts_with("close")));
    }

    #[test]
    fn own_figure_targets_and_failures() {
        let mut p = plan(&["uring"], 1);
        p.scenarios = vec![Scenario::Idle];
        let mut failed = run(0, Scenario::Idle, "uring", false, &[("p99_ratio", 9.0)]);
        failed.error = Some("broke".into());
        let runs = vec![
            run(
                0,
                Scenario::Idle,
                "uring",
                false,
                &[
                    ("rps_ratio", 0.9),
                    ("p99_ratio", 1.1),
                    ("bytes_per_idle_connection", 100.0),
                ],
            ),
            failed,
        ];
        let Analysis {
            ratios,
            targets: verdicts,
            ..
        } = analyse(&p, &runs);
        assert!(ratios.is_empty());
        let get = |id: &str| verdicts.iter().find(|v| v.id == id).unwrap();
        assert_eq!(get("idle-throughput").met, Some(false));
        assert_eq!(get("idle-p99").met, Some(true));
        assert_eq!(get("idle-p99").n, 1, "a failed run does not count");
        assert_eq!(get("idle-memory").met, Some(true));
    }

    #[test]
    fn unmeasured_targets_say_so() {
        let p = plan(&["epoll", "nginx"], 1);
        let runs = vec![run(
            0,
            Scenario::Keepalive,
            "epoll",
            false,
            &[("requests_per_sec", 1.0)],
        )];
        let verdicts = analyse(&p, &runs).targets;
        let v = verdicts.iter().find(|v| v.id == "keepalive-rps").unwrap();
        assert_eq!((v.met, v.n), (None, 0), "no peer ran: no ratio");
    }

    /// Every server, the floors too, is divided by the lower floor of its
    /// round; floors are neither ours nor peers in the other ratios, and
    /// the floor target is judged on the multiple.
    #[test]
    fn floor_multiples_pair_with_the_lower_floor() {
        let mut p = plan(&["epoll", "nginx", "floor-epoll", "floor-uring"], 2);
        p.scenarios = vec![Scenario::Keepalive];
        let k = Scenario::Keepalive;
        let fig = "cpu_us_per_request";
        let runs = vec![
            run(0, k, "epoll", false, &[(fig, 7.5)]),
            run(0, k, "nginx", true, &[(fig, 9.0)]),
            run(0, k, "floor-epoll", false, &[(fig, 7.0)]),
            run(0, k, "floor-uring", false, &[(fig, 7.2)]),
            // The uring floor lower this round.
            run(1, k, "epoll", false, &[(fig, 8.0)]),
            run(1, k, "nginx", true, &[(fig, 9.5)]),
            run(1, k, "floor-epoll", false, &[(fig, 7.4)]),
            run(1, k, "floor-uring", false, &[(fig, 6.4)]),
        ];
        let a = analyse(&p, &runs);
        let m = |server: &str| {
            a.floor_multiples
                .iter()
                .find(|r| r.server == server)
                .unwrap_or_else(|| panic!("no multiple for {server}"))
        };
        let e = m("epoll");
        assert_eq!(e.rounds[0].best_peer, "floor-epoll");
        assert_eq!(e.rounds[1].best_peer, "floor-uring");
        assert!((e.rounds[0].ratio - 7.5 / 7.0).abs() < 1e-12);
        assert!((e.rounds[1].ratio - 8.0 / 6.4).abs() < 1e-12);
        assert!((m("nginx").rounds[0].ratio - 9.0 / 7.0).abs() < 1e-12);
        assert!((m("floor-epoll").rounds[1].ratio - 7.4 / 6.4).abs() < 1e-12);
        assert_eq!(m("floor-uring").rounds[1].ratio, 1.0);
        // Only epoll is ours: compared with nginx, never with a floor.
        assert!(a.ratios.iter().all(|r| r.server == "epoll"));
        assert!(a
            .ratios
            .iter()
            .flat_map(|r| &r.rounds)
            .all(|x| x.best_peer == "nginx"));
        let v = a
            .targets
            .iter()
            .find(|v| v.id == "keepalive-floor")
            .unwrap();
        assert_eq!(v.server, "epoll");
        // 7.5/7.0 = 1.071 and 8.0/6.4 = 1.25: median 1.16 > 1.10.
        assert_eq!(v.met, Some(false));
        assert!(a.targets.iter().all(|v| v.server == "epoll"));
    }

    /// `range` is paired with the same server's `whole`, `https-keepalive`
    /// with its `keepalive`; `NAME+log` with `NAME`, and our added cost
    /// with nginx's, round by round.
    #[test]
    fn own_pairs_and_access_log_costs() {
        let mut p = plan(&["epoll", "epoll+log", "nginx", "nginx+log"], 2);
        p.scenarios = vec![
            Scenario::Keepalive,
            Scenario::Range,
            Scenario::Whole,
            Scenario::HttpsKeepalive,
        ];
        let fig = "cpu_us_per_request";
        let (k, r, w) = (Scenario::Keepalive, Scenario::Range, Scenario::Whole);
        let h = Scenario::HttpsKeepalive;
        let runs = vec![
            run(0, k, "epoll", false, &[(fig, 8.0)]),
            run(0, k, "epoll+log", false, &[(fig, 8.5)]),
            run(0, k, "nginx", true, &[(fig, 10.0)]),
            run(0, k, "nginx+log", true, &[(fig, 11.0)]),
            run(1, k, "epoll", false, &[(fig, 9.0)]),
            run(1, k, "epoll+log", false, &[(fig, 9.2)]),
            run(1, k, "nginx", true, &[(fig, 10.0)]),
            run(1, k, "nginx+log", true, &[(fig, 10.8)]),
            run(0, r, "epoll", false, &[(fig, 12.0)]),
            run(0, w, "epoll", false, &[(fig, 10.0)]),
            run(1, r, "epoll", false, &[(fig, 11.0)]),
            run(1, w, "epoll", false, &[(fig, 11.0)]),
            run(0, h, "epoll", false, &[(fig, 10.0)]),
            run(1, h, "epoll", false, &[(fig, 12.6)]),
            run(0, h, "nginx", true, &[(fig, 15.0)]),
        ];
        let a = analyse(&p, &runs);
        let rw = &a.range_over_whole;
        assert_eq!(rw.len(), 1, "only epoll ran both: {rw:?}");
        assert!((rw[0].rounds[0].ratio - 1.2).abs() < 1e-12);
        assert!((rw[0].median - 1.1).abs() < 1e-12);
        let hp = &a.https_over_plain;
        assert_eq!(hp.len(), 2, "epoll and nginx ran both: {hp:?}");
        assert_eq!(hp[0].server, "epoll");
        assert_eq!(hp[0].rounds[0].best_peer, "epoll keepalive");
        assert!((hp[0].rounds[0].ratio - 1.25).abs() < 1e-12);
        assert!((hp[0].rounds[1].ratio - 1.4).abs() < 1e-12);
        assert_eq!(hp[1].server, "nginx");
        assert!((hp[1].rounds[0].ratio - 1.5).abs() < 1e-12);
        let cost = |s: &str| a.access_log_costs.iter().find(|c| c.server == s).unwrap();
        assert!((cost("epoll").rounds[0].added_us - 0.5).abs() < 1e-12);
        assert!((cost("nginx").rounds[1].added_us - 0.8).abs() < 1e-12);
        assert!(!cost("epoll").peer && cost("nginx").peer);
        let v = &a.log_cost_vs_nginx;
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].server, "epoll+log");
        assert!((v[0].rounds[0].ratio - 0.5).abs() < 1e-12);
        assert!((v[0].rounds[1].ratio - 0.25).abs() < 1e-9);
        let t = |id: &str, server: &str| {
            a.targets
                .iter()
                .find(|t| t.id == id && t.server == server)
                .unwrap_or_else(|| panic!("no {id} for {server}"))
                .met
        };
        assert_eq!(t("access-log-cost", "epoll+log"), Some(true));
        assert_eq!(t("access-log-cost", "epoll"), None);
        // 1.2 and 1.0: median 1.1 > 1.05.
        assert_eq!(t("range-cpu", "epoll"), Some(false));
        // 1.25 and 1.4: median 1.325 > 1.3.
        assert_eq!(t("https-keepalive-over-plain", "epoll"), Some(false));
        assert!(Contestant::parse("floor-epoll+log").is_err());
        assert_eq!(
            Contestant::parse("nginx+log").unwrap().name(),
            "nginx+log".to_string()
        );
    }
}
