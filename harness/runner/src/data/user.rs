//! Whole-file checksums of users' own files (a real checkpoint the gate did not generate),
//! computed once by reading the file and cached in `DATA_DIR/user/<hash of path>.id.json`.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::direct::{AlignedBuf, clear_direct, direct_refused, open_maybe_direct};
use super::progress::Progress;
use super::sidecar::{self, GENERATED_BY, Stamp, UserIdentity};
use super::{Action, DataError, open_data_dir};
use gds_model::verify::{checksum_range, checksum_range_parallel, finish_checksum};

/// Read size; as for writing, one large request keeps the device busy.
const BLOCK: usize = 16 << 20;

/// A user's file with its whole-file checksum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserFile {
    /// Canonical path.
    pub path: PathBuf,
    pub size: u64,
    #[serde(serialize_with = "gds_model::hex::serialize")]
    pub checksum: u64,
    #[serde(flatten)]
    pub action: Action,
    #[serde(rename = "elapsed_s", serialize_with = "serialize_secs")]
    pub elapsed: Duration,
}

fn serialize_secs<S: serde::Serializer>(value: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(value.as_secs_f64())
}

/// Cache file for `canonical` under `data_dir/user/`: named by a hash of the path, so any path
/// length or character works, and the path is stored inside to rule out collisions.
pub fn user_sidecar_path(data_dir: &Path, canonical: &Path) -> PathBuf {
    let bytes = canonical.as_os_str().as_bytes();
    let hash = finish_checksum(checksum_range(bytes, 0), bytes.len() as u64);
    data_dir.join("user").join(format!("{hash:016x}.id.json"))
}

/// Whether `name` is one [`user_sidecar_path`] gives.
fn is_user_sidecar(name: &str) -> bool {
    name.strip_suffix(".id.json")
        .is_some_and(|hash| hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The checksum of the user's file at `path` (relative paths are taken from the current
/// directory), from the cache when its size, mtime, ctime, inode and device still match,
/// otherwise by reading the whole file.
///
/// Unlike generated files there is no generator to spot-check against, so the cache also keys
/// on ctime, which nobody can set back after rewriting a file.
pub fn ensure_user_checksum(
    data_dir: &Path,
    path: &Path,
    progress: &mut dyn Progress,
) -> Result<UserFile, DataError> {
    let started = Instant::now();
    let unreadable = |source: io::Error| {
        if source.kind() == io::ErrorKind::NotFound {
            DataError::UserFileMissing {
                path: path.to_owned(),
                source,
            }
        } else {
            DataError::UserFileUnreadable {
                path: path.to_owned(),
                source,
            }
        }
    };
    let canonical = fs::canonicalize(path).map_err(unreadable)?;
    let meta = fs::metadata(&canonical).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(DataError::UserFileNotRegular {
            path: path.to_owned(),
        });
    }
    if meta.len() == 0 {
        return Err(DataError::UserFileEmpty {
            path: path.to_owned(),
        });
    }
    let stamp = Stamp::of(&meta);

    let lock = open_data_dir(data_dir)?;
    let user_dir = data_dir.join("user");
    fs::create_dir_all(&user_dir).map_err(|source| DataError::CreateDir {
        dir: user_dir.clone(),
        source,
    })?;
    super::direct::remove_stale_partials(&user_dir, lock.held(), is_user_sidecar);
    let cache_path = user_sidecar_path(data_dir, &canonical);
    let done = |checksum, action| UserFile {
        path: canonical.clone(),
        size: stamp.size,
        checksum,
        action,
        elapsed: started.elapsed(),
    };

    let reason = match sidecar::read::<UserIdentity>(&cache_path) {
        Ok(None) => "no cached checksum".to_owned(),
        Err(unreadable) => unreadable.to_string(),
        Ok(Some(cached)) => match changed_field(&cached, &canonical, &stamp) {
            None => return Ok(done(cached.checksum, Action::Reused)),
            Some(field) => format!("file changed since its checksum was cached ({field})"),
        },
    };

    progress.start(stamp.size, &format!("checksumming {}", canonical.display()));
    let range_sum = read_checksum(&canonical, progress).map_err(unreadable)?;
    progress.finish();
    let after = fs::metadata(&canonical).map_err(unreadable)?;
    if Stamp::of(&after) != stamp {
        return Err(DataError::UserFileChanged {
            path: path.to_owned(),
        });
    }
    let checksum = finish_checksum(range_sum, stamp.size);
    let identity = UserIdentity {
        generated_by: GENERATED_BY.to_owned(),
        path: canonical.clone(),
        size: stamp.size,
        mtime_ns: stamp.mtime_ns,
        ctime_ns: stamp.ctime_ns,
        inode: stamp.inode,
        device: stamp.device,
        checksum,
    };
    sidecar::write_atomic(&cache_path, &identity)?;
    Ok(done(checksum, Action::Computed { reason }))
}

fn changed_field(cached: &UserIdentity, canonical: &Path, stamp: &Stamp) -> Option<&'static str> {
    if cached.path != canonical {
        Some("path")
    } else if cached.size != stamp.size {
        Some("size")
    } else if cached.mtime_ns != stamp.mtime_ns {
        Some("mtime")
    } else if cached.inode != stamp.inode {
        Some("inode")
    } else if cached.device != stamp.device {
        Some("device")
    } else if cached.ctime_ns != stamp.ctime_ns {
        Some("ctime")
    } else {
        None
    }
}

/// Range sum of the whole file. A reader thread fills the next block (with `O_DIRECT` where
/// allowed, so a multi-GB checkpoint does not evict the page cache) while rayon sums this one.
fn read_checksum(path: &Path, progress: &mut dyn Progress) -> io::Result<u64> {
    let mut options = OpenOptions::new();
    options.read(true);
    let (file, mut direct) = open_maybe_direct(path, &options)?;
    let (free_tx, free_rx) = mpsc::sync_channel::<AlignedBuf>(2);
    let (full_tx, full_rx) = mpsc::sync_channel::<io::Result<(u64, usize, AlignedBuf)>>(2);
    for _ in 0..2 {
        let _ = free_tx.send(AlignedBuf::new(BLOCK));
    }
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut offset = 0u64;
            loop {
                let Ok(mut buf) = free_rx.recv() else { return };
                let read = fill_block(&file, &mut direct, &mut buf, offset);
                let stop = !matches!(read, Ok(len) if len == BLOCK);
                let sent = full_tx.send(read.map(|len| (offset, len, buf)));
                if stop || sent.is_err() {
                    return;
                }
                offset += BLOCK as u64;
            }
        });
        // Owned here so an early return hangs up on the reader instead of deadlocking.
        let (full_rx, free_tx) = (full_rx, free_tx);
        let mut sum = 0u64;
        for block in full_rx.iter() {
            let (offset, len, buf) = block?;
            sum = sum.wrapping_add(checksum_range_parallel(&buf[..len], offset));
            progress.advance(len as u64);
            let _ = free_tx.send(buf);
        }
        Ok(sum)
    })
}

/// Reads up to one block at `offset`; fewer bytes only at the end of the file.
fn fill_block(
    file: &fs::File,
    direct: &mut bool,
    buf: &mut [u8],
    offset: u64,
) -> io::Result<usize> {
    crate::interrupt::stop_if_interrupted()?;
    let mut len = 0;
    while len < buf.len() {
        match file.read_at(&mut buf[len..], offset + len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) if *direct && direct_refused(&err) => {
                clear_direct(file)?;
                *direct = false;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(len)
}
