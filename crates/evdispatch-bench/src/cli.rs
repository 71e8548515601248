//! The command line of `evdispatch bench`: one subcommand per benchmark.

use crate::{fdalloc, generator, overflow, poller, server, storm};

/// Command-line arguments of `evdispatch bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Which benchmark.
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The benchmarks. Add one by adding a variant and its arm in [`run`].
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Poller_bench (seed 001): time one wait plus a 1-byte read per ready
    /// descriptor, with N socketpairs watched and A of them written.
    Poller(poller::PollerArgs),
    /// Descriptor allocation (seed 003): with N descriptors open, close the
    /// first and the last, then open twice.
    Fdalloc(fdalloc::FdallocArgs),
    /// RT-signal queue overflow: time to recover a full queue of Q signals
    /// with N descriptors registered (in a child with RLIMIT_SIGPENDING = Q).
    Overflow(overflow::OverflowArgs),
    /// RT-signal queue storm: overflows of each signal mechanism when busy
    /// descriptors receive data while served, with RLIMIT_SIGPENDING = Q.
    Storm(storm::StormArgs),
    /// Our server against nginx, lighttpd and h2o: server CPU per request
    /// (keep-alive) and per connection (Connection: close), idle
    /// connections held, memory per idle connection.
    Server(server::ServerArgs),
    /// The load generator's capacity against `wrk -t1` (or, with
    /// `--http2`, `h2load -t1`): requests per generator CPU-second, closed
    /// loop, keep-alive, HTTP and HTTPS.
    Generator(generator::GeneratorArgs),
    /// Internal: the writer helper `bench poller` starts (control socket on
    /// standard input).
    #[command(name = "poller-writer", hide = true)]
    PollerWriter(poller::WriterArgs),
    /// Internal: a floor server of `bench server` (a canned response from
    /// memory on epoll or io_uring), run as its child.
    #[command(name = "floor-server", hide = true)]
    FloorServer(server::FloorArgs),
}

/// Run `evdispatch bench …`.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.command {
        BenchCommand::Poller(a) => poller::run(a),
        BenchCommand::Fdalloc(a) => fdalloc::run(a),
        BenchCommand::Overflow(a) => overflow::run(a),
        BenchCommand::Storm(a) => storm::run(a),
        BenchCommand::Server(a) => server::run(a),
        BenchCommand::Generator(a) => generator::run(a),
        BenchCommand::PollerWriter(a) => poller::writer_main(a.cpu),
        BenchCommand::FloorServer(a) => server::floor_main(a),
    }
}
