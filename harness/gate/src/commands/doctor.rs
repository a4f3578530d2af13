//! `gds-gate doctor`: can this host do GDS, and can the selected suites pass here?

use std::path::Path;

use crate::cli::Inputs;
use crate::error::Error;
use crate::escape::terminal;
use crate::exit;

/// `doctor`: collect (or replay) the host's facts, judge them against the suites, print the table.
pub fn run(
    inputs: &Inputs,
    json: bool,
    require_gpu: bool,
    collect: Option<&Path>,
    facts: Option<&Path>,
    console: &crate::console::Console,
) -> Result<u8, Error> {
    use crate::doctor::{self, DoctorOptions};
    let mut options = DoctorOptions::new(inputs.suite_paths(), inputs.data_dir.clone());
    options.require_gpu = require_gpu;
    if let Some(path) = collect {
        let text = doctor::facts_json(&doctor::collect(&options));
        gds_model::fsutil::write_atomically(path, text.as_bytes()).map_err(|source| {
            Error::File {
                path: path.to_path_buf(),
                writing: true,
                source,
            }
        })?;
        console.print(&format!("facts written to {}", path.display()));
        return Ok(exit::PASSED);
    }
    let result = match facts {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| Error::File {
                path: path.to_path_buf(),
                writing: false,
                source,
            })?;
            doctor::replay(&text, &options)
        }
        None => doctor::run(&options),
    };
    let (report, code) = result?;
    console.write(&if json {
        doctor::json(&report)
    } else {
        terminal(&doctor::table(&report))
    });
    Ok(code)
}
