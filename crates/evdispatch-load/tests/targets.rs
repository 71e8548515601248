//! What is loaded and how it is reached: names through the resolver,
//! IPv6, the first address that accepts; `--method`, `--body` and headers
//! that replace the defaults; `--urls` weights. Against a recording server
//! on loopback.

use std::net::{SocketAddr, TcpListener};

use common::{config, run, Recorder};
use evdispatch_load::{execute, Config, RunOptions};

mod common;

#[test]
fn localhost_and_ipv6_and_the_first_address_refusing() {
    let three = |url: String| {
        let s = run(&url, "--sessions 3 --rate 50").unwrap();
        assert_eq!(s.replies, 3, "{url}");
        s
    };
    let v4 = Recorder::start("127.0.0.1:0", None);
    let s = three(format!("http://localhost:{}/", v4.addr.port()));
    assert!(s.config.addresses.iter().any(|a| a.ip().is_loopback()));
    if let Ok(l) = TcpListener::bind("[::1]:0") {
        drop(l);
        let v6 = Recorder::start("[::1]:0", None);
        three(format!("http://[::1]:{}/", v6.addr.port()));
        assert!(v6.requests()[0]
            .0
            .contains(&format!("Host: [::1]:{}", v6.addr.port())));
    } else {
        eprintln!("IPv6 part skipped: no ::1 on this machine");
    }
    // Two addresses, the first refusing: the run uses the second.
    let dead: SocketAddr = format!("127.0.0.1:{}", evdispatch_harness::free_port().unwrap())
        .parse()
        .unwrap();
    let mut cfg = config(&v4.http("/"), "--sessions 2 --rate 50");
    cfg.addresses = vec![dead, v4.addr];
    cfg.target = dead;
    let s = execute(&cfg, &RunOptions::default()).unwrap();
    assert_eq!((s.config.target, s.replies), (v4.addr, 2));
    assert_eq!(s.config.addresses, vec![dead, v4.addr]);
    // All refusing: one error naming them.
    cfg.addresses = vec![dead];
    let e = format!("{:#}", execute(&cfg, &RunOptions::default()).unwrap_err());
    assert!(
        e.contains("cannot connect") && e.contains(&dead.to_string()),
        "{e}"
    );
}

#[test]
fn method_body_and_headers_that_replace_the_defaults() {
    let server = Recorder::start("127.0.0.1:0", None);
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    std::fs::write(&body, b"hello\r\nworld").unwrap();
    let cfg = Config::from_command_line([
        server.http("/p?q=1").as_str(),
        "--sessions",
        "4",
        "--rate",
        "100",
        "--method",
        "PUT",
        "--body",
        body.to_str().unwrap(),
        "-H",
        "host: example.org",
        "--header",
        "X-Test: 1",
    ])
    .unwrap();
    let s = execute(&cfg, &RunOptions::default()).unwrap();
    assert_eq!(s.replies, 4);
    for (head, got) in server.requests() {
        assert!(head.starts_with("PUT /p?q=1 HTTP/1.1\r\n"), "{head}");
        let hosts: Vec<_> = head
            .lines()
            .filter(|l| l.to_ascii_lowercase().starts_with("host:"))
            .collect();
        assert_eq!(hosts, ["host: example.org"], "{head}");
        assert!(head.contains("Content-Length: 12\r\n") && head.contains("X-Test: 1\r\n"));
        assert_eq!(got, b"hello\r\nworld");
    }
    // HEAD replies have no body: the parser must not wait for one.
    let s = run(
        &server.http("/"),
        "--persistent 1 --rate 50 --duration 0.3 --method HEAD --timeout 1",
    )
    .unwrap();
    assert!(s.replies > 0 && s.errors_total == 0, "{:?}", s.errors);
}

#[test]
fn url_weights_are_respected() {
    let server = Recorder::start("127.0.0.1:0", None);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("urls");
    std::fs::write(&f, format!("# two paths\n/a 3\n{} 1\n", server.http("/b"))).unwrap();
    let s = run(
        &server.http("/"),
        &format!(
            "--rate max --connections 1 --sessions 400 --duration 2 --urls {}",
            f.display()
        ),
    )
    .unwrap();
    let reqs = server.requests();
    let a = reqs
        .iter()
        .filter(|(h, _)| h.starts_with("GET /a "))
        .count();
    let b = reqs
        .iter()
        .filter(|(h, _)| h.starts_with("GET /b "))
        .count();
    assert_eq!(a + b, reqs.len());
    assert!(s.replies >= 100, "{}", s.replies);
    let share = a as f64 / (a + b) as f64;
    assert!(
        (0.65..0.85).contains(&share),
        "/a share {share} of {} (weight 3:1)",
        a + b
    );
}
