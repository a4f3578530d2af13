//! The gate's subcommands other than the run itself: `validate`, `gen`, `bench`.

use std::path::{Path, PathBuf};

use crate::bench;
use crate::cli::Inputs;
use crate::exit;
use crate::gate::load_suites;
use crate::prepare::DataSet;
use gds_model::error_chain;
use gds_model::scenario;

/// Checks suite files; prints one line per file, every error in full.
pub fn validate(paths: &[PathBuf]) -> u8 {
    let paths = if paths.is_empty() {
        shipped_suites()
    } else {
        paths.to_vec()
    };
    if paths.is_empty() {
        eprintln!(
            "error: no suite files given and none found in `scenarios/`; pass the files to check"
        );
        return exit::USAGE;
    }
    let mut failed = false;
    for path in &paths {
        match scenario::load(path) {
            Ok(suite) => {
                let trials = scenario::expand(&suite).len();
                println!(
                    "ok: {} ({} scenarios, {trials} trials)",
                    path.display(),
                    suite.scenarios.len()
                );
            }
            Err(error) => {
                eprintln!("error: {}", error_chain(&error));
                failed = true;
            }
        }
    }
    if failed { exit::USAGE } else { exit::PASSED }
}

/// `scenarios/*.yaml`, sorted.
fn shipped_suites() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir("scenarios")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
        })
        .collect();
    paths.sort();
    paths
}

/// Prepares every file the suites read, whatever this host can run.
pub fn gen_data(inputs: &Inputs) -> u8 {
    let Some(suites) = load_suites(&inputs.suite_paths()) else {
        return exit::USAGE;
    };
    let specs: Vec<_> = suites.iter().flat_map(scenario::expand).collect();
    let data = DataSet::prepare(&inputs.data_dir, &specs);
    let failed = specs
        .iter()
        .any(|spec| data.files_for(&spec.files).is_err());
    println!(
        "{} file(s) ready in {}",
        data.log.len(),
        inputs.data_dir.display()
    );
    if failed { exit::SETUP } else { exit::PASSED }
}

pub fn bench(size: u64, runs: usize, dir: &Path, gpu: bool, stats_history: Option<&Path>) -> u8 {
    if let Some(history) = stats_history {
        let history = crate::baseline::history::read(history).ok();
        let (text, targets_met) = crate::baseline::simulate::bench_stats(history.as_ref());
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

/// `explain`: reads the saved outputs given and prints the verdict; exit 0 when it is GDS.
pub fn explain(
    gds_stats: Option<&Path>,
    nvfs_stats: Option<&Path>,
    cufile_log: Option<&Path>,
) -> u8 {
    if gds_stats.is_none() && nvfs_stats.is_none() && cufile_log.is_none() {
        eprintln!("error: give at least one of --gds-stats, --nvfs-stats, --cufile-log");
        return exit::USAGE;
    }
    let read = |path: Option<&Path>| -> Result<Option<String>, String> {
        path.map(|path| {
            std::fs::read_to_string(path)
                .map_err(|error| format!("cannot read `{}`: {error}", path.display()))
        })
        .transpose()
    };
    let (gds, nvfs, log) = match (read(gds_stats), read(nvfs_stats), read(cufile_log)) {
        (Ok(gds), Ok(nvfs), Ok(log)) => (gds, nvfs, log),
        (Err(error), _, _) | (_, Err(error), _) | (_, _, Err(error)) => {
            eprintln!("error: {error}");
            return exit::USAGE;
        }
    };
    let output = gds_model::explain::explain(gds.as_deref(), nvfs.as_deref(), log.as_deref());
    print!("{output}");
    if output.judgement.passed {
        exit::PASSED
    } else {
        exit::TRIAL_FAILED
    }
}

/// `doctor`: collect (or replay) the host's facts, judge them against the suites, print the table.
pub fn doctor(
    inputs: &Inputs,
    json: bool,
    require_gpu: bool,
    collect: Option<&Path>,
    facts: Option<&Path>,
) -> u8 {
    use crate::doctor::{self, DoctorError, DoctorOptions};
    let mut options = DoctorOptions::new(inputs.suite_paths(), inputs.data_dir.clone());
    options.require_gpu = require_gpu;
    if let Some(path) = collect {
        let text = doctor::facts_json(&doctor::collect(&options));
        return match gds_model::fsutil::write_atomically(path, text.as_bytes()) {
            Ok(()) => {
                println!("facts written to {}", path.display());
                exit::PASSED
            }
            Err(error) => {
                eprintln!("error: cannot write `{}`: {error}", path.display());
                exit::SETUP
            }
        };
    }
    let result = match facts {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => doctor::replay(&text, &options),
            Err(error) => {
                eprintln!("error: cannot read `{}`: {error}", path.display());
                return exit::USAGE;
            }
        },
        None => doctor::run(&options),
    };
    match result {
        Ok((report, code)) => {
            print!(
                "{}",
                if json {
                    doctor::json(&report)
                } else {
                    doctor::table(&report)
                }
            );
            code
        }
        Err(error) => {
            eprintln!("error: {}", error_chain(&error));
            match error {
                DoctorError::Suite(_) => exit::USAGE,
                _ => exit::SETUP,
            }
        }
    }
}
