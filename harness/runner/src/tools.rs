//! Programs the gate runs that are not its own: found on `PATH`, then where their packages put
//! them; and the Python the KvikIO worker runs in.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// Folders the GDS tools (`gdscheck`, `gds_stats`, `gdsio`) live in when they are not on `PATH`.
pub const GDS_TOOL_DIRS: &[&str] = &["/usr/local/cuda/gds/tools", "/usr/local/gds/tools"];

/// The first executable `name` on `PATH`, then in `extra`.
pub fn find_program(name: &str, extra: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(extra.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The KvikIO worker's interpreter, and why that one: `GDS_GATE_PYTHON`, else the suite's
/// `python:`, else `python3`. The launcher runs it and the doctor asks it, so both mean the same.
pub fn python(suite: Option<&str>) -> (String, &'static str) {
    match std::env::var("GDS_GATE_PYTHON") {
        Ok(python) if !python.is_empty() => (python, "GDS_GATE_PYTHON"),
        _ => match suite {
            Some(python) => (python.to_string(), "the suite's `python:`"),
            None => ("python3".to_string(), "the default"),
        },
    }
}
