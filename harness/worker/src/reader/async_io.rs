//! The `cufile-async` reader: the files opened and registered as for `cufile`, `queue_depth` CUDA
//! streams registered with `cuFileStreamRegister`, and every task of a pass enqueued with
//! `cuFileReadAsync` on them in turn from one thread, then the streams synchronised: the
//! stream-ordered use of cuFile, with the pass's I/O in flight at once. The parameters of each call
//! live in a slot the pass keeps until the streams are synchronised (cuFile reads the size and
//! offsets and writes the byte count when the stream reaches the call); then every slot's byte
//! count is checked, and a short or failed transfer fails the pass naming its file and offset.
//! [`Streams`] is shared with the `cufile-async` writer (`cuFileWriteAsync`).

use std::fs::{File, OpenOptions};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::CudaStream;

use super::cufile::{register_buffer, register_files};
use super::{GpuReader, Pass, ReaderError};
use crate::gpu::{DeviceBuffer, Gpu, GpuError};
use crate::libcufile::stream::{AsyncSlot, RegisteredStream};
use crate::libcufile::{Cufile, Handle, RegisteredBuffer};
use gds_model::path::Path;
use gds_model::plan::{ReadPlan, Segment};
use gds_model::scenario::BufferKind;

/// `queue_depth` CUDA streams registered with cuFile, and one pass of stream-ordered calls on
/// them.
pub struct Streams<'a> {
    // Field order is drop order: deregister before the streams are destroyed.
    registered: Vec<RegisteredStream<'a>>,
    cuda: Vec<Arc<CudaStream>>,
}

impl<'a> Streams<'a> {
    pub fn open(
        gpu: &Gpu,
        cufile: &'a Cufile,
        queue_depth: u32,
    ) -> Result<Streams<'a>, ReaderError> {
        let cuda = (0..queue_depth.max(1))
            .map(|_| gpu.new_stream())
            .collect::<Result<Vec<_>, GpuError>>()?;
        let registered = cuda
            .iter()
            .map(|stream| cufile.register_stream(stream))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Streams { registered, cuda })
    }

    /// Every task of `plan` enqueued in turn on the streams (`cuFileWriteAsync` when `write`, else
    /// `cuFileReadAsync`), between its file and `device` (the allocation's address, and whether
    /// it is registered with cuFile), then every stream synchronised and
    /// every transfer checked. The pass is timed from the first enqueue to the last
    /// synchronisation; each task is one call, with no per-call latency (calls return when
    /// enqueued). The current thread must have the GPU's context.
    pub fn pass(
        &self,
        write: bool,
        plan: &ReadPlan,
        task_size: u64,
        handles: &[Handle<'_>],
        device: (u64, bool),
    ) -> Result<Pass, ReaderError> {
        let call = if write {
            "cuFileWriteAsync"
        } else {
            "cuFileReadAsync"
        };
        let tasks = plan.tasks(task_size);
        let path = |task: &Segment| plan.files[task.file].path.display().to_string();
        // Allocated before the timed section and never moved until the streams are synchronised:
        // cuFile holds pointers into it.
        let (device_ptr, registered) = device;
        let mut slots: Vec<AsyncSlot> = tasks
            .iter()
            .map(|task| {
                AsyncSlot::new(
                    device_ptr,
                    registered,
                    task.len,
                    task.offset,
                    task.buffer_offset,
                )
            })
            .collect();
        let base = slots.as_mut_ptr();
        let start = Instant::now();
        let mut enqueued = Ok(());
        for (index, task) in tasks.iter().enumerate() {
            let stream = &self.registered[index % self.registered.len()];
            // SAFETY: `slots` is neither moved nor touched until every stream is synchronised
            // below (also when an enqueue fails part-way); the task lies in the device buffer.
            enqueued = unsafe { stream.enqueue(write, &handles[task.file], base.add(index)) }
                .map_err(|source| ReaderError::AsyncEnqueue {
                    call,
                    path: path(task),
                    offset: task.offset,
                    len: task.len,
                    source,
                });
            if enqueued.is_err() {
                break;
            }
        }
        let synchronized = self.synchronize_all(call, super::batch::stall_limit(&tasks, 1));
        let elapsed = start.elapsed();
        enqueued?;
        synchronized?;
        first_failed_slot(&tasks, &slots).map_err(|(task, problem)| {
            ReaderError::AsyncTransfer {
                call,
                path: path(&task),
                offset: task.offset,
                len: task.len,
                source: problem,
            }
        })?;
        Ok(Pass {
            elapsed,
            calls: tasks.len() as u64,
            latency: None,
            first_call: None,
            cpu: None,
        })
    }

    /// Waits for every stream; one still busy after `bound` (the pass at the slowest rate the
    /// gate allows, and more) is named by the watchdog while the wait goes on.
    fn synchronize_all(&self, call: &str, bound: Duration) -> Result<(), ReaderError> {
        let streams = self.cuda.len();
        for (index, stream) in self.cuda.iter().enumerate() {
            let detail = format!("stream {} of {streams}, after its {call} calls", index + 1);
            let synchronized = crate::watch::bounded("cuStreamSynchronize", detail, bound, || {
                stream.synchronize()
            });
            synchronized.map_err(|source| {
                ReaderError::Gpu(GpuError::Driver {
                    context: format!("synchronize a stream of {call} calls"),
                    source,
                })
            })?;
        }
        Ok(())
    }
}

pub struct AsyncReader<'a> {
    gpu: &'a mut Gpu,
    // Field order is drop order: deregister the streams, the buffer and the handles before the
    // memory is freed and the files closed.
    streams: Streams<'a>,
    registered: Option<RegisteredBuffer<'a>>,
    handles: Vec<Handle<'a>>,
    _files: Vec<File>,
    device: DeviceBuffer,
}

impl<'a> AsyncReader<'a> {
    /// Opens and registers every file and `queue_depth` streams; `cufile`'s driver must be open.
    /// `capacity`: the device buffer, the whole plan or one window of it (each window's plan
    /// starts at buffer offset 0, and its reads are all synchronised before it is verified).
    pub fn open(
        gpu: &'a mut Gpu,
        cufile: &'a Cufile,
        plan: &ReadPlan,
        buffer: BufferKind,
        queue_depth: u32,
        capacity: u64,
    ) -> Result<AsyncReader<'a>, ReaderError> {
        let streams = Streams::open(gpu, cufile, queue_depth)?;
        let device = gpu.alloc(capacity as usize)?;
        let (files, handles) = register_files(cufile, plan, OpenOptions::new().read(true))?;
        let registered = register_buffer(cufile, &device, buffer)?;
        Ok(AsyncReader {
            gpu,
            streams,
            registered,
            handles,
            _files: files,
            device,
        })
    }
}

/// What a slot's byte count says about its transfer, once its stream is synchronised.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SlotProblem {
    #[error("{done} of {expected} bytes were transferred")]
    Short { done: u64, expected: u64 },
    #[error("it failed: {} ({code})", gds_model::cufile_abi::describe(*code as i32))]
    Failed { code: i64 },
}

/// Every task judged by its slot after the streams were synchronised: all its bytes, or the
/// first problem in plan order with its task.
pub(crate) fn first_failed_slot(
    tasks: &[Segment],
    slots: &[AsyncSlot],
) -> Result<(), (Segment, SlotProblem)> {
    for (task, slot) in tasks.iter().zip(slots) {
        let problem = match slot.done {
            done if done < 0 => SlotProblem::Failed { code: done as i64 },
            done if done as u64 != task.len => SlotProblem::Short {
                done: done as u64,
                expected: task.len,
            },
            _ => continue,
        };
        return Err((*task, problem));
    }
    Ok(())
}

impl GpuReader for AsyncReader<'_> {
    const PATH: Path = Path::Cufile;

    fn landing(&mut self) -> (&mut Gpu, &DeviceBuffer) {
        (self.gpu, &self.device)
    }

    /// `nthreads` does not apply: the I/O in flight is every enqueued call, spread over
    /// `queue_depth` streams.
    fn read_pass(
        &mut self,
        plan: &ReadPlan,
        _nthreads: u32,
        task_size: u64,
    ) -> Result<Pass, ReaderError> {
        self.gpu.bind()?;
        let device = (self.device.ptr, self.registered.is_some());
        self.streams
            .pass(false, plan, task_size, &self.handles, device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(offset: u64, len: u64) -> Segment {
        Segment {
            file: 0,
            offset,
            len,
            buffer_offset: offset,
        }
    }

    fn slot(task: &Segment, done: isize) -> AsyncSlot {
        AsyncSlot {
            done,
            ..AsyncSlot::new(
                0x7f00_0000_0000,
                true,
                task.len,
                task.offset,
                task.buffer_offset,
            )
        }
    }

    #[test]
    fn a_slot_names_where_cufile_finds_the_call_parameters() {
        let s = AsyncSlot::new(0x7f00_0000_0000, true, 4096, 1 << 30, 8192);
        assert_eq!(
            (s.base, s.size, s.file_offset, s.buffer_offset, s.done),
            (0x7f00_0000_0000, 4096, 1 << 30, 8192, 0)
        );
    }

    /// cufile.h wants a registered buffer named by its registered base; libcufile 1.15 failed
    /// (`-5`) every call on an unregistered buffer past the extent of the first one in flight at
    /// the same base, so there each call is named at its own address, with offset 0.
    #[test]
    fn an_unregistered_buffer_is_named_at_each_calls_own_address() {
        let base = 0x7f03_2800_0000;
        let tasks = [task(0, 4 << 20), task(4 << 20, 4 << 20), task(8 << 20, 100)];
        let unregistered: Vec<(u64, i64)> = tasks
            .iter()
            .map(|t| AsyncSlot::new(base, false, t.len, t.offset, t.buffer_offset))
            .map(|s| (s.base, s.buffer_offset))
            .collect();
        assert_eq!(
            unregistered,
            [(base, 0), (base + (4 << 20), 0), (base + (8 << 20), 0)]
        );
        let registered: Vec<(u64, i64)> = tasks
            .iter()
            .map(|t| AsyncSlot::new(base, true, t.len, t.offset, t.buffer_offset))
            .map(|s| (s.base, s.buffer_offset))
            .collect();
        assert_eq!(registered, [(base, 0), (base, 4 << 20), (base, 8 << 20)]);
        // Either way the call reads the same bytes at the same place.
        let s = AsyncSlot::new(base, false, 100, 8 << 20, 8 << 20);
        assert_eq!((s.size, s.file_offset), (100, 8 << 20));
    }

    #[test]
    fn every_transfer_must_be_whole_and_the_first_bad_one_is_named() {
        let tasks = [task(0, 4096), task(4096, 4096), task(8192, 100)];
        let whole: Vec<AsyncSlot> = tasks.iter().map(|t| slot(t, t.len as isize)).collect();
        assert_eq!(first_failed_slot(&tasks, &whole), Ok(()));
        let mut bad = whole.clone();
        bad[1].done = 512;
        bad[2].done = -5027;
        let (at, problem) = first_failed_slot(&tasks, &bad).unwrap_err();
        assert_eq!(
            (at.offset, problem),
            (
                4096,
                SlotProblem::Short {
                    done: 512,
                    expected: 4096
                }
            )
        );
        bad[1].done = 4096;
        let (at, problem) = first_failed_slot(&tasks, &bad).unwrap_err();
        assert_eq!(at.offset, 8192);
        assert!(problem.to_string().contains("5027"), "{problem}");
        // A slot cuFile never reached (the stream did not run it) counts 0 bytes: short.
        let untouched: Vec<AsyncSlot> = tasks.iter().map(|t| slot(t, 0)).collect();
        assert!(first_failed_slot(&tasks, &untouched).is_err());
    }
}
