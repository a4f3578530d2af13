//! `gds-gate doctor`: can this host do GDS, and can the selected suites pass here?

use std::path::Path;

use crate::cli::Inputs;
use crate::escape::terminal;
use crate::exit;
use gds_model::error_chain;

/// `doctor`: collect (or replay) the host's facts, judge them against the suites, print the table.
pub fn run(
    inputs: &Inputs,
    json: bool,
    require_gpu: bool,
    collect: Option<&Path>,
    facts: Option<&Path>,
) -> u8 {
    use crate::doctor::{self, DoctorOptions};
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
                    terminal(&doctor::table(&report))
                }
            );
            code
        }
        Err(error) => {
            eprintln!("error: {}", terminal(&error_chain(&error)));
            super::doctor_error_code(&error)
        }
    }
}
