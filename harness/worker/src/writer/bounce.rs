//! The `h2d` writer: what a fallback does on the way out. The generator's bytes are made in a
//! device buffer by a kernel; each thread copies its task to its own pinned bounce buffer
//! (`bounce_buffer_size`, like KvikIO's compat mode) and `pwrite`s it, so that a report shows the
//! GPUDirect write path and the bounce path side by side.

use std::fs::File;

use super::{PlanWriter, create_all, open_all, pwrite_exact, sync_all};
use crate::gpu::{DeviceBuffer, Gpu, PinnedBuffer, ThreadBinder};
use crate::reader::{Pass, ReaderError, run_parallel};
use gds_model::path::Path;
use gds_model::plan::ReadPlan;

pub struct BounceWriter {
    // Only the context, not the GPU: a roundtrip's reader holds the GPU beside this writer.
    binder: ThreadBinder,
    files: Vec<File>,
    device: DeviceBuffer,
    bounce: Vec<PinnedBuffer>,
}

impl BounceWriter {
    /// Creates the files, fills the device buffer with what they must hold and allocates one
    /// bounce buffer per thread.
    pub fn open(
        gpu: &mut Gpu,
        plan: &ReadPlan,
        nthreads: u32,
        bounce_size: u64,
        task_size: u64,
    ) -> Result<BounceWriter, ReaderError> {
        let device = gpu.alloc(plan.total_bytes() as usize)?;
        super::cufile::fill_device(gpu, plan, &device)?;
        let size = bounce_size.min(task_size).max(1) as usize;
        let bounce = (0..nthreads.max(1))
            .map(|_| gpu.pinned(size))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(BounceWriter {
            binder: gpu.binder(),
            files: open_all(plan)?,
            device,
            bounce,
        })
    }
}

impl PlanWriter for BounceWriter {
    fn path(&self) -> Path {
        Path::Bounce
    }

    fn prepare(&mut self, plan: &ReadPlan) -> Result<(), ReaderError> {
        self.files = create_all(plan)?;
        Ok(())
    }

    fn write(
        &mut self,
        plan: &ReadPlan,
        _nthreads: u32,
        task_size: u64,
    ) -> Result<Pass, ReaderError> {
        let (binder, files, device) = (&self.binder, &self.files, &self.device);
        run_parallel(plan.tasks(task_size), &mut self.bounce, |pinned, task| {
            binder.bind()?;
            let mut done = 0u64;
            while done < task.len {
                let n = (task.len - done).min(pinned.as_slice().len() as u64) as usize;
                crate::gpu::copy_to_host(device, task.buffer_offset + done, pinned, n)?;
                pwrite_exact(
                    &files[task.file],
                    &plan.files[task.file].path,
                    task.offset + done,
                    &pinned.as_slice()[..n],
                )?;
                done += n as u64;
            }
            Ok::<(), ReaderError>(())
        })
    }

    fn sync(&mut self, plan: &ReadPlan) -> Result<(), ReaderError> {
        sync_all(plan, &self.files)
    }
}
