//! `bench --gpu`'s measurements that need the GPU, made in a worker: what verification costs on
//! the GPU, and how the `cufile` reader compares with `dd iflag=direct` on the same cold file.
//! The gate starts it, prepares the file and renders the tables.
//!
//! Verification is judged against a kernel that only reads the same buffer: both are bound by
//! memory bandwidth, so the ratio says how much the regeneration and mixing cost on top.

use std::io;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};

use gds_model::plan::ReadPlan;
use gds_model::protocol::{
    GpuBenchResult, GpuBenchSpec, KernelRates, PROTOCOL_VERSION, StorageRates, Unavailable,
};
use gds_model::scenario::{BufferKind, Pattern};

use crate::gpu::{Gpu, GpuError, copy_to_device};
use crate::libcufile::{Cufile, CufileError};
use crate::reader::cufile::CufileReader;
use crate::reader::{PlanReader, ReaderError};

pub fn run(spec: GpuBenchSpec) -> GpuBenchResult {
    let failed = GpuBenchResult::failed;
    if spec.protocol != PROTOCOL_VERSION {
        return failed(format!(
            "the gate speaks protocol {}, this worker {PROTOCOL_VERSION}; rebuild the gate",
            spec.protocol
        ));
    }
    let mut gpu = match Gpu::open(0) {
        Ok(gpu) => gpu,
        Err(error) => return failed(error.to_string()),
    };
    let kernels =
        kernels(&mut gpu, spec.size, spec.runs).map_err(|error| Unavailable::chain(&error));
    let storage = kernels
        .is_ok()
        .then(|| storage(&mut gpu, &spec).map_err(|error| Unavailable::chain(&error)));
    GpuBenchResult {
        protocol: PROTOCOL_VERSION,
        gpu: Ok(gpu.name.clone()),
        kernels: Some(kernels),
        storage,
    }
}

fn kernels(gpu: &mut Gpu, size: u64, runs: usize) -> Result<KernelRates, GpuError> {
    let buffer = gpu.alloc(size as usize)?;
    // Generated data, uploaded in slices through one pinned buffer.
    let chunk = 256usize << 20;
    let mut pinned = gpu.pinned(chunk)?;
    let mut offset = 0u64;
    while offset < size {
        let len = chunk.min((size - offset) as usize);
        gds_model::verify::fill_parallel(1, offset, &mut pinned.as_mut_slice()[..len]);
        copy_to_device(&pinned, len, &buffer, offset)?;
        offset += len as u64;
    }
    let measure = |gpu: &mut Gpu,
                   kernel: &dyn Fn(&mut Gpu) -> Result<(), GpuError>|
     -> Result<Vec<f64>, GpuError> {
        kernel(gpu)?; // warm-up, and the one-time NVRTC compile
        let mut rates = Vec::new();
        for _ in 0..runs {
            kernel(gpu)?;
            rates.push(size as f64 / gpu.last_kernel_seconds / 1e12);
        }
        Ok(rates)
    };
    Ok(KernelRates {
        plain_read: measure(gpu, &|gpu| gpu.plain_read(&buffer))?,
        exact_compare: measure(gpu, &|gpu| {
            gpu.exact_compare(&buffer, 0, size, 1, 0)
                .map(|(bad, _)| assert_eq!(bad, 0, "generated data must verify"))
        })?,
        checksum: measure(gpu, &|gpu| gpu.checksum(&buffer, 0, size, 0).map(|_| ()))?,
    })
}

/// Why the storage comparison stopped.
#[derive(Debug, thiserror::Error)]
enum StorageError {
    #[error("cannot drop `{}` from the page cache", path.display())]
    DropCache {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot run dd; the storage comparison needs `dd` on PATH")]
    StartDd(#[source] io::Error),
    #[error("dd failed: {0}")]
    Dd(ExitStatus),
    #[error(transparent)]
    Cufile(#[from] CufileError),
    #[error(transparent)]
    Reader(#[from] ReaderError),
}

/// The cufile reader and `dd iflag=direct bs=16M` on the same cold file, interleaved run by run
/// (dd, then each reader setting) so that the disk's drift between runs hits both alike: on a
/// shared virtual disk it moves by more than the 10% being judged.
fn storage(gpu: &mut Gpu, spec: &GpuBenchSpec) -> Result<StorageRates, StorageError> {
    let path = spec.file.path.clone();
    let size = spec.file.size;
    let drop_cache = || {
        gds_model::cache::drop_path(&path).map_err(|source| StorageError::DropCache {
            path: path.clone(),
            source,
        })
    };
    let dd = || -> Result<f64, StorageError> {
        drop_cache()?;
        let start = std::time::Instant::now();
        let status = Command::new("dd")
            .arg(format!("if={}", path.display()))
            .args(["of=/dev/null", "bs=16M", "iflag=direct", "status=none"])
            .status()
            .map_err(StorageError::StartDd)?;
        if !status.success() {
            return Err(StorageError::Dd(status));
        }
        Ok(size as f64 / start.elapsed().as_secs_f64() / 1e9)
    };
    let library = Cufile::load()?;
    library.open_driver()?;
    let plan = ReadPlan::new(vec![spec.file.clone()], &Pattern::Whole);
    let mut reader = CufileReader::open(
        gpu,
        &library,
        &plan,
        BufferKind::Unregistered,
        plan.total_bytes(),
    )?;
    let mut rates = StorageRates {
        dd: Vec::new(),
        readers: vec![(Vec::new(), Vec::new()); spec.settings.len()],
    };
    for _ in 0..spec.runs {
        let dd_rate = dd()?;
        rates.dd.push(dd_rate);
        for (&(threads, task), (rates, ratios)) in spec.settings.iter().zip(&mut rates.readers) {
            drop_cache()?;
            reader.prepare()?;
            let seconds = reader.read(&plan, threads, task)?.elapsed.as_secs_f64();
            let rate = size as f64 / seconds / 1e9;
            rates.push(rate);
            ratios.push(rate / dd_rate);
        }
    }
    Ok(rates)
}
