//! The study's 400 MHz server: before the scenarios, measure how fast one
//! generator process offers new connections (G) and what an epoll server
//! spends per reply (c at a moderate rate, then c' saturated under a trial
//! budget), and give the servers of the load scenarios a CPU budget b =
//! [`KNEE_OF_CEILING`] × G × c', so that every mechanism's knee falls
//! inside rates the generator can offer here (see [`Calibration`]). Then show the budget's own effect: pairs of runs at half
//! the knee, with and without it.
//!
//! Once per run: the result is saved as `calibration.json` in the output
//! directory and re-used by later runs into it (`--fresh` measures it
//! again), and `results.json` holds it. Scenarios read it from
//! [`Caps::calibration`](crate::spec::Caps): [`Caps::budgeted`](crate::spec::Caps::budgeted) gives a
//! server the budget, [`Calibration::rate`] a rate as a multiple of the
//! knee, [`Caps::no_budget`](crate::spec::Caps::no_budget) why there is none.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, Context as _};
use serde_json::{json, Value};

use crate::results::{write_json_atomic, Point};
use crate::spec::{Calibration, Ctx, Job, LoadSpec, Profile, Rate, ServerSpec, KNEE_OF_CEILING};
use crate::web::{run_web, WebJob};

/// The scenarios whose servers run under the calibrated budget: a run
/// calibrates only when one of them is selected.
pub const BUDGETED: &[&str] = &[
    "table1",
    "throughput",
    "hybrid",
    "poll-vs-epoll",
    "rtsig-latency",
];

/// Concurrent sessions of the closed loop that measures the generator's
/// ceiling: enough that no reply waits for a connect.
const CEILING_CONNECTIONS: u32 = 32;

/// The largest budget worth setting, of one core: above it the server
/// already saturates within the generator's reach without one.
const MAX_BUDGET: f64 = 0.9;

/// The smallest budget set, of one core (a 1 ms quota every 100 ms).
const MIN_BUDGET: f64 = 0.01;

/// Where the calibration is saved in an output directory.
pub fn path(out: &Path) -> PathBuf {
    out.join("calibration.json")
}

/// The saved calibration of `out`, if it was made with the same kind of
/// budget control as this machine has now (`control`).
pub fn saved(out: &Path, control: &Result<String, String>) -> Option<Calibration> {
    let text = std::fs::read_to_string(path(out)).ok()?;
    let c: Calibration = serde_json::from_str(&text).ok()?;
    (c.control.as_ref() == control.as_ref().ok()).then_some(c)
}

/// The document every calibration run fetches (the one of the throughput
/// and Table 1 runs).
const DOCUMENT: &str = "6k.html";

/// One calibration run: its point, or an error saying which.
fn run(ctx: &Ctx, label: &str, server: ServerSpec, load: LoadSpec) -> anyhow::Result<Point> {
    let job = WebJob {
        series: label.into(),
        server,
        load,
        then: vec![],
    };
    let config = match serde_json::to_value(&job)? {
        Value::Object(m) => m,
        _ => unreachable!("a WebJob serializes to an object"),
    };
    let job = Job {
        label: format!("calibration {label}"),
        config,
        est_s: 0.0,
        round: 0,
    };
    run_web(ctx, &job)
        .with_context(|| format!("calibration run '{label}'"))?
        .pop()
        .ok_or_else(|| anyhow!("calibration run '{label}' made no point"))
}

/// The seconds each calibration run measures, by profile.
fn window_s(p: Profile) -> f64 {
    p.pick(0.8, 0.8, 2.0)
}

/// Pairs of runs (with and without the budget) that show its effect.
fn effect_pairs(p: Profile) -> u32 {
    p.pick(1, 2, 3)
}

/// Estimated seconds of a calibration under profile `p`.
pub fn est_s(p: Profile) -> f64 {
    (3.0 + 2.0 * f64::from(effect_pairs(p))) * (window_s(p) + 0.4)
}

/// Measure G and c and choose the budget (see the module's docs).
pub fn calibrate(ctx: &Ctx) -> anyhow::Result<Calibration> {
    let t0 = Instant::now();
    let w = window_s(ctx.profile);
    let epoll = ServerSpec::dispatch("epoll");
    let mut commands = Vec::new();
    let mut note = |p: &Point| {
        for k in ["cmd_server", "cmd_load"] {
            match p.config.get(k) {
                Some(Value::String(s)) => commands.push(s.clone()),
                Some(Value::Array(a)) => {
                    commands.extend(a.iter().filter_map(Value::as_str).map(String::from))
                }
                _ => {}
            }
        }
    };
    let ceiling = run(
        ctx,
        "ceiling",
        epoll.clone(),
        LoadSpec {
            rate: Rate::MAX,
            connections: CEILING_CONNECTIONS,
            ..LoadSpec::sessions(DOCUMENT, 0.0, w)
        },
    )?;
    note(&ceiling);
    let g = ceiling
        .metric("reply_rate")
        .filter(|g| *g > 0.0)
        .ok_or_else(|| anyhow!("the ceiling run got no replies"))?;
    let probe_rate = (0.3 * g / 10.0).round().max(1.0) * 10.0;
    let probe = run(
        ctx,
        "cpu per reply",
        epoll.clone(),
        LoadSpec::sessions(DOCUMENT, probe_rate, w),
    )?;
    note(&probe);
    let c = probe
        .metric("cpu_us_per_reply")
        .filter(|c| *c > 0.0)
        .ok_or_else(|| anyhow!("the CPU-per-reply run measured no server CPU"))?;
    // What a reply costs a saturated server: a closed loop under a trial
    // budget set from c (a server at its limit batches its work, so c'
    // is below c and the knee above b / c).
    let trial = (KNEE_OF_CEILING * g * c / 1e6).clamp(MIN_BUDGET, MAX_BUDGET);
    let (mut trial_capacity, mut c_sat) = (0.0, c);
    if ctx.caps.budgets.0.is_ok() {
        let sat = run(
            ctx,
            "saturated under a trial budget",
            ServerSpec {
                cpu_budget: Some(evdispatch_harness::CpuBudget::new(trial)),
                ..epoll.clone()
            },
            LoadSpec {
                rate: Rate::MAX,
                connections: CEILING_CONNECTIONS,
                ..LoadSpec::sessions(DOCUMENT, 0.0, w)
            },
        )?;
        note(&sat);
        trial_capacity = sat
            .metric("reply_rate")
            .filter(|k| *k > 0.0)
            .ok_or_else(|| anyhow!("the saturation run got no replies"))?;
        c_sat = trial * 1e6 / trial_capacity;
    }
    let want = KNEE_OF_CEILING * g * c_sat / 1e6;
    let (budget, no_budget) = match &ctx.caps.budgets.0 {
        Err(why) => (None, Some(format!("no CPU budget here: {why}"))),
        Ok(_) if want >= MAX_BUDGET => (
            None,
            Some(format!(
                "the server needs {:.0}% of a core at {:.0}% of the generator's ceiling: it saturates within reach without a budget",
                100.0 * want,
                100.0 * KNEE_OF_CEILING
            )),
        ),
        Ok(_) => {
            let b = evdispatch_harness::CpuBudget::new(want.max(MIN_BUDGET));
            b.quota_us()?;
            (Some(b), None)
        }
    };
    let knee = match budget {
        Some(b) => b.fraction * 1e6 / c_sat,
        None => 1e6 / c_sat,
    };
    let mut effect = Vec::new();
    if let Some(b) = budget {
        let rate = ((0.5 * knee) / 10.0).round().max(1.0) * 10.0;
        for pair in 1..=effect_pairs(ctx.profile) {
            for budgeted in [true, false] {
                let server = ServerSpec {
                    cpu_budget: budgeted.then_some(b),
                    ..epoll.clone()
                };
                let label = format!(
                    "{} the budget, pair {pair}",
                    if budgeted { "with" } else { "without" }
                );
                let p = run(ctx, &label, server, LoadSpec::sessions(DOCUMENT, rate, w))?;
                note(&p);
                let m = |k: &str| p.metric(k);
                effect.push(json!({
                    "budget": budgeted,
                    "pair": pair,
                    "rate": rate,
                    "cpu_us_per_reply": m("cpu_us_per_reply"),
                    "p50_us": m("p50_us"),
                    "p99_us": m("p99_us"),
                    "reply_rate": m("reply_rate"),
                    "budget_throttled_pct": m("budget_throttled_pct"),
                }));
            }
        }
    }
    Ok(Calibration {
        control: ctx.caps.budgets.0.clone().ok(),
        generator_ceiling: g,
        ceiling_generator_limited: ceiling.metric("generator_limited") == Some(1.0),
        cpu_us_per_reply: c,
        probe_rate,
        trial_budget: trial,
        trial_capacity,
        cpu_us_per_reply_saturated: c_sat,
        budget,
        no_budget,
        knee,
        commands,
        effect,
        duration_s: t0.elapsed().as_secs_f64(),
        measured_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    })
}

/// The calibration of this run: the one saved in `ctx.out` unless `fresh`,
/// else measured now and saved.
pub fn load_or_calibrate(ctx: &Ctx, fresh: bool) -> anyhow::Result<Calibration> {
    if !fresh {
        if let Some(c) = saved(&ctx.out, &ctx.caps.budgets.0) {
            return Ok(c);
        }
    }
    let c = calibrate(ctx)?;
    write_json_atomic(&path(&ctx.out), &c)?;
    Ok(c)
}

/// Whether the budget changed nothing below the knee, pair by pair: the
/// median of the with/without ratios of CPU per reply and of median
/// latency, `(cpu ratio, p50 ratio)`; `None` without pairs.
pub fn effect_ratios(c: &Calibration) -> Option<(f64, f64)> {
    let ratio = |k: &str| {
        let mut v: Vec<f64> = (1..=c.effect.len() as u64)
            .filter_map(|pair| {
                let get = |b: bool| {
                    c.effect
                        .iter()
                        .find(|e| e["pair"] == json!(pair) && e["budget"] == json!(b))
                        .and_then(|e| e[k].as_f64())
                };
                Some(get(true)? / get(false)?)
            })
            .collect();
        (!v.is_empty()).then(|| evdispatch_harness::median(&mut v))
    };
    Some((ratio("cpu_us_per_reply")?, ratio("p50_us")?))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A calibration with a budget and a knee (4,800 conn/s), for tests.
    pub(crate) fn cal(effect: Vec<Value>) -> Calibration {
        Calibration {
            control: Some("cgroup v1".into()),
            generator_ceiling: 12_000.0,
            ceiling_generator_limited: true,
            cpu_us_per_reply: 50.0,
            probe_rate: 3_600.0,
            trial_budget: 0.24,
            trial_capacity: 6_000.0,
            cpu_us_per_reply_saturated: 40.0,
            budget: Some(evdispatch_harness::CpuBudget::new(0.192)),
            no_budget: None,
            knee: 4_800.0,
            commands: vec![],
            effect,
            duration_s: 1.0,
            measured_unix: 0,
        }
    }

    #[test]
    fn rates_are_multiples_of_the_knee() {
        let c = cal(vec![]);
        assert_eq!(c.rate(1.0), 4_800.0);
        assert_eq!(c.rate(0.25), 1_200.0);
        assert_eq!(c.rate(2.0), 9_600.0);
        assert_eq!(c.rate(0.0001), 10.0);
    }

    #[test]
    fn the_effect_is_the_median_ratio_of_the_pairs() {
        let e = |pair: u32, budget: bool, cpu: f64, p50: f64| json!({"pair": pair, "budget": budget, "cpu_us_per_reply": cpu, "p50_us": p50});
        let c = cal(vec![
            e(1, true, 44.0, 120.0),
            e(1, false, 40.0, 100.0),
            e(2, true, 40.0, 100.0),
            e(2, false, 40.0, 100.0),
            e(3, true, 42.0, 300.0),
            e(3, false, 40.0, 100.0),
        ]);
        let (cpu, p50) = effect_ratios(&c).unwrap();
        assert!((cpu - 1.05).abs() < 1e-9, "{cpu}");
        assert!((p50 - 1.2).abs() < 1e-9, "{p50}");
        assert_eq!(effect_ratios(&cal(vec![])), None);
    }

    #[test]
    fn a_saved_calibration_stands_only_for_the_same_control() {
        let dir = std::env::temp_dir().join(format!("evd-calibration-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_json_atomic(&path(&dir), &cal(vec![])).unwrap();
        let v1 = saved(&dir, &Ok("cgroup v1".into()));
        let v2 = saved(&dir, &Ok("cgroup v2".into()));
        let none = saved(&dir, &Err("not root".into()));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(v1, Some(cal(vec![])));
        assert!(v2.is_none());
        assert!(none.is_none());
    }
}
