//! gds-gate: a CI regression gate for NVIDIA GPUDirect Storage. This crate is the gate proper:
//! the command line and one module per subcommand, launching and watching workers, assessing what
//! they report, progress and benches. The processes, host facts and test data it runs on are
//! `gds-runner`'s; baselines, the runner control and each trial's outcome `gds-baseline`'s; the
//! reports `gds-report`'s; the doctor `gds-doctor`'s.
//!
//! Data flows one way: scenario → trial → data file → worker process → record → verdict →
//! outcome → reports. The CUDA and cuFile work happens in worker processes (the `gds-worker`
//! crate, linked by the binary alone), so nothing here can call into the stack under test, and
//! all of it is tested without a GPU.

pub mod assess;
pub mod bench;
pub mod budget;
mod cause;
pub mod cli;
pub mod commands;
pub mod error;
pub mod launch;
pub mod progress;

// The other crates' modules, under the names the gate has always used for them.
pub use gds_baseline::{self as baseline, control, outcome};
pub use gds_doctor as doctor;
pub use gds_report as report;
pub use gds_runner::{
    console, data, escape, exit, host, interrupt, job, mounts, out_lock, prepare, process, tools,
};
