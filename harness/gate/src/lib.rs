//! gds-gate: a CI regression gate for NVIDIA GPUDirect Storage. This crate is the gate proper:
//! the command line and one module per subcommand, launching and watching workers, judging what
//! they report, test data on disk, baselines, reports, the doctor and the benches.
//!
//! Data flows one way: scenario → trial → data file → worker process → record → verdict →
//! reports. It builds on `gds-model` only: the CUDA and cuFile work happens in worker processes
//! (the `gds-worker` crate, linked by the binary alone), so nothing here can call into the stack
//! under test, and all of it is tested without a GPU.

pub mod assess;
pub mod baseline;
pub mod bench;
pub mod cli;
pub mod commands;
pub mod control;
pub mod data;
pub mod doctor;
pub mod error;
pub mod escape;
pub mod exit;
pub mod host;
pub mod interrupt;
pub mod job;
pub mod launch;
pub mod mounts;
pub mod out_lock;
pub mod outcome;
pub mod prepare;
pub mod process;
pub mod progress;
pub mod report;
pub mod tools;
