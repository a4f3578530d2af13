//! gds-runner: what a gate run stands on, below judging and reporting. Worker processes (their
//! own process group, timeouts, signals) and the gate's own interruption; the worker program and
//! its probes; the host's facts, tools and mounts; the test data on disk (generated, verified,
//! reused) and the reports folder's lock; the exit codes and the escaping of text for a terminal.
//!
//! It builds on `gds-model` only, and starts processes but never links CUDA or cuFile.

pub mod console;
pub mod data;
pub mod escape;
pub mod exit;
pub mod hang;
pub mod host;
pub mod interrupt;
pub mod job;
pub mod mounts;
pub mod out_lock;
pub mod prepare;
pub mod process;
pub mod tools;
