//! The attack corpus against our server on every model, in process: each
//! attack answered with its status, the connection closed or kept as
//! expected, the secret beside the root never served.

use std::time::Duration;

use evdispatch_server::{Model, Server, ServerConfig};
use evdispatch_torture::corpus::corpus;
use evdispatch_torture::probe::{judge, send, Limits};
use evdispatch_torture::scenarios_consts::{HEADER_S, IDLE_S};
use evdispatch_torture::site::Site;

#[test]
fn every_model_answers_the_corpus_as_expected() {
    let site = Site::create().unwrap();
    let attacks = corpus();
    let limits = Limits::for_idle_timeout(Duration::from_secs(IDLE_S));
    // The models run in parallel: the never-reading client's wait for the
    // idle timeout is most of the time.
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = Model::all()
            .into_iter()
            .map(|model| {
                let (site, attacks) = (&site, &attacks);
                scope.spawn(move || {
                    let mut cfg = ServerConfig::new(&site.root, model);
                    cfg.threads = 64;
                    cfg.header_timeout = Duration::from_secs(HEADER_S);
                    cfg.idle_timeout = Duration::from_secs(IDLE_S);
                    let server = match Server::start(cfg) {
                        Ok(s) => s,
                        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                            eprintln!("skipping {model}: not available here: {e}");
                            return Vec::new();
                        }
                        Err(e) => panic!("{model}: cannot start: {e}"),
                    };
                    let mut failed = Vec::new();
                    for a in attacks {
                        match send(server.local_addr(), a, limits) {
                            Ok(o) => {
                                if let Err(why) = judge(a, &o) {
                                    failed.push(format!("{model} {}: {why}", a.id));
                                }
                            }
                            Err(e) => failed.push(format!("{model} {}: cannot send: {e}", a.id)),
                        }
                    }
                    let report = server.stop().unwrap();
                    assert!(report.totals().total_requests() > 0, "{model}");
                    failed
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a model's thread"))
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_judge_catches_wrong_answers() {
    // A judge that cannot fail is no test: a wrong status, a kept
    // connection where a close was due and a leak are each reported.
    use evdispatch_torture::probe::{Observed, Outcome};
    let c = corpus();
    let cl_te = c.iter().find(|a| a.id == "cl-te").unwrap();
    let ok = Observed {
        statuses: vec![400],
        outcome: Outcome::Closed,
        leaked: false,
        seconds: 0.0,
    };
    assert!(judge(cl_te, &ok).is_ok());
    let mut wrong = ok.clone();
    wrong.statuses = vec![200];
    assert!(judge(cl_te, &wrong).is_err());
    let mut open = ok.clone();
    open.outcome = Outcome::Open;
    assert!(judge(cl_te, &open).is_err());
    let mut leak = ok.clone();
    leak.leaked = true;
    assert!(judge(cl_te, &leak).unwrap_err().contains("secret"));
}
