//! The gate owns its `--out`. Two gates writing one folder delete each other's trial folders and
//! read each other's `result.json`, so a run holds an exclusive `flock` on `.gds-gate-out.lock`
//! in it from before the first trial to the last report, and a second gate refuses at once,
//! naming the holder's pid. The kernel drops the lock with its process, so a killed gate never
//! blocks the next one; the pid in the file is only for the message. Taking the lock also proves,
//! before any trial, that the reports can be written there.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Not the data directory's `.gds-gate.lock`: `--data-dir` may be `--out`, and a second `flock`
/// of one file by one process would wait for itself.
pub const LOCK_NAME: &str = ".gds-gate-out.lock";

#[derive(Debug, thiserror::Error)]
pub enum OutLockError {
    #[error(
        "cannot write the reports folder `{}` (--out, GDS_GATE_OUT); point --out at a writable folder",
        dir.display()
    )]
    Unwritable {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "another gds-gate ({holder}) is writing its reports to `{}`; wait for it to finish, or give this run a folder of its own with --out (GDS_GATE_OUT)",
        dir.display()
    )]
    Busy { dir: PathBuf, holder: String },
}

/// Held for as long as the run writes into its `--out`; released on drop or when the process dies.
#[derive(Debug)]
pub struct OutLock {
    _file: File,
}

/// Creates `dir` if needed and takes its lock, without waiting.
pub fn claim(dir: &Path) -> Result<OutLock, OutLockError> {
    let unwritable = |source| OutLockError::Unwritable {
        dir: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(unwritable)?;
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(dir.join(LOCK_NAME))
        .map_err(unwritable)?;
    let busy = |file: &mut File| OutLockError::Busy {
        dir: dir.to_path_buf(),
        holder: holder(file),
    };
    match try_lock(&file) {
        Ok(true) => {}
        Ok(false) => return Err(busy(&mut file)),
        // No flock here (some NFS or Lustre mounts): the pid left in the file is all there is.
        Err(_)
            if recorded_pid(&mut file)
                .is_some_and(|pid| pid != std::process::id() && crate::process::running(pid)) =>
        {
            return Err(busy(&mut file));
        }
        Err(_) => {}
    }
    let mine = format!("{}\n", std::process::id());
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(mine.as_bytes()))
        .map_err(unwritable)?;
    Ok(OutLock { _file: file })
}

/// `Ok(false)` when another process holds the lock; `Err` when the file system has no `flock`.
fn try_lock(file: &File) -> io::Result<bool> {
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(error),
        }
    }
}

/// The holder as the message names it: its pid, when it wrote one.
fn holder(file: &mut File) -> String {
    recorded_pid(file).map_or_else(|| "pid unknown".to_string(), |pid| format!("pid {pid}"))
}

fn recorded_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_is_refused_naming_the_holder_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let first = claim(&out).unwrap();
        // A second open file description in this process conflicts as another gate's would.
        let error = claim(&out).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains(&format!("(pid {})", std::process::id())) && message.contains("--out"),
            "{message}"
        );
        drop(first);
        claim(&out).unwrap();
    }

    #[test]
    fn a_stale_lock_file_of_a_dead_gate_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        // The pid of a gate that was killed: the file stays, its flock went with the process.
        std::fs::write(dir.path().join(LOCK_NAME), "2147483646\n").unwrap();
        claim(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(LOCK_NAME)).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
    }

    #[test]
    fn an_unwritable_out_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let error = claim(&file.join("out")).unwrap_err();
        assert!(matches!(error, OutLockError::Unwritable { .. }));
        assert!(
            error
                .to_string()
                .contains("point --out at a writable folder")
        );
    }
}
