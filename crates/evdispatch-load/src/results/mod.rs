//! The run's results.

pub mod checks;
pub mod merge;
pub mod record;
pub mod summary;
