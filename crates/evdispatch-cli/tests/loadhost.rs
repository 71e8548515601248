//! `evdispatch study --load-host` end to end, on loopback: the test starts a
//! throwaway sshd of its own on a free 127.0.0.1 port (a temporary host key,
//! client key and configuration), runs the tiny profile's load-generator
//! cross-check (ours, wrk and httperf as loads) with the generators "on the
//! load host" over that sshd, and checks the binary was copied, the points
//! carry the load host's CPU figures and results.json records the host; a
//! second run finds the copy and does not copy again; Ctrl-C stops the
//! generator on the far side too; an unreachable host fails fast, saying so.
//! Skipped, with the reason, without root or OpenSSH (server and client).

use std::fs;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const EXE: &str = env!("CARGO_BIN_EXE_evdispatch");
const SSHD: &str = "/usr/sbin/sshd";

/// Why this machine cannot run the test, if it cannot.
fn skip_reason() -> Option<String> {
    let root = fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1).map(|euid| euid == "0"))
        .unwrap_or(false);
    if !root {
        return Some("not root (sshd needs root to log a user in)".into());
    }
    if !Path::new(SSHD).is_file() {
        return Some(format!(
            "{SSHD} is absent: apt-get install -y openssh-server"
        ));
    }
    for prog in ["ssh", "ssh-keygen"] {
        let found = Command::new(prog)
            .arg("-V")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .is_ok();
        if !found {
            return Some(format!(
                "{prog} is absent: apt-get install -y openssh-client"
            ));
        }
    }
    None
}

/// A throwaway sshd, killed when dropped.
struct Sshd {
    child: Child,
    port: u16,
    key: PathBuf,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sshd {
    fn start(dir: &Path) -> Sshd {
        let keygen = |path: &Path| {
            let st = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(path)
                .status()
                .unwrap();
            assert!(st.success(), "ssh-keygen failed");
        };
        let (host_key, key) = (dir.join("host_key"), dir.join("client_key"));
        keygen(&host_key);
        keygen(&key);
        fs::copy(key.with_extension("pub"), dir.join("authorized_keys")).unwrap();
        // sshd's privilege separation directory.
        fs::create_dir_all("/run/sshd").unwrap();
        let port = evdispatch_harness::free_port().unwrap();
        let conf = dir.join("sshd_config");
        fs::write(
            &conf,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nAuthorizedKeysFile {ak}\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nStrictModes no\nUsePAM no\n\
                 PidFile {pid}\nLogLevel ERROR\n",
                hk = host_key.display(),
                ak = dir.join("authorized_keys").display(),
                pid = dir.join("sshd.pid").display(),
            ),
        )
        .unwrap();
        let child = Command::new(SSHD)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(dir.join("sshd.log")).unwrap())
            .spawn()
            .unwrap();
        let sshd = Sshd { child, port, key };
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "sshd did not listen: {}",
                fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        sshd
    }

    fn ssh_command(&self) -> String {
        format!(
            "ssh -p {} -i {} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
            self.port,
            self.key.display()
        )
    }
}

fn study(dir: &Path, out: &str, ssh: &str) -> Command {
    study_at(dir, out, ssh, "127.0.0.1")
}

/// [`study`] with the servers listening on `server_addr`.
fn study_at(dir: &Path, out: &str, ssh: &str, server_addr: &str) -> Command {
    let mut cmd = Command::new(EXE);
    cmd.args([
        "study",
        "--profile",
        "tiny",
        "--fresh",
        "--only",
        "loadcheck",
    ])
    .arg("--out")
    .arg(dir.join(out))
    .args(["--load-host", "root@127.0.0.1", "--load-ssh", ssh])
    .arg("--load-dir")
    .arg(dir.join("remote"))
    .args(["--server-addr", server_addr])
    .env("EVD_BENCH_LOCK", dir.join("bench.lock"))
    .stdin(Stdio::null());
    cmd
}

fn run_ok(mut cmd: Command) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "study failed: {err}");
    err
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// Processes running the copied binary (the remote generators).
fn remote_generators(remote_exe: &Path) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if fs::read_link(e.path().join("exe")).is_ok_and(|p| p == remote_exe) {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn study_with_the_load_on_a_second_host_over_ssh() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let tmp = tempfile::Builder::new()
        .prefix("evd-loadhost-")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let sshd = Sshd::start(dir);
    let ssh = sshd.ssh_command();
    let remote_exe = dir.join("remote").join("evdispatch");

    // --list reaches the load host and says what a run would copy, but
    // copies nothing.
    let mut list = study(dir, "out", &ssh);
    list.arg("--list");
    let err = run_ok(list);
    assert!(
        err.contains("load host root@127.0.0.1") && err.contains("a run copies it"),
        "{err}"
    );
    assert!(!remote_exe.exists(), "--list copied the binary");

    // First run: the binary is copied, every load runs over ssh.
    let err = run_ok(study(dir, "out", &ssh));
    assert!(err.contains("(copied)"), "{err}");
    assert_eq!(
        fs::metadata(&remote_exe).unwrap().len(),
        fs::metadata(EXE).unwrap().len(),
        "the copy differs from the binary"
    );
    let out = dir.join("out");
    let rec = json(&out.join("scenarios").join("loadcheck.json"));
    let points = rec["points"].as_array().unwrap();
    assert!(!points.is_empty(), "no points: {rec}");
    let mut tools = Vec::new();
    for p in points {
        let tool = p["config"]["tool"].as_str().unwrap().to_string();
        let m = &p["metrics"];
        for k in ["load_host_cpu_pct", "generator_cpu_s", "reply_rate"] {
            assert!(m[k].as_f64().is_some(), "{tool}: no {k}: {m}");
        }
        let pct = m["load_host_cpu_pct"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&pct), "{tool}: {pct}");
        assert!(m["reply_rate"].as_f64().unwrap() > 0.0, "{tool}: {m}");
        let cmd = match &p["config"]["cmd_load"] {
            Value::Array(v) => v[0].as_str().unwrap().to_string(),
            c => c.as_str().unwrap().to_string(),
        };
        assert!(cmd.ends_with("(on the load host root@127.0.0.1)"), "{cmd}");
        // Ours: the server's CPU measured here, not by the generator.
        if tool == "evdispatch load" {
            assert!(m["server_cpu_pct"].as_f64().is_some(), "{m}");
            assert!(m.get("load_core_busy_pct").is_none(), "{m}");
            assert!(!cmd.contains("--server-pid"), "{cmd}");
        }
        // httperf's ports were counted on the load host (at most 61 s of
        // waiting), and the wait is recorded.
        if tool == "httperf" {
            let wait = p["raw"]["httperf"]["port_wait_s"].as_f64();
            assert!(
                matches!(wait, Some(w) if (0.0..=62.0).contains(&w)),
                "{}",
                p["raw"]
            );
        }
        tools.push(tool);
    }
    assert!(tools.iter().any(|t| t == "evdispatch load"), "{tools:?}");
    // A peer generator is measured on the load host, or skipped for its
    // absence there.
    for peer in ["wrk", "httperf"] {
        let measured = tools.iter().any(|t| t == peer);
        let skipped = rec["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["why"].as_str().unwrap_or("").contains("load host"));
        assert!(
            measured || skipped,
            "{peer}: neither measured nor skipped: {rec}"
        );
    }
    let results = json(&out.join("results.json"));
    let host = &results["environment"]["load_host"];
    assert_eq!(host["destination"], "root@127.0.0.1");
    assert_eq!(host["binary_copied"], true);
    assert!(
        host["ssh"].as_str().unwrap().starts_with("ssh -p "),
        "{host}"
    );
    assert!(!host["kernel"].as_str().unwrap_or("").is_empty(), "{host}");
    assert!(host["cpus_online"].as_u64().unwrap_or(0) >= 1, "{host}");
    assert_eq!(host["servers_reached_at"], "127.0.0.1");
    // The report's environment section shows it too.
    let html = fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains("<td>load_host</td>"),
        "no load host in the report"
    );
    // The report says where the load ran, and each saved record too (a
    // later run with the load elsewhere measures it again).
    let summary = fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("the load generators ran on the load host root@127.0.0.1"),
        "{}",
        &summary[..summary.len().min(600)]
    );
    assert_eq!(rec["load_host"], "root@127.0.0.1");

    // Second run: the copy is this binary; nothing is copied.
    let modified = fs::metadata(&remote_exe).unwrap().modified().unwrap();
    run_ok(study(dir, "out2", &ssh));
    assert_eq!(
        fs::metadata(&remote_exe).unwrap().modified().unwrap(),
        modified
    );
    let results = json(&dir.join("out2").join("results.json"));
    assert_eq!(results["environment"]["load_host"]["binary_copied"], false);

    // Ctrl-C while a generator runs on the far side: it stops there too.
    let mut child = study(dir, "out3", &ssh)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while remote_generators(&remote_exe).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no generator started on the load host"
        );
        assert!(child.try_wait().unwrap().is_none(), "the study ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status}");
    let t0 = Instant::now();
    while !remote_generators(&remote_exe).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the generator on the load host outlived the interrupted study"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // Over IPv6: the servers listen on ::1 and the load host reaches them
    // at a bracketed URL.
    run_ok(study_at(dir, "out6", &ssh, "::1"));
    let rec = json(&dir.join("out6").join("scenarios").join("loadcheck.json"));
    let points = rec["points"].as_array().unwrap();
    assert!(!points.is_empty(), "no points over IPv6: {rec}");
    for p in points {
        let cmd = p["config"]["cmd_load"].to_string();
        assert!(cmd.contains("[::1]:"), "not over IPv6: {cmd}");
        assert!(p["metrics"]["reply_rate"].as_f64().unwrap() > 0.0, "{p}");
    }

    // An unreachable load host fails fast and says what to check.
    let dead = format!(
        "ssh -p {} -i {}",
        evdispatch_harness::free_port().unwrap(),
        sshd.key.display()
    );
    let t0 = Instant::now();
    let out = study(dir, "out4", &dead).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ssh to root@127.0.0.1 failed"), "{err}");
    assert!(err.contains("--load-ssh"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(30));
}
