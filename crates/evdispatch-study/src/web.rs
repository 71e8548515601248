//! The job most scenarios are made of: start a server, offer it a load (or
//! several, one after the other), stop it, and turn what the generator
//! printed and the server wrote into one [`Point`].

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::contracts;
use crate::drive;
use crate::results::Point;
use crate::spec::{Ctx, Job, LoadSpec, Plan, ServerSpec};

/// One server + load run. Its serialization (flattened) is the point's
/// configuration; scenario-specific keys may sit beside it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WebJob {
    /// The series the point belongs to.
    pub series: String,
    /// The server.
    #[serde(flatten)]
    pub server: ServerSpec,
    /// The load (the first phase, whose figures are the point's).
    #[serde(flatten)]
    pub load: LoadSpec,
    /// Further loads offered to the same server afterwards; their figures
    /// are recorded as `phase2_…`, `phase3_…`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub then: Vec<LoadSpec>,
}

/// Seconds a run costs beyond its measured window: starting and stopping
/// the server, opening the held connections, the generator's drain.
/// Calibrated on the first real quick run on the 2-core machine the quick
/// profile is sized for (each job's planned and actual seconds are in the
/// record's `timings`): our event-driven server starts and stops in about
/// 0.1 s and takes about 18,000 held connections a second; the thread pool
/// starts its threads (about 1.1 s, more with more connections); nginx
/// costs about what ours does, h2o takes over a second to start, and
/// lighttpd's poll handler accepts thousands of held connections slowly
/// (its scan is O(connections) per accept).
pub fn overhead_s(server: &ServerSpec, load: &LoadSpec) -> f64 {
    let held = load.held() as f64;
    let (start, per_held_s) = match (server.server.as_str(), server.mechanism.as_deref()) {
        ("ours", Some("threads")) => (1.1, 1.0 / 10_000.0),
        ("ours", _) => (0.1, 1.0 / 18_000.0),
        ("nginx", _) => (0.15, 1.0 / 15_000.0),
        // Under the CPU budget lighttpd accepts held connections at about
        // 1,800 a second whatever its handler.
        ("lighttpd", _) if server.cpu_budget.is_some() => (0.1, 1.0 / 1_800.0),
        ("lighttpd", Some("poll")) => (0.1, 1.0 / 3_000.0),
        ("lighttpd", _) => (0.1, 1.0 / 12_000.0),
        ("h2o", _) => (1.2, 1.0 / 6_000.0),
        _ => (0.5, 1.0 / 10_000.0),
    };
    // A scanning mechanism (poll, select) pays a scan of every held
    // descriptor for each one it accepts: quadratic in the count, slow
    // under a budget (15,000 took about 3.5 s at a fifth of a core).
    let scan_s = match (server.server.as_str(), server.mechanism.as_deref()) {
        ("ours", Some("poll" | "select")) => held * held * 1.6e-8,
        _ => 0.0,
    };
    start + held * per_held_s + scan_s
}

/// Seconds a run past the knee waits after its window: connections queued
/// in the listen backlog, and those whose SYN was dropped and is sent again
/// a second later, are answered (or time out) after the load stops. `knee`
/// is the calibrated one (none: no tail is planned).
pub fn overload_tail_s(load: &LoadSpec, knee: Option<f64>) -> f64 {
    match (load.rate.per_sec(), knee) {
        (Some(r), Some(k)) if r > 1.1 * k => load.timeout_s.min(1.1),
        _ => 0.0,
    }
}

impl WebJob {
    /// Estimated wall-clock seconds, with the calibrated `knee` if any.
    pub fn est_s(&self, knee: Option<f64>) -> f64 {
        overhead_s(&self.server, &self.load)
            + self.load.offered_s()
            + overload_tail_s(&self.load, knee)
            + self
                .then
                .iter()
                .map(|l| {
                    l.offered_s() + 0.05 + l.held() as f64 / 18_000.0 + overload_tail_s(l, knee)
                })
                .sum::<f64>()
    }
}

/// Plan `job` if its server can run here, else record why not.
pub fn plan_web(
    plan: &mut Plan,
    caps: &crate::spec::Caps,
    label: String,
    job: WebJob,
    extra: Map<String, Value>,
) {
    match caps.server(&job.server) {
        Ok(()) => {
            let est = job.est_s(caps.calibration.as_ref().map(|c| c.knee));
            plan.job(label, &job, est);
            if let Some(last) = plan.jobs.last_mut() {
                last.config.extend(extra);
            }
        }
        Err(why) => {
            // One skip per distinct (series, reason) keeps the list readable;
            // when the server or load generator is missing, one per scenario.
            let what = if caps.web_missing().is_some() {
                "every run".to_string()
            } else {
                job.series.clone()
            };
            if !plan.skipped.iter().any(|s| s.what == what && s.why == why) {
                plan.skip(what, why);
            }
        }
    }
}

/// Run a [`WebJob`] and make its point.
pub fn run_web(ctx: &Ctx, job: &Job) -> anyhow::Result<Vec<Point>> {
    let spec: WebJob = serde_json::from_value(Value::Object(job.config.clone()))?;
    let tag = job.tag();
    let held = std::iter::once(&spec.load)
        .chain(&spec.then)
        .map(LoadSpec::held)
        .max()
        .unwrap_or(0);
    let server = drive::start_server(ctx, &spec.server, held)?;
    let mut loads = Vec::new();
    let mut failed = None;
    for (i, l) in std::iter::once(&spec.load).chain(&spec.then).enumerate() {
        let t = if i == 0 {
            tag.clone()
        } else {
            format!("{tag}.phase{}", i + 1)
        };
        match drive::run_load(ctx, l, &server, &t) {
            Ok(r) => loads.push(r),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let server_cmd = server.cmdline.clone();
    let version = server.version.clone();
    let stats = server.stop();
    if let Some(e) = failed {
        return Err(e);
    }
    let stats = stats?;
    let mut point = Point::new(spec.series.clone(), job.config.clone());
    point.config.insert("cmd_server".into(), json!(server_cmd));
    point.config.insert("server_version".into(), json!(version));
    point.config.insert(
        "cmd_load".into(),
        json!(loads.iter().map(|l| l.cmdline.clone()).collect::<Vec<_>>()),
    );
    let mut raw_loads = Vec::new();
    for (i, l) in loads.into_iter().enumerate() {
        if i == 0 {
            point.metrics.extend(l.metrics);
        } else {
            point.metrics.extend(
                l.metrics
                    .into_iter()
                    .map(|(k, v)| (format!("phase{}_{k}", i + 1), v)),
            );
        }
        raw_loads.push(l.raw);
    }
    if let Some(s) = &stats {
        point.metrics.extend(contracts::parse_server_stats(s)?);
    }
    derive(&mut point, &spec);
    point.raw = json!({"load": raw_loads, "server_stats": stats});
    Ok(vec![point])
}

/// Metrics computed from others: memory per held connection, CPU per
/// reply, the share of the offered rate answered, the RT-signal servers'
/// overflows per dequeue call, the hybrid's time in poll mode.
fn derive(p: &mut Point, spec: &WebJob) {
    let m = &mut p.metrics;
    let held = spec.load.held() as f64;
    if held >= 100.0 {
        if let (Some(a), Some(b)) = (
            m.get("server_rss_start_bytes"),
            m.get("server_rss_max_bytes"),
        ) {
            m.insert("rss_per_conn_bytes".into(), (b - a).max(0.0) / held);
        }
        if let Some(k) = m.get("tcp_kernel_growth_bytes").copied() {
            m.insert("tcp_kernel_per_conn_bytes".into(), k / held);
        }
    }
    if let (Some(cpu), Some(rate)) = (m.get("server_cpu_pct"), m.get("reply_rate")) {
        if *rate > 0.0 {
            m.insert("cpu_us_per_reply".into(), cpu / 100.0 / rate * 1e6);
        }
    }
    if let (Some(offered), Some(rate)) = (spec.load.rate.per_sec(), m.get("reply_rate")) {
        if offered > 0.0 {
            m.insert("reply_pct_of_offered".into(), 100.0 * rate / offered);
        }
    }
    if let (Some(o), Some(d)) = (m.get("overflows"), m.get("dequeue_calls")) {
        if *d > 0.0 {
            m.insert("overflows_per_dequeue".into(), o / d);
        }
    }
    if let (Some(s), Some(q)) = (m.get("signal_mode_ns"), m.get("poll_mode_ns")) {
        if s + q > 0.0 {
            m.insert("poll_mode_pct".into(), 100.0 * q / (s + q));
        }
    }
}
