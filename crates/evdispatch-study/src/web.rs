//! The job most scenarios are made of: start a server, offer it a load,
//! stop it, and turn what the generator printed and the server wrote into
//! one [`Point`].

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::contracts;
use crate::drive::{self, LoadSpec, ServerSpec};
use crate::results::Point;
use crate::scenario::{Ctx, Job, Plan};

/// One server + load run. Its serialization (flattened) is the point's
/// configuration; scenario-specific keys may sit beside it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WebJob {
    /// The series the point belongs to.
    pub series: String,
    /// The server.
    #[serde(flatten)]
    pub server: ServerSpec,
    /// The load.
    #[serde(flatten)]
    pub load: LoadSpec,
}

impl WebJob {
    /// Estimated wall-clock seconds: the measured window, plus start, stop
    /// and connection set-up.
    pub fn est_s(&self) -> f64 {
        let conns = (self.load.inactive + self.load.idle + self.load.persistent) as f64;
        self.load.duration_s + 0.7 + conns / 8000.0
    }
}

/// Plan `job` if its server can run here, else record why not.
pub fn plan_web(
    plan: &mut Plan,
    caps: &drive::Caps,
    label: String,
    job: WebJob,
    extra: Map<String, Value>,
) {
    match caps.server(&job.server) {
        Ok(()) => {
            let est = job.est_s();
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

/// A file-name-safe version of a label.
pub fn tag(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Run a [`WebJob`] and make its point.
pub fn run_web(ctx: &Ctx, job: &Job) -> anyhow::Result<Vec<Point>> {
    let spec: WebJob = serde_json::from_value(Value::Object(job.config.clone()))?;
    let tag = tag(&job.label);
    let server = drive::start_server(ctx, &spec.server, &tag)?;
    let server_cmd = server.cmdline.clone();
    let load = drive::run_load(ctx, &spec.load, &server.url.clone(), server.pid(), &tag);
    let stats = server.stop();
    let load = load?;
    let stats = stats?;
    let mut point = Point::new(spec.series.clone(), job.config.clone());
    point.config.insert("cmd_server".into(), json!(server_cmd));
    point.config.insert("cmd_load".into(), json!(load.cmdline));
    point.metrics = load.metrics;
    if let Some(s) = &stats {
        point.metrics.extend(contracts::parse_server_stats(s));
    }
    derive(&mut point, &spec);
    point.raw = json!({"load": load.raw, "server_stats": stats});
    Ok(vec![point])
}

/// Metrics computed from others: server CPU (the generator's window, else
/// the study's), memory per held connection, wake-ups per accept, CPU per
/// request.
fn derive(p: &mut Point, spec: &WebJob) {
    let m = &mut p.metrics;
    if !m.contains_key("server_cpu_pct") {
        if let Some(v) = m.get("server_cpu_pct_study").copied() {
            m.insert("server_cpu_pct".into(), v);
        }
    }
    let held = m
        .get("connections_peak")
        .copied()
        .unwrap_or((spec.load.inactive + spec.load.idle + spec.load.persistent) as f64);
    if held >= 100.0 {
        if let (Some(a), Some(b)) = (
            m.get("server_rss_start_bytes"),
            m.get("server_rss_max_bytes"),
        ) {
            let v = (b - a).max(0.0) / held;
            m.insert("rss_per_conn_bytes".into(), v);
        }
        if let Some(k) = m.get("tcp_kernel_growth_bytes").copied() {
            m.insert("tcp_kernel_per_conn_bytes".into(), k / held);
        }
    }
    if let (Some(w), Some(a)) = (m.get("worker_wakeups"), m.get("worker_accepts")) {
        if *a > 0.0 {
            let v = w / a;
            m.insert("wakeups_per_accept".into(), v);
        }
    }
    if let (Some(cpu), Some(rate)) = (m.get("server_cpu_pct"), m.get("reply_rate")) {
        if *rate > 0.0 {
            let v = cpu / 100.0 / rate * 1e6;
            m.insert("cpu_us_per_reply".into(), v);
        }
    }
}
