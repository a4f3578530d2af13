//! `gds-gate explain`: the path verdict and diagnosis from outputs saved by hand.

use std::path::Path;

use crate::exit;

/// `explain`: reads the saved outputs given and prints the verdict; exit 0 when it is GDS.
pub fn run(gds_stats: Option<&Path>, nvfs_stats: Option<&Path>, cufile_log: Option<&Path>) -> u8 {
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
