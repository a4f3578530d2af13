//! `gds-gate report`: the plots of this runner's history against its baseline, or with
//! `--merge DIR...` one report over several runs.

use std::path::{Path, PathBuf};

use crate::cli::BaselineArgs;

pub fn run(merge: &[PathBuf], out: &Path, baselines: &BaselineArgs) -> u8 {
    if merge.is_empty() {
        super::run::report_command(out, baselines)
    } else {
        crate::report::merge::merge_command(merge, out)
    }
}
