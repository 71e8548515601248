//! The six scenarios, the report they fill, and what they share: starting
//! our server or nginx on the torture site, running `evdispatch load`.

pub mod attacks;
pub mod exhaustion;
mod measure;
mod report;
pub mod slowloris;
pub mod soak;
pub mod storm;
pub mod tls;

pub use report::{Check, Report, Run, ScenarioReport, Skipped};
