//! gds-gate: a CI regression gate for NVIDIA GPUDirect Storage.
//!
//! Data flows one way: scenario → trial → data file → reader → verification → verdict → reports.
//! Everything but the readers is pure CPU logic and is tested without a GPU.

pub mod baseline;
pub mod bench;
pub mod cli;
pub mod commands;
pub mod data;
pub mod doctor;
pub mod exit;
pub mod gate;
pub mod host;
pub mod mounts;
pub mod prepare;
pub mod report;
pub mod tools;
pub mod worker;
