//! `bench server`: our server against nginx, lighttpd and h2o on one file,
//! server CPU per request and per connection, idle connections held, memory
//! per idle connection, judged against the targets in `analysis::TARGETS`.
//!
//! Every server runs with one worker pinned to `--server-cpu` (0), and every
//! load tool on `--client-cpu` (1), through the harness
//! (`evdispatch-harness`), which generates the peers' configurations. The
//! figure that ranks fast servers on two cores is the **server's CPU time**
//! (each process's CPU-time clock, to the nanosecond, master and workers summed) over the measured window,
//! divided by the work done: with one core, `wrk -t1` saturates before a
//! good server does, so requests per second alone cannot tell them apart.
//!
//! Scenarios (`--scenarios`):
//!
//! * `keepalive`: `wrk -t1 -c100` on persistent connections, the file of
//!   `--file-size` bytes (6 KB): CPU µs per request, requests/s, wrk's p99.
//! * `close`: the same with `Connection: close`, one connection per
//!   request: CPU µs per connection, connections/s.
//! * `idle`: `--idle` (10,000) idle connections held open by a separate
//!   `evdispatch load --idle` process (one request each, then silence), and
//!   with none: keep-alive throughput and CPU per request (wrk, closed
//!   loop), and the open-loop p99 at `--rate` requests/s over
//!   `--persistent` connections (`evdispatch load`, latency corrected for
//!   coordinated omission). The phases run on the same server process:
//!   none (`*_before`), held (`*_idle`), none again (`*_after`); the
//!   figures "none" (`rps_none`, `p99_none_us`, …) are the mean of the two
//!   phases with none, so that a drift of the machine over the run cancels,
//!   and the ratios (held ÷ none) are taken within the run. How far the two
//!   phases with none disagree (`rps_none_repeat`, `p99_none_repeat`:
//!   after ÷ before) is the noise a held/none ratio must be read against.
//!   A control phase between "before" and "held" (`*_elsewhere`) holds
//!   the same connections at a sink (our epoll server on the client CPU)
//!   while the measured server holds none: `p99_machine_ratio` (elsewhere
//!   ÷ none) is what the machine adds when that many connections exist,
//!   `p99_own_ratio` (held ÷ elsewhere) what holding them costs the
//!   measured server itself; likewise `rps_machine_ratio`, `rps_own_ratio`.
//!   The memory figure below comes with it.
//! * `range`, `whole`: a 64 KiB range (`Range: bytes=0-65535`) of a 1 MiB
//!   file, and a whole 64 KiB file, on persistent connections (wrk): CPU
//!   µs per request of each, and `range ÷ whole` per server paired within
//!   rounds (`range_over_whole`): a range must cost no more than the same
//!   bytes as a file of their own (no copy through user space).
//! * access log: a server named `NAME+log` (`epoll+log`, `nginx+log`) runs
//!   with its access log on a file (ours `--access-log`, nginx `access_log
//!   FILE combined`, lighttpd `mod_accesslog`, h2o `access-log`); beside
//!   `NAME` in the same run, the CPU per request it adds in `keepalive` is
//!   reported per round (`access_log_costs`), ours against nginx's.
//! * HTTPS (our server and nginx only, both given the same self-signed
//!   ECDSA P-256 certificate, TLS 1.3 only: nginx `ssl_protocols
//!   TLSv1.3`, its session cache and tickets on; both choose the suite by
//!   the server's order, not the client's, and nginx is given ours:
//!   AES-128-GCM on AES hardware, whatever the client lists first):
//!   `https-keepalive` (`keepalive` over HTTPS, wrk: CPU µs per request,
//!   and beside the plain `keepalive` of the same round, each server's
//!   HTTPS ÷ plain paired within rounds, `https_over_plain`; wrk's TLS on
//!   one client core can keep the server less busy than over plain HTTP,
//!   and `server_cpu_pct` of each run says how busy);
//!   `https-full` and `https-resumed` (`evdispatch load --rate max -c 10
//!   --sessions 0 --calls 1`, a new connection per request, with
//!   `--no-tls-resume` or resuming: handshakes per server CPU-second from
//!   the generator's count of handshakes, `resumed_share` saying what they
//!   were); `https-large` (the 1 MiB file over HTTPS, wrk: bytes per server
//!   CPU-second); `https-idle` (user-space memory per idle TLS connection,
//!   as `memory`). Each is compared with nginx's, paired within rounds.
//! * `memory`: user-space memory per idle connection, the growth of the
//!   server's resident set while they are held ÷ connections held (alone,
//!   when `idle` is not asked for).
//!
//! The floor: the rows `floor-epoll` and `floor-uring` (in the default
//! `--servers`) are two minimal servers answering a canned keep-alive
//! response from memory ([`floor`]); in `keepalive` every server's CPU per
//! request is also given as a multiple of the lower of the two floors in
//! the same round (`floor_multiples` in the JSON, paired within rounds like
//! the ratios to the best peer). They take part in `keepalive` only (they
//! parse no `Connection: close` and hold no idle connection worth
//! measuring); neither counts as ours or as a peer.
//!
//! Rounds: each round runs every scenario on every server, the servers in
//! an order rotated by one per round, so none always follows the same
//! neighbour. Each figure is reported as the median over rounds with its
//! range; comparisons with the peers are **paired within rounds** (each
//! round's value ÷ the best peer's value in that round) and then
//! summarised. Each measurement starts from a fresh network namespace when
//! the program may create one (root), so no run inherits the `TIME_WAIT`
//! sockets and timers of the runs before it (`--shared-netns` turns this
//! off).
//!
//! The targets are checked at the end ([`analysis::TARGETS`]); a
//! target is "met" when the median meets it, and the verdict says whether
//! every round did.

mod analysis;
pub mod floor;
mod measure;
mod outcome;
mod plan;
mod report;
mod rounds;

pub use analysis::{LogCostRound, LogCostRow, RatioRow, SummaryRow, Verdict, TARGETS};
pub use floor::{main as floor_main, Floor, FloorArgs};
pub use measure::Run;
pub use outcome::{Outcome, ServerInfo, Skipped};
pub use plan::{Contestant, Plan, Scenario, ServerArgs, LOGGED};
pub use rounds::{measure_all, run};
