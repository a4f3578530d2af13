//! `gds-gate bench`: the gate's own costs (CPU), `--gpu` (worker start-up, GPU verification, the
//! cufile reader against dd), `--stats` (the baseline comparison's false alarms and detection).

use std::path::Path;

use crate::bench;
use crate::exit;
use gds_model::error_chain;

/// `bench`'s measurements, as the command line chose them.
pub fn run(size: u64, runs: usize, dir: &Path, gpu: bool, stats_history: Option<&Path>) -> u8 {
    if let Some(source) = stats_history {
        let history = match crate::baseline::history::read(source) {
            Ok(history) => history,
            Err(error) => {
                eprintln!("error: {}", error_chain(&error));
                return exit::SETUP;
            }
        };
        for skipped in &history.skipped {
            eprintln!("warning: {skipped}");
        }
        let (text, targets_met) = crate::baseline::simulate::bench_stats(&history, source);
        println!("{text}");
        return if targets_met {
            exit::PASSED
        } else {
            exit::TRIAL_FAILED
        };
    }
    if gpu {
        return match crate::bench::gpu::run(size, runs, dir) {
            Ok(table) => {
                println!("{table}");
                exit::PASSED
            }
            Err(error) => {
                eprintln!("error: {error}");
                exit::SETUP
            }
        };
    }
    match bench::run(&bench::BenchOptions {
        size,
        runs,
        dir: dir.to_path_buf(),
    }) {
        Ok(report) => {
            println!("{report}");
            exit::PASSED
        }
        Err(error) => {
            eprintln!("error: {}", error_chain(&error));
            exit::SETUP
        }
    }
}
