//! What the doctor knows about a host: plain data, serialisable, so that a host's facts can be
//! captured to JSON on one machine and judged anywhere (the checks are pure functions of them).
//!
//! Whatever could not be read is a [`Fact::Unknown`] that says why; nothing here is guessed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::gdscheck::GdscheckReport;
use gds_model::cufile_abi::DriverProperties;
use gds_model::topology::{DiskLink, GpuLink, HostTopology, NumaNode, PcieLink};

/// Version of the facts' JSON layout; bumped when a field changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// The cufile.json settings the doctor reports, with cuFile's documented defaults.
pub const SETTINGS: &[(&str, &str)] = &[
    ("properties.allow_compat_mode", "true"),
    ("properties.force_compat_mode", "false"),
    ("properties.use_pci_p2pdma", "false"),
    ("profile.cufile_stats", "0"),
    ("execution.max_io_threads", "4"),
    ("execution.parallel_io", "true"),
    ("execution.max_request_parallelism", "4"),
];

/// A value read from the host, or why it could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fact<T> {
    Known(T),
    Unknown(String),
}

impl<T> Fact<T> {
    pub fn known(&self) -> Option<&T> {
        match self {
            Fact::Known(value) => Some(value),
            Fact::Unknown(_) => None,
        }
    }

    /// Why the fact is unknown, when it is.
    pub fn why(&self) -> Option<&str> {
        match self {
            Fact::Known(_) => None,
            Fact::Unknown(why) => Some(why),
        }
    }

    /// Unknown because of `error`, its causes on the same line: a fact's reason is one line.
    pub fn because(error: &dyn std::error::Error) -> Fact<T> {
        Fact::Unknown(gds_model::error_line(error))
    }

    pub fn from_result<E: std::error::Error>(result: Result<T, E>) -> Fact<T> {
        match result {
            Ok(value) => Fact::Known(value),
            Err(error) => Fact::because(&error),
        }
    }
}

/// Everything the checks look at.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    pub schema_version: u32,
    pub provenance: Provenance,
    pub driver: DriverFacts,
    pub gpus: Fact<Vec<Gpu>>,
    pub cufile: CufileFacts,
    pub nvidia_fs: NvfsFacts,
    pub data_dir: DataDirFacts,
    pub platform: PlatformFacts,
    pub config: ConfigFacts,
    pub kvikio: KvikioFacts,
    pub tools: ToolFacts,
    pub gdscheck: Fact<GdscheckFacts>,
}

impl Facts {
    /// The smallest GPU's memory in bytes, when every GPU lets two processes hold a CUDA context
    /// at once (compute mode `Default`), which a worker started while another exits needs; `None`
    /// when either is not known.
    pub fn room_for_two_workers(&self) -> Option<u64> {
        room_for_two_workers(&self.gpus)
    }

    /// Where the GPUs and the data dir's disk sit: what a run shows beside a GPU reader slower
    /// than POSIX.
    pub fn topology(&self) -> HostTopology {
        let mut unknown = Vec::new();
        let gpus = match &self.gpus {
            Fact::Known(gpus) => gpus
                .iter()
                .map(|gpu| GpuLink {
                    index: gpu.index,
                    pci_bus_id: gpu.pci_bus_id.clone(),
                    pcie: gpu.pcie(),
                    numa_node: gpu.numa_node,
                })
                .collect(),
            Fact::Unknown(why) => {
                unknown.push(format!("GPUs unknown: {why}"));
                Vec::new()
            }
        };
        let disk = match &self.data_dir.block {
            Fact::Known(block) => Some(DiskLink {
                disk: block.disk.clone(),
                driver: block.driver.clone(),
                members: block.members.clone(),
                numa_node: block.numa_node,
            }),
            Fact::Unknown(why) => {
                unknown.push(format!("disk unknown: {why}"));
                None
            }
        };
        HostTopology {
            gpus,
            disk,
            unknown,
        }
    }
}

fn room_for_two_workers(gpus: &Fact<Vec<Gpu>>) -> Option<u64> {
    let Fact::Known(gpus) = gpus else {
        return None;
    };
    if !gpus
        .iter()
        .all(|gpu| gpu.compute_mode.as_deref() == Some("Default"))
    {
        return None;
    }
    gpus.iter()
        .map(|gpu| gpu.memory_total_mib.map(|mib| mib << 20))
        .collect::<Option<Vec<u64>>>()?
        .into_iter()
        .min()
}

/// Where the facts come from: a collection on a host, or a hand-made fixture (which says so).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// `collected by gds-gate 0.1.0`, or e.g. `constructed: a healthy GDS host`.
    pub source: String,
    pub hostname: String,
    pub kernel: String,
    pub collected_at: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DriverFacts {
    /// `/proc/driver/nvidia/version`, first line.
    pub proc_version: Fact<String>,
    /// The kernel module's version, e.g. `580.159`.
    pub version: Fact<String>,
    /// Whether `libcuda.so.1` loads: without it no GPU trial runs (KvikIO included).
    pub libcuda: Fact<String>,
    /// CUDA version the driver supports, e.g. `13.0` (`cuDriverGetVersion`, else `nvidia-smi`).
    pub cuda_version: Fact<String>,
    /// The NVRTC library that loads (`libnvrtc.so.13`): GPU verification compiles its kernels
    /// at run time with it.
    #[serde(default = "nvrtc_not_collected")]
    pub nvrtc: Fact<String>,
}

/// Facts collected before NVRTC was asked about.
fn nvrtc_not_collected() -> Fact<String> {
    Fact::Unknown("not collected (facts saved by an older gds-gate)".into())
}

/// One GPU as `nvidia-smi` reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gpu {
    pub index: u32,
    pub name: String,
    pub pci_bus_id: Option<String>,
    pub pcie_gen: Option<u32>,
    pub pcie_gen_max: Option<u32>,
    pub pcie_width: Option<u32>,
    pub pcie_width_max: Option<u32>,
    /// `Default`, `Exclusive_Process` or `Prohibited`: whether two processes may hold a CUDA
    /// context on it at once, which starting a worker ahead needs.
    #[serde(default)]
    pub compute_mode: Option<String>,
    #[serde(default)]
    pub memory_total_mib: Option<u64>,
    pub bar1_mib: Option<u64>,
    /// The NUMA node of its PCI device (`/sys/bus/pci/devices/<bus id>/numa_node`); `None` in
    /// facts saved by older gates or where sysfs does not say.
    #[serde(default)]
    pub numa_node: Option<NumaNode>,
}

impl Gpu {
    /// Its PCIe link as the run's topology holds it.
    pub fn pcie(&self) -> PcieLink {
        PcieLink {
            gen_current: self.pcie_gen,
            gen_max: self.pcie_gen_max,
            width_current: self.pcie_width,
            width_max: self.pcie_width_max,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CufileFacts {
    /// Where the gate looked, in order (`GDS_GATE_LIBCUFILE` alone when it is set).
    pub searched: Vec<String>,
    pub library: Fact<CufileLibrary>,
    /// `cuFileDriverOpen` in the doctor's process (with the host's cufile.json), or why not tried.
    pub driver_open: Fact<DriverOpen>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CufileLibrary {
    pub path: String,
    /// `major.minor` from `cuFileGetVersion`.
    pub version: String,
    /// The optional entry points it exports (batch, stream, statistics); `None` in facts saved
    /// by older gates.
    #[serde(default)]
    pub entry_points: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriverOpen {
    Opened { properties: Fact<DriverProperties> },
    Failed { error: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvfsFacts {
    /// `/sys/module/nvidia_fs` exists.
    pub module_loaded: bool,
    /// `/proc/driver/nvidia-fs` exists.
    pub proc_present: bool,
    /// `/proc/driver/nvidia-fs/version`.
    pub version: Option<String>,
    /// `/sys/module/nvidia_fs/parameters/rw_stats_enabled` is 1.
    pub rw_stats_enabled: Fact<bool>,
    /// Storage drivers registered with nvidia-fs (`/proc/driver/nvidia-fs/modules`).
    pub modules: Fact<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataDirFacts {
    /// As configured (`--data-dir`).
    pub path: String,
    pub exists: bool,
    /// The directory actually examined: the data dir, or its nearest existing ancestor (where it
    /// will be created).
    pub probed: Fact<String>,
    pub mount: Fact<Mount>,
    pub block: Fact<BlockDevice>,
    pub o_direct: Fact<DirectIo>,
    /// `/run/udev` exists: KvikIO AUTO tries cuFile only then, and cuFile asks udev for the file
    /// system of a block device.
    pub run_udev: bool,
    pub udev: Fact<UdevRecord>,
    pub free_bytes: Fact<u64>,
    /// Generated files already in the data dir (name → size), which need no new space.
    pub existing_files: BTreeMap<String, u64>,
}

/// The mount holding the data dir (`/proc/self/mountinfo`, longest mount-point prefix).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
    /// `major:minor` of the device (major 0: no block device, e.g. tmpfs, overlay, NFS).
    pub device: String,
    pub options: Vec<String>,
    pub super_options: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockDevice {
    /// The device holding the file system, e.g. `vda1`, `nvme0n1p2`, `md0`.
    pub name: String,
    /// The whole disk it is on, e.g. `vda`.
    pub disk: String,
    /// The disk's driver, e.g. `virtio_blk`, `nvme`.
    pub driver: Option<String>,
    /// Members of a RAID or device-mapper volume.
    pub members: Vec<String>,
    pub nvme: bool,
    /// The NUMA node of the PCI device the disk hangs off (its nearest ancestor in sysfs with a
    /// `numa_node`); `None` in facts saved by older gates or where sysfs does not say.
    #[serde(default)]
    pub numa_node: Option<NumaNode>,
}

/// The result of actually writing and reading 4 KiB with `O_DIRECT` in the probed directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectIo {
    pub works: bool,
    pub detail: String,
}

/// `/run/udev/data/b<major>:<minor>`: cuFile reads `ID_FS_USAGE` from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdevRecord {
    pub path: String,
    pub exists: bool,
    pub id_fs_usage: Option<String>,
    pub id_fs_type: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlatformFacts {
    /// Windows Subsystem for Linux (KvikIO AUTO never uses cuFile there).
    pub wsl: bool,
    /// What says this is a container (`/.dockerenv`, `/run/.containerenv`), if anything.
    pub container: Option<String>,
    /// Entries of `/sys/class/iommu` (one per IOMMU unit).
    pub iommu_units: Fact<Vec<String>>,
    pub kernel_cmdline: Fact<String>,
    pub acs: Fact<Acs>,
    /// `nvidia-smi topo -m`.
    pub topology: Fact<String>,
}

/// PCIe Access Control Services from `lspci -vvv`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acs {
    /// Devices with an ACS capability.
    pub devices: usize,
    /// Devices whose ACS control has source validation on (`ACSCtl: SrcValid+`), which redirects
    /// peer-to-peer traffic through the root complex.
    pub source_validation: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigFacts {
    /// The cufile.json in effect, if any.
    pub path: Option<String>,
    /// Why that file (or none) is in effect.
    pub why: String,
    pub status: ConfigStatus,
    /// The settings that matter, as written (keys that are absent are not listed).
    pub settings: BTreeMap<String, serde_json::Value>,
    /// Keys NVIDIA does not document, each with the nearest known key when there is one.
    pub unknown_keys: Vec<UnknownKey>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigStatus {
    Absent,
    Parsed,
    Unreadable {
        error: String,
    },
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    NotAnObject,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnknownKey {
    pub key: String,
    pub suggestion: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KvikioFacts {
    /// The interpreter the KvikIO worker would run.
    pub python: String,
    /// Why that one (`GDS_GATE_PYTHON`, the suite's `python:`, the default).
    pub python_from: String,
    /// False when the probe was skipped on purpose (a run with no KvikIO trial): `probe` is then
    /// unknown without anything being wrong.
    #[serde(default = "probed_by_default")]
    pub probed: bool,
    pub probe: Fact<KvikioProbe>,
}

fn probed_by_default() -> bool {
    true
}

/// What a tiny script printed from inside that interpreter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvikioProbe {
    pub executable: String,
    pub python_version: String,
    pub kvikio: Module,
    pub cupy: Module,
    pub cuda_bindings: Module,
    /// `KVIKIO_COMPAT_MODE` in the doctor's environment (the gate sets it per trial).
    pub compat_mode_env: Option<String>,
    /// `kvikio.defaults.get("compat_mode")` with the variable unset.
    pub compat_mode_default: Option<String>,
    /// `kvikio.defaults.is_compat_mode_preferred()` under AUTO: true means POSIX.
    pub auto_prefers_posix: Option<bool>,
    /// `kvikio.cufile_driver.libcufile_version()`.
    pub libcufile_version: Option<String>,
    /// libcufile objects mapped into the interpreter after KvikIO looked for cuFile.
    pub libcufile_loaded: Vec<String>,
    /// `ctypes.util.find_library("cufile")`.
    pub find_library: Option<String>,
    /// Errors met by the probe after the imports.
    pub errors: Vec<String>,
}

/// A Python module: its version, or the import error.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Module {
    pub version: Option<String>,
    pub error: Option<String>,
}

/// Where each tool was found (absent: not on `PATH` nor in the CUDA `gds/tools` folders).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFacts {
    pub nvidia_smi: Option<String>,
    pub gdscheck: Option<String>,
    pub gdsio: Option<String>,
    pub gds_stats: Option<String>,
    pub lspci: Option<String>,
}

/// `gdscheck -p`: its text and what the parser made of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GdscheckFacts {
    pub text: String,
    pub parsed: GdscheckReport,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_workers_fit_only_where_every_gpu_is_known_to_allow_them() {
        let gpu = |mode: Option<&str>, mib: Option<u64>| Gpu {
            compute_mode: mode.map(str::to_owned),
            memory_total_mib: mib,
            ..Gpu::default()
        };
        let room = |gpus: Vec<Gpu>| room_for_two_workers(&Fact::Known(gpus));
        let default = Some("Default");
        assert_eq!(
            room(vec![
                gpu(default, Some(143_771)),
                gpu(default, Some(81_559))
            ]),
            Some(81_559 << 20)
        );
        let exclusive = Some("Exclusive_Process");
        assert_eq!(
            room(vec![gpu(default, Some(1)), gpu(exclusive, Some(1))]),
            None
        );
        assert_eq!(room(vec![gpu(None, Some(1))]), None);
        assert_eq!(room(vec![gpu(default, None)]), None);
        assert_eq!(room(Vec::new()), None);
        assert_eq!(room_for_two_workers(&Fact::Unknown("none".into())), None);
    }
}
