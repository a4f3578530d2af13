//! gds-gate: a CI regression gate for NVIDIA GPUDirect Storage.
//!
//! Data flows one way: scenario → trial → data file → reader → verification → verdict → reports.
//! Everything but the readers is pure CPU logic and is tested without a GPU.

pub mod baseline;
pub mod bench;
pub mod cache;
pub mod cli;
pub mod commands;
pub mod cufile_abi;
pub mod cufile_config;
pub mod data;
pub mod doctor;
pub mod evidence;
pub mod exit;
pub mod explain;
pub mod fsutil;
pub mod gate;
pub mod gpu;
pub mod hex;
pub mod host;
pub mod integrity;
pub mod meminfo;
pub mod mounts;
pub mod numbers;
pub mod plan;
pub mod prepare;
pub mod protocol;
pub mod reader;
pub mod record;
pub mod report;
pub mod scenario;
pub mod shard;
pub mod suggest;
pub mod units;
pub mod verdict;
pub mod verify;
pub mod worker;

/// `error: caused by: …` as one line per cause, the way nextest prints error chains.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str("\n  caused by: ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
