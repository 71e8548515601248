//! The load on a second host (`--load-host [USER@]HOST`): the load
//! generators — ours, wrk, httperf — run on another machine over ssh while
//! the servers stay here, as in the seeds' testbeds (separate client
//! machines).
//!
//! - **ssh**: `--load-ssh CMD` is the ssh command with its options, as
//!   rsync's `-e/--rsh` takes it (default `ssh`); the study adds
//!   `-T -o BatchMode=yes -o ConnectTimeout=10 -o ServerAliveInterval=5
//!   -o ServerAliveCountMax=3` after the user's options (ssh keeps the
//!   first value of an option, so the user's win). Every ssh run is bounded
//!   in time, and a hung one is killed here.
//! - **Addresses**: the servers listen on `--server-addr ADDR` (`0.0.0.0`
//!   for every interface) instead of 127.0.0.1. By default ADDR is the
//!   source address this machine's routing picks for the load host (what
//!   `ip route get HOST` shows as `src`), found by connecting a UDP socket
//!   to it (no packet is sent); HOST is what `ssh -G` says the destination
//!   resolves to (aliases of `~/.ssh/config` included). The load host is pointed at ADDR (or, for
//!   `0.0.0.0`, at that routed source address).
//! - **Probe and copy**: before the first job the load host is probed once
//!   (`uname -a`, CPUs, which of wrk and httperf it has, whether
//!   `DIR/evdispatch` is this very binary: same `--version` and `cksum`);
//!   when it is not, the binary is copied through the same ssh command
//!   (`cat > DIR/evdispatch`), made executable and run once to check it.
//!   `DIR` is `--load-dir` (default `~/.cache/evdispatch/VERSION`).
//! - **Runs**: each generator runs remotely with the command line a local
//!   run would use, except that it is not pinned to a CPU of this machine
//!   and does not sample the server's CPU (the server is not there; its CPU
//!   is measured here). Around it the remote shell reads `/proc/stat`
//!   (the load host's whole-machine CPU, `load_host_cpu_pct`) and `times`
//!   (the generator's own CPU from its rusage, `generator_cpu_s`).
//! - **Stopping**: the remote shell watches its standard input, the ssh
//!   connection, which this side holds open for the run; when the local
//!   ssh process dies (Ctrl-C kills it with every child of the study, or a
//!   time limit) the connection closes and the remote shell kills the
//!   generator.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::Path;
use std::process::{Command, Output};

use anyhow::{anyhow, bail, Context as _};
use evdispatch_harness::{
    run_bounded, Tool, HTTPERF_HOG_PORTS, HTTPERF_LOW_PORT, HTTPERF_PORT_WAIT_S,
};
use serde_json::{json, Value};

/// The load host's command-line arguments (flattened into `evdispatch study`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LoadHostArgs {
    /// Run the load generators (ours, wrk, httperf) on this host over ssh,
    /// the servers staying here, as the seeds did with separate client
    /// machines. An ssh destination: `[USER@]HOST`.
    #[arg(long, value_name = "[USER@]HOST")]
    pub load_host: Option<String>,
    /// The ssh command and its options, one shell-quoted string like
    /// rsync's --rsh, e.g. "ssh -p 2222 -i KEY". The study adds -T and
    /// BatchMode, ConnectTimeout and ServerAlive options after yours.
    #[arg(long, value_name = "CMD", default_value = "ssh")]
    pub load_ssh: String,
    /// Directory on the load host for the evdispatch binary (copied there
    /// when it is absent or another build) [default: ~/.cache/evdispatch/VERSION].
    #[arg(long, value_name = "DIR", requires = "load_host")]
    pub load_dir: Option<String>,
    /// Address the load host reaches this machine's servers at; the servers
    /// listen on it (0.0.0.0: on every interface) instead of 127.0.0.1.
    /// [default: the source address of this machine's route to the load host]
    #[arg(long, value_name = "ADDR", requires = "load_host")]
    pub server_addr: Option<IpAddr>,
}

/// What the probe found on the load host.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Probe {
    /// `uname -n`.
    pub hostname: String,
    /// `uname -a`.
    pub uname: String,
    /// `uname -r`.
    pub kernel: String,
    /// `uname -m`.
    pub machine: String,
    /// Online CPUs (`getconf _NPROCESSORS_ONLN`).
    pub cpus: Option<u32>,
    /// wrk and httperf: their version there, `None` when absent.
    pub peers: BTreeMap<String, Option<String>>,
    /// `DIR/evdispatch --version` there, if it runs.
    pub ours_version: Option<String>,
    /// `cksum < DIR/evdispatch` there (CRC and size).
    pub ours_cksum: Option<String>,
}

/// The load generators the study may run on the load host.
const GENERATORS: [Tool; 2] = [Tool::Wrk, Tool::Httperf];

/// Start of a section of the remote runner's output, after the generator's.
const MARK: &str = "@evd-";

/// Parse the probe script's `key=value` lines.
pub fn parse_probe(text: &str) -> Probe {
    let mut p = Probe::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let v = v.trim().to_string();
        let some = (!v.is_empty()).then(|| v.clone());
        match k {
            "hostname" => p.hostname = v,
            "uname" => p.uname = v,
            "kernel" => p.kernel = v,
            "machine" => p.machine = v,
            "cpus" => p.cpus = v.parse().ok(),
            "ours" => p.ours_version = some,
            "ours_cksum" => p.ours_cksum = some,
            _ => {
                if let Some(tool) = k.strip_prefix("peer.") {
                    if let Some(t) = GENERATORS.iter().find(|t| t.command() == tool) {
                        let version = v.strip_prefix("yes").map(|text| t.version_in(text));
                        p.peers.insert(tool.to_string(), version);
                    }
                }
            }
        }
    }
    p
}

/// A directory for the remote shell: `~` and `~/…` become `"$HOME"…`, the
/// rest is quoted.
fn remote_dir(dir: &str) -> String {
    let q = |s: &str| {
        shlex::try_quote(s)
            .map(|c| c.into_owned())
            .unwrap_or_default()
    };
    match dir.strip_prefix('~') {
        Some("") => "\"$HOME\"".into(),
        Some(rest) if rest.starts_with('/') => format!("\"$HOME\"{}", q(rest)),
        _ => q(dir),
    }
}

/// Quote words for a POSIX shell.
fn quote_words(words: &[String]) -> anyhow::Result<String> {
    shlex::try_join(words.iter().map(String::as_str))
        .map_err(|e| anyhow!("cannot quote {words:?} for the remote shell: {e}"))
}

/// The host part of an ssh destination (`user@host`, `[v6]`).
fn host_of(dest: &str) -> &str {
    let h = dest.rsplit_once('@').map_or(dest, |(_, h)| h);
    h.trim_start_matches('[').trim_end_matches(']')
}

/// The source address this machine's routing picks for `host` (as `ip
/// route get` shows it): a UDP socket connected there, no packet sent.
pub fn route_source(host: &str) -> anyhow::Result<IpAddr> {
    let target: SocketAddr = (host, 22)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve the load host '{host}' (give --server-addr ADDR, the address it reaches this machine at)"))?
        .next()
        .ok_or_else(|| anyhow!("the load host '{host}' has no address (give --server-addr ADDR)"))?;
    let any: SocketAddr = if target.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(any)?;
    s.connect(target)
        .with_context(|| format!("no route to the load host {target} (give --server-addr ADDR)"))?;
    Ok(s.local_addr()?.ip())
}

/// The remote runner: runs `program` (a shell word or expression, then its
/// quoted arguments) with standard input from /dev/null, kills it when its
/// own standard input (the ssh connection) closes, and after its output
/// prints the load host's `/proc/stat` CPU lines before and after, the
/// shell's `times` (the generator's rusage) and its exit status.
/// The shell itself exits with 0, so that ssh's own status 255 means ssh
/// failed.
fn runner_script(program: &str) -> String {
    format!(
        r#"exec 3<&0 </dev/null
S0=$(grep '^cpu[0-9]' /proc/stat 2>/dev/null)
{program} 3<&- &
p=$!
{{ while read -r x <&3; do :; done; kill -KILL $p; }} >/dev/null 2>&1 &
w=$!
exec 3<&-
wait $p
rc=$?
kill -KILL $w 2>/dev/null
S1=$(grep '^cpu[0-9]' /proc/stat 2>/dev/null)
printf '\n{MARK}stat0\n%s\n{MARK}stat1\n%s\n{MARK}times\n' "$S0" "$S1"
times
printf '{MARK}end %s\n' "$rc"
"#
    )
}

/// What a remote run printed, taken apart.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteRun {
    /// The generator's standard output.
    pub stdout: String,
    /// CPU seconds (user + system) of the generator and everything it
    /// waited for, from the remote shell's `times`.
    pub generator_cpu_s: Option<f64>,
    /// Busy share of the load host's whole machine over the run (every CPU;
    /// 100 = all busy), from `/proc/stat`.
    pub host_cpu_pct: Option<f64>,
    /// The generator's exit status.
    pub status: Option<i32>,
}

impl RemoteRun {
    /// Its figures among a point's metrics: `load_host_cpu_pct` (the load
    /// host's whole machine) and `generator_cpu_s` (the generator's own).
    pub fn record(&self, metrics: &mut BTreeMap<String, f64>) {
        if let Some(v) = self.host_cpu_pct {
            metrics.insert("load_host_cpu_pct".into(), v);
        }
        if let Some(v) = self.generator_cpu_s {
            metrics.insert("generator_cpu_s".into(), v);
        }
    }
}

/// What a counter accrued between `a` and `b` seconds in a series of
/// `(seconds, cumulative count)` samples in time order, interpolated
/// linearly between samples; `None` unless the samples cover `a..b`.
pub fn accrued_between(series: &[(f64, f64)], a: f64, b: f64) -> Option<f64> {
    let at = |t: f64| -> Option<f64> {
        let i = series.iter().position(|&(s, _)| s >= t)?;
        let (t1, v1) = series[i];
        if i == 0 {
            return (t1 == t).then_some(v1);
        }
        let (t0, v0) = series[i - 1];
        let f = if t1 > t0 { (t - t0) / (t1 - t0) } else { 1.0 };
        Some(v0 + f * (v1 - v0))
    };
    Some((at(b)? - at(a)?).max(0.0))
}

/// `1m2.500s` as seconds.
fn minutes_seconds(s: &str) -> Option<f64> {
    let (m, rest) = s.split_once('m')?;
    let secs: f64 = rest.strip_suffix('s')?.parse().ok()?;
    Some(m.parse::<f64>().ok()? * 60.0 + secs)
}

/// Take apart the remote runner's output (`runner_script`).
pub fn parse_run(text: &str) -> anyhow::Result<RemoteRun> {
    let marker = format!("\n{MARK}stat0\n");
    let Some(at) = text.rfind(&marker) else {
        bail!("the remote runner ended early (no CPU accounting in its output):\n{text}");
    };
    let (stdout, tail) = text.split_at(at);
    let section = |name: &str| -> Vec<&str> {
        tail.lines()
            .skip_while(|l| *l != format!("{MARK}{name}"))
            .skip(1)
            .take_while(|l| !l.starts_with(MARK))
            .collect()
    };
    let stat0 = evdispatch_host::parse_cpu_times(&section("stat0").join("\n"));
    let stat1 = evdispatch_host::parse_cpu_times(&section("stat1").join("\n"));
    // Busy as for this machine's cores (drive::run_load): what processes
    // are charged, steal and interrupts; over every CPU.
    let host_cpu_pct = (!stat0.is_empty() && stat0.len() == stat1.len()).then(|| {
        let (busy, total) = stat0
            .iter()
            .zip(&stat1)
            .map(|(a, b)| b.since(a))
            .fold((0, 0), |(busy, total), d| {
                (busy + crate::env::busy_ticks(&d), total + d.total())
            });
        if total == 0 {
            0.0
        } else {
            100.0 * busy as f64 / total as f64
        }
    });
    // `times`: the shell's own line, then its children's.
    let generator_cpu_s = section("times").get(1).and_then(|l| {
        let v: Option<Vec<f64>> = l.split_whitespace().map(minutes_seconds).collect();
        v.filter(|v| v.len() == 2).map(|v| v[0] + v[1])
    });
    let status = tail
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{MARK}end ")))
        .and_then(|s| s.trim().parse().ok());
    Ok(RemoteRun {
        stdout: stdout.to_string(),
        generator_cpu_s,
        host_cpu_pct,
        status,
    })
}

/// The ssh command words without secrets: the value of any `-o` option
/// whose name mentions a password, secret or token is hidden.
fn shown_ssh(words: &[String]) -> String {
    let secret = |w: &str| {
        let k = w.split('=').next().unwrap_or("").to_lowercase();
        ["pass", "secret", "token"].iter().any(|s| k.contains(s))
    };
    let mut out = Vec::new();
    let mut after_o = false;
    for w in words {
        let hide =
            (after_o && secret(w)) || (w.len() > 2 && w.starts_with("-o") && secret(&w[2..]));
        out.push(if hide {
            format!("{}=…", w.split('=').next().unwrap_or(""))
        } else {
            w.clone()
        });
        after_o = w == "-o";
    }
    out.join(" ")
}

/// A load host, probed, with our binary in place.
#[derive(Debug, Clone)]
pub struct LoadHost {
    /// The ssh destination, `[USER@]HOST`.
    pub dest: String,
    /// The ssh program and its options (the user's, then ours).
    ssh: Vec<String>,
    /// The ssh command as given, without secrets.
    pub ssh_shown: String,
    /// The remote directory, as given.
    pub dir: String,
    /// What the servers here listen on.
    pub bind: IpAddr,
    /// The address the load host connects to.
    pub connect: IpAddr,
    /// What the probe found (after the copy, if there was one).
    pub probe: Probe,
    /// Whether the study copied the binary over.
    pub copied: bool,
    /// Seconds from starting ssh to the remote command running (an ssh
    /// round trip of `true`, measured once): where a remote run's own
    /// timeline begins in this machine's.
    pub ssh_setup_s: f64,
}

/// Seconds an ssh command that does no real work (probe, check) may take.
const QUICK_S: f64 = 60.0;

impl LoadHost {
    /// Set up the load host of `args` (`None` without `--load-host`): the
    /// addresses, one probe, and our binary `exe` copied over when the
    /// remote one is absent or another build.
    pub fn connect(args: &LoadHostArgs, exe: &Path) -> anyhow::Result<Option<LoadHost>> {
        let Some(mut host) = Self::reach(args)? else {
            return Ok(None);
        };
        let local = local_identity(exe)?;
        if !host.holds(&local) {
            host.copy(exe, &local.1)?;
            host.probe = host.probe_now()?;
            host.copied = true;
            if host.probe.ours_version.as_deref() != Some(local.0.as_str()) {
                bail!(
                    "the evdispatch binary copied to {}:{} does not run there (it printed {:?} to --version; machine {}, this one {}): build one for that host and put it there",
                    host.dest,
                    host.dir,
                    host.probe.ours_version,
                    host.probe.machine,
                    std::env::consts::ARCH
                );
            }
        }
        Ok(Some(host))
    }

    /// Whether the load host already has our binary `exe` (the same version
    /// and checksum) in its directory.
    pub fn has_binary(&self, exe: &Path) -> anyhow::Result<bool> {
        Ok(self.holds(&local_identity(exe)?))
    }

    /// Whether the probe found the binary of identity `local` (its
    /// `--version` and `cksum`, [`local_identity`]).
    fn holds(&self, local: &(String, String)) -> bool {
        (
            self.probe.ours_version.as_deref(),
            self.probe.ours_cksum.as_deref(),
        ) == (Some(local.0.as_str()), Some(local.1.as_str()))
    }

    /// Reach the load host of `args` (`None` without `--load-host`): the
    /// addresses and one probe, changing nothing there (`study --list`
    /// shows what it found; [`LoadHost::connect`] goes on to copy).
    pub fn reach(args: &LoadHostArgs) -> anyhow::Result<Option<LoadHost>> {
        let Some(dest) = args.load_host.clone() else {
            return Ok(None);
        };
        let user_ssh = shlex::split(&args.load_ssh)
            .filter(|w| !w.is_empty())
            .ok_or_else(|| {
                anyhow!(
                    "--load-ssh '{}': not a command line (unbalanced quotes?)",
                    args.load_ssh
                )
            })?;
        let ours = "-T -o BatchMode=yes -o ConnectTimeout=10 -o ServerAliveInterval=5 -o ServerAliveCountMax=3";
        let mut ssh = user_ssh.clone();
        ssh.extend(ours.split(' ').map(String::from));
        // The host ssh really connects to (`ssh -G` resolves aliases of
        // ~/.ssh/config), else the destination's host part.
        let real_host = || {
            Command::new(&ssh[0])
                .args(&ssh[1..])
                .arg("-G")
                .arg(&dest)
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
                .ok()
                .filter(|o| o.status.success())
                .and_then(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .find_map(|l| l.strip_prefix("hostname ").map(str::to_string))
                })
                .unwrap_or_else(|| host_of(&dest).to_string())
        };
        let routed = || route_source(&real_host());
        let (bind, connect) = match args.server_addr {
            Some(a) if a.is_unspecified() => (a, routed()?),
            Some(a) => (a, a),
            None => {
                let a = routed()?;
                (a, a)
            }
        };
        let dir = args
            .load_dir
            .clone()
            .unwrap_or_else(|| format!("~/.cache/evdispatch/{}", env!("CARGO_PKG_VERSION")));
        let mut host = LoadHost {
            dest,
            ssh,
            ssh_shown: shown_ssh(&user_ssh),
            dir,
            bind,
            connect,
            probe: Probe::default(),
            copied: false,
            ssh_setup_s: 0.0,
        };
        host.probe = host.probe_now()?;
        let t = std::time::Instant::now();
        host.exec("true", "timing ssh", QUICK_S, None)?;
        host.ssh_setup_s = t.elapsed().as_secs_f64();
        Ok(Some(host))
    }

    /// `ssh OPTIONS DEST REMOTE`.
    fn command(&self, remote: &str) -> Command {
        let mut c = Command::new(&self.ssh[0]);
        c.args(&self.ssh[1..]).arg(&self.dest).arg(remote);
        c
    }

    /// Run `script` under `sh -c` on the load host, at most `limit_s`
    /// seconds, standard input `stdin` (else a pipe held open for the run).
    /// ssh's own failure (status 255) is an error that says what to check.
    fn exec(
        &self,
        script: &str,
        what: &str,
        limit_s: f64,
        stdin: Option<File>,
    ) -> anyhow::Result<Output> {
        let remote = quote_words(&["sh".into(), "-c".into(), script.into()])?;
        let mut cmd = self.command(&remote);
        let hold = stdin.is_none();
        if let Some(f) = stdin {
            cmd.stdin(f);
        }
        let out = run_bounded(cmd, &format!("ssh {} ({what})", self.dest), limit_s, hold)?;
        if out.status.code() == Some(255) {
            bail!(
                "ssh to {} failed ({what}): {}check --load-host and --load-ssh ({}); the study runs ssh with BatchMode=yes, so it needs a key, not a password",
                self.dest,
                String::from_utf8_lossy(&out.stderr),
                self.ssh_shown
            );
        }
        Ok(out)
    }

    fn probe_now(&self) -> anyhow::Result<Probe> {
        let mut script = format!(
            "D={}\n\
             echo \"hostname=$(uname -n)\"\n\
             echo \"uname=$(uname -a)\"\n\
             echo \"kernel=$(uname -r)\"\n\
             echo \"machine=$(uname -m)\"\n\
             echo \"cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null)\"\n",
            remote_dir(&self.dir)
        );
        for t in GENERATORS {
            let (c, v) = (t.command(), t.version_args().join(" "));
            script.push_str(&format!(
                "if command -v {c} >/dev/null 2>&1; then echo \"peer.{c}=yes $({c} {v} 2>&1 | grep -i {c} | grep '[0-9]\\.[0-9]' | head -n1)\"; else echo peer.{c}=; fi\n"
            ));
        }
        script.push_str(
            "if [ -x \"$D/evdispatch\" ]; then\n\
             echo \"ours=$(\"$D/evdispatch\" --version 2>&1 | head -n1)\"\n\
             echo \"ours_cksum=$(cksum < \"$D/evdispatch\")\"\n\
             fi\n",
        );
        let out = self.exec(&script, "probing the load host", QUICK_S, None)?;
        if !out.status.success() {
            bail!(
                "probing the load host {} failed ({}): {}",
                self.dest,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(parse_probe(&String::from_utf8_lossy(&out.stdout)))
    }

    /// Copy `exe` to `DIR/evdispatch` through ssh (`cat`), atomically:
    /// installed only if its `cksum` there is `cksum` (this binary's CRC and
    /// size), so a copy cut short never replaces the binary.
    fn copy(&self, exe: &Path, cksum: &str) -> anyhow::Result<()> {
        let size = fs::metadata(exe)?.len();
        let file = File::open(exe).with_context(|| format!("cannot read {}", exe.display()))?;
        let script = copy_script(&remote_dir(&self.dir), cksum);
        // A slow link may take its time: 1 MB/s at the least.
        let limit = QUICK_S + size as f64 / 1e6;
        let out = self.exec(&script, "copying the evdispatch binary", limit, Some(file))?;
        if !out.status.success() {
            bail!(
                "cannot copy the evdispatch binary to {}:{} ({}): {}",
                self.dest,
                self.dir,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    /// Whether the load host has `tool`; `Err(why)` if not.
    pub fn has(&self, tool: &str) -> Result<(), String> {
        match self.probe.peers.get(tool) {
            Some(Some(_)) => Ok(()),
            _ => Err(format!(
                "{tool} is not installed on the load host {}: apt-get install -y {tool} there",
                self.dest
            )),
        }
    }

    /// `http://CONNECT:PORT` for a server listening on `addr` here.
    pub fn url(&self, addr: SocketAddr) -> String {
        format!("http://{}", SocketAddr::new(self.connect, addr.port()))
    }

    /// Run our binary (`evdispatch ARGS`) on the load host; see `LoadHost::run`.
    pub fn run_ours(&self, args: &[String], limit_s: f64, log: &Path) -> anyhow::Result<RemoteRun> {
        let exe = format!("{}/evdispatch", remote_dir(&self.dir));
        self.run(&exe, args, limit_s, log)
    }

    /// Wait on the load host until httperf `--hog` can take `needed` more
    /// local ports, as the harness's `wait_for_httperf_ports`
    /// does here: the distinct local TCP ports from 1024 up held there (any
    /// state, from `/proc/net/tcp` and `tcp6`), plus `needed`, must fit in
    /// [`HTTPERF_HOG_PORTS`]. At most [`HTTPERF_PORT_WAIT_S`]; returns the
    /// seconds waited.
    pub fn wait_for_httperf_ports(&self, needed: u64) -> anyhow::Result<f64> {
        // The port is the field after the address's colon, 4 upper-case hex
        // digits: from HTTPERF_LOW_PORT up is from its hex up, as text.
        let low = format!("{HTTPERF_LOW_PORT:04X}");
        let max = HTTPERF_PORT_WAIT_S;
        let script = format!(
            r#"s=$(date +%s)
while :; do
  h=$(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$2 ~ /:/ {{ n = split($2, a, ":"); if (a[n] >= "{low}") print a[n] }}' | sort -u | wc -l)
  t=$(( $(date +%s) - s ))
  if [ $((h + {needed})) -le {HTTPERF_HOG_PORTS} ] || [ $t -ge {max} ]; then echo "waited=$t held=$h"; exit 0; fi
  sleep 1
done
"#
        );
        // The loop ends by `max` s; each count reads the TCP tables once more.
        let out = self.exec(&script, "waiting for httperf's ports", 120.0, None)?;
        let text = String::from_utf8_lossy(&out.stdout);
        let field = |k: &str| -> Option<f64> {
            text.split_whitespace()
                .find_map(|w| w.strip_prefix(k)?.parse().ok())
        };
        let waited = field("waited=").ok_or_else(|| {
            anyhow!(
                "the port count on {} printed {text:?} ({}): {}",
                self.dest,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
        if waited >= 1.0 {
            eprintln!(
                "httperf on {}: waited {waited:.0} s for local ports to leave TIME_WAIT ({} held, {needed} needed)",
                self.dest,
                field("held=").unwrap_or(0.0)
            );
        }
        Ok(waited)
    }

    /// Run a peer tool (`wrk ARGS`) on the load host; see `LoadHost::run`.
    pub fn run_tool(
        &self,
        tool: &str,
        args: &[String],
        limit_s: f64,
        log: &Path,
    ) -> anyhow::Result<RemoteRun> {
        self.has(tool).map_err(|w| anyhow!(w))?;
        self.run(&quote_words(&[tool.to_string()])?, args, limit_s, log)
    }

    /// Run `program ARGS` on the load host under the remote runner, at most
    /// `limit_s` seconds (then the local ssh is killed, and with it the
    /// remote program), its standard error into `log`. A generator that
    /// failed is an error carrying the log's tail.
    fn run(
        &self,
        program: &str,
        args: &[String],
        limit_s: f64,
        log: &Path,
    ) -> anyhow::Result<RemoteRun> {
        let line = format!("{program} {}", quote_words(args)?);
        let out = self.exec(&runner_script(&line), "running the load", limit_s, None);
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                let _ = fs::write(log, format!("{e:#}\n"));
                return Err(e);
            }
        };
        fs::write(log, &out.stderr).with_context(|| format!("cannot write {}", log.display()))?;
        let run = parse_run(&String::from_utf8_lossy(&out.stdout))?;
        if run.status != Some(0) {
            bail!(
                "on the load host {}: `{line}` failed (status {:?}):\n{}",
                self.dest,
                run.status,
                evdispatch_harness::log_tail(Some(log), 20)
            );
        }
        Ok(run)
    }

    /// The load host for the environment section of `results.json`.
    pub fn describe(&self) -> Value {
        json!({
            "destination": self.dest,
            "ssh": self.ssh_shown,
            "hostname": self.probe.hostname,
            "uname": self.probe.uname,
            "kernel": self.probe.kernel,
            "machine": self.probe.machine,
            "cpus_online": self.probe.cpus,
            "dir": self.dir,
            "evdispatch_version": self.probe.ours_version,
            "binary_copied": self.copied,
            "ssh_setup_s": self.ssh_setup_s,
            "generators": self.probe.peers,
            "servers_listen_on": self.bind.to_string(),
            "servers_reached_at": self.connect.to_string(),
        })
    }

    /// The peers as the study should see them: wrk and httperf are the load
    /// host's (present there or not), the servers and libraries this
    /// machine's.
    pub fn adjust_peers(&self, peers: &mut [crate::env::PeerStatus]) {
        for p in peers.iter_mut() {
            if let Some(v) = self.probe.peers.get(p.name) {
                p.role = "load generator, on the load host";
                p.version = v.clone();
                p.install = format!(
                    "on the load host {}: apt-get install -y {}",
                    self.dest, p.name
                );
            }
        }
    }
}

/// The load host's side of [`LoadHost::copy`]: write standard input to
/// `DIR/evdispatch.part`, check its `cksum` against `cksum` (the local
/// file's), and only then make it executable and move it in place.
fn copy_script(dir: &str, cksum: &str) -> String {
    format!(
        "D={dir}\nP=\"$D/evdispatch.part\"\nmkdir -p \"$D\" && cat > \"$P\" || exit 1\n\
         got=$(cksum < \"$P\")\n\
         if [ \"$got\" != '{cksum}' ]; then rm -f \"$P\"; echo \"the copy arrived incomplete or altered (cksum $got there, {cksum} here)\" >&2; exit 1; fi\n\
         chmod 755 \"$P\" && mv -f \"$P\" \"$D/evdispatch\"\n"
    )
}

/// This binary's `--version` line and `cksum` output, as the probe reads
/// them on the load host.
fn local_identity(exe: &Path) -> anyhow::Result<(String, String)> {
    let run = |cmd: &mut Command| -> anyhow::Result<String> {
        let o = cmd.output()?;
        if !o.status.success() {
            bail!("{cmd:?} failed: {}", String::from_utf8_lossy(&o.stderr));
        }
        Ok(String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string())
    };
    let version = run(Command::new(exe).arg("--version"))
        .with_context(|| format!("cannot run {} --version", exe.display()))?;
    let cksum = run(Command::new("cksum").stdin(File::open(exe)?))
        .context("cannot run cksum (coreutils) on the evdispatch binary")?;
    Ok((version, cksum))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_cut_short_is_not_installed() {
        let dir = std::env::temp_dir().join(format!("evd-copy-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let src = dir.join("src");
        fs::write(&src, b"#!/bin/sh\necho a whole binary\n").unwrap();
        let o = Command::new("cksum")
            .stdin(File::open(&src).unwrap())
            .output()
            .unwrap();
        let sum = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let dest = dir.join("d");
        let copy = |input: &[u8]| {
            let script = copy_script(&remote_dir(dest.to_str().unwrap()), &sum);
            let mut child = Command::new("sh")
                .arg("-c")
                .arg(script)
                .stdin(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write as _;
            child.stdin.take().unwrap().write_all(input).unwrap();
            child.wait_with_output().unwrap()
        };
        let whole = fs::read(&src).unwrap();
        // Cut short: refused, nothing installed, the part removed.
        let out = copy(&whole[..whole.len() / 2]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("incomplete"));
        assert!(!dest.join("evdispatch").exists());
        assert!(!dest.join("evdispatch.part").exists());
        // Whole: installed, executable.
        assert!(copy(&whole).status.success());
        assert_eq!(fs::read(dest.join("evdispatch")).unwrap(), whole);
        use std::os::unix::fs::PermissionsExt as _;
        let mode = fs::metadata(dest.join("evdispatch"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn probe_lines_are_read() {
        let p = parse_probe(
            "hostname=lab2\nuname=Linux lab2 6.1.0 x86_64 GNU/Linux\nkernel=6.1.0\nmachine=x86_64\ncpus=8\npeer.wrk=yes wrk 4.1.0 [epoll] Copyright (C) 2012 Will Glozer \npeer.httperf=\nours=evdispatch 0.1.0\nours_cksum=123 456\n",
        );
        assert_eq!(p.hostname, "lab2");
        assert_eq!(p.cpus, Some(8));
        assert_eq!(p.peers["wrk"].as_deref(), Some("4.1.0"));
        assert_eq!(p.peers["httperf"], None);
        assert_eq!(p.ours_version.as_deref(), Some("evdispatch 0.1.0"));
        assert_eq!(p.ours_cksum.as_deref(), Some("123 456"));
    }

    #[test]
    fn runner_output_is_taken_apart() {
        let text = "{\"x\":1}\n\n@evd-stat0\ncpu0 100 0 100 800 0 0 0 0\ncpu1 0 0 0 1000 0 0 0 0\n@evd-stat1\ncpu0 200 0 200 1000 0 0 0 0\ncpu1 50 0 50 1100 0 0 0 0\n@evd-times\n0m0.001s 0m0.002s\n1m1.500s 0m0.250s\n@evd-end 0\n";
        let r = parse_run(text).unwrap();
        assert_eq!(r.stdout, "{\"x\":1}\n");
        assert_eq!(r.status, Some(0));
        assert!((r.generator_cpu_s.unwrap() - 61.75).abs() < 1e-9);
        // Busy 300 of 600 ticks, over both CPUs.
        assert!((r.host_cpu_pct.unwrap() - 50.0).abs() < 1e-9);
        assert!(parse_run("partial output").is_err());
    }

    /// The runner, run here by `sh` without ssh: the program's output,
    /// status and CPU come back; closing its standard input (what a dead
    /// ssh connection does) kills the program.
    #[test]
    fn the_runner_reports_and_stops_with_its_input() {
        use std::process::Stdio;
        let sh = |program: &str| {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(runner_script(program))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null());
            c.spawn().unwrap()
        };
        // Its input held open for the run, as the study holds ssh's.
        let mut done = sh("echo hello; exit 3");
        let stdin = done.stdin.take();
        let out = done.wait_with_output().unwrap();
        drop(stdin);
        assert!(out.status.success());
        let r = parse_run(&String::from_utf8_lossy(&out.stdout)).unwrap();
        assert_eq!(r.stdout, "hello\n");
        assert_eq!(r.status, Some(3));
        assert!(r.generator_cpu_s.is_some());
        assert!(r.host_cpu_pct.is_some_and(|p| (0.0..=100.0).contains(&p)));
        // Killed (SIGKILL: 128 + 9) once its input closes, long before the
        // sleep would end.
        let mut cut = sh("sleep 600");
        drop(cut.stdin.take());
        let out = cut.wait_with_output().unwrap();
        let r = parse_run(&String::from_utf8_lossy(&out.stdout)).unwrap();
        assert_eq!(r.status, Some(137));
    }

    /// The generators are the load host's: one missing there is absent,
    /// with the command that installs it there, whatever this machine has.
    #[test]
    fn generators_are_the_load_hosts() {
        let host = LoadHost {
            dest: "lab@client".into(),
            ssh: vec!["ssh".into()],
            ssh_shown: "ssh".into(),
            dir: "/tmp/x".into(),
            bind: IpAddr::from([10, 0, 0, 1]),
            connect: IpAddr::from([10, 0, 0, 1]),
            probe: parse_probe("peer.wrk=\npeer.httperf=yes httperf: httperf-0.9.0\n"),
            copied: false,
            ssh_setup_s: 0.2,
        };
        let mut peers = crate::env::find_peers(&Default::default());
        let nginx = peers.iter().find(|p| p.name == "nginx").cloned();
        host.adjust_peers(&mut peers);
        let get = |n: &str| peers.iter().find(|p| p.name == n).unwrap().clone();
        assert_eq!(get("wrk").version, None);
        assert!(get("wrk")
            .absent_note()
            .contains("on the load host lab@client: apt-get install -y wrk"));
        assert_eq!(get("httperf").version.as_deref(), Some("0.9.0"));
        assert_eq!(get("nginx"), nginx.unwrap(), "servers stay this machine's");
        assert_eq!(
            host.url(SocketAddr::from(([0, 0, 0, 0], 8080))),
            "http://10.0.0.1:8080"
        );
    }

    #[test]
    fn counts_in_a_window_are_interpolated() {
        let s = [(0.0, 0.0), (1.0, 1.0), (2.0, 3.0), (3.0, 3.0)];
        assert_eq!(accrued_between(&s, 0.5, 1.5), Some(1.5));
        assert_eq!(accrued_between(&s, 0.0, 3.0), Some(3.0));
        assert_eq!(accrued_between(&s, 2.0, 3.0), Some(0.0));
        assert_eq!(accrued_between(&s, 1.0, 3.5), None);
        assert_eq!(accrued_between(&s, -1.0, 1.0), None);
    }

    #[test]
    fn remote_words_are_quoted_and_secrets_hidden() {
        assert_eq!(remote_dir("~/.cache/e v"), "\"$HOME\"'/.cache/e v'");
        assert_eq!(remote_dir("/tmp/x"), "/tmp/x");
        assert_eq!(host_of("root@[::1]"), "::1");
        assert_eq!(host_of("lab2"), "lab2");
        let w: Vec<String> = [
            "ssh",
            "-p",
            "2222",
            "-o",
            "PasswordX=hunter2",
            "-oTokenY=abc",
            "-i",
            "k",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(shown_ssh(&w), "ssh -p 2222 -o PasswordX=… -oTokenY=… -i k");
        assert_eq!(
            route_source("127.0.0.1").unwrap(),
            IpAddr::from([127, 0, 0, 1])
        );
    }
}
