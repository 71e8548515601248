//! The parent side of a run: workers in this process (`--procs 1`) or in
//! child processes (the same binary re-executed as `load --worker`, one JSON
//! line each way), the server's CPU sampled over the measured window, the
//! progress line, and the merged [`Summary`].

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, bail, Context};
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

use crate::config::{Config, WorkerSpec};
use crate::engine::{run_worker, Hooks, Progress, Start};
use crate::results::record::interval::{Interval, IntervalJoin, IntervalReport};
use crate::results::record::{merge, WorkerReport};
use crate::results::summary::{ServerCpu, Summary};

/// How to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Show the progress line on standard error.
    pub progress: bool,
    /// The binary to re-execute as `load --worker` when `procs > 1`
    /// (default: this process's own executable).
    pub worker_exe: Option<PathBuf>,
    /// Start the run (after opening the long-lived connections) at this
    /// wall-clock time (`--start-at`).
    pub start_at: Option<SystemTime>,
    /// Where each sampling interval, summed over the workers, is sent as
    /// soon as every worker has reported it.
    pub intervals: Option<mpsc::Sender<Interval>>,
}

/// A line from a worker process.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerMsg {
    /// Long-lived connections open; waiting for `go`.
    Ready,
    /// A progress sample.
    Progress(Progress),
    /// A sampling interval of the measured window is over.
    Interval(IntervalReport),
    /// The final report.
    Report(Box<WorkerReport>),
    /// The worker failed.
    Error(String),
}

/// The server's CPU being sampled: the thread, and what stops it (dropped
/// when the run ends, which ends the sample then if the window did not end
/// before: a run to its sessions' end, or Ctrl-C).
struct Sampler(thread::JoinHandle<ServerCpu>, mpsc::Sender<()>);

impl Sampler {
    fn result(self) -> Option<ServerCpu> {
        drop(self.1);
        self.0.join().ok()
    }
}

/// Sample the server's CPU over the measured window of a run of `cfg` that
/// started at `t0`, from a thread (none without `--server-pid`).
fn sample_server(cfg: &Config, t0: Instant) -> Option<Sampler> {
    if cfg.server_pids.is_empty() {
        return None;
    }
    let pids = cfg.server_pids.clone();
    let from = t0 + Duration::from_secs_f64(cfg.warmup_s);
    let to = (!cfg.run_to_end).then(|| from + Duration::from_secs_f64(cfg.duration_s));
    let (stop, stopped) = mpsc::channel::<()>();
    let wait = move |until: Option<Instant>| {
        let _ = match until {
            Some(t) => stopped
                .recv_timeout(t.saturating_duration_since(Instant::now()))
                .ok(),
            None => stopped.recv().ok(),
        };
    };
    Some(Sampler(
        thread::spawn(move || {
            wait(Some(from));
            let all = evdispatch_host::with_children(&pids);
            let meters: Vec<_> = all
                .iter()
                .filter_map(|&p| evdispatch_host::CpuMeter::start(p).ok())
                .collect();
            let t_start = Instant::now();
            wait(to);
            let wall = t_start.elapsed().as_secs_f64();
            let cpu_s: f64 = meters
                .iter()
                .filter_map(|m| m.read().ok())
                .map(|u| u.cpu_s)
                .sum();
            let pct = if wall > 0.0 {
                cpu_s / wall * 100.0
            } else {
                0.0
            };
            ServerCpu {
                pids: all,
                cpu_s,
                pct,
            }
        }),
        stop,
    ))
}

/// The progress line on standard error (indicatif draws it only on a
/// terminal).
fn progress_line(show: bool) -> ProgressBar {
    if show {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::hidden()
    }
}

/// Show the workers' latest progress samples, summed (nothing to format
/// when the line is not drawn: no `--progress`, or not a terminal).
fn show_progress(bar: &ProgressBar, samples: &[Progress]) {
    if bar.is_hidden() {
        return;
    }
    let phase = samples.iter().map(|p| p.phase.as_str()).min().unwrap_or("");
    let t = samples.iter().map(|p| p.t_s).fold(0.0, f64::max);
    let sum = |f: fn(&Progress) -> u64| samples.iter().map(f).sum::<u64>();
    bar.set_message(format!(
        "{phase} t={t:.0}s replies {} errors {} open {} reopens {}",
        sum(|p| p.replies),
        sum(|p| p.errors),
        sum(|p| p.open),
        sum(|p| p.reopens)
    ));
    bar.tick();
}

struct InProcess<'a> {
    line: &'a ProgressBar,
    sampler: Option<Sampler>,
    cfg: &'a Config,
    intervals: IntervalJoin,
    error: Option<anyhow::Error>,
}

impl Hooks for InProcess<'_> {
    fn go(&mut self, t0: Instant) {
        self.sampler = sample_server(self.cfg, t0);
        self.intervals.go(self.cfg.warmup_s);
    }
    fn progress(&mut self, p: &Progress) {
        show_progress(self.line, std::slice::from_ref(p));
    }
    fn interval(&mut self, r: &IntervalReport) {
        if let Err(e) = self.intervals.add(r) {
            self.error.get_or_insert(e);
        }
    }
}

/// Run the load described by `cfg` and return the merged summary.
pub fn execute(cfg: &Config, opts: &RunOptions) -> anyhow::Result<Summary> {
    let cfg = &cfg.preflight()?;
    let line = progress_line(opts.progress);
    let (reports, server) = if cfg.procs == 1 {
        let mut hooks = InProcess {
            line: &line,
            sampler: None,
            cfg,
            intervals: IntervalJoin::new(opts.intervals.clone(), 1),
            error: None,
        };
        let start = opts.start_at.map_or(Start::Now, Start::At);
        let report = run_worker(cfg.worker_spec(0), start, &mut hooks);
        let server = hooks.sampler.take().and_then(Sampler::result);
        if let Some(e) = hooks.error.take() {
            return Err(e);
        }
        hooks.intervals.finish();
        (vec![report?], server)
    } else {
        run_processes(cfg, opts, &line)?
    };
    line.finish_and_clear();
    let merged = merge(&reports)?;
    let mut summary = Summary::new(cfg, merged, server);
    if cfg.tls.as_ref().is_some_and(|t| t.insecure) {
        summary
            .warnings
            .push("--insecure: the server's certificate and name were NOT verified".to_string());
    }
    Ok(summary)
}

/// Worker children, killed if the parent gives up on them.
#[derive(Default)]
struct Workers {
    children: Vec<Child>,
    stdins: Vec<ChildStdin>,
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stdins.clear();
        for c in &mut self.children {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

fn run_processes(
    cfg: &Config,
    opts: &RunOptions,
    line: &ProgressBar,
) -> anyhow::Result<(Vec<WorkerReport>, Option<ServerCpu>)> {
    let exe = match &opts.worker_exe {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .context("cannot find this program's executable to start workers")?,
    };
    let (tx, rx) = mpsc::channel::<(usize, anyhow::Result<WorkerMsg>)>();
    let mut workers = Workers::default();
    for i in 0..cfg.procs {
        let mut child = Command::new(&exe)
            .args(["load", "--worker"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start worker process {}", exe.display()))?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let text = serde_json::to_string(&cfg.worker_spec(i))? + "\n";
        stdin
            .write_all(text.as_bytes())
            .with_context(|| format!("cannot send worker {i} its share"))?;
        let tx = tx.clone();
        let idx = i as usize;
        thread::spawn(move || {
            for l in BufReader::new(stdout).lines() {
                let msg = l.map_err(anyhow::Error::from).and_then(|l| {
                    serde_json::from_str::<WorkerMsg>(&l)
                        .map_err(|e| anyhow!("worker {idx} said something unreadable: {e}: {l}"))
                });
                let last = matches!(msg, Ok(WorkerMsg::Report(_) | WorkerMsg::Error(_)) | Err(_));
                if tx.send((idx, msg)).is_err() || last {
                    return;
                }
            }
            let _ = tx.send((idx, Err(anyhow!("worker {idx} exited without a report"))));
        });
        workers.children.push(child);
        workers.stdins.push(stdin);
    }
    drop(tx);
    let n = cfg.procs as usize;
    let mut progress = vec![Progress::default(); n];
    let mut ready = 0;
    let mut reports: Vec<Option<WorkerReport>> = vec![None; n];
    let mut sampler = None;
    let mut intervals = IntervalJoin::new(opts.intervals.clone(), n);
    let mut forwarded = false;
    let mut silent = Duration::ZERO;
    while reports.iter().any(Option::is_none) {
        if crate::interrupt::requested() && !forwarded {
            // Ctrl-C at a terminal reaches the workers too; a signal sent
            // to this process alone must reach them as well, the same one
            // (each report says which stopped it).
            forwarded = true;
            let sig = match crate::interrupt::which_name() {
                Some("SIGTERM") => nix::sys::signal::Signal::SIGTERM,
                _ => nix::sys::signal::Signal::SIGINT,
            };
            for c in &workers.children {
                let pid = nix::unistd::Pid::from_raw(c.id() as i32);
                let _ = nix::sys::signal::kill(pid, sig);
            }
        }
        let (i, msg) = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(m) => m,
            Err(mpsc::RecvTimeoutError::Timeout) if silent < Duration::from_secs(3600) => {
                silent += Duration::from_millis(100);
                continue;
            }
            Err(_) => bail!("the workers stopped talking"),
        };
        silent = Duration::ZERO;
        match msg? {
            WorkerMsg::Ready => {
                ready += 1;
                if ready == n {
                    if let Some(t) = opts.start_at {
                        wait_until(t);
                    }
                    if crate::interrupt::requested() {
                        // Not started: the workers stop on the signal
                        // forwarded above and report nothing measured.
                        continue;
                    }
                    for s in &mut workers.stdins {
                        s.write_all(b"go\n")
                            .and_then(|_| s.flush())
                            .context("cannot start a worker")?;
                    }
                    sampler = sample_server(cfg, Instant::now());
                    intervals.go(cfg.warmup_s);
                }
            }
            WorkerMsg::Interval(r) => intervals.add(&r)?,
            WorkerMsg::Progress(p) => {
                progress[i] = p;
                show_progress(line, &progress);
            }
            WorkerMsg::Report(r) => reports[i] = Some(*r),
            WorkerMsg::Error(e) => bail!("worker {i}: {e}"),
        }
    }
    intervals.finish();
    let server = sampler.and_then(Sampler::result);
    drop(workers);
    Ok((reports.into_iter().flatten().collect(), server))
}

struct StdoutHooks;

fn say(msg: &WorkerMsg) {
    let mut out = std::io::stdout().lock();
    if let Ok(text) = serde_json::to_string(msg) {
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

impl Hooks for StdoutHooks {
    fn ready(&mut self) {
        say(&WorkerMsg::Ready);
    }
    fn progress(&mut self, p: &Progress) {
        say(&WorkerMsg::Progress(p.clone()));
    }
    fn interval(&mut self, r: &IntervalReport) {
        say(&WorkerMsg::Interval(r.clone()));
    }
}

/// Sleep until the wall-clock time `t` (or until Ctrl-C).
fn wait_until(t: SystemTime) {
    while !crate::interrupt::requested() {
        match t.duration_since(SystemTime::now()) {
            Ok(left) if !left.is_zero() => thread::sleep(left.min(Duration::from_millis(100))),
            _ => return,
        }
    }
}

/// The worker process: read its share (one JSON line) from standard input,
/// run, answer on standard output.
pub fn worker_main() -> anyhow::Result<()> {
    // Ctrl-C at a terminal reaches the whole process group: a worker stops
    // with its results, as the parent does.
    crate::interrupt::catch()?;
    let mut first = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut first)
        .context("a worker reads its share from standard input")?;
    let mut spec: WorkerSpec = serde_json::from_str(&first)
        .context("`load --worker` is started by `evdispatch load --procs N`, not by hand")?;
    spec.restore()?;
    match run_worker(spec, Start::Stdin, &mut StdoutHooks) {
        Ok(r) => {
            say(&WorkerMsg::Report(Box::new(r)));
            Ok(())
        }
        Err(e) => {
            say(&WorkerMsg::Error(format!("{e:#}")));
            Err(e)
        }
    }
}
