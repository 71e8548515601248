//! Idle hordes, descriptor exhaustion, several workers and the command-line
//! contract, on every model. The exhaustion test runs the server as a child
//! process (`evdispatch-serve`, this crate's binary) with a lowered
//! descriptor limit, so the limit and the signals are its own.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::*;
use evdispatch_server::cmdline::ServeCommand;
use evdispatch_server::{ListenerMode, Model};

/// Idle connections held at once (fewer where the mechanism cannot watch that many).
const IDLE: usize = 5000;

#[test]
fn idle_connections_do_not_delay_an_active_client() {
    let _heavy = FD_HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let site = site();
    for model in Model::all() {
        let limit = match model {
            // The in-process server shares this process's descriptor table
            // with the clients: both ends count against the ceiling.
            Model::Readiness(m) => m
                .info()
                .max_fd
                .map(|fd| (fd as usize / 2).saturating_sub(150)),
            _ => None,
        };
        let count = limit.map_or(IDLE, |l| l.min(IDLE));
        if count < IDLE {
            eprintln!("{model}: watches descriptors below its max_fd only; holding {count} idle connections");
        }
        let Some(server) = start(model, &site.root, |c| {
            c.threads = count + 8;
            // Silent clients must reach the server at once (a deferred
            // accept would hold them in the kernel for a second).
            c.defer_accept_s = 0;
        }) else {
            continue;
        };
        let addr = server.local_addr();
        let mut idle = Vec::with_capacity(count);
        for i in 0..count {
            let mut c = Client::connect(addr);
            // Every tenth one has sent half a request; the rest nothing.
            if i % 10 == 0 {
                c.send(b"GET / HTTP/1.1\r\n");
            }
            idle.push(c);
        }
        // The active client is served promptly meanwhile, many times over.
        let t0 = Instant::now();
        let mut c = Client::connect(addr);
        for _ in 0..200 {
            assert_eq!(c.get("/six.txt").body.len(), 6144, "{model}");
        }
        let took = t0.elapsed();
        assert!(
            took < Duration::from_secs(5),
            "{model}: 200 requests took {took:?} beside {count} idle connections"
        );
        // And the idle ones are all still there: a few of them, spread out,
        // complete a request now.
        for i in (0..count).step_by(count / 10) {
            let c = &mut idle[i];
            if i % 10 == 0 {
                c.send(b"Host: t\r\n\r\n");
                assert_eq!(
                    c.response(false).expect("answer").status,
                    200,
                    "{model} idle #{i}"
                );
            } else {
                assert_eq!(c.get("/").status, 200, "{model} idle #{i}");
            }
        }
        drop(idle);
        drop(c);
        let t = server.stop().unwrap().totals();
        assert_eq!(t.accepted as usize, count + 1, "{model}");
        assert!(
            t.peak_open as usize >= count.min(count + 1),
            "{model}: {t:?}"
        );
    }
}

#[test]
fn several_workers_share_the_load() {
    // In-process servers on select need descriptor numbers below 1024:
    // not while the idle test holds thousands.
    let _heavy = FD_HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let site = site();
    for model in Model::all() {
        if model == Model::Threads {
            continue; // one master thread; --workers does not apply
        }
        for (listener, exclusive) in [
            (ListenerMode::Reuseport, true),
            (ListenerMode::Shared, true),
            (ListenerMode::Shared, false),
        ] {
            let Some(server) = start(model, &site.root, |c| {
                c.workers = 2;
                c.listener = listener;
                c.exclusive = exclusive;
            }) else {
                break;
            };
            let addr = server.local_addr();
            for _ in 0..60 {
                let mut c = Client::connect(addr);
                assert_eq!(c.get("/").status, 200, "{model} {listener:?}");
            }
            let report = server.stop().unwrap();
            assert_eq!(report.workers.len(), 2);
            let t = report.totals();
            assert_eq!(t.accepted, 60, "{model} {listener:?} exclusive={exclusive}");
            assert!(t.listener_events >= 1, "{model}");
            let json = report.to_json();
            assert!(json["workers"][1]["accept"]["listener_events"].is_u64());
            assert!(json["accept"]["wakeups_per_accept"].as_f64().unwrap() > 0.0);
        }
    }
}

/// The server as a child process, with its printed address; killed if the
/// test fails before stopping it.
fn sigterm(child: &mut Child) {
    // SIGTERM through kill(1): the test stays free of unsafe code.
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "server exited with {st}");
            return;
        }
        assert!(Instant::now() < deadline, "server did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Start `evdispatch-serve` as a child on `site` with `model`, writing its
/// stats to `stats`, with `tweak` applied to its command line; `None` when
/// the model is not available here (looked at in-process first: the child
/// would fail).
fn spawn_model(
    site: &Site,
    model: Model,
    stats: &std::path::Path,
    tweak: impl FnOnce(&mut ServeCommand),
) -> Option<Served> {
    let probe = start(model, &site.root, |_| {})?;
    probe.stop().unwrap();
    let mut cmd = ServeCommand {
        stats_json: Some(stats.into()),
        ..ServeCommand::loopback(&site.root, model.name())
    };
    tweak(&mut cmd);
    Some(spawn(&cmd))
}

fn cpu_seconds(pid: u32) -> f64 {
    evdispatch_host::sample(pid).unwrap().cpu().as_secs_f64()
}

#[test]
fn descriptor_exhaustion_in_a_child_process() {
    let site = site();
    for model in Model::all() {
        let stats = site.dir.path().join(format!("stats-{}.json", model.name()));
        let Some(mut server) = spawn_model(&site, model, &stats, |c| {
            c.rlimit_nofile = Some(48);
            c.threads = Some(96);
            // No cap below the limit: this exercises the EMFILE backstop
            // (the cap itself: connection_cap_holds_below_the_descriptor_limit).
            // The silent crowd must reach accept at once, not after a second.
            c.extra = ["--fd-reserve", "0", "--defer-accept", "0"]
                .map(Into::into)
                .into();
        }) else {
            continue;
        };
        let addr = server.addr;
        let pid = server.child.id();

        // Ten keep-alive clients that are served.
        let mut served: Vec<Client> = (0..10).map(|_| Client::connect(addr)).collect();
        for c in &mut served {
            assert_eq!(c.get("/").status, 200, "{model}");
            assert_eq!(c.get("/six.txt").status, 200, "{model}");
        }
        // Then a crowd that exceeds the descriptor limit: the kernel
        // completes their handshakes, the server cannot accept them all.
        let mut crowd: Vec<TcpStream> =
            (0..80).map(|_| TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(300));
        // The server neither spins nor neglects its existing clients.
        let cpu0 = cpu_seconds(pid);
        let t0 = Instant::now();
        for round in 0..10 {
            for c in &mut served {
                assert_eq!(c.get("/six.txt").body.len(), 6144, "{model} round {round}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let busy = cpu_seconds(pid) - cpu0;
        let wall = t0.elapsed().as_secs_f64();
        assert!(
            busy < 0.5 * wall + 0.05,
            "{model}: {busy:.2}s CPU in {wall:.2}s while exhausted: spinning"
        );

        // Free descriptors: the remaining crowd is accepted and served.
        let tail = crowd.split_off(40);
        drop(crowd);
        for (i, mut s) in tail.into_iter().enumerate() {
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut got = Vec::new();
            let _ = std::io::Read::read_to_end(&mut s, &mut got);
            assert!(
                got.starts_with(b"HTTP/1.1 200"),
                "{model}: crowd #{i} not served after descriptors freed: {:?}",
                String::from_utf8_lossy(&got[..got.len().min(40)])
            );
        }
        drop(served);
        sigterm(&mut server.child);
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        assert_eq!(doc["schema"], "evdispatch-serve-stats/1");
        assert_eq!(doc["mechanism"], model.name());
        let emfile = doc["accept"]["errors"]["EMFILE"].as_u64().unwrap_or(0);
        assert!(emfile > 0, "{model}: no EMFILE counted: {}", doc["accept"]);
        assert!(doc["accept"]["pauses"].as_u64().unwrap() > 0, "{model}");
        assert!(doc["requests"]["total"].as_u64().unwrap() >= 150, "{model}");
        assert!(
            doc["connections"]["accepted"].as_u64().unwrap() >= 50,
            "{model}"
        );
        assert!(doc["workers"].as_array().is_some_and(|w| !w.is_empty()));
    }
}

#[test]
fn command_line_contract() {
    let site = site();
    let stats = site.dir.path().join("stats.json");
    let mut server = spawn(&ServeCommand {
        root: Some(site.root.clone()),
        listen: Some("127.0.0.1:0".into()),
        workers: Some(2),
        cpu: vec![0],
        poller_opt: vec!["initial_events=16".into()],
        idle_timeout: Some(Duration::from_secs(5)),
        header_timeout: Some(Duration::from_secs(2)),
        stats_json: Some(stats.clone()),
        ..ServeCommand::default()
    });
    assert_ne!(server.addr.port(), 0);
    let mut c = Client::connect(server.addr);
    assert_eq!(c.get("/six.txt").status, 200);
    drop(c);
    sigterm(&mut server.child);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(doc["model"], "readiness");
    assert_eq!(doc["address"], server.addr.to_string());
    assert_eq!(doc["config"]["workers"], 2);
    assert_eq!(doc["config"]["idle_timeout_ms"], 5000);
    assert_eq!(doc["config"]["initial_events"], 16);
    assert_eq!(doc["workers"][0]["cpu"], 0);
    assert_eq!(doc["requests"]["by_status"]["200"], 1);
    assert!(doc["poller"]["waits"].as_u64().unwrap() >= 1);

    // Bad arguments fail with a message, never a panic.
    for bad in [
        vec!["--mechanism", "kqueue"],
        vec!["--poller-opt", "nope=1"],
        vec!["--root", "/definitely/not/here"],
        vec!["--idle-timeout", "5q"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_evdispatch-serve"))
            .args(["--listen", "127.0.0.1:0"])
            .args(&bad)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad:?} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{bad:?}: {err}");
        assert!(!err.trim().is_empty(), "{bad:?}: no message");
    }
}

#[test]
fn accept_one_per_report_still_serves_a_burst() {
    // In-process servers on select need descriptor numbers below 1024:
    // not while the idle test holds thousands.
    let _heavy = FD_HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    // One accept per listener report (the classic select server). On an
    // edge-triggered mechanism the listener is not reported again while
    // connections remain queued: the loop must come back to it by itself.
    let site = site();
    for model in Model::all() {
        if !matches!(model, Model::Readiness(_)) {
            continue;
        }
        let Some(server) = start(model, &site.root, |c| {
            c.accept = evdispatch_server::AcceptMode::One;
        }) else {
            continue;
        };
        let addr = server.local_addr();
        // A burst: all connect before any is accepted.
        let mut burst: Vec<Client> = (0..64).map(|_| Client::connect(addr)).collect();
        for (i, c) in burst.iter_mut().enumerate() {
            assert_eq!(
                c.get("/").status,
                200,
                "{model}: connection #{i} of the burst"
            );
        }
        drop(burst);
        let t = server.stop().unwrap().totals();
        assert_eq!(t.accepted, 64, "{model}");
    }
}

#[test]
fn max_connections_pauses_accepting() {
    // In-process servers on select need descriptor numbers below 1024:
    // not while the idle test holds thousands.
    let _heavy = FD_HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let site = site();
    for model in Model::all() {
        if model == Model::Threads {
            continue; // bounded by its pool instead
        }
        let Some(server) = start(model, &site.root, |c| c.max_connections = 4) else {
            continue;
        };
        let addr = server.local_addr();
        let mut first: Vec<Client> = (0..4).map(|_| Client::connect(addr)).collect();
        for c in &mut first {
            assert_eq!(c.get("/").status, 200, "{model}");
        }
        // A fifth waits in the listen queue, unanswered…
        let mut fifth = Client::connect(addr);
        fifth.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        fifth
            .s
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut byte = [0u8; 1];
        let early = std::io::Read::read(&mut fifth.s, &mut byte);
        assert!(early.is_err(), "{model}: answered beyond --max-connections");
        // …until one of the four closes.
        drop(first.pop());
        fifth
            .s
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let r = fifth.response(false).expect("answered once a slot freed");
        assert_eq!(r.status, 200, "{model}");
        drop((first, fifth));
        let t = server.stop().unwrap().totals();
        assert!(t.accept_pauses >= 1, "{model}: {t:?}");
        assert!(t.peak_open <= 4, "{model}: {t:?}");
    }
}

/// With the default reserve, a crowd larger than the descriptor limit never
/// drives the server into EMFILE: it stops accepting at its connection cap
/// (a multishot accept in the completion model would overshoot it), and a
/// request on an accepted connection is answered, file opened and all.
#[test]
fn connection_cap_holds_below_the_descriptor_limit() {
    // In-process servers on select need descriptor numbers below 1024:
    // not while the idle test holds thousands.
    let _heavy = FD_HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let site = site();
    for model in Model::all() {
        let stats = site.dir.path().join(format!("cap-{}.json", model.name()));
        let Some(mut server) = spawn_model(&site, model, &stats, |c| {
            c.rlimit_nofile = Some(96);
            c.threads = Some(200);
            c.extra = ["--defer-accept", "0"].map(Into::into).into();
        }) else {
            continue;
        };
        let addr = server.addr;
        let mut crowd: Vec<TcpStream> = (0..150)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        // The first connections were accepted: each is answered, the file
        // opened for the first of them (nothing cached yet).
        for (i, s) in crowd.iter_mut().take(20).enumerate() {
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.write_all(b"GET /six.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut got = Vec::new();
            let _ = std::io::Read::read_to_end(s, &mut got);
            assert!(
                got.starts_with(b"HTTP/1.1 200"),
                "{model}: connection #{i} at the cap: {:?}",
                String::from_utf8_lossy(&got[..got.len().min(40)])
            );
        }
        drop(crowd);
        sigterm(&mut server.child);
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        let cap = doc["config"]["max_connections"].as_u64().unwrap();
        assert!(cap < 96, "{model}: cap {cap}");
        let peak = doc["connections"]["peak_open"].as_u64().unwrap();
        assert!(peak <= cap, "{model}: {peak} open, cap {cap}");
        assert_eq!(
            doc["accept"]["errors"]["EMFILE"].as_u64().unwrap_or(0),
            0,
            "{model}: {}",
            doc["accept"]
        );
        assert!(doc["accept"]["pauses"].as_u64().unwrap() > 0, "{model}");
    }
}
