//! The `cufile-async` writer: the generator's bytes made in a device buffer by the fill kernel,
//! as for `cufile`, and every task written with `cuFileWriteAsync` on `queue_depth` registered
//! CUDA streams in turn, then the streams synchronised and every write's byte count checked
//! ([`crate::reader::async_io::Streams`], shared with the reader).

use std::fs::{File, OpenOptions};

use super::cufile::fill_device;
use super::{PlanWriter, sync_all};
use crate::gpu::{DeviceBuffer, Gpu, ThreadBinder};
use crate::libcufile::{Cufile, Handle, RegisteredBuffer};
use crate::reader::async_io::Streams;
use crate::reader::cufile::{register_buffer, register_files};
use crate::reader::{Pass, ReaderError};
use gds_model::path::Path;
use gds_model::plan::ReadPlan;
use gds_model::scenario::BufferKind;

pub struct AsyncWriter<'a> {
    // Only the context, not the GPU: a roundtrip's reader holds the GPU beside this writer.
    binder: ThreadBinder,
    // Field order is drop order: deregister the streams, the buffer and the handles before the
    // memory is freed and the files closed.
    streams: Streams<'a>,
    registered: Option<RegisteredBuffer<'a>>,
    handles: Vec<Handle<'a>>,
    files: Vec<File>,
    device: DeviceBuffer,
}

impl<'a> AsyncWriter<'a> {
    /// Creates and registers every file and `queue_depth` streams and fills the device buffer
    /// with what the files must hold; `cufile`'s driver must be open.
    pub fn open(
        gpu: &mut Gpu,
        cufile: &'a Cufile,
        plan: &ReadPlan,
        buffer: BufferKind,
        queue_depth: u32,
    ) -> Result<AsyncWriter<'a>, ReaderError> {
        let streams = Streams::open(gpu, cufile, queue_depth)?;
        let device = gpu.alloc(plan.total_bytes() as usize)?;
        fill_device(gpu, plan, &device)?;
        let (files, handles) = register_files(
            cufile,
            plan,
            OpenOptions::new().write(true).create(true).truncate(false),
        )?;
        let registered = register_buffer(cufile, &device, buffer)?;
        Ok(AsyncWriter {
            binder: gpu.binder(),
            streams,
            registered,
            handles,
            files,
            device,
        })
    }
}

impl PlanWriter for AsyncWriter<'_> {
    fn path(&self) -> Path {
        Path::Cufile
    }

    fn prepare(&mut self, plan: &ReadPlan) -> Result<(), ReaderError> {
        super::blank_all(plan, &self.files)
    }

    /// `nthreads` does not apply: every write is enqueued at once over `queue_depth` streams.
    fn write(
        &mut self,
        plan: &ReadPlan,
        _nthreads: u32,
        task_size: u64,
    ) -> Result<Pass, ReaderError> {
        self.binder.bind()?;
        let device = (self.device.ptr, self.registered.is_some());
        self.streams
            .pass(true, plan, task_size, &self.handles, device)
    }

    fn sync(&mut self, plan: &ReadPlan) -> Result<(), ReaderError> {
        sync_all(plan, &self.files)
    }
}
