//! The examples run, on every mechanism available here, with small bounded
//! arguments, on loopback: `kegel` reads every byte it wrote, `echo` sends
//! back what it is sent.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use evdispatch::{Mechanism, Poller};

/// The example `name`, built (or found up to date) by cargo in this test's
/// profile: `target/<profile>/examples/NAME`. Asking cargo every time keeps a
/// stale binary from being tested when only this test was rebuilt.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", "evdispatch", "--example", name]);
    if profile_dir.ends_with("release") {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("run cargo build --example");
    assert!(status.success(), "cargo build --example {name} failed");
    let path = profile_dir.join("examples").join(name);
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// The mechanisms this machine has (io_uring may be disabled).
fn available() -> Vec<Mechanism> {
    Mechanism::all()
        .filter(|&m| match Poller::new(m) {
            Ok(_) => true,
            Err(e) if e.kind() == ErrorKind::Unsupported => {
                eprintln!("skipping {m}: not available here: {e}");
                false
            }
            Err(e) => panic!("{m}: {e}"),
        })
        .collect()
}

/// Kills the child if the test fails before it exits.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn kegel_reads_every_byte_on_every_mechanism() {
    let exe = example("kegel");
    for m in available() {
        let out = Command::new(&exe)
            .args(["--mechanism", m.name(), "--fds", "100", "--active", "10"])
            .args(["--iterations", "50"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{m}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.starts_with(&format!("{m}: fds 100 active 10 iterations 50: median "))
                && stdout.contains(" 500 bytes read, "),
            "{m}: {stdout}"
        );
    }
    let out = Command::new(&exe)
        .args(["--mechanism", "kqueue"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("choose one of"));
}

/// Send `data` on a new connection to `addr`, close the sending side, and
/// return everything read back until EOF.
fn echo_round_trip(addr: &str, data: Vec<u8>) -> Vec<u8> {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut writer = s.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        writer.write_all(&data).unwrap();
        writer.shutdown(Shutdown::Write).unwrap();
    });
    let mut back = Vec::new();
    (&s).read_to_end(&mut back).unwrap();
    sender.join().unwrap();
    back
}

#[test]
fn echo_sends_back_what_it_is_sent_on_every_mechanism() {
    let exe = example("echo");
    // Larger than the socket buffers, so the server also waits for writability.
    let big: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 251) as u8).collect();
    for m in available() {
        let child = Command::new(&exe)
            .args(["--mechanism", m.name(), "--listen", "127.0.0.1:0"])
            .args(["--connections", "2"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = Reap(child);
        let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let addr = first
            .strip_prefix("listening on 127.0.0.1:")
            .map(|port| format!("127.0.0.1:{port}"))
            .unwrap_or_else(|| panic!("{m}: unexpected first line {first:?}"));

        assert_eq!(
            echo_round_trip(&addr, b"hello\n".to_vec()),
            b"hello\n",
            "{m}"
        );
        let back = echo_round_trip(&addr, big.clone());
        assert!(
            back == big,
            "{m}: {} bytes back of {}",
            back.len(),
            big.len()
        );

        let last = lines.next().unwrap().unwrap();
        assert_eq!(last, "served 2 connections", "{m}");
        assert!(child.0.wait().unwrap().success(), "{m}");
    }
}
