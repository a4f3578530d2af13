//! The `cufile` writer: the generator's bytes made in a device buffer by a kernel (no host copy),
//! written with `cuFileWrite` by N threads in `task_size` tasks (the reader's split) to files
//! opened `O_WRONLY | O_CREAT | O_DIRECT` and registered with cuFile, the buffer optionally
//! `cuFileBufRegister`ed. Which path cuFile took is told by its write counters, read around the
//! trial (nvfs, p2p, or its POSIX compat mode).

use std::fs::{File, OpenOptions};

use super::{PlanWriter, sync_all};
use crate::gpu::{DeviceBuffer, Gpu, ThreadBinder};
use crate::libcufile::{Cufile, Handle, RegisteredBuffer};
use crate::reader::cufile::{register_buffer, register_files};
use crate::reader::{Pass, ReaderError, run_parallel};
use gds_model::plan::ReadPlan;
use gds_model::scenario::BufferKind;

pub struct CufileWriter<'a> {
    // Only the context, not the GPU: a roundtrip's reader holds the GPU beside this writer.
    binder: ThreadBinder,
    // Field order is drop order: deregister the buffer and handles before freeing and closing.
    _registered: Option<RegisteredBuffer<'a>>,
    handles: Vec<Handle<'a>>,
    files: Vec<File>,
    device: DeviceBuffer,
}

impl<'a> CufileWriter<'a> {
    /// Creates and registers every file and fills the device buffer with what they must hold;
    /// `cufile`'s driver must be open.
    pub fn open(
        gpu: &mut Gpu,
        cufile: &'a Cufile,
        plan: &ReadPlan,
        buffer: BufferKind,
    ) -> Result<CufileWriter<'a>, ReaderError> {
        let device = gpu.alloc(plan.total_bytes() as usize)?;
        for (index, file) in plan.files.iter().enumerate() {
            if let (Some(seed), Some(base)) = (file.seed, gds_model::write::file_base(plan, index))
            {
                gpu.fill(&device, base, file.size, seed)?;
            }
        }
        let (files, handles) = register_files(
            cufile,
            plan,
            OpenOptions::new().write(true).create(true).truncate(true),
        )?;
        let registered = register_buffer(cufile, &device, buffer)?;
        Ok(CufileWriter {
            binder: gpu.binder(),
            _registered: registered,
            handles,
            files,
            device,
        })
    }
}

impl PlanWriter for CufileWriter<'_> {
    fn path(&self) -> &'static str {
        "cufile"
    }

    fn prepare(&mut self, plan: &ReadPlan) -> Result<(), ReaderError> {
        // Emptied through the registered descriptors, which stay registered.
        for (planned, file) in plan.files.iter().zip(&self.files) {
            file.set_len(0).map_err(|source| ReaderError::Create {
                path: planned.path.display().to_string(),
                source,
            })?;
        }
        Ok(())
    }

    fn write(
        &mut self,
        plan: &ReadPlan,
        nthreads: u32,
        task_size: u64,
    ) -> Result<Pass, ReaderError> {
        let (binder, handles, device) = (&self.binder, &self.handles, &self.device);
        let mut threads = vec![(); nthreads.max(1) as usize];
        run_parallel(plan.tasks(task_size), &mut threads, |_, task| {
            binder.bind()?;
            handles[task.file]
                .write_exact(device.ptr, task.buffer_offset, task.offset, task.len)
                .map_err(|source| ReaderError::CufileWrite {
                    path: plan.files[task.file].path.display().to_string(),
                    offset: task.offset,
                    len: task.len,
                    source,
                })
        })
        // cuFileWrite returns once the bytes are in the file (or its page cache): nothing on the
        // GPU is left to wait for.
    }

    fn sync(&mut self, plan: &ReadPlan) -> Result<(), ReaderError> {
        sync_all(plan, &self.files)
    }
}
