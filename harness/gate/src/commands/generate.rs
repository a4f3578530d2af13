//! `gds-gate gen`: generate (or verify and reuse) the data files of the selected suites.

use crate::cli::Inputs;
use crate::error::Error;
use crate::exit;
use crate::prepare::DataSet;
use gds_model::scenario;

/// Prepares every file the suites read, whatever this host can run.
pub fn run(
    inputs: &Inputs,
    rate: gds_model::units::Rate,
    console: &crate::console::Console,
) -> Result<u8, Error> {
    let suites = super::run::load_suites(&inputs.suite_paths())?;
    crate::prepare::check_data_dir(&inputs.data_dir)
        .map_err(|error| Error::Setup(gds_model::error_chain(&error)))?;
    let specs: Vec<_> = suites.iter().flat_map(scenario::expand).collect();
    let data = DataSet::prepare(&inputs.data_dir, &specs, rate, console);
    let failed = specs.iter().any(|spec| data.files_for(spec).is_err());
    console.print(&format!(
        "{} file(s) ready in {}",
        data.log.len(),
        inputs.data_dir.display()
    ));
    Ok(if failed { exit::SETUP } else { exit::PASSED })
}
