//! `evdispatch`: one binary for the benchmarks, the server, the load
//! generator, the hostile-conditions scenarios and the study. Each subcommand lives in its own crate; this file
//! only wires them.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "evdispatch",
    version,
    about = "Scalable network I/O on Linux: select, poll, epoll, io_uring and RT signals, measured"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
// Parsed once per run: the size of the largest argument set does not matter.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Measurements: Poller_bench (seed 001), fd allocation (seed 003), RT-signal overflow, our server against the peers, the generator against wrk.
    Bench(evdispatch_bench::BenchArgs),
    /// Serve static files over any mechanism.
    Serve(evdispatch_server::ServeArgs),
    /// Generate HTTP load: sessions, persistent, inactive, idle and slow clients.
    Load(Box<evdispatch_load::LoadArgs>),
    /// Re-run every experiment of the seeds and write the report.
    Study(evdispatch_study::StudyArgs),
    /// Hostile conditions, measured: signal-queue storm, descriptor
    /// exhaustion, slowloris, malicious input, soak.
    Torture(evdispatch_torture::TortureArgs),
    /// List the mechanisms (the table every other command reads).
    Mechanisms {
        /// One JSON object per mechanism.
        #[arg(long)]
        json: bool,
    },
}

fn mechanisms(json: bool) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = String::new();
    if json {
        let rows: Vec<_> = evdispatch::MECHANISMS
            .iter()
            .map(|m| {
                serde_json::json!({
                    "name": m.name,
                    "trigger": m.trigger,
                    "summary": m.summary,
                    "limits": m.limits,
                    "min_kernel": m.min_kernel,
                    "max_fd": m.max_fd,
                    "exclusive": m.exclusive,
                    "available": evdispatch::Poller::new(m.mechanism).err().map(|e| e.to_string()).unwrap_or_else(|| "yes".into()),
                })
            })
            .collect();
        out = serde_json::to_string_pretty(&rows)? + "\n";
    } else {
        out += &format!(
            "{:<12} {:<7} {:<7} {:<10} summary\n",
            "name", "trigger", "linux", "here"
        );
        for m in evdispatch::MECHANISMS {
            let here = match evdispatch::Poller::new(m.mechanism) {
                Ok(_) => "available".to_string(),
                Err(e) => format!("no ({e})"),
            };
            let trigger = format!("{:?}", m.trigger).to_lowercase();
            out += &format!(
                "{:<12} {:<7} {:<7} {:<10} {}\n",
                m.name, trigger, m.min_kernel, here, m.summary
            );
            out += &format!("{:<36}limits: {}\n", "", m.limits);
        }
    }
    // A reader that stops early (`| head`) is not an error.
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

fn main() {
    // Bad flags exit 1, as any other bad input (and as wrk does); clap's
    // own code would be 2. Help and version still exit 0.
    let cli = Cli::try_parse().unwrap_or_else(|e| {
        if !e.use_stderr() {
            e.exit();
        }
        let _ = e.print();
        std::process::exit(1);
    });
    let result = match cli.command {
        Command::Bench(a) => evdispatch_bench::run(a),
        Command::Serve(a) => evdispatch_server::run(a),
        Command::Load(a) => evdispatch_load::run(*a),
        Command::Study(a) => evdispatch_study::run(a),
        Command::Torture(a) => evdispatch_torture::run(a),
        Command::Mechanisms { json } => mechanisms(json),
    };
    if let Err(e) = result {
        eprintln!("evdispatch: {e:#}");
        std::process::exit(1);
    }
}
