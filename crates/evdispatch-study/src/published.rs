//! The seeds' published numbers, each with where it is printed (seed file
//! and section, table or figure), the machine it was measured on and its
//! unit, and with the measurement of this study it is set beside: the
//! scenario, the points (by configuration) and the metric. The report's
//! then-vs-now table ([`crate::report::thennow`]) looks today's values up
//! in a run's records.
//!
//! Every number here is read from the seed texts in `/work/shared/seeds/`
//! (their figures survive as prose only, so a figure's number is the one
//! its text states). Where the text bounds a number ("over 120 ms", "up to
//! 60%", "under 14 µs") the bound is kept as such ([`Is`]).

/// A machine a seed measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    /// Short name for the table.
    pub name: &'static str,
    /// What the seed says about it.
    pub about: &'static str,
}

/// Kegel's Linux 2.2.14 machine (seed 001).
pub const KEGEL_LINUX22: Machine = Machine {
    name: "650 MHz dual Pentium III, Linux 2.2.14",
    about: "idle 650 MHz dual Pentium III, Red Hat Linux 6.2, kernel 2.2.14smp with the /dev/poll patch",
};
/// The same machine on Linux 2.4.0-test10-pre4 (seed 001).
pub const KEGEL_LINUX24: Machine = Machine {
    name: "650 MHz dual Pentium III, Linux 2.4.0-test10",
    about: "the same 650 MHz dual Pentium III, kernel 2.4.0-test10-pre4 smp (no /dev/poll patch)",
};
/// Kegel's Solaris 7 machine (seed 001).
pub const KEGEL_SOLARIS7: Machine = Machine {
    name: "167 MHz UltraSPARC-1, Solaris 7",
    about: "167 MHz sun4u Sparc Ultra-1, SunOS 5.7 (Solaris 7) Generic_106541-11, two sshd and an idle X server running",
};
/// Doug Lea's Solaris 8 machine (seed 001).
pub const KEGEL_SOLARIS8: Machine = Machine {
    name: "4 × 400 MHz Enterprise 450, Solaris 8",
    about:
        "4 × 400 MHz Enterprise 450, Solaris 8 (results by Doug Lea; one CPU busy with other work)",
};
/// Jonathan Lemon's FreeBSD machine (seed 001).
pub const KEGEL_FREEBSD: Machine = Machine {
    name: "600 MHz Pentium III, FreeBSD 4.x",
    about: "single 600 MHz Pentium III, 512 MB, FreeBSD 4.x-STABLE (results by Jonathan Lemon)",
};
/// Provos & Lever's server (seed 000 §5).
pub const PROVOS_K6: Machine = Machine {
    name: "400 MHz AMD K6-2, Linux 2.2.14",
    about: "server: single 400 MHz AMD K6-2, 64 MB, Linux 2.2.14 (with /dev/poll, or RT signals back-ported from 2.3); client: 4 × 500 MHz Xeon Pentium III; 100 Mbit/s Ethernet",
};
/// Chandra & Mosberger's server (seed 004 §3.1.1).
pub const CHANDRA_PIII: Machine = Machine {
    name: "400 MHz Pentium III, Linux 2.4.0-test7",
    about: "server: 400 MHz Pentium III HP NetServer LPr (dual-processor, run uniprocessor), Linux 2.4.0-test7; clients: ten HP B180 PA-RISC, HP-UX 11.0; 100 Mbit/s Ethernet",
};

/// Every machine, in the order the table names them.
pub const MACHINES: &[Machine] = &[
    KEGEL_LINUX22,
    KEGEL_LINUX24,
    KEGEL_SOLARIS7,
    KEGEL_SOLARIS8,
    KEGEL_FREEBSD,
    PROVOS_K6,
    CHANDRA_PIII,
];

/// A published number as the text states it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Is {
    /// Exactly this (a table cell, a count).
    Exact(f64),
    /// "About" this.
    About(f64),
    /// Above this ("over 120 ms").
    Over(f64),
    /// Below this ("under 14 µs").
    Under(f64),
    /// Rising to this at most ("up to 60%").
    UpTo(f64),
    /// Between the two ("1–3 ms").
    Between(f64, f64),
}

impl Is {
    /// The value(s) ratios are taken against: one, or both ends.
    pub fn ends(self) -> (f64, f64) {
        match self {
            Is::Exact(v) | Is::About(v) | Is::Over(v) | Is::Under(v) | Is::UpTo(v) => (v, v),
            Is::Between(a, b) => (a, b),
        }
    }
}

/// A number's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Percent (of connections, of the CPU).
    Pct,
    /// A count over one run: runs of other lengths give other counts, so
    /// no ratio is taken (the seed does not give its run's length).
    CountPerRun,
    /// A share: SIGIO overflows per signal dequeued.
    PerDequeue,
    /// Requests (new connections) per second.
    PerSecond,
}

impl Unit {
    /// The unit as the table prints it after a number (empty for counts).
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Us => " µs",
            Unit::Ms => " ms",
            Unit::Pct => "%",
            Unit::PerSecond => " req/s",
            Unit::CountPerRun | Unit::PerDequeue => "",
        }
    }
}

/// A condition on a point's configuration value or metric.
#[derive(Debug, Clone, PartialEq)]
pub enum Want {
    /// This text (`series` matches the series name).
    Str(&'static str),
    /// This number.
    Num(f64),
    /// One of these numbers.
    OneOf(Vec<f64>),
    /// At least this.
    AtLeast(f64),
    /// From the first to the second, both included.
    Within(f64, f64),
}

/// How the points matching a lookup (within one round) become one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// The one point (the median of several, e.g. of one round's repeats).
    Median,
    /// The largest value (a peak over a sweep).
    Max,
    /// The mean over the points (a line the seed averaged).
    Mean,
    /// The point with the smallest value of this configuration key (the
    /// lowest load of a sweep).
    LowestOf(&'static str),
    /// The knee of a sweep: the lowest value of this configuration key (the
    /// offered rate) at which the metric (the reply rate) fell below 95% of
    /// it.
    Knee(&'static str),
}

/// Today's counterpart of a published number: what this study measures at
/// the same parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Now {
    /// What is measured today (the mechanism or server), for the table.
    pub label: &'static str,
    /// The scenario whose record holds it.
    pub scenario: &'static str,
    /// The points: every condition must hold.
    pub filter: Vec<(&'static str, Want)>,
    /// The metric read.
    pub metric: &'static str,
    /// Divided by this metric of the same point first (a share), if any.
    pub per: Option<&'static str>,
    /// Multiplied by this into the published unit (µs → ms: 0.001).
    pub scale: f64,
    /// How the matching points become one value per round.
    pub take: Take,
    /// Minus the same value of these points (a difference of two servers),
    /// if any.
    pub minus: Option<Vec<(&'static str, Want)>>,
}

/// One published number.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// Seed file number (`000`, `001`, `004`).
    pub seed: &'static str,
    /// Where in the seed: section, table or figure.
    pub source: &'static str,
    /// The machine it was measured on.
    pub machine: Machine,
    /// What was measured, in the seed's terms.
    pub what: String,
    /// The parameters, in the seed's terms (`N = 100, A = 1`).
    pub params: String,
    /// The number.
    pub value: Is,
    /// Its unit.
    pub unit: Unit,
    /// The claim of the study this number belongs to, if one judges it.
    pub claim: Option<&'static str>,
    /// Shown in the one-screen summary.
    pub headline: bool,
    /// Today's counterparts, each a row of the table.
    pub now: Vec<Now>,
}

/// The seed files, by number, as they are named in `/work/shared/seeds/`.
pub fn seed_file(seed: &str) -> &'static str {
    match seed {
        "000" => "000_31720f3e9893508f.txt",
        "001" => "001_e8c116e1c4574153.txt",
        "002" => "002_8b457e804a657464.txt",
        "003" => "003_5dfb55141c4053e7.txt",
        "004" => "004_c23ac23cd7ec0b1d.txt",
        _ => "",
    }
}

fn want_str(v: &'static str) -> Want {
    Want::Str(v)
}

fn want_num(v: f64) -> Want {
    Want::Num(v)
}

/// A lookup of `metric` on the points of `scenario` matching `filter`.
fn now(
    label: &'static str,
    scenario: &'static str,
    filter: Vec<(&'static str, Want)>,
    metric: &'static str,
    take: Take,
) -> Now {
    Now {
        label,
        scenario,
        filter,
        metric,
        per: None,
        scale: 1.0,
        take,
        minus: None,
    }
}

/// Today's Poller_bench cell: `mechanism` at N descriptors, A = 1.
fn poller(label: &'static str, mechanism: &'static str, fds: f64) -> Now {
    now(
        label,
        "poller",
        vec![
            ("bench", want_str("poller")),
            ("series", want_str(mechanism)),
            ("fds", want_num(fds)),
            ("active", want_num(1.0)),
            ("placement", want_str("rotating")),
        ],
        "median_us",
        Take::Median,
    )
}

/// Today's open or close time per socketpair with N open (`metric`).
fn pairs(fds: f64, metric: &'static str) -> Now {
    now(
        "socketpair",
        "poller",
        vec![("bench", want_str("pairs")), ("fds", want_num(fds))],
        metric,
        Take::Median,
    )
}

/// Kegel's results tables (seed 001): one row per machine and mechanism,
/// µs per `waitAndDispatchEvents` with one active socket among N.
fn kegel() -> Vec<Published> {
    /// (machine, table, mechanism, claim, [(N, µs)], today's counterparts
    /// as (label, series)).
    type Kegel = (
        Machine,
        &'static str,
        &'static str,
        Option<&'static str>,
        &'static [(f64, f64)],
        &'static [(&'static str, &'static str)],
    );
    let tables: &[Kegel] = &[
        (
            KEGEL_LINUX22,
            "results table, Linux 2.2.14",
            "select",
            None,
            &[(100.0, 28.0)],
            &[("select", "select")],
        ),
        (
            KEGEL_LINUX22,
            "results table, Linux 2.2.14",
            "poll",
            Some("poll-grows"),
            &[(100.0, 23.0), (1000.0, 890.0), (10000.0, 11333.0)],
            &[("poll", "poll")],
        ),
        (
            KEGEL_LINUX22,
            "results table, Linux 2.2.14",
            "/dev/poll",
            Some("epoll-flat"),
            &[(100.0, 19.0), (1000.0, 146.0), (10000.0, 4264.0)],
            &[("epoll", "epoll"), ("io_uring", "uring")],
        ),
        (
            KEGEL_LINUX24,
            "results table, Linux 2.4.0-test10-pre4",
            "select",
            None,
            &[(100.0, 52.0)],
            &[("select", "select")],
        ),
        (
            KEGEL_LINUX24,
            "results table, Linux 2.4.0-test10-pre4",
            "poll",
            Some("poll-grows"),
            &[(100.0, 49.0), (1000.0, 1184.0), (10000.0, 14660.0)],
            &[("poll", "poll")],
        ),
        (
            KEGEL_SOLARIS7,
            "results table, Solaris 7",
            "select",
            None,
            &[(100.0, 151.0)],
            &[("select", "select")],
        ),
        (
            KEGEL_SOLARIS7,
            "results table, Solaris 7",
            "poll",
            Some("poll-grows"),
            &[(100.0, 470.0), (1000.0, 676.0), (10000.0, 3742.0)],
            &[("poll", "poll")],
        ),
        (
            KEGEL_SOLARIS7,
            "results table, Solaris 7",
            "/dev/poll",
            Some("epoll-flat"),
            &[(100.0, 61.0), (1000.0, 70.0), (10000.0, 92.0)],
            &[("epoll", "epoll"), ("io_uring", "uring")],
        ),
        (
            KEGEL_SOLARIS8,
            "results table, Solaris 8",
            "select",
            None,
            &[(100.0, 60.0)],
            &[("select", "select")],
        ),
        (
            KEGEL_SOLARIS8,
            "results table, Solaris 8",
            "poll",
            Some("poll-grows"),
            &[(100.0, 273.0), (1000.0, 388.0), (10000.0, 1559.0)],
            &[("poll", "poll")],
        ),
        (
            KEGEL_SOLARIS8,
            "results table, Solaris 8",
            "/dev/poll",
            Some("epoll-flat"),
            &[(100.0, 27.0), (1000.0, 28.0), (10000.0, 34.0)],
            &[("epoll", "epoll"), ("io_uring", "uring")],
        ),
        (
            KEGEL_FREEBSD,
            "results table, FreeBSD 4.x",
            "select",
            None,
            &[(100.0, 54.0)],
            &[("select", "select")],
        ),
        (
            KEGEL_FREEBSD,
            "results table, FreeBSD 4.x",
            "poll",
            Some("poll-grows"),
            &[
                (100.0, 50.0),
                (1000.0, 552.0),
                (10000.0, 11559.0),
                (30000.0, 35178.0),
            ],
            &[("poll", "poll")],
        ),
        (
            KEGEL_FREEBSD,
            "results table, FreeBSD 4.x",
            "kqueue",
            Some("epoll-flat"),
            &[(100.0, 8.0), (1000.0, 8.0), (10000.0, 8.0), (30000.0, 8.0)],
            &[("epoll", "epoll"), ("io_uring", "uring")],
        ),
    ];
    let mut out = Vec::new();
    for (machine, source, mech, claim, cells, today) in tables {
        for &(fds, us) in *cells {
            out.push(Published {
                seed: "001",
                source,
                machine: *machine,
                what: format!("{mech}: µs per waitAndDispatchEvents"),
                params: format!("N = {fds}, A = 1"),
                value: Is::Exact(us),
                unit: Unit::Us,
                claim: *claim,
                // Linux 2.2.14 at 10,000 and kqueue at 10,000: the table's
                // spread, in the summary.
                headline: fds == 10000.0
                    && (*machine == KEGEL_LINUX22 || *mech == "kqueue")
                    && *mech != "select",
                now: today.iter().map(|(l, m)| poller(l, m, fds)).collect(),
            });
        }
    }
    // Open and close times per socketpair, 10,000 socketpairs.
    for (machine, source, open, close) in [
        (
            KEGEL_LINUX22,
            "Linux 2.2.14 table note (not recorded)",
            Is::Under(14.0),
            Is::Under(14.0),
        ),
        (
            KEGEL_LINUX24,
            "results table, Linux 2.4.0-test10-pre4",
            Is::Exact(26.0),
            Is::Exact(14.0),
        ),
        (
            KEGEL_SOLARIS7,
            "results table, Solaris 7",
            Is::Exact(165_133.0),
            Is::Exact(29_646.0),
        ),
        (
            KEGEL_SOLARIS8,
            "results table, Solaris 8",
            Is::Exact(116_586.0),
            Is::Exact(19_235.0),
        ),
    ] {
        for (what, value, metric) in [
            ("open, µs per socketpair", open, "open_us_per_pair"),
            ("close, µs per socketpair", close, "close_us_per_pair"),
        ] {
            out.push(Published {
                seed: "001",
                source,
                machine,
                what: what.into(),
                params: "10,000 socketpairs".into(),
                value,
                unit: Unit::Us,
                claim: None,
                headline: false,
                now: vec![pairs(10000.0, metric)],
            });
        }
    }
    out
}

/// Provos & Lever's web-server figures (seed 000 §5).
fn provos() -> Vec<Published> {
    let ours = |mech: &'static str| vec![("server", want_str("ours")), ("series", want_str(mech))];
    let with = |mut f: Vec<(&'static str, Want)>, more: Vec<(&'static str, Want)>| {
        f.extend(more);
        f
    };
    let errors = |mech: &'static str, inactive: Want| {
        now(
            mech,
            "poll-vs-epoll",
            with(ours(mech), vec![("inactive", inactive)]),
            "error_pct",
            Take::Max,
        )
    };
    vec![
        Published {
            seed: "000",
            source: "§5.1, Fig. 10",
            machine: PROVOS_K6,
            what: "stock thttpd (poll): connections with errors, peak over the rate sweep".into(),
            params: "251 and 501 inactive connections, 6 KB document".into(),
            value: Is::UpTo(60.0),
            unit: Unit::Pct,
            claim: Some("devpoll-no-errors"),
            headline: true,
            now: vec![errors("poll", Want::OneOf(vec![251.0, 501.0]))],
        },
        Published {
            seed: "000",
            source: "§5.1, Fig. 10",
            machine: PROVOS_K6,
            what: "thttpd with /dev/poll: connections with errors, peak over the rate sweep".into(),
            params: "1 and 251 inactive connections (\"fewer than 501\")".into(),
            value: Is::Exact(0.0),
            unit: Unit::Pct,
            claim: Some("devpoll-no-errors"),
            headline: true,
            now: vec![errors("epoll", Want::Within(1.0, 500.0))],
        },
        Published {
            seed: "000",
            source: "§5.2, Fig. 14",
            machine: PROVOS_K6,
            what: "phhttpd (RT signals) faster than thttpd with /dev/poll: median latency difference at low load".into(),
            params: "251 inactive connections, lowest offered rate".into(),
            value: Is::Between(1.0, 3.0),
            unit: Unit::Ms,
            claim: Some("rtsig-faster-low-load"),
            headline: true,
            now: vec![Now {
                scale: 0.001,
                minus: Some(with(ours("rtsig"), vec![("inactive", want_num(251.0))])),
                ..now(
                    "epoll − rtsig",
                    "rtsig-latency",
                    with(ours("epoll"), vec![("inactive", want_num(251.0))]),
                    "p50_us",
                    Take::LowestOf("rate"),
                )
            }],
        },
        Published {
            seed: "000",
            source: "§5.2, Fig. 14",
            machine: PROVOS_K6,
            what: "phhttpd (RT signals): median latency above ~900 concurrent connections".into(),
            params: "251 inactive connections, more than 900 concurrent connections".into(),
            value: Is::Over(120.0),
            unit: Unit::Ms,
            claim: Some("rtsig-latency-jumps"),
            headline: true,
            now: vec![Now {
                scale: 0.001,
                ..now(
                    "rtsig",
                    "rtsig-latency",
                    with(
                        ours("rtsig"),
                        vec![
                            ("inactive", want_num(251.0)),
                            ("connections_peak", Want::AtLeast(900.0)),
                        ],
                    ),
                    "p50_us",
                    Take::Max,
                )
            }],
        },
    ]
}

/// Chandra & Mosberger's numbers (seed 004 §3.1 and Table 1).
fn chandra() -> Vec<Published> {
    let mut out = Vec::new();
    // §3.1.2: the RT-signal server at a fixed rate, 250 … 3000 connections.
    for (rate, cpu, headline) in [(500.0, 6.67, true), (1000.0, 13.25, true)] {
        let filter = vec![
            ("server", want_str("ours")),
            ("series", want_str("rtsig")),
            ("rate", want_num(rate)),
            ("persistent", Want::Within(250.0, 3000.0)),
        ];
        out.push(Published {
            seed: "004",
            source: "§3.1.2, Fig. 4",
            machine: CHANDRA_PIII,
            what: "RT-signal server: CPU use, mean over the connection counts".into(),
            params: format!("{rate} req/s over 250–3000 persistent connections, 92-byte replies"),
            value: Is::About(cpu),
            unit: Unit::Pct,
            claim: Some("rtsig-cpu-flat"),
            headline,
            now: vec![now(
                "rtsig",
                "overhead",
                filter.clone(),
                "server_cpu_pct",
                Take::Mean,
            )],
        });
        out.push(Published {
            seed: "004",
            source: "§3.1.2, Fig. 5",
            machine: CHANDRA_PIII,
            what: "RT-signal server: average response time".into(),
            params: format!("{rate} req/s over 250–3000 persistent connections, 92-byte replies"),
            value: Is::About(0.3),
            unit: Unit::Ms,
            claim: Some("rtsig-response-flat"),
            headline: rate == 1000.0,
            now: vec![Now {
                scale: 0.001,
                ..now("rtsig", "overhead", filter, "mean_us", Take::Mean)
            }],
        });
    }
    // §4.1: CPU from the lowest load on, 6000 idle connections.
    for (what, series, label) in [
        (
            "select (one accept per call)",
            "select (accept one)",
            "select (accept one)",
        ),
        ("multi-accept select", "select", "select (multi-accept)"),
        ("/dev/poll", "epoll", "epoll"),
    ] {
        out.push(Published {
            seed: "004",
            source: "§4.1, Figs. 7(b) and 8(b)",
            machine: CHANDRA_PIII,
            what: format!("{what} server: CPU use at the lowest request rate"),
            params: "6000 idle connections, 1-byte and 6 KB replies".into(),
            value: Is::Exact(100.0),
            unit: Unit::Pct,
            claim: Some("rtsig-cpu-lower"),
            headline: false,
            now: vec![now(
                label,
                "throughput",
                vec![("series", want_str(series)), ("idle", want_num(6000.0))],
                "server_cpu_pct",
                Take::LowestOf("rate"),
            )],
        });
    }
    // §4.2: where the RT-signal server saturated.
    out.push(Published {
        seed: "004",
        source: "§4.2 (with Table 1)",
        machine: CHANDRA_PIII,
        what: "RT-signal server: request rate at which it saturated".into(),
        params: "252 idle connections, 1-byte replies".into(),
        value: Is::About(3200.0),
        unit: Unit::PerSecond,
        claim: Some("overflow-past-knee"),
        headline: true,
        now: vec![now(
            "rtsig",
            "throughput",
            vec![
                ("series", want_str("rtsig")),
                ("idle", want_num(252.0)),
                ("document", want_str("1b.txt")),
            ],
            "reply_rate",
            Take::Knee("rate"),
        )],
    });
    // Table 1: sigwaitinfo calls and SIGIOs per request rate, 1-byte replies.
    let table: &[(f64, [(f64, f64); 7])] = &[
        (
            252.0,
            [
                (504_728.0, 0.0),
                (540_576.0, 0.0),
                (10_538.0, 1_526.0),
                (40.0, 40.0),
                (40.0, 40.0),
                (39.0, 39.0),
                (39.0, 39.0),
            ],
        ),
        (
            6000.0,
            [
                (504_474.0, 0.0),
                (540_792.0, 0.0),
                (19.0, 19.0),
                (16.0, 16.0),
                (14.0, 14.0),
                (13.0, 13.0),
                (13.0, 13.0),
            ],
        ),
    ];
    let rates = [2800.0, 3000.0, 3200.0, 3400.0, 3600.0, 3800.0, 4000.0];
    for (idle, cells) in table {
        for (rate, (waits, sigios)) in rates.iter().zip(cells) {
            let filter = vec![
                ("series", want_str("rtsig")),
                ("part", want_str("sweep")),
                ("idle", want_num(*idle)),
                ("rate", want_num(*rate)),
            ];
            let params = format!("{rate} req/s, {idle} idle connections, 1-byte replies");
            let row = |what: &str, value: f64, unit: Unit, look: Now, headline: bool| Published {
                seed: "004",
                source: "§4.2, Table 1",
                machine: CHANDRA_PIII,
                what: what.into(),
                params: params.clone(),
                value: Is::Exact(value),
                unit,
                claim: Some("overflow-past-knee"),
                headline,
                now: vec![look],
            };
            out.push(row(
                "RT-signal server: sigwaitinfo() calls (signals dequeued) in the run",
                *waits,
                Unit::CountPerRun,
                now(
                    "rtsig",
                    "table1",
                    filter.clone(),
                    "signals_dequeued",
                    Take::Median,
                ),
                false,
            ));
            out.push(row(
                "RT-signal server: SIGIOs (queue overflows) in the run",
                *sigios,
                Unit::CountPerRun,
                now("rtsig", "table1", filter.clone(), "overflows", Take::Median),
                false,
            ));
            out.push(row(
                "RT-signal server: SIGIOs per signal dequeued (from the two columns)",
                sigios / waits,
                Unit::PerDequeue,
                Now {
                    per: Some("signals_dequeued"),
                    ..now("rtsig", "table1", filter, "overflows", Take::Median)
                },
                *idle == 252.0 && (*rate == 3000.0 || *rate == 4000.0),
            ));
        }
    }
    out
}

/// Every published number, by seed: Kegel's tables (001), Provos & Lever
/// (000), Chandra & Mosberger (004).
pub fn all() -> Vec<Published> {
    let mut v = kegel();
    v.extend(provos());
    v.extend(chandra());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers the seeds' README and texts quote, spot-checked: a typo
    /// in the table fails here.
    #[test]
    fn spot_checks_against_the_seed_texts() {
        let all = all();
        let find = |machine: Machine, what: &str, params: &str| {
            all.iter()
                .find(|p| p.machine == machine && p.what.starts_with(what) && p.params == params)
                .unwrap_or_else(|| panic!("no {what} at {params}"))
                .value
        };
        assert_eq!(
            find(KEGEL_LINUX22, "poll:", "N = 10000, A = 1"),
            Is::Exact(11333.0)
        );
        assert_eq!(
            find(KEGEL_LINUX22, "/dev/poll:", "N = 1000, A = 1"),
            Is::Exact(146.0)
        );
        assert_eq!(
            find(KEGEL_SOLARIS7, "/dev/poll:", "N = 10000, A = 1"),
            Is::Exact(92.0)
        );
        assert_eq!(
            find(KEGEL_FREEBSD, "kqueue:", "N = 30000, A = 1"),
            Is::Exact(8.0)
        );
        assert_eq!(
            find(KEGEL_LINUX24, "poll:", "N = 10000, A = 1"),
            Is::Exact(14660.0)
        );
        // Kegel: poll grew ×493 on 2.2.14 and ×300 on 2.4.0-test10, 100 → 10,000.
        let g = |m: Machine| {
            let (a, _) = find(m, "poll:", "N = 100, A = 1").ends();
            let (b, _) = find(m, "poll:", "N = 10000, A = 1").ends();
            (b / a).round()
        };
        assert_eq!(g(KEGEL_LINUX22), 493.0);
        assert_eq!(g(KEGEL_LINUX24), 299.0);
        let t1 = |what: &str, rate: f64, idle: f64| {
            find(
                CHANDRA_PIII,
                what,
                &format!("{rate} req/s, {idle} idle connections, 1-byte replies"),
            )
        };
        assert_eq!(
            t1("RT-signal server: sigwaitinfo", 3200.0, 252.0),
            Is::Exact(10_538.0)
        );
        assert_eq!(
            t1("RT-signal server: SIGIOs (", 3200.0, 252.0),
            Is::Exact(1_526.0)
        );
        assert_eq!(
            t1("RT-signal server: SIGIOs (", 3000.0, 6000.0),
            Is::Exact(0.0)
        );
        assert_eq!(
            t1("RT-signal server: SIGIOs per", 4000.0, 6000.0),
            Is::Exact(1.0)
        );
        // Every row cites its seed file and names today's counterpart.
        for p in &all {
            assert!(!seed_file(p.seed).is_empty(), "{p:?}");
            assert!(!p.source.is_empty() && !p.now.is_empty(), "{p:?}");
            assert!(MACHINES.contains(&p.machine), "{p:?}");
        }
        let headlines = all.iter().filter(|p| p.headline).count();
        assert!((8..=16).contains(&headlines), "{headlines} headline rows");
    }
}
