//! gds-gate: a CI regression gate for NVIDIA GPUDirect Storage. This crate is the gate proper:
//! the command line and one module per subcommand, launching and watching workers, judging what
//! they report, each trial's outcome and the run's exit code, baselines, reports and benches. The
//! processes, host facts and test data it runs on are `gds-runner`'s, the doctor `gds-doctor`'s.
//!
//! Data flows one way: scenario → trial → data file → worker process → record → verdict →
//! outcome → reports. The CUDA and cuFile work happens in worker processes (the `gds-worker`
//! crate, linked by the binary alone), so nothing here can call into the stack under test, and
//! all of it is tested without a GPU.

pub mod assess;
pub mod baseline;
pub mod bench;
pub mod cli;
pub mod commands;
pub mod control;
pub mod error;
pub mod launch;
pub mod outcome;
pub mod progress;
pub mod report;

// The runner's modules, under the names the gate has always used for them.
pub use gds_doctor as doctor;
pub use gds_runner::{
    data, escape, exit, host, interrupt, job, mounts, out_lock, prepare, process, tools,
};
