//! Dropping the page cache off the worker's critical path. A cold pass needs its files out of the
//! page cache, and the next trial should inherit none of them. On the H200 runner, after trials
//! whose 8 threads read 2 GiB through the page cache, the gate's drop took 0.1-0.27 s and each
//! later pass spent ~0.2 s in preparation, where other trials spent 0.01-0.05 s: their threads
//! take the reads from one queue, which leaves the file in small folios. The drop now starts on a
//! thread of its own as soon as a pass's reads end (dropping ranges of a large file on several
//! threads, [`cache::drop_clean_pages`]): it runs beside that pass's verification and the next
//! pass's clearing, and after the last pass beside the worker's wind-down (cuFile statistics, the
//! `gds_stats` sample, the libraries' shutdown) and on past its answer, into its exit: on the
//! H200 runner that drop was 0.1-0.3 s of an 8-thread posix or KvikIO compat-ON trial's
//! wind-down, which the next worker's start-up hides where the gate started it ahead. Whatever
//! of a drop is still running once the next pass's destination is cleared is waited for there,
//! and counted as that pass's preparation.

use std::fs::File;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use gds_model::cache;
use gds_model::plan::{PlannedFile, ReadPlan};
use gds_model::protocol::WorkerFailure;

/// A cold read that finds more than this fraction of a file cached measures memory, not storage.
const MAX_RESIDENT_AFTER_DROP: f64 = 0.05;

/// The files whose pages a trial drops, open for as long as it runs.
#[derive(Clone)]
pub struct CachedFiles(Arc<Vec<(PlannedFile, File)>>);

impl CachedFiles {
    pub fn open(plan: &ReadPlan) -> Result<CachedFiles, WorkerFailure> {
        let files = crate::reader::posix::open_all(plan).map_err(super::fail)?;
        Ok(CachedFiles(Arc::new(
            plan.files.iter().cloned().zip(files).collect(),
        )))
    }

    /// Starts dropping every file's pages on a thread of its own.
    pub fn start_drop(&self) -> PendingDrop {
        let files = self.clone();
        PendingDrop(std::thread::spawn(move || files.drop_now()))
    }

    /// Drops every file's pages on the caller's thread; the worst fraction still cached. Fails
    /// when the pages stay (tmpfs), since a cold trial would then measure memory.
    pub fn drop_now(&self) -> Result<f64, WorkerFailure> {
        let mut worst: f64 = 0.0;
        for (planned, file) in self.0.iter() {
            worst = worst.max(drop_file(planned, file)?);
        }
        if worst > MAX_RESIDENT_AFTER_DROP {
            return Err(WorkerFailure {
                reason: format!(
                    "cold cache not reached: {:.0}% of the data was still in the page cache after dropping it",
                    worst * 100.0
                ),
                next: "put --data-dir (GDS_GATE_DATA_DIR) on a disk-backed file system (tmpfs cannot drop pages), or use `cache: warm`".into(),
                missing: None,
            });
        }
        Ok(worst)
    }
}

/// One file's pages dropped; the fraction still cached. The data files are written and synced
/// by `gen`, so their pages are clean and `POSIX_FADV_DONTNEED` alone drops them; only where
/// pages stay (written by someone since) is the file synced and dropped again. A sync on every
/// pass would ask the disk to flush its cache each time.
fn drop_file(planned: &PlannedFile, file: &File) -> Result<f64, WorkerFailure> {
    let cached = || cache::resident_fraction(file, planned.size);
    let dropped = cache::drop_clean_pages(file, planned.size)
        .and_then(|()| cached())
        .and_then(|resident| match resident > MAX_RESIDENT_AFTER_DROP {
            true => cache::drop_pages(file).and_then(|()| cached()),
            false => Ok(resident),
        });
    dropped.map_err(|error| WorkerFailure {
        reason: format!(
            "cannot drop the page cache of `{}`: {error}",
            planned.path.display()
        ),
        next: "check that the data dir is on a disk-backed file system".into(),
        missing: None,
    })
}

/// A drop running on its own thread.
pub struct PendingDrop(JoinHandle<Result<f64, WorkerFailure>>);

impl PendingDrop {
    /// Waits for the drop: the worst fraction still cached, or why it failed.
    pub fn finish(self) -> Result<f64, WorkerFailure> {
        self.0.join().unwrap_or_else(|panic| {
            Err(WorkerFailure {
                reason: format!(
                    "dropping the page cache panicked: {}",
                    gds_model::panic_message(panic.as_ref())
                ),
                next: "this is a bug in gds-gate; please report it with report.json".into(),
                missing: None,
            })
        })
    }
}

/// Lets a drop run on beside the worker's wind-down; [`finish_wind_down`] waits for it once the
/// answer is written. Its result is not needed: no pass of this trial reads after it, and the
/// gate drops whatever a failed drop left before the next trial.
pub fn hand_to_wind_down(pending: Option<PendingDrop>) {
    if let Some(PendingDrop(drop)) = pending {
        WIND_DOWN
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(drop);
    }
}

/// Drops handed to the wind-down, waited for before the worker exits.
static WIND_DOWN: Mutex<Vec<JoinHandle<Result<f64, WorkerFailure>>>> = Mutex::new(Vec::new());

/// Waits for every drop handed to the wind-down.
pub fn finish_wind_down() {
    let pending = std::mem::take(
        &mut *WIND_DOWN
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    );
    for drop in pending {
        let _ = drop.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gds_model::plan::PlannedFile;

    fn plan_of(path: &std::path::Path, size: u64) -> ReadPlan {
        ReadPlan {
            files: vec![PlannedFile {
                path: path.to_path_buf(),
                size,
                seed: None,
                checksum: 0,
            }],
            segments: Vec::new(),
            covers_files: true,
        }
    }

    /// Pages read (clean) and pages written (dirty, never synced) are both dropped, on the
    /// drop's own thread and in the wind-down.
    #[test]
    fn clean_and_dirty_pages_are_dropped_off_the_callers_thread() {
        // Beside the test binary: a disk-backed file system, where /tmp may be tmpfs.
        let dir = tempfile::tempdir_in(std::env::current_exe().unwrap().parent().unwrap()).unwrap();
        let path = dir.path().join("data");
        let size = 8 << 20;
        std::fs::write(&path, vec![7u8; size as usize]).unwrap();
        let files = CachedFiles::open(&plan_of(&path, size)).unwrap();
        // Freshly written: dirty pages, which need the sync.
        assert!(files.start_drop().finish().unwrap() <= MAX_RESIDENT_AFTER_DROP);
        // Read back: clean pages.
        assert_eq!(std::fs::read(&path).unwrap().len(), size as usize);
        assert!(files.start_drop().finish().unwrap() <= MAX_RESIDENT_AFTER_DROP);
        std::fs::read(&path).unwrap();
        hand_to_wind_down(Some(files.start_drop()));
        finish_wind_down();
        let file = File::open(&path).unwrap();
        assert!(cache::resident_fraction(&file, size).unwrap() <= MAX_RESIDENT_AFTER_DROP);
    }
}
