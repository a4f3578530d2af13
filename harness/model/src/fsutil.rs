//! The one way the gate writes a file that someone reads: reports, baselines, plots, a trial's
//! `cufile.json`, a worker's result.

use std::io::Write;
use std::path::Path;

/// Writes `contents` to `path` so that neither a reader nor a crash ever sees half a file: a
/// temporary file in the same folder, synced, renamed over `path`, then the folder synced so the
/// rename itself survives a power loss.
pub fn write_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    write_atomically_with(path, contents, || Ok(()))
}

/// [`write_atomically`], running `before_rename` when the new contents are on disk but not yet in
/// place: the window the tests kill a process in. The temporary file is hidden and named after
/// the target (`.NAME.XXXXXX.tmp`), so a leftover of a killed writer is recognisable; the file
/// keeps the mode of the one it replaces (0644 for a new one), as any file of the repository.
pub fn write_atomically_with(
    path: &Path,
    contents: &[u8],
    before_rename: impl FnOnce() -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |name| name.to_string_lossy());
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    temp.write_all(contents)?;
    // tempfile creates 0600.
    let mode = std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode());
    temp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    temp.as_file().sync_all()?;
    before_rename()?;
    temp.persist(path).map_err(|error| error.error)?;
    std::fs::File::open(dir)?.sync_all()
}
