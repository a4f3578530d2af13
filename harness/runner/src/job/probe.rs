//! The gate's questions to CUDA and cuFile, each answered by a worker process
//! ([`gds_model::protocol::ProbeSpec`]): a crash inside libcuda or libcufile fails the probe, not
//! the gate.

use std::sync::OnceLock;
use std::time::Duration;

use gds_model::protocol::{
    CufileProbeDepth, PROTOCOL_VERSION, ProbeResult, ProbeSpec, Unavailable,
};

/// A probe needs no I/O of note; a minute means it hangs.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs one probe; a probe that could not answer says why in every part it was asked.
pub fn probe(cuda_version: bool, gpu_count: bool, cufile: CufileProbeDepth) -> ProbeResult {
    let spec = ProbeSpec {
        protocol: PROTOCOL_VERSION,
        cuda_version,
        gpu_count,
        cufile,
    };
    super::run("probe", &spec, TIMEOUT).unwrap_or_else(|why| {
        let why = gds_model::error_line(&why);
        ProbeResult::failed(&spec, &format!("the probe failed: {why}"))
    })
}

/// What every run asks once: whether libcuda loads, the CUDA version, and libcufile loaded (its
/// driver not opened).
pub fn host() -> &'static ProbeResult {
    static HOST: OnceLock<ProbeResult> = OnceLock::new();
    HOST.get_or_init(|| probe(true, false, CufileProbeDepth::Load))
}

/// The GPUs CUDA numbers here (`cuDeviceGetCount`, which initialises CUDA: asked only when a
/// trial needs it), once per process.
pub fn gpu_count() -> Result<u32, Unavailable> {
    static COUNT: OnceLock<Result<u32, Unavailable>> = OnceLock::new();
    COUNT
        .get_or_init(|| {
            probe(false, true, CufileProbeDepth::None)
                .gpu_count
                .unwrap_or_else(|| Err("the probe did not count the GPUs".into()))
        })
        .clone()
}
