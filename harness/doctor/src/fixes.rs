//! The fix for each problem the doctor finds. Where the path verdict names a fix for the same
//! cause, the doctor uses the verdict's own text.

pub(crate) use gds_model::verdict::diagnose::{
    FS_FIX, NVFS_FIX, NVME_FIX, ODIRECT_FIX, STRICT_HINT, UDEV_FIX,
};

/// From `CufileError::NotFound` (gds-worker's libcufile.rs).
pub const LIBCUFILE_FIX: &str =
    "install the CUDA toolkit's cuFile (libcufile) or set GDS_GATE_LIBCUFILE to its path";
/// From `ConfigError::Syntax` (gds-model's cufile_config.rs).
pub const CONFIG_SYNTAX_FIX: &str = "fix the file or point CUFILE_ENV_PATH_JSON at a valid one";
/// From the KvikIO worker's launcher (launch/mod.rs).
pub const PYTHON_FIX: &str = "install Python 3, or point GDS_GATE_PYTHON (or the suite's `python:`) at an interpreter with kvikio and cupy";
/// From `--require-gpu` (gate.rs).
pub const DRIVER_FIX: &str =
    "run on a host with the NVIDIA driver and GDS installed (`nvidia-smi` should list the GPUs)";

pub const NVRTC_FIX: &str = "install the CUDA toolkit's NVRTC (`cuda-nvrtc-13-0`, or `pip install nvidia-cuda-nvrtc-cu13`) and put its lib folder on LD_LIBRARY_PATH";

pub const RW_STATS_FIX: &str = "`echo 1 | sudo tee /sys/module/nvidia_fs/parameters/rw_stats_enabled` (or load nvidia-fs with `rw_stats_enabled=1`)";
pub const IOMMU_FIX: &str = "NVIDIA's GDS guide: add `iommu=off` (or `intel_iommu=off` / `amd_iommu=off`; `iommu=pt` works on DGX systems) to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, update grub and reboot";
pub const ACS_FIX: &str = "disable ACS on the PCIe switches between the GPU and the NVMe drives (a BIOS setting on most servers; `setpci` per bridge otherwise), as NVIDIA's GDS guide describes";
pub const BAR1_FIX: &str = "cuFile maps GPU buffers through BAR1: enable Resizable BAR (Above 4G decoding) in the firmware, or use a GPU with a large BAR1 (`nvidia-smi -q -d MEMORY` shows it)";
pub const TOOLS_FIX: &str = "install the GDS tools (`gds-tools-<cuda version>`, e.g. `gds-tools-13-0`): gdscheck shows what cuFile supports, gds_stats its counters";
pub const SPACE_FIX: &str = "free space on that file system, point --data-dir (GDS_GATE_DATA_DIR) at a larger one, or select smaller suites";
pub const FORCE_COMPAT_FIX: &str = "set `properties.force_compat_mode: false` in the cufile.json in effect (or override it per scenario with the `cufile` key)";

/// The pip package of KvikIO for a CUDA major version.
pub fn kvikio_install(cuda_major: Option<u32>) -> String {
    match cuda_major {
        Some(major @ (12 | 13)) => format!("pip install kvikio-cu{major}"),
        _ => "pip install kvikio-cu13 (kvikio-cu12 for CUDA 12)".into(),
    }
}
