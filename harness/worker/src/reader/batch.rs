//! The `cufile-batch` reader: the files opened and registered as for `cufile`, the plan's
//! `task_size` tasks submitted `batch_size` at a time with `cuFileBatchIOSubmit` into one device
//! buffer, `queue_depth` batches in flight (one batch handle per submitting thread), each batch
//! waited for with `cuFileBatchIOGetStatus`. Every entry's status and byte count is checked: an
//! entry that failed, was cancelled, timed out or came back short fails the pass with its file
//! and offset. The path is cuFile's to say, from its counters, as for `cufile`.

use std::fs::{File, OpenOptions};
use std::time::Duration;

use super::cufile::{register_buffer, register_files};
use super::{GpuReader, Pass, ReaderError, run_parallel};
use crate::gpu::{DeviceBuffer, Gpu};
use crate::libcufile::batch::{Batch, BatchError};
use crate::libcufile::{Cufile, Handle, RegisteredBuffer};
use gds_model::cufile_abi::batch::{EntryProblem, IoEvent, IoParams, check_entry};
use gds_model::path::Path;
use gds_model::plan::{ReadPlan, Segment};
use gds_model::scenario::BufferKind;

pub struct BatchReader<'a> {
    gpu: &'a mut Gpu,
    batch_size: u32,
    queue_depth: u32,
    /// A batch stalled: cuFile may still use the buffer and the handles.
    stalled: bool,
    // Field order is drop order: destroy the batches, then deregister the buffer and handles
    // before freeing and closing.
    batches: Vec<Batch<'a>>,
    registered: Option<RegisteredBuffer<'a>>,
    handles: Vec<Handle<'a>>,
    _files: Vec<File>,
    device: DeviceBuffer,
}

impl<'a> BatchReader<'a> {
    /// Opens and registers every file and sets up `queue_depth` batches of `batch_size` entries;
    /// `cufile`'s driver must be open. A batch larger than the driver allows fails here, naming
    /// the cufile.json key that raises the limit. `capacity`: the device buffer, the whole plan
    /// or one window of it (each window's plan starts at buffer offset 0).
    pub fn open(
        gpu: &'a mut Gpu,
        cufile: &'a Cufile,
        plan: &ReadPlan,
        buffer: BufferKind,
        queue_depth: u32,
        batch_size: u32,
        capacity: u64,
    ) -> Result<BatchReader<'a>, ReaderError> {
        if let Some(limit) = cufile
            .properties()
            .ok()
            .map(|p| p.max_batch_io_size)
            .filter(|limit| *limit > 0 && u64::from(batch_size) > *limit)
        {
            return Err(ReaderError::BatchTooLarge { batch_size, limit });
        }
        let batches = (0..queue_depth.max(1))
            .map(|_| cufile.batch(batch_size))
            .collect::<Result<Vec<_>, _>>()?;
        let device = gpu.alloc(capacity as usize)?;
        let (files, handles) = register_files(cufile, plan, OpenOptions::new().read(true))?;
        let registered = register_buffer(cufile, &device, buffer)?;
        Ok(BatchReader {
            gpu,
            batch_size,
            queue_depth: queue_depth.max(1),
            stalled: false,
            batches,
            registered,
            handles,
            _files: files,
            device,
        })
    }
}

impl Drop for BatchReader<'_> {
    fn drop(&mut self) {
        if self.stalled {
            // Not deregistered: entries of a stalled batch may still be in cuFile's hands (the
            // batch itself is abandoned, see `Batch`). The process ends with the failure.
            std::mem::forget(self.registered.take());
            std::mem::forget(std::mem::take(&mut self.handles));
        }
    }
}

/// The plan's tasks in groups of `batch_size`, in plan order: one group per submission.
pub(crate) fn groups(tasks: Vec<Segment>, batch_size: u32) -> Vec<Vec<Segment>> {
    let size = batch_size.max(1) as usize;
    let mut groups = Vec::with_capacity(tasks.len().div_ceil(size));
    let mut tasks = tasks.into_iter().peekable();
    while tasks.peek().is_some() {
        groups.push(tasks.by_ref().take(size).collect());
    }
    groups
}

/// How long a batch of `tasks` may go without returning an event, `queue_depth` batches sharing
/// the storage: the bound of a section moving every batch in flight.
pub(crate) fn stall_limit(tasks: &[Segment], queue_depth: u32) -> Duration {
    let bytes: u64 = tasks.iter().map(|task| task.len).sum();
    crate::watch::section_bound(bytes.saturating_mul(u64::from(queue_depth.max(1))))
}

/// The outstanding entries of a stalled batch (those without an event): how many, and the first
/// in plan order.
pub(crate) fn outstanding(tasks: &[Segment], events: &[IoEvent]) -> (usize, Option<Segment>) {
    let back: std::collections::HashSet<u64> = events.iter().map(|e| e.cookie).collect();
    let mut missing = tasks
        .iter()
        .enumerate()
        .filter(|(index, _)| !back.contains(&(*index as u64)))
        .map(|(_, task)| *task);
    let first = missing.next();
    (first.map_or(0, |_| 1 + missing.count()), first)
}

/// Every entry of a batch (`tasks`, cookie = index) judged by the events cuFile returned: each
/// must come back once, complete with all its bytes. The first problem in task order, with the
/// task it concerns.
pub(crate) fn first_failed_entry(
    tasks: &[Segment],
    events: &[IoEvent],
) -> Result<(), (Segment, EntryProblem)> {
    let mut seen = vec![false; tasks.len()];
    let mut first: Option<(usize, EntryProblem)> = None;
    let mut note = |index: usize, problem: EntryProblem| {
        if first.as_ref().is_none_or(|(at, _)| index < *at) {
            first = Some((index, problem));
        }
    };
    for event in events {
        let index = event.cookie as usize;
        let Some(task) = tasks.get(index) else {
            // A cookie we never gave: nothing to tie it to but the batch's first entry.
            note(
                0,
                EntryProblem::UnknownCookie {
                    cookie: event.cookie,
                },
            );
            continue;
        };
        if std::mem::replace(&mut seen[index], true) {
            note(index, EntryProblem::Twice);
        } else if let Err(problem) = check_entry(event, task.len) {
            note(index, problem);
        }
    }
    if let Some(index) = seen.iter().position(|seen| !seen) {
        note(index, EntryProblem::NoEvent);
    }
    match first {
        Some((index, problem)) => Err((tasks[index], problem)),
        None => Ok(()),
    }
}

impl GpuReader for BatchReader<'_> {
    const PATH: Path = Path::Cufile;

    fn landing(&mut self) -> (&mut Gpu, &DeviceBuffer) {
        (self.gpu, &self.device)
    }

    /// `nthreads` does not apply: the batches in flight are the reader's `queue_depth`. Each call
    /// of the pass is one batch, submitted and waited for.
    fn read_pass(
        &mut self,
        plan: &ReadPlan,
        _nthreads: u32,
        task_size: u64,
    ) -> Result<Pass, ReaderError> {
        let binder = self.gpu.binder();
        let (handles, device, queue_depth) = (&self.handles, &self.device, self.queue_depth);
        let work = groups(plan.tasks(task_size), self.batch_size);
        let path = |task: &Segment| plan.files[task.file].path.display().to_string();
        let pass = run_parallel(work, &mut self.batches, |batch, tasks| {
            binder.bind()?;
            let params: Vec<IoParams> = tasks
                .iter()
                .enumerate()
                .map(|(index, task)| {
                    IoParams::read(
                        handles[task.file].raw(),
                        device.ptr,
                        task.buffer_offset,
                        task.offset,
                        task.len,
                        index as u64,
                    )
                })
                .collect();
            let events = match batch.run(params, stall_limit(&tasks, queue_depth)) {
                Ok(events) => events,
                Err(BatchError::Cufile(error)) => return Err(error.into()),
                Err(BatchError::Stalled {
                    events,
                    submitted,
                    waited,
                    cancelled,
                }) => {
                    let (count, first) = outstanding(&tasks, &events);
                    let first = first.unwrap_or(tasks[0]);
                    return Err(ReaderError::BatchStalled {
                        outstanding: count,
                        path: path(&first),
                        offset: first.offset,
                        len: first.len,
                        source: BatchError::Stalled {
                            events,
                            submitted,
                            waited,
                            cancelled,
                        },
                    });
                }
            };
            first_failed_entry(&tasks, &events).map_err(|(task, problem)| ReaderError::BatchEntry {
                path: path(&task),
                offset: task.offset,
                len: task.len,
                source: problem,
            })
        });
        if let Err(stalled @ ReaderError::BatchStalled { .. }) = &pass {
            // cuFile may still be working on the stalled entries: their buffer registration and
            // file handles are left to the end of the process (see `Drop`), and the failure is
            // said now, in case tearing down the rest of cuFile blocks before the result is sent.
            self.stalled = true;
            eprintln!("{}", gds_model::error_chain(stalled));
        }
        let pass = pass?;
        self.gpu.synchronize()?;
        Ok(pass)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gds_model::cufile_abi::batch::{STATUS_COMPLETE, STATUS_FAILED, STATUS_PENDING};

    fn task(offset: u64, len: u64) -> Segment {
        Segment {
            file: 0,
            offset,
            len,
            buffer_offset: offset,
        }
    }

    fn done(cookie: u64, ret: u64) -> IoEvent {
        IoEvent {
            cookie,
            status: STATUS_COMPLETE,
            ret,
        }
    }

    #[test]
    fn a_stalled_batch_names_how_many_entries_were_outstanding_and_the_first() {
        let tasks = [task(0, 4096), task(4096, 4096), task(8192, 4096)];
        assert_eq!(
            outstanding(&tasks, &[done(1, 4096)]),
            (2, Some(task(0, 4096)))
        );
        assert_eq!(
            outstanding(&tasks, &[done(0, 4096), done(2, 4096)]),
            (1, Some(task(4096, 4096)))
        );
        assert_eq!(
            outstanding(&tasks, &[done(0, 1), done(1, 1), done(2, 1)]),
            (0, None)
        );
    }

    #[test]
    fn a_batch_is_waited_for_longer_the_more_bytes_are_in_flight() {
        let batch: Vec<Segment> = (0..32).map(|i| task(i << 20, 1 << 20)).collect();
        // 32 MiB, four batches in flight: 128 MiB at 50 MB/s is 2.7 s, on top of 15 s.
        let limit = stall_limit(&batch, 4);
        assert!(
            limit > Duration::from_secs(17) && limit < Duration::from_secs(18),
            "{limit:?}"
        );
        assert_eq!(stall_limit(&[], 0), Duration::from_secs(15));
        // Well inside the gate's trial timeout (60 s plus the pass at 50 MB/s) for this trial.
        assert!(limit < Duration::from_secs(60));
    }

    #[test]
    fn tasks_are_grouped_in_plan_order_with_a_short_last_group() {
        let tasks: Vec<Segment> = (0..7).map(|i| task(i * 4096, 4096)).collect();
        let grouped = groups(tasks.clone(), 3);
        let sizes: Vec<usize> = grouped.iter().map(Vec::len).collect();
        assert_eq!(sizes, [3, 3, 1]);
        assert_eq!(grouped.concat(), tasks);
        assert!(groups(Vec::new(), 3).is_empty());
    }

    #[test]
    fn a_batch_passes_when_every_entry_completes_in_any_order() {
        let tasks = [task(0, 4096), task(4096, 4096)];
        assert_eq!(
            first_failed_entry(&tasks, &[done(1, 4096), done(0, 4096)]),
            Ok(())
        );
    }

    #[test]
    fn a_failed_entry_is_reported_at_its_file_offset() {
        let tasks = [task(0, 4096), task(8192, 4096), task(1 << 20, 4096)];
        let failed = IoEvent {
            cookie: 2,
            status: STATUS_FAILED,
            ret: (-5i64) as u64,
        };
        let short = done(1, 100);
        let (at, problem) =
            first_failed_entry(&tasks, &[done(0, 4096), failed, short]).unwrap_err();
        // The first in plan order: the short entry at 8192, not the failed one after it.
        assert_eq!(at.offset, 8192);
        assert_eq!(
            problem,
            EntryProblem::Short {
                done: 100,
                expected: 4096
            }
        );
        let (at, problem) =
            first_failed_entry(&tasks, &[done(0, 4096), done(1, 4096), failed]).unwrap_err();
        assert_eq!(
            (at.offset, problem.to_string().contains("failed")),
            (1 << 20, true)
        );
    }

    #[test]
    fn missing_repeated_unfinished_and_unknown_events_fail() {
        let tasks = [task(0, 4096), task(4096, 4096)];
        assert_eq!(
            first_failed_entry(&tasks, &[done(0, 4096)]).unwrap_err(),
            (task(4096, 4096), EntryProblem::NoEvent)
        );
        assert_eq!(
            first_failed_entry(&tasks, &[done(0, 4096), done(0, 4096), done(1, 4096)]).unwrap_err(),
            (task(0, 4096), EntryProblem::Twice)
        );
        let pending = IoEvent {
            cookie: 1,
            status: STATUS_PENDING,
            ret: 0,
        };
        assert!(first_failed_entry(&tasks, &[done(0, 4096), pending]).is_err());
        assert_eq!(
            first_failed_entry(&tasks, &[done(0, 4096), done(1, 4096), done(9, 4096)]).unwrap_err(),
            (task(0, 4096), EntryProblem::UnknownCookie { cookie: 9 })
        );
    }
}
