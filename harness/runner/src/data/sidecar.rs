//! Identity sidecars: small JSON files recording what a data file is and the `stat` fields it had
//! when its checksum was computed, written atomically next to it (or under `user/`).

use std::fs::{self, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::DataError;
use super::direct::{fsync_dir, partial_name};

/// The `stat` fields that identify one version of a file. Replacing a file changes the inode,
/// writing it changes the mtime, and any change through the file system changes the ctime, which
/// unlike the mtime nobody can set back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub inode: u64,
    pub device: u64,
}

impl Stamp {
    pub fn of(meta: &Metadata) -> Stamp {
        let ns = |secs: i64, nsec: i64| secs.saturating_mul(1_000_000_000).saturating_add(nsec);
        Stamp {
            size: meta.len(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
            device: meta.dev(),
        }
    }
}

/// Sidecar of a generated file: `NAME.id.json` next to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratedIdentity {
    /// Says what the file is to a person who finds it.
    pub generated_by: String,
    pub generator_version: u32,
    pub seed: u64,
    pub size: u64,
    #[serde(with = "gds_model::hex")]
    pub checksum: u64,
    pub mtime_ns: i64,
    /// A sidecar without it (written by an older gate) does not parse: its file is regenerated.
    pub ctime_ns: i64,
    pub inode: u64,
    pub device: u64,
}

/// Sidecar caching the checksum of a user's own file: `user/<hash of path>.id.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserIdentity {
    pub generated_by: String,
    pub path: PathBuf,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub inode: u64,
    pub device: u64,
    #[serde(with = "gds_model::hex")]
    pub checksum: u64,
}

pub const GENERATED_BY: &str =
    "gds-gate (identity of a data file; do not edit, delete it to force recomputation)";

/// A sidecar that exists but cannot be used: a fragment for "regenerating because …". It is
/// recorded as one line of the report, so the cause is part of the text, not a source.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    #[error("identity sidecar unreadable ({0})")]
    Read(io::Error),
    #[error("identity sidecar unreadable ({0})")]
    Parse(serde_json::Error),
}

/// Reads a sidecar. `Ok(None)` when there is none; `Err` when it cannot be used.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, Unreadable> {
    let text = match fs::read(path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Unreadable::Read(err)),
    };
    serde_json::from_slice(&text)
        .map(Some)
        .map_err(Unreadable::Parse)
}

/// Writes `value` to `path` so that a reader sees the old sidecar, no sidecar, or the complete
/// new one: temporary file, fsync, rename, fsync of the directory.
pub fn write_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), DataError> {
    let (dir, name) = split(path);
    let mut text = serde_json::to_vec_pretty(value).map_err(|source| DataError::Write {
        op: "serialise",
        path: path.to_owned(),
        source: io::Error::other(source),
    })?;
    text.push(b'\n');
    let tmp = dir.join(partial_name(&name));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        file.write_all(&text)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)?;
        fsync_dir(&dir)
    })();
    result.map_err(|source| {
        let _ = fs::remove_file(&tmp);
        DataError::Write {
            op: "write identity sidecar",
            path: path.to_owned(),
            source,
        }
    })
}

/// Removes a sidecar (and makes that durable) before the file it describes is touched, so a
/// crash in between leaves a file without identity, which is never trusted.
pub fn remove_durably(path: &Path) -> Result<(), DataError> {
    let wrap = |source| DataError::Write {
        op: "remove stale identity sidecar",
        path: path.to_owned(),
        source,
    };
    match fs::remove_file(path) {
        Ok(()) => fsync_dir(&split(path).0).map_err(wrap),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(wrap(err)),
    }
}

fn split(path: &Path) -> (PathBuf, String) {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (dir, name)
}
