//! The one way the gate writes a file that someone reads (reports, baselines, plots, a trial's
//! `cufile.json`, a worker's result), and how it tells a text file that is not UTF-8.

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

/// Where a file's bytes stop being UTF-8: the first bad byte, its 0-based offset, and its 1-based
/// line and byte column, so that an error can point an editor at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the file is not UTF-8: byte {byte:#04x} at offset {offset} (line {line}, column {column})"
)]
pub struct NotUtf8 {
    pub byte: u8,
    pub offset: usize,
    pub line: usize,
    pub column: usize,
}

/// `bytes` as text, or where they stop being UTF-8. `read_to_string` only says "stream did not
/// contain valid UTF-8", which reads like a failure to read the file at all.
pub fn utf8(bytes: Vec<u8>) -> Result<String, NotUtf8> {
    String::from_utf8(bytes).map_err(|error| {
        let offset = error.utf8_error().valid_up_to();
        let bytes = error.as_bytes();
        let before = &bytes[..offset];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |at| at + 1);
        NotUtf8 {
            byte: bytes[offset],
            offset,
            line: before.iter().filter(|&&b| b == b'\n').count() + 1,
            column: offset - line_start + 1,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bad_byte_is_found_by_offset_line_and_column() {
        assert_eq!(utf8(b"a\n\xc3\xa9".to_vec()).as_deref(), Ok("a\n\u{e9}"));
        let bad = utf8(b"ab\ncd\xe9f\n\xff".to_vec()).unwrap_err();
        assert_eq!(
            bad,
            NotUtf8 {
                byte: 0xe9,
                offset: 5,
                line: 2,
                column: 3
            }
        );
        assert_eq!(
            bad.to_string(),
            "the file is not UTF-8: byte 0xe9 at offset 5 (line 2, column 3)"
        );
        assert_eq!(utf8(vec![0xff]).unwrap_err().column, 1);
    }
}
