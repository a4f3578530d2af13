//! The `h2d` reader: what a fallback does. Each thread `pread`s into its own pinned bounce buffer
//! (`bounce_buffer_size`, like KvikIO's compat mode) and copies it to the GPU, so that a report can
//! show the GPUDirect path and the bounce path side by side on the same file.

use std::fs::File;

use super::{GpuReader, Opened, Pass, ReaderError, pread_exact, run_parallel};
use crate::gpu::{DeviceBuffer, Gpu, PinnedBuffer};
use gds_model::path::Path;
use gds_model::plan::ReadPlan;

pub struct Bounce<'g> {
    gpu: &'g mut Gpu,
    files: Vec<File>,
    device: DeviceBuffer,
    bounce: Vec<PinnedBuffer>,
}

impl<'g> Bounce<'g> {
    pub fn open(
        gpu: &'g mut Gpu,
        plan: &ReadPlan,
        nthreads: u32,
        bounce_size: u64,
        task_size: u64,
        capacity: u64,
    ) -> Result<Bounce<'g>, ReaderError> {
        let files = super::posix::open_all(plan)?;
        let device = gpu.alloc(capacity as usize)?;
        let size = bounce_size.min(task_size).max(1) as usize;
        let bounce = (0..nthreads.max(1))
            .map(|_| gpu.pinned(size))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Bounce {
            gpu,
            files,
            device,
            bounce,
        })
    }
}

impl GpuReader for Bounce<'_> {
    const PATH: Path = Path::Bounce;

    fn landing(&mut self) -> (&mut Gpu, &DeviceBuffer) {
        (self.gpu, &self.device)
    }

    fn read_pass(
        &mut self,
        plan: &ReadPlan,
        _nthreads: u32,
        task_size: u64,
    ) -> Result<Pass, ReaderError> {
        let binder = self.gpu.binder();
        let (files, device) = (&self.files, &self.device);
        let pass = run_parallel(plan.tasks(task_size), &mut self.bounce, |pinned, task| {
            binder.bind()?;
            let mut done = 0u64;
            while done < task.len {
                let n = (task.len - done).min(pinned.as_slice().len() as u64) as usize;
                pread_exact(
                    &files[task.file],
                    &plan.files[task.file].path,
                    task.offset + done,
                    &mut pinned.as_mut_slice()[..n],
                )?;
                crate::gpu::copy_to_device(pinned, n, device, task.buffer_offset + done)?;
                done += n as u64;
            }
            Ok::<(), ReaderError>(())
        })?;
        Ok(pass)
    }

    fn reopen(&mut self, plan: &ReadPlan) -> Result<Opened, ReaderError> {
        super::posix::reopen_all(&mut self.files, plan)
    }
}
