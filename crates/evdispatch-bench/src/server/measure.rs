//! One measurement: start a server, load it, read its CPU and memory from
//! `/proc`, stop it.

use std::collections::BTreeMap;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use evdispatch_harness::{
    docroot, run_evdispatch_load, run_wrk, spawn_evdispatch_load, start_listening_program,
    start_ours, start_peer, Background, OursConfig, PeerConfig, SelfSigned, ServerProcess, WrkArgs,
    WrkResult,
};
use evdispatch_host::{open_fds_sum, resident_sum, sample_sum};
use evdispatch_load::{cmdline::LoadCommand, Rate};
use evdispatch_server::{cmdline::ServeCommand, Model};
use serde::Serialize;
use serde_json::Value;

use super::plan::{Contestant, Plan, Scenario};

/// The file every server serves.
const PATH: &str = "/index.html";
/// The further files: the 1 MiB file the `range` scenario asks 64 KiB of,
/// and the whole 64 KiB file of `whole`.
const FILES: [(&str, usize); 2] = [("large.bin", 1 << 20), ("64k.bin", 64 << 10)];

/// What wrk asks for in a scenario.
#[derive(Debug, Clone, Copy)]
struct Ask {
    path: &'static str,
    header: Option<&'static str>,
    /// One connection per request.
    close: bool,
}

const KEEPALIVE: Ask = Ask {
    path: PATH,
    header: None,
    close: false,
};
const CLOSE: Ask = Ask {
    path: PATH,
    header: Some("Connection: close"),
    close: true,
};
/// 64 KiB of the 1 MiB file.
const RANGE: Ask = Ask {
    path: "/large.bin",
    header: Some("Range: bytes=0-65535"),
    close: false,
};
/// The whole 64 KiB file.
const WHOLE: Ask = Ask {
    path: "/64k.bin",
    header: None,
    close: false,
};
/// The whole 1 MiB file.
const LARGE: Ask = Ask {
    path: "/large.bin",
    header: None,
    close: false,
};
/// The TLS versions of the HTTPS scenarios (nginx's `ssl_protocols`; our
/// server's clients all offer TLS 1.3, which rustls then chooses).
const HTTPS_PROTOCOLS: &str = "TLSv1.3";
/// Connections at a time of the handshake scenarios (`https-full`,
/// `https-resumed`). Few: with 30 or 100 reconnecting at once, fewer than
/// half of `evdispatch load`'s reconnects resume (against our server and
/// nginx alike), with 10 nearly all do; the figure, handshakes per server
/// CPU-second, does not need the server saturated.
const HANDSHAKE_CONNECTIONS: u64 = 10;
/// Keep-alive and request timeouts while idle connections are held: longer
/// than any run, so none is closed under the measurement.
const HOLD_TIMEOUT_S: u32 = 600;
/// Connections a server gets beyond those a scenario opens.
const SPARE_CONNECTIONS: u64 = 256;

/// One measurement of one server in one scenario and round.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// Round, from 0.
    pub round: usize,
    /// Scenario.
    pub scenario: Scenario,
    /// Server name.
    pub server: String,
    /// True for a peer.
    pub peer: bool,
    /// True for a floor server.
    pub floor: bool,
    /// The figures, by name (see the crate docs of `bench server`).
    pub figures: BTreeMap<String, f64>,
    /// What the reader should know (errors counted by the tools, a
    /// saturated generator, fewer idle connections held than asked).
    pub notes: Vec<String>,
    /// Why the measurement failed, if it did.
    pub error: Option<String>,
}

pub(super) struct Bench<'a> {
    plan: &'a Plan,
    root: tempfile::TempDir,
    /// The access logs of the `+log` servers.
    logs: tempfile::TempDir,
    /// The certificate every server is given in the HTTPS scenarios.
    cert: SelfSigned,
}

fn num(v: &Value, pointer: &str) -> anyhow::Result<f64> {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .ok_or_else(|| anyhow!("evdispatch load's JSON lacks {pointer}"))
}

/// Idle connections held by a background `evdispatch load --idle`.
struct Held {
    holder: Background,
    /// Descriptors the server gained.
    count: u64,
    /// Resident set before and while holding, bytes.
    rss_before: u64,
    rss_held: u64,
    /// The server's descriptors before.
    fds_before: usize,
}

impl<'a> Bench<'a> {
    pub(super) fn new(plan: &'a Plan) -> anyhow::Result<Bench<'a>> {
        Ok(Bench {
            plan,
            root: docroot(plan.file_size, &FILES)?,
            logs: tempfile::Builder::new()
                .prefix("evd-bench-logs-")
                .tempdir()?,
            cert: SelfSigned::create()?,
        })
    }

    /// The access log file of `c` (one per server, appended to by every
    /// run; removed with the bench).
    fn access_log(&self, c: Contestant) -> std::path::PathBuf {
        self.logs.path().join(format!("{}.log", c.name()))
    }

    /// Measure `scenario` on `c`; the server's version comes back when it
    /// started.
    pub(super) fn run(
        &self,
        scenario: Scenario,
        c: Contestant,
        round: usize,
    ) -> (Run, Option<String>) {
        let mut run = Run {
            round,
            scenario,
            server: c.name(),
            peer: c.is_peer(),
            floor: c.is_floor(),
            figures: BTreeMap::new(),
            notes: Vec::new(),
            error: None,
        };
        let holding = matches!(
            scenario,
            Scenario::Idle | Scenario::Memory | Scenario::HttpsIdle
        );
        let server = match self.start(c, holding, scenario.https()) {
            Ok(s) => s,
            Err(e) => {
                run.error = Some(format!("{e:#}"));
                return (run, None);
            }
        };
        let version = server.version().to_string();
        let result = match scenario {
            Scenario::Keepalive => self.wrk_scenario(&server, KEEPALIVE, &mut run),
            Scenario::Close => self.wrk_scenario(&server, CLOSE, &mut run),
            Scenario::Range => self.wrk_scenario(&server, RANGE, &mut run),
            Scenario::Whole => self.wrk_scenario(&server, WHOLE, &mut run),
            Scenario::Idle => self.idle_scenario(&server, c, &mut run),
            Scenario::Memory | Scenario::HttpsIdle => self.memory_scenario(&server, c, &mut run),
            Scenario::HttpsKeepalive => self.wrk_scenario(&server, KEEPALIVE, &mut run),
            Scenario::HttpsLarge => self.wrk_scenario(&server, LARGE, &mut run).map(|()| {
                let per = run.figures.get("cpu_us_per_request").copied();
                if let Some(us) = per.filter(|us| *us > 0.0) {
                    let bytes = FILES[0].1 as f64;
                    run.figures
                        .insert("bytes_per_cpu_s".into(), bytes / (us / 1e6));
                }
            }),
            Scenario::HttpsFull => self.handshake_scenario(&server, false, &mut run),
            Scenario::HttpsResumed => self.handshake_scenario(&server, true, &mut run),
        };
        if let Err(e) = result {
            run.error = Some(format!("{e:#}; server log: {}", server.log_tail()));
        }
        if let Err(e) = server.stop() {
            run.notes.push(format!("stopping the server: {e:#}"));
        }
        (run, Some(version))
    }

    /// The most connections a server may see at once: the idle ones, the
    /// active ones and a spare.
    fn most_connections(&self) -> u64 {
        let p = self.plan;
        p.idle + p.connections as u64 + p.persistent + SPARE_CONNECTIONS
    }

    fn start(&self, c: Contestant, holding: bool, https: bool) -> anyhow::Result<ServerProcess> {
        let p = self.plan;
        let timeout_s = if holding { HOLD_TIMEOUT_S } else { 65 };
        let most = self.most_connections();
        match c {
            Contestant::Peer(peer, log) => {
                let mut cfg = PeerConfig::new(self.root.path());
                if log {
                    cfg.access_log = Some(self.access_log(c));
                }
                cfg.cpus = vec![p.server_cpu];
                cfg.max_connections = most.min(u32::MAX as u64) as u32;
                cfg.keepalive_timeout_s = timeout_s;
                cfg.request_timeout_s = timeout_s;
                cfg.defer_accept_s = p.peer_defer_accept_s;
                cfg.tls = https.then(|| self.cert.peer_tls(HTTPS_PROTOCOLS));
                start_peer(peer, &cfg)
            }
            Contestant::Floor(floor) => start_listening_program(
                &p.binary,
                "bench",
                vec![
                    "floor-server".into(),
                    "--mechanism".into(),
                    floor.mechanism().into(),
                    "--body-size".into(),
                    p.file_size.to_string().into(),
                ],
                &[p.server_cpu],
            ),
            Contestant::Ours(model, log) => {
                let serve = ServeCommand {
                    threads: (model == Model::Threads).then_some(most as usize),
                    extra: p.serve_args.iter().map(Into::into).collect(),
                    access_log: log.then(|| self.access_log(c)),
                    tls_cert: https.then(|| self.cert.cert.clone()),
                    tls_key: https.then(|| self.cert.key.clone()),
                    ..self.serve_command(model.name(), p.server_cpu, timeout_s)
                };
                self.start_serve(serve, p.server_cpu)
            }
        }
    }

    /// Start our server as `serve` says, pinned to `cpu`.
    fn start_serve(&self, serve: ServeCommand, cpu: usize) -> anyhow::Result<ServerProcess> {
        start_ours(&OursConfig {
            binary: self.plan.binary.clone(),
            serve,
            cpus: vec![cpu],
            stats_json: false,
            idle: false,
            cpu_budget: None,
        })
    }

    /// `evdispatch serve`: the bench's document root on an ephemeral
    /// loopback port, `mechanism` pinned to `cpu`, idle and header timeouts
    /// of `timeout_s`.
    fn serve_command(&self, mechanism: &str, cpu: usize, timeout_s: u32) -> ServeCommand {
        let timeout = Some(Duration::from_secs(timeout_s.into()));
        ServeCommand {
            cpu: vec![cpu],
            idle_timeout: timeout,
            header_timeout: timeout,
            ..ServeCommand::loopback(self.root.path(), mechanism)
        }
    }

    /// The sink of the control phase: our epoll server on the client CPU,
    /// with room for the idle connections (the measured server's extra
    /// `serve` arguments are not its).
    fn start_sink(&self) -> anyhow::Result<ServerProcess> {
        let cpu = self.plan.client_cpu;
        self.start_serve(self.serve_command("epoll", cpu, HOLD_TIMEOUT_S), cpu)
            .context("starting the sink of the control phase")
    }

    fn wrk(&self, url: &str, seconds: f64, ask: Ask) -> anyhow::Result<WrkResult> {
        run_wrk(&WrkArgs {
            url: url.to_string(),
            threads: 1,
            connections: self.plan.connections,
            duration_s: seconds,
            timeout_s: 5.0,
            cpus: vec![self.plan.client_cpu],
            headers: ask.header.map(String::from).into_iter().collect(),
        })
    }

    fn warm_up(&self, url: &str, ask: Ask) -> anyhow::Result<()> {
        if self.plan.warmup_s > 0.0 {
            self.wrk(url, self.plan.warmup_s, ask)
                .context("warm-up run")?;
        }
        Ok(())
    }

    /// A measured wrk run: wrk's result and the server's CPU seconds over it.
    fn measured_wrk(&self, pids: &[u32], url: &str, ask: Ask) -> anyhow::Result<(WrkResult, f64)> {
        let before = sample_sum(pids)?;
        let w = self.wrk(url, self.plan.duration_s, ask)?;
        let after = sample_sum(pids).context("the server exited during the run")?;
        if w.requests == 0 {
            bail!("wrk completed no request: {w:?}");
        }
        Ok((w, before.cpu_s_to(&after)))
    }

    fn wrk_errors(w: &WrkResult) -> u64 {
        w.errors_connect + w.errors_read + w.errors_write + w.errors_timeout + w.non_2xx_3xx
    }

    fn wrk_scenario(&self, server: &ServerProcess, ask: Ask, run: &mut Run) -> anyhow::Result<()> {
        let url = server.url(ask.path);
        self.warm_up(&url, ask)?;
        let pids = server.pids();
        let (w, cpu) = self.measured_wrk(&pids, &url, ask)?;
        let per = cpu * 1e6 / w.requests as f64;
        let f = &mut run.figures;
        if ask.close {
            f.insert("cpu_us_per_connection".into(), per);
            f.insert("connections_per_sec".into(), w.requests_per_sec);
        } else {
            f.insert("cpu_us_per_request".into(), per);
            f.insert("requests_per_sec".into(), w.requests_per_sec);
        }
        f.insert(
            "server_cpu_pct".into(),
            cpu / w.duration_s.max(1e-9) * 100.0,
        );
        if let Some(&(_, p99)) = w.percentiles.iter().find(|(p, _)| *p == 99.0) {
            f.insert("wrk_p99_us".into(), p99);
        }
        let errors = Self::wrk_errors(&w);
        f.insert("errors".into(), errors as f64);
        if errors > 0 {
            run.notes.push(format!(
                "wrk counted errors: connect {}, read {}, write {}, timeout {}, non-2xx {}",
                w.errors_connect, w.errors_read, w.errors_write, w.errors_timeout, w.non_2xx_3xx
            ));
        }
        Ok(())
    }

    /// `--cacert` for `evdispatch load` to `url`: the bench's certificate
    /// over HTTPS.
    fn cacert(&self, url: &str) -> Option<std::path::PathBuf> {
        url.starts_with("https://").then(|| self.cert.cert.clone())
    }

    /// A new connection per request, `-c` of them at a time (closed
    /// loop), every handshake resumed or none: handshakes per server
    /// CPU-second, from the generator's count of handshakes and the
    /// server's CPU time over the run.
    fn handshake_scenario(
        &self,
        server: &ServerProcess,
        resume: bool,
        run: &mut Run,
    ) -> anyhow::Result<()> {
        let p = self.plan;
        let url = server.url(PATH);
        let load = |seconds: f64| LoadCommand {
            rate: Some(Rate::Max),
            connections: Some(HANDSHAKE_CONNECTIONS),
            sessions: Some(0),
            calls: Some(1),
            duration: Some(Duration::from_secs_f64(seconds)),
            timeout: Some(Duration::from_secs(5)),
            cpu: vec![p.client_cpu],
            cacert: self.cacert(&url),
            no_tls_resume: !resume,
            ..LoadCommand::new(&url)
        };
        if p.warmup_s > 0.0 {
            run_evdispatch_load(&p.binary, &load(p.warmup_s), &[p.client_cpu])
                .context("warm-up run")?;
        }
        let pids = server.pids();
        let before = sample_sum(&pids)?;
        let v = run_evdispatch_load(&p.binary, &load(p.duration_s), &[p.client_cpu])?;
        let after = sample_sum(&pids).context("the server exited during the run")?;
        let cpu = before.cpu_s_to(&after);
        let handshakes = num(&v, "/tls_handshakes")?;
        let resumed = num(&v, "/tls_resumed")?;
        if handshakes == 0.0 || cpu <= 0.0 {
            bail!("no handshake measured ({handshakes} handshakes, {cpu} CPU s)");
        }
        let f = &mut run.figures;
        f.insert("handshakes_per_cpu_s".into(), handshakes / cpu);
        f.insert("cpu_us_per_handshake".into(), cpu * 1e6 / handshakes);
        f.insert("handshakes_per_sec".into(), handshakes / p.duration_s);
        f.insert("resumed_share".into(), resumed / handshakes);
        f.insert("server_cpu_pct".into(), cpu / p.duration_s * 100.0);
        let errors = num(&v, "/errors_total")?;
        f.insert("errors".into(), errors);
        if errors > 0.0 {
            run.notes
                .push(format!("evdispatch load counted {errors} errors"));
        }
        let share = resumed / handshakes;
        if (resume && share < 0.9) || (!resume && resumed > 0.0) {
            run.notes.push(format!(
                "{resumed} of {handshakes} handshakes resumed: not the handshakes asked for"
            ));
        }
        Ok(())
    }

    /// How many idle connections `c` can hold beside the active ones.
    fn idle_target(&self, c: Contestant) -> u64 {
        let p = self.plan;
        match c {
            Contestant::Peer(peer, _) => {
                let mut cfg = PeerConfig::new(self.root.path());
                cfg.max_connections = self.most_connections() as u32;
                let most = cfg.effective_max_connections(peer) as u64;
                // The active connections and a margin must still get in.
                p.idle
                    .min(most.saturating_sub(p.connections as u64 + p.persistent + 64))
                    .max(1)
            }
            Contestant::Ours(..) | Contestant::Floor(_) => p.idle,
        }
    }

    /// Open `target` idle connections from a background `evdispatch load`
    /// and wait until the server holds them (its descriptor count stops
    /// growing), then read its resident set.
    fn hold(&self, pids: &[u32], url: &str, target: u64) -> anyhow::Result<Held> {
        let p = self.plan;
        let fds_before = open_fds_sum(pids)?;
        let rss_before = resident_sum(pids).total_bytes;
        let load = LoadCommand {
            idle: Some(target),
            duration: Some(Duration::from_secs(3600)),
            timeout: Some(Duration::from_secs(60)),
            cpu: vec![p.client_cpu],
            // At SCHED_IDLE: the holder shares the client CPU with the
            // measured generator and must never delay it (its connects are
            // done before the measurement; then it only sleeps).
            background: true,
            cacert: self.cacert(url),
            ..LoadCommand::new(url)
        };
        let mut holder = spawn_evdispatch_load(&p.binary, &load, &[p.client_cpu])?;
        let t0 = Instant::now();
        let mut last = (fds_before, Instant::now());
        loop {
            thread::sleep(Duration::from_millis(100));
            if !holder.is_running() {
                bail!("the idle holder exited: {}", holder.log_tail());
            }
            let fds = open_fds_sum(pids)?;
            let gained = fds.saturating_sub(fds_before) as u64;
            if gained >= target {
                break;
            }
            if fds != last.0 {
                last = (fds, Instant::now());
            } else if gained > 0 && last.1.elapsed() > Duration::from_secs(3) {
                break; // the server takes no more
            }
            if t0.elapsed() > Duration::from_secs(120) {
                bail!(
                    "the server held {gained} of {target} idle connections after 120 s; {}",
                    holder.log_tail()
                );
            }
        }
        // Let allocations settle (a request in flight, buffers returned).
        thread::sleep(Duration::from_millis(500));
        let count = open_fds_sum(pids)?.saturating_sub(fds_before) as u64;
        let rss_held = resident_sum(pids).total_bytes;
        Ok(Held {
            holder,
            count,
            rss_before,
            rss_held,
            fds_before,
        })
    }

    /// Close the held connections and wait until the server has let go of
    /// them (30 s at most).
    fn release(&self, held: Held, pids: &[u32]) -> anyhow::Result<()> {
        let Held {
            holder, fds_before, ..
        } = held;
        holder.stop();
        let t0 = Instant::now();
        while open_fds_sum(pids)? > fds_before + 16 {
            if t0.elapsed() > Duration::from_secs(30) {
                bail!(
                    "the server still has {} descriptors 30 s after the idle connections closed (had {fds_before})",
                    open_fds_sum(pids)?
                );
            }
            thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    fn memory_figures(held: &Held, target: u64, run: &mut Run) {
        let f = &mut run.figures;
        f.insert("idle_held".into(), held.count as f64);
        let grown = held.rss_held as f64 - held.rss_before as f64;
        if held.count > 0 {
            f.insert(
                "bytes_per_idle_connection".into(),
                grown / held.count as f64,
            );
        }
        if held.count < target {
            run.notes
                .push(format!("held {} of {target} idle connections", held.count));
        }
    }

    /// The open loop: `--rate` requests/s over `--persistent` connections.
    fn open_loop(&self, url: &str) -> anyhow::Result<Value> {
        let p = self.plan;
        let load = LoadCommand {
            rate: Some(Rate::PerSecond(p.rate)),
            persistent: Some(p.persistent),
            duration: Some(Duration::from_secs_f64(p.duration_s)),
            warmup: Some(Duration::from_secs_f64(p.warmup_s)),
            timeout: Some(Duration::from_secs(5)),
            cpu: vec![p.client_cpu],
            ..LoadCommand::new(url)
        };
        run_evdispatch_load(&p.binary, &load, &[p.client_cpu])
    }

    /// Throughput, CPU per request and open-loop latency, labelled `label`.
    fn phase(&self, pids: &[u32], url: &str, label: &str, run: &mut Run) -> anyhow::Result<()> {
        let (w, cpu) = self.measured_wrk(pids, url, KEEPALIVE)?;
        let load = self.open_loop(url)?;
        let f = &mut run.figures;
        f.insert(format!("rps_{label}"), w.requests_per_sec);
        f.insert(format!("cpu_us_{label}"), cpu * 1e6 / w.requests as f64);
        f.insert(format!("p99_{label}_us"), num(&load, "/latency_us/p99")?);
        f.insert(format!("p50_{label}_us"), num(&load, "/latency_us/p50")?);
        f.insert(format!("reply_rate_{label}"), num(&load, "/reply_rate")?);
        let errors = num(&load, "/errors_total")? + Self::wrk_errors(&w) as f64;
        f.insert(format!("errors_{label}"), errors);
        let missed = num(&load, "/missed_slots")?;
        if errors > 0.0 || missed > 0.0 {
            run.notes.push(format!(
                "{label}: {errors} errors (wrk and load), {missed} missed slots"
            ));
        }
        if load["generator_saturated"] == Value::Bool(true) {
            run.notes.push(format!(
                "{label}: the load generator was saturated: the p99 may be its own"
            ));
        }
        Ok(())
    }

    /// What the idle and memory scenarios start from, once the first
    /// requests have filled the caches (file, buffers): the URL, the
    /// server's processes and the idle connections to hold.
    fn warmed(
        &self,
        server: &ServerProcess,
        c: Contestant,
    ) -> anyhow::Result<(String, Vec<u32>, u64)> {
        let url = server.url(PATH);
        self.warm_up(&url, KEEPALIVE)?;
        Ok((url, server.pids(), self.idle_target(c)))
    }

    fn idle_scenario(
        &self,
        server: &ServerProcess,
        c: Contestant,
        run: &mut Run,
    ) -> anyhow::Result<()> {
        let (url, pids, target) = self.warmed(server, c)?;
        // The held phase between two phases with none, compared with their
        // mean: a drift of the machine over the run (other work, a warmer
        // or more fragmented server) then cancels instead of landing on one
        // side; how far the two phases with none disagree is the noise a
        // held/none ratio has to be read against.
        self.phase(&pids, &url, "before", run)?;
        // The control: the same connections held by another server (a sink
        // on the client CPU), none by the measured one. What the machine
        // adds when that many connections exist (kernel memory, the
        // hypervisor: on this VM an unrelated server's p99 rises with them
        // too) shows here; held ÷ elsewhere is what holding them costs the
        // measured server itself.
        let sink = self.start_sink()?;
        let sink_pids = sink.pids();
        let elsewhere = self.hold(&sink_pids, &sink.url(PATH), target)?;
        run.figures
            .insert("idle_held_elsewhere".into(), elsewhere.count as f64);
        self.phase(&pids, &url, "elsewhere", run)?;
        self.release(elsewhere, &sink_pids)?;
        if let Err(e) = sink.stop() {
            run.notes.push(format!("stopping the sink: {e:#}"));
        }
        let held = self.hold(&pids, &url, target)?;
        Self::memory_figures(&held, target, run);
        self.phase(&pids, &url, "idle", run)?;
        self.release(held, &pids)?;
        self.phase(&pids, &url, "after", run)?;
        let f = &mut run.figures;
        for (none, before, after, sum) in [
            ("rps_none", "rps_before", "rps_after", false),
            ("cpu_us_none", "cpu_us_before", "cpu_us_after", false),
            ("p99_none_us", "p99_before_us", "p99_after_us", false),
            ("p50_none_us", "p50_before_us", "p50_after_us", false),
            (
                "reply_rate_none",
                "reply_rate_before",
                "reply_rate_after",
                false,
            ),
            ("errors_none", "errors_before", "errors_after", true),
        ] {
            if let (Some(&a), Some(&b)) = (f.get(before), f.get(after)) {
                f.insert(none.into(), if sum { a + b } else { (a + b) / 2.0 });
            }
        }
        for (ratio, num, den) in [
            ("rps_none_repeat", "rps_after", "rps_before"),
            ("p99_none_repeat", "p99_after_us", "p99_before_us"),
            ("rps_ratio", "rps_idle", "rps_none"),
            ("cpu_ratio", "cpu_us_idle", "cpu_us_none"),
            ("p99_ratio", "p99_idle_us", "p99_none_us"),
            ("p99_machine_ratio", "p99_elsewhere_us", "p99_none_us"),
            ("p99_own_ratio", "p99_idle_us", "p99_elsewhere_us"),
            ("rps_machine_ratio", "rps_elsewhere", "rps_none"),
            ("rps_own_ratio", "rps_idle", "rps_elsewhere"),
        ] {
            if let (Some(a), Some(b)) = (f.get(num), f.get(den)) {
                if *b > 0.0 {
                    f.insert(ratio.into(), a / b);
                }
            }
        }
        Ok(())
    }

    fn memory_scenario(
        &self,
        server: &ServerProcess,
        c: Contestant,
        run: &mut Run,
    ) -> anyhow::Result<()> {
        let (url, pids, target) = self.warmed(server, c)?;
        let held = self.hold(&pids, &url, target)?;
        Self::memory_figures(&held, target, run);
        self.release(held, &pids)
    }
}
