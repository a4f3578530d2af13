//! `gds-gate gen`: generate (or verify and reuse) the data files of the selected suites.

use crate::cli::Inputs;
use crate::exit;
use crate::prepare::DataSet;
use gds_model::scenario;

/// Prepares every file the suites read, whatever this host can run.
pub fn run(inputs: &Inputs) -> u8 {
    let Some(suites) = super::run::load_suites(&inputs.suite_paths()) else {
        return exit::USAGE;
    };
    if let Err(error) = crate::prepare::check_data_dir(&inputs.data_dir) {
        eprintln!("error: {}", crate::escape::terminal(&error));
        return exit::SETUP;
    }
    let specs: Vec<_> = suites.iter().flat_map(scenario::expand).collect();
    let data = DataSet::prepare(&inputs.data_dir, &specs);
    let failed = specs.iter().any(|spec| data.files_for(spec).is_err());
    println!(
        "{} file(s) ready in {}",
        data.log.len(),
        inputs.data_dir.display()
    );
    if failed { exit::SETUP } else { exit::PASSED }
}
