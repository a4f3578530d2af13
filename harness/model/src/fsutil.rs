//! Files written so that a reader never sees half of one: the gate's reports, a trial's
//! `cufile.json`, a worker's result, plots.

use std::io::Write;
use std::path::Path;

/// Writes `contents` to a temporary file in the same folder, syncs it, renames it over `path`
/// and syncs the folder, so that neither a crash nor a reader ever sees half a file, and the
/// rename itself survives a power loss.
pub fn write_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(contents)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|error| error.error)?;
    std::fs::File::open(dir)?.sync_all()
}
