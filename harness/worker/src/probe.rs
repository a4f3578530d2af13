//! What the gate needs to know from CUDA and cuFile, asked in a worker process: whether libcuda
//! loads, the CUDA version the driver supports, how many GPUs CUDA numbers, and libcufile (where
//! it was looked for, what was found, `cuFileDriverOpen` and the driver's properties).

use cudarc::driver::sys;
use gds_model::protocol::{
    CufileProbe, CufileProbeDepth, DriverProbe, LoadedCufile, PROTOCOL_VERSION, ProbeResult,
    ProbeSpec, Unavailable,
};

use crate::libcuda::LibcudaError;
use crate::libcufile::{Cufile, CufileError};

pub fn run(spec: ProbeSpec) -> ProbeResult {
    if spec.protocol != PROTOCOL_VERSION {
        let why = format!(
            "the gate speaks protocol {}, this worker {PROTOCOL_VERSION}; rebuild the gate",
            spec.protocol
        );
        return ProbeResult::failed(&spec, &why);
    }
    // GPU work needs the driver library; KvikIO needs it even for host reads. A library without
    // the functions the questions below call is as unusable as none.
    let libcuda = crate::libcuda::check();
    ProbeResult {
        protocol: PROTOCOL_VERSION,
        cuda_version: spec.cuda_version.then(|| after(&libcuda, cuda_version)),
        gpu_count: spec.gpu_count.then(|| after(&libcuda, gpu_count)),
        cufile: match spec.cufile {
            CufileProbeDepth::None => None,
            CufileProbeDepth::Load => Some(cufile(false, "not attempted (quick check)".into())),
            CufileProbeDepth::OpenDriver => Some(match &libcuda {
                Ok(()) => cufile(true, String::new()),
                Err(why) => cufile(false, format!("not attempted: {why}")),
            }),
        },
        libcuda: libcuda.map_err(|why| Unavailable::chain(&why)),
        nvrtc: Some(crate::libcuda::nvrtc().map_err(|why| Unavailable::chain(&why))),
    }
}

/// `question`, asked only when the driver library passed its check.
fn after<T>(
    libcuda: &Result<(), LibcudaError>,
    question: fn() -> Result<T, Unavailable>,
) -> Result<T, Unavailable> {
    match libcuda {
        Ok(()) => question(),
        Err(why) => Err(Unavailable::chain(why)),
    }
}

/// `cuDriverGetVersion` (no `cuInit` needed), as `major.minor`. Asked only once
/// [`crate::libcuda::check`] found the library and the function: cudarc panics otherwise.
fn cuda_version() -> Result<String, Unavailable> {
    let mut version = 0;
    // SAFETY: a valid out-pointer; the library and the function are present (checked first).
    let result = unsafe { sys::cuDriverGetVersion(&mut version) };
    if result != sys::CUresult::CUDA_SUCCESS || version <= 0 {
        return Err(format!("cuDriverGetVersion failed: {result:?}").into());
    }
    Ok(format!("{}.{}", version / 1000, (version % 1000) / 10))
}

/// `cuDeviceGetCount`, or why it could not be asked; like [`cuda_version`], only after the check.
fn gpu_count() -> Result<u32, Unavailable> {
    match cudarc::driver::CudaContext::device_count() {
        Ok(count) => Ok(u32::try_from(count).unwrap_or(0)),
        Err(error) => Err(format!("cuDeviceGetCount failed ({error})").into()),
    }
}

/// Loads libcufile and, when `open`, opens its driver and reads its properties; `not_opened` says
/// why the driver was not opened otherwise.
fn cufile(open: bool, not_opened: String) -> CufileProbe {
    let searched = crate::libcufile::candidates();
    let cufile = match Cufile::load() {
        Ok(cufile) => cufile,
        Err(error) => {
            let why = match error {
                CufileError::NotFound { .. } => "libcufile not found".to_string(),
                other => other.to_string(),
            };
            return CufileProbe {
                searched,
                driver: DriverProbe::NotAttempted(format!("not attempted: {why}")),
                library: Err(why.into()),
                entry_points: None,
            };
        }
    };
    let library = Ok(LoadedCufile {
        path: cufile.path.clone(),
        version: cufile.version.to_string(),
    });
    let driver = if open {
        match cufile.open_driver() {
            Ok(()) => DriverProbe::Opened {
                properties: cufile
                    .properties()
                    .map_err(|error| Unavailable::chain(&error)),
            },
            Err(error) => DriverProbe::Failed {
                error: error.to_string(),
            },
        }
    } else {
        DriverProbe::NotAttempted(not_opened)
    };
    CufileProbe {
        searched,
        library,
        driver,
        entry_points: Some(cufile.entry_points()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_of_another_protocol_says_so_in_every_part() {
        let result = run(ProbeSpec {
            protocol: PROTOCOL_VERSION + 1,
            cuda_version: true,
            gpu_count: false,
            cufile: CufileProbeDepth::Load,
        });
        let why = result.libcuda.unwrap_err().0;
        assert!(why.contains("rebuild the gate"), "{why}");
        assert!(result.cuda_version.unwrap().is_err());
        assert!(result.gpu_count.is_none());
        assert!(result.cufile.unwrap().library.is_err());
    }
}
