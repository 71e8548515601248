//! `evdispatch-serve`: the same command line as `evdispatch serve`, as a
//! binary of its own crate, so the crate's tests can run the server as a
//! child process (descriptor limits, signals, the printed address).

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "evdispatch-serve",
    about = "evdispatch serve as a standalone binary"
)]
struct Cli {
    #[command(flatten)]
    args: evdispatch_server::ServeArgs,
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = evdispatch_server::run(cli.args) {
        eprintln!("evdispatch-serve: {e:#}");
        std::process::exit(1);
    }
}
