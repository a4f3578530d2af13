//! `libcuda.so.1` as cudarc will load it, checked before the first call into it. cudarc resolves
//! each driver function at its first call and panics when the library lacks it (a stub, a broken
//! or foreign install), which would end the worker without an answer; this says which function
//! is missing instead. NVRTC, which compiles the GPU verification kernels, is checked the same
//! way: a host with the driver and libcufile but no NVRTC cannot verify a GPU read.

/// The driver functions the probe and opening a GPU call first.
const ENTRY_POINTS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDeviceGetName",
    "cuDevicePrimaryCtxRetain",
    "cuCtxSetCurrent",
];

/// Why the driver library cannot be used: absent, or without a function cudarc would call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LibcudaError {
    #[error("no NVIDIA driver (libcuda.so.1 not found)")]
    NotFound,
    #[error(
        "the NVIDIA driver library `{library}` has no `{symbol}`: it is not a complete libcuda; reinstall the driver, or take the library that shadows it off LD_LIBRARY_PATH"
    )]
    MissingEntryPoint {
        library: String,
        symbol: &'static str,
    },
}

/// No NVRTC library loads, under any of the names cudarc tries.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("NVRTC not found (looked for {first} and {others} other names)")]
pub struct NvrtcNotFound {
    first: String,
    others: usize,
}

/// `Ok` when the driver library loads and has every entry point; otherwise why not, naming the
/// library and the missing function.
pub fn check() -> Result<(), LibcudaError> {
    let loaded = cudarc::get_lib_name_candidates("cuda")
        .into_iter()
        // SAFETY: loading the driver library runs its initialisers, as cudarc's own load does.
        .find_map(|name| Some((unsafe { libloading::Library::new(&name) }.ok()?, name)));
    let Some((library, name)) = loaded else {
        return Err(LibcudaError::NotFound);
    };
    for symbol in ENTRY_POINTS {
        // SAFETY: only the symbol's address is looked up; nothing is called through it.
        if unsafe { library.get::<*const ()>(symbol.as_bytes()) }.is_err() {
            return Err(LibcudaError::MissingEntryPoint {
                library: name,
                symbol,
            });
        }
    }
    Ok(())
}

/// The NVRTC library cudarc would load, by the name it loaded under, or why none loads.
pub fn nvrtc() -> Result<String, NvrtcNotFound> {
    let candidates = cudarc::get_lib_name_candidates("nvrtc");
    for name in &candidates {
        // SAFETY: loading NVRTC runs its initialisers, as cudarc's own load does.
        let Ok(library) = (unsafe { libloading::Library::new(name) }) else {
            continue;
        };
        // SAFETY: only the symbol's address is looked up; nothing is called through it.
        if unsafe { library.get::<*const ()>(b"nvrtcCompileProgram") }.is_ok() {
            return Ok(name.clone());
        }
    }
    Err(NvrtcNotFound {
        first: candidates
            .first()
            .map_or("libnvrtc.so", String::as_str)
            .to_string(),
        others: candidates.len().saturating_sub(1),
    })
}
