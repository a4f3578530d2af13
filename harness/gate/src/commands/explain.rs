//! `gds-gate explain`: the path verdict and diagnosis from outputs saved by hand.

use std::path::Path;

use gds_model::evidence::{GdsStats, NvfsStats};
use gds_model::scenario::ExpectedPath;

use crate::error::Error;
use crate::exit;

/// `explain`: reads the saved outputs given and prints the verdict against `expected`; exit 0
/// when the bytes took that path. An input that is not what its flag names is refused before
/// any verdict, so a wrong file cannot read as "no GDS reads".
pub fn run(
    gds_stats: Option<&Path>,
    nvfs_stats: Option<&Path>,
    cufile_log: Option<&Path>,
    expected: ExpectedPath,
    console: &crate::console::Console,
) -> Result<u8, Error> {
    if gds_stats.is_none() && nvfs_stats.is_none() && cufile_log.is_none() {
        return Err(Error::Usage(
            "give at least one of --gds-stats, --nvfs-stats, --cufile-log".into(),
        ));
    }
    let read = |path: Option<&Path>| -> Result<Option<String>, Error> {
        path.map(|path| {
            std::fs::read_to_string(path).map_err(|source| Error::File {
                path: path.to_path_buf(),
                writing: false,
                source,
            })
        })
        .transpose()
    };
    let (gds, nvfs, log) = (read(gds_stats)?, read(nvfs_stats)?, read(cufile_log)?);
    if let Some(error) = wrong_input(gds_stats, gds.as_deref(), nvfs_stats, nvfs.as_deref()) {
        return Err(Error::Usage(error));
    }
    let output = gds_model::explain::explain_expecting(
        gds.as_deref(),
        nvfs.as_deref(),
        log.as_deref(),
        expected,
    );
    console.write(&output.to_string());
    Ok(if output.judgement.passed {
        exit::PASSED
    } else {
        exit::TRIAL_FAILED
    })
}

/// The first input that does not parse as what its flag promises, with how to produce the right one.
fn wrong_input(
    gds_path: Option<&Path>,
    gds: Option<&str>,
    nvfs_path: Option<&Path>,
    nvfs: Option<&str>,
) -> Option<String> {
    if let (Some(path), Some(text)) = (gds_path, gds)
        && let Err(error) = GdsStats::parse(text)
    {
        // The parser's error already says how to save the right output.
        return Some(format!("--gds-stats `{}`: {error}", path.display()));
    }
    if let (Some(path), Some(text)) = (nvfs_path, nvfs)
        && let Err(error) = NvfsStats::parse(text)
    {
        return Some(format!(
            "`{}` is not a copy of /proc/driver/nvidia-fs/stats: {error}\n  next: save it after the I/O with `cat /proc/driver/nvidia-fs/stats > FILE` and pass that FILE to --nvfs-stats",
            path.display()
        ));
    }
    None
}
