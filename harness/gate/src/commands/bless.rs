//! `gds-gate bless`: run the trials (or take a saved report) and write the runner's baseline from
//! those that passed every check but throughput. Refuses in CI.

pub use super::run::{BlessRequest, bless_command as run};
