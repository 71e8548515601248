//! `evdispatch study`: every experiment of the seeds re-run on this machine,
//! with real peers beside our server, into `results.json`, a self-contained
//! `index.html` with SVG charts, a one-screen `summary.md` and `report.md`,
//! with a verdict on each of
//! the seeds' claims computed from the data.
//!
//! The pieces, in layers (a module imports only those below it; the test
//! `layers` checks there is no circle):
//! - [`results`] (the records), [`env`](mod@env) (the machine, the peers)
//!   and [`published`] (the seeds' published numbers) at the bottom; [`figure`] (what a figure is) on them;
//! - [`claims`]: verdict types, helpers and the evaluation;
//! - [`spec`]: what the layers share — profiles, a scenario's definition,
//!   [`spec::Caps`], the server and load specs;
//! - [`contracts`] (command lines and output parsing), then [`drive`]
//!   (running `evdispatch bench`, `serve` and `load`; every child process in
//!   `evdispatch-harness`'s registry, so none outlives the study) and
//!   [`remote`] (the same on a second host over ssh, `--load-host`), then
//!   [`web`] (one server + load run);
//! - [`calibrate`] (the servers' CPU budget, measured once per run before
//!   the scenarios) on [`web`];
//! - [`scenarios`]: one folder per experiment (its run and its claims) and
//!   the list [`scenarios::SCENARIOS`];
//! - [`report`] and the runner (`cli`, `runner`) on top; [`diff`] (comparing two
//!   runs' `results.json`) beside them.

#![deny(missing_docs)]

pub mod calibrate;
pub mod claims;
mod cli;
pub mod contracts;
pub mod diff;
pub mod drive;
pub mod env;
pub mod figure;
pub mod published;
pub mod remote;
pub mod report;
pub mod results;
mod runner;
pub mod scenarios;
pub mod spec;
pub mod web;

pub use cli::{RenderArgs, StudyArgs, StudyCommand};
pub use runner::run;
