//! cuFile's data as plain types: its version, the driver's properties, the statistics counters
//! and their byte layout per library version, and its status codes by name. The worker fills them
//! from libcufile; everything else reads them from results, without linking cuFile.

pub mod batch;
pub mod call;

use std::ffi::c_uint;

use serde::{Deserialize, Serialize};

/// Why cuFile's statistics cannot be read with a known layout.
#[derive(Debug, thiserror::Error)]
pub enum StatsLayoutError {
    #[error(
        "cuFile {found} keeps its statistics in a layout this gate does not know (known: 1.15–1.19); upgrade gds-gate rather than read them wrong"
    )]
    UnknownStatsLayout { found: Version },
    #[error("cuFile {found} has no statistics API (it needs cuFile 1.15, CUDA 13.0, or newer)")]
    NoStatsApi { found: Version },
}

/// `cuFileGetVersion`: 1000 × major + 10 × minor (1.15.1 reports 1150).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Version(pub i32);

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0 / 1000, (self.0 % 1000) / 10)
    }
}

/// `CUfileDrvProps_t` (56 bytes; unchanged from CUDA 11.6 through 13.4).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RawProperties {
    major_version: c_uint,
    minor_version: c_uint,
    poll_thresh_size: usize,
    max_direct_io_size: usize,
    dstatusflags: c_uint,
    dcontrolflags: c_uint,
    fflags: c_uint,
    max_device_cache_size: c_uint,
    per_buffer_cache_size: c_uint,
    max_device_pinned_mem_size: c_uint,
    max_batch_io_size: c_uint,
    max_batch_io_timeout_msecs: c_uint,
}

impl From<RawProperties> for DriverProperties {
    fn from(raw: RawProperties) -> DriverProperties {
        let bits = |flags: u32, names: &[(u32, &str)]| {
            names
                .iter()
                .filter(|(bit, _)| flags & (1 << bit) != 0)
                .map(|(_, name)| name.to_string())
                .collect()
        };
        DriverProperties {
            nvfs_version: format!("{}.{}", raw.major_version, raw.minor_version),
            nvfs_loaded: raw.major_version != 0 || raw.minor_version != 0,
            status_flags: bits(raw.dstatusflags, STATUS_FLAGS),
            control_flags: bits(
                raw.dcontrolflags,
                &[(0, "use_poll_mode"), (1, "allow_compat_mode")],
            ),
            features: bits(raw.fflags, FEATURE_FLAGS),
            poll_thresh_size_kb: raw.poll_thresh_size as u64,
            max_direct_io_size_kb: raw.max_direct_io_size as u64,
            max_device_cache_size_kb: u64::from(raw.max_device_cache_size),
            per_buffer_cache_size_kb: u64::from(raw.per_buffer_cache_size),
            max_device_pinned_mem_size_kb: u64::from(raw.max_device_pinned_mem_size),
            max_batch_io_size: u64::from(raw.max_batch_io_size),
        }
    }
}

impl DriverProperties {
    /// From the bytes of a `CUfileDrvProps_t` (56 bytes, little-endian), as another process read it.
    pub fn decode(bytes: &[u8]) -> Option<DriverProperties> {
        let u32_at = |at: usize| Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
        let u64_at = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
        let raw = RawProperties {
            major_version: u32_at(0)?,
            minor_version: u32_at(4)?,
            poll_thresh_size: u64_at(8)? as usize,
            max_direct_io_size: u64_at(16)? as usize,
            dstatusflags: u32_at(24)?,
            dcontrolflags: u32_at(28)?,
            fflags: u32_at(32)?,
            max_device_cache_size: u32_at(36)?,
            per_buffer_cache_size: u32_at(40)?,
            max_device_pinned_mem_size: u32_at(44)?,
            max_batch_io_size: u32_at(48)?,
            max_batch_io_timeout_msecs: u32_at(52)?,
        };
        Some(raw.into())
    }
}

/// What `cuFileDriverGetProperties` says about the driver, as recorded in results.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DriverProperties {
    /// nvidia-fs version as `major.minor`; `0.0` when the module is not loaded.
    pub nvfs_version: String,
    pub nvfs_loaded: bool,
    /// Names of the set bits of `dstatusflags` (file systems and devices nvidia-fs supports).
    pub status_flags: Vec<String>,
    /// `use_poll_mode`, `allow_compat_mode` when set.
    pub control_flags: Vec<String>,
    /// What the driver says it supports (`fflags`, `CUfileFeatureFlags_t` bit positions):
    /// `dyn_routing`, `batch_io`, `streams`, `parallel_io`; absent in results of older gates.
    #[serde(default)]
    pub features: Vec<String>,
    pub poll_thresh_size_kb: u64,
    pub max_direct_io_size_kb: u64,
    pub max_device_cache_size_kb: u64,
    pub per_buffer_cache_size_kb: u64,
    pub max_device_pinned_mem_size_kb: u64,
    /// I/Os one `cuFileBatchIOSubmit` may carry (`properties.io_batchsize`, 128 by default);
    /// absent in results of older gates.
    #[serde(default)]
    pub max_batch_io_size: u64,
}

/// `CUfileFeatureFlags_t`: bit positions of `fflags` (KvikIO tests them the same way).
const FEATURE_FLAGS: &[(u32, &str)] = &[
    (0, "dyn_routing"),
    (1, "batch_io"),
    (2, "streams"),
    (3, "parallel_io"),
];

const STATUS_FLAGS: &[(u32, &str)] = &[
    (0, "lustre"),
    (1, "wekafs"),
    (2, "nfs"),
    (3, "gpfs"),
    (4, "nvme"),
    (5, "nvmeof"),
    (6, "scsi"),
    (7, "scaleflux_csd"),
    (8, "nvmesh"),
    (9, "beegfs"),
    (12, "scatefs"),
];

/// cuFile's status codes (cufile.h `CUFILEOP_STATUS_ENTRIES`), by name and meaning.
/// `CU_FILE_HANDLE_NOT_REGISTERED`: cuFile refused to register the file (no udev record of its
/// block device, an unsupported file system). cuFile returns it negated from reads.
pub const HANDLE_NOT_REGISTERED: i32 = 5027;

pub fn describe(code: i32) -> String {
    let code = code.abs();
    let known: &[(i32, &str, &str)] = &[
        (
            5001,
            "CU_FILE_DRIVER_NOT_INITIALIZED",
            "nvidia-fs driver is not loaded; set allow_compat_mode to true in cufile.json to enable compatible mode",
        ),
        (
            5004,
            "CU_FILE_DRIVER_VERSION_MISMATCH",
            "nvidia-fs driver version mismatch",
        ),
        (
            5007,
            "CU_FILE_PLATFORM_NOT_SUPPORTED",
            "GPUDirect Storage not supported on this platform",
        ),
        (
            5008,
            "CU_FILE_IO_NOT_SUPPORTED",
            "GPUDirect Storage not supported on this file",
        ),
        (
            5009,
            "CU_FILE_DEVICE_NOT_SUPPORTED",
            "GPUDirect Storage not supported on this GPU",
        ),
        (
            5010,
            "CU_FILE_NVFS_DRIVER_ERROR",
            "nvidia-fs driver ioctl error",
        ),
        (5011, "CU_FILE_CUDA_DRIVER_ERROR", "CUDA driver API error"),
        (
            5012,
            "CU_FILE_CUDA_POINTER_INVALID",
            "invalid device pointer",
        ),
        (5018, "CU_FILE_INVALID_FILE_TYPE", "unsupported file type"),
        (
            5019,
            "CU_FILE_INVALID_FILE_OPEN_FLAG",
            "unsupported file open flags",
        ),
        (
            5020,
            "CU_FILE_DIO_NOT_SET",
            "file descriptor not opened with O_DIRECT",
        ),
        (5022, "CU_FILE_INVALID_VALUE", "invalid arguments"),
        (
            5023,
            "CU_FILE_MEMORY_ALREADY_REGISTERED",
            "device pointer already registered",
        ),
        (
            5024,
            "CU_FILE_MEMORY_NOT_REGISTERED",
            "device pointer lookup failure",
        ),
        (
            5025,
            "CU_FILE_PERMISSION_DENIED",
            "driver or file access error",
        ),
        (
            5026,
            "CU_FILE_DRIVER_ALREADY_OPEN",
            "driver is already open",
        ),
        (
            5027,
            "CU_FILE_HANDLE_NOT_REGISTERED",
            "file descriptor is not registered",
        ),
        (5030, "CU_FILE_INTERNAL_ERROR", "internal error"),
        (
            5033,
            "CU_FILE_NVFS_SETUP_ERROR",
            "nvidia-fs driver initialization error",
        ),
        (
            5034,
            "CU_FILE_IO_DISABLED",
            "GPUDirect Storage disabled by config on this file",
        ),
        (
            5036,
            "CU_FILE_GPU_MEMORY_PINNING_FAILED",
            "failed to pin GPU memory",
        ),
        (5044, "CU_FILE_IO_ERROR", "cuFile I/O error"),
    ];
    match known.iter().find(|(number, _, _)| *number == code) {
        Some((_, name, meaning)) => format!("{name}: {meaning}"),
        None if code < 5000 => format!("errno {code}: {}", std::io::Error::from_raw_os_error(code)),
        None => "unknown cuFile status".into(),
    }
}

/// Per-GPU read and write counters and the process totals. The write counters are absent
/// (zero) in records of gates that predate writing trials.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stats {
    /// `read_ops.ok`: libcufile 1.15.1 in compat mode counts every `cuFileRead` here twice
    /// (10240 for 5120 calls on the H200, where `read_bytes`, the latency sum and the per-GPU
    /// `n_total_reads` were those of 5120), so a count of calls comes from the GPUs' counters.
    pub read_ops_ok: u64,
    pub read_ops_err: u64,
    pub read_bytes: u64,
    #[serde(default)]
    pub write_ops_ok: u64,
    #[serde(default)]
    pub write_ops_err: u64,
    #[serde(default)]
    pub write_bytes: u64,
    /// The summed latency of the read and write calls in µs, as cuFile times them
    /// (`read_lat_sum_us`, `write_lat_sum_us`); absent (zero) in records of older gates.
    #[serde(default)]
    pub read_latency_sum_us: u64,
    #[serde(default)]
    pub write_latency_sum_us: u64,
    pub gpus: Vec<GpuCounters>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GpuCounters {
    pub index: u32,
    pub uuid: String,
    pub read_bytes: u64,
    pub n_total_reads: u64,
    pub n_p2p_reads: u64,
    pub n_nvfs_reads: u64,
    pub n_posix_reads: u64,
    pub n_unaligned_reads: u64,
    pub n_dr_reads: u64,
    pub n_reads_err: u64,
    #[serde(default)]
    pub writes_bytes: u64,
    #[serde(default)]
    pub n_total_writes: u64,
    #[serde(default)]
    pub n_p2p_writes: u64,
    #[serde(default)]
    pub n_nvfs_writes: u64,
    #[serde(default)]
    pub n_posix_writes: u64,
    #[serde(default)]
    pub n_unaligned_writes: u64,
    #[serde(default)]
    pub n_dr_writes: u64,
    #[serde(default)]
    pub n_writes_err: u64,
}

impl Stats {
    /// What happened between `before` and `self` (counters only grow while stats run).
    pub fn since(&self, before: &Stats) -> Stats {
        let gpus = self
            .gpus
            .iter()
            .map(|after| {
                let zero = GpuCounters::default();
                let b = before
                    .gpus
                    .iter()
                    .find(|b| b.uuid == after.uuid)
                    .unwrap_or(&zero);
                GpuCounters {
                    index: after.index,
                    uuid: after.uuid.clone(),
                    read_bytes: after.read_bytes.saturating_sub(b.read_bytes),
                    n_total_reads: after.n_total_reads.saturating_sub(b.n_total_reads),
                    n_p2p_reads: after.n_p2p_reads.saturating_sub(b.n_p2p_reads),
                    n_nvfs_reads: after.n_nvfs_reads.saturating_sub(b.n_nvfs_reads),
                    n_posix_reads: after.n_posix_reads.saturating_sub(b.n_posix_reads),
                    n_unaligned_reads: after.n_unaligned_reads.saturating_sub(b.n_unaligned_reads),
                    n_dr_reads: after.n_dr_reads.saturating_sub(b.n_dr_reads),
                    n_reads_err: after.n_reads_err.saturating_sub(b.n_reads_err),
                    writes_bytes: after.writes_bytes.saturating_sub(b.writes_bytes),
                    n_total_writes: after.n_total_writes.saturating_sub(b.n_total_writes),
                    n_p2p_writes: after.n_p2p_writes.saturating_sub(b.n_p2p_writes),
                    n_nvfs_writes: after.n_nvfs_writes.saturating_sub(b.n_nvfs_writes),
                    n_posix_writes: after.n_posix_writes.saturating_sub(b.n_posix_writes),
                    n_unaligned_writes: after
                        .n_unaligned_writes
                        .saturating_sub(b.n_unaligned_writes),
                    n_dr_writes: after.n_dr_writes.saturating_sub(b.n_dr_writes),
                    n_writes_err: after.n_writes_err.saturating_sub(b.n_writes_err),
                }
            })
            .collect();
        Stats {
            read_ops_ok: self.read_ops_ok.saturating_sub(before.read_ops_ok),
            read_ops_err: self.read_ops_err.saturating_sub(before.read_ops_err),
            read_bytes: self.read_bytes.saturating_sub(before.read_bytes),
            write_ops_ok: self.write_ops_ok.saturating_sub(before.write_ops_ok),
            write_ops_err: self.write_ops_err.saturating_sub(before.write_ops_err),
            write_bytes: self.write_bytes.saturating_sub(before.write_bytes),
            read_latency_sum_us: self
                .read_latency_sum_us
                .saturating_sub(before.read_latency_sum_us),
            write_latency_sum_us: self
                .write_latency_sum_us
                .saturating_sub(before.write_latency_sum_us),
            gpus,
        }
    }
}

/// Byte offsets of `CUfileStatsLevel3_t` for one library version. Only `CUfileStatsLevel1_t`
/// changed so far: 512 bytes up to cuFile 1.18 (CUDA 13.3), 624 from 1.19 (CUDA 13.4, readv/writev
/// counters appended), which shifts everything after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatsLayout {
    level1_size: usize,
}

const MAX_GPUS: usize = 16;
const PER_GPU_SIZE: usize = 248;

impl StatsLayout {
    pub fn for_version(version: Version) -> Result<StatsLayout, StatsLayoutError> {
        match version.0 {
            v if v < 1150 => Err(StatsLayoutError::NoStatsApi { found: version }),
            1150..=1189 => Ok(StatsLayout { level1_size: 512 }),
            1190..=1199 => Ok(StatsLayout { level1_size: 624 }),
            _ => Err(StatsLayoutError::UnknownStatsLayout { found: version }),
        }
    }

    /// Size of `CUfileStatsLevel3_t` in this layout.
    pub fn level3_size(self) -> usize {
        self.per_gpu_offset() + MAX_GPUS * PER_GPU_SIZE
    }

    fn num_gpus_offset(self) -> usize {
        // Level 2 = level 1 + two histograms of 32 u64.
        self.level1_size + 2 * 32 * 8
    }

    fn per_gpu_offset(self) -> usize {
        self.num_gpus_offset() + 8
    }

    pub fn decode(self, buffer: &[u8]) -> Stats {
        let u64_at = |offset: usize| {
            buffer
                .get(offset..offset + 8)
                .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        };
        let num_gpus = buffer
            .get(self.num_gpus_offset()..self.num_gpus_offset() + 4)
            .map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4])));
        let gpus = (0..(num_gpus as usize).min(MAX_GPUS))
            .map(|i| {
                let base = self.per_gpu_offset() + i * PER_GPU_SIZE;
                let uuid: String = buffer
                    .get(base..base + 16)
                    .unwrap_or_default()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                GpuCounters {
                    index: i as u32,
                    uuid,
                    read_bytes: u64_at(base + 16),
                    n_total_reads: u64_at(base + 48),
                    n_p2p_reads: u64_at(base + 56),
                    n_nvfs_reads: u64_at(base + 64),
                    n_posix_reads: u64_at(base + 72),
                    n_unaligned_reads: u64_at(base + 80),
                    n_dr_reads: u64_at(base + 88),
                    n_reads_err: u64_at(base + 112),
                    writes_bytes: u64_at(base + 120),
                    n_total_writes: u64_at(base + 152),
                    n_p2p_writes: u64_at(base + 160),
                    n_nvfs_writes: u64_at(base + 168),
                    n_posix_writes: u64_at(base + 176),
                    n_unaligned_writes: u64_at(base + 184),
                    n_dr_writes: u64_at(base + 192),
                    n_writes_err: u64_at(base + 200),
                }
            })
            .collect();
        Stats {
            read_ops_ok: u64_at(0),
            read_ops_err: u64_at(8),
            read_bytes: u64_at(96),
            write_ops_ok: u64_at(16),
            write_ops_err: u64_at(24),
            write_bytes: u64_at(104),
            read_latency_sum_us: u64_at(160),
            write_latency_sum_us: u64_at(168),
            gpus,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `value` as cuFile does, little-endian, at `offset` of a statistics buffer.
    fn put(buffer: &mut [u8], offset: usize, value: u64) {
        buffer[offset..offset + 8].copy_from_slice(&value.to_le_bytes())
    }

    #[test]
    fn layouts_match_the_sizes_of_the_real_headers() {
        // sizeof(CUfileStatsLevel3_t): 5000 with the CUDA 13.0 header, 5112 with 13.4.
        assert_eq!(
            StatsLayout::for_version(Version(1150))
                .unwrap()
                .level3_size(),
            5000
        );
        assert_eq!(
            StatsLayout::for_version(Version(1180))
                .unwrap()
                .level3_size(),
            5000
        );
        assert_eq!(
            StatsLayout::for_version(Version(1190))
                .unwrap()
                .level3_size(),
            5112
        );
        assert!(matches!(
            StatsLayout::for_version(Version(1140)),
            Err(StatsLayoutError::NoStatsApi { .. })
        ));
        let newer = StatsLayout::for_version(Version(1200))
            .unwrap_err()
            .to_string();
        assert!(
            newer.contains("cuFile 1.20") && newer.contains("upgrade gds-gate"),
            "{newer}"
        );
    }

    #[test]
    fn driver_properties_name_the_features_and_the_batch_limit() {
        let mut bytes = [0u8; 56];
        bytes[32..36].copy_from_slice(&0b0110u32.to_le_bytes()); // fflags
        bytes[48..52].copy_from_slice(&128u32.to_le_bytes()); // max_batch_io_size
        let props = DriverProperties::decode(&bytes).unwrap();
        assert_eq!(props.features, ["batch_io", "streams"]);
        assert_eq!(props.max_batch_io_size, 128);
        // A result of an older gate has neither field.
        let mut json = serde_json::to_value(&props).unwrap();
        let object = json.as_object_mut().unwrap();
        object.remove("features");
        object.remove("max_batch_io_size");
        let old: DriverProperties = serde_json::from_value(json).unwrap();
        assert!(old.features.is_empty() && old.max_batch_io_size == 0);
    }

    /// `CUfileStatsLevel1_t` in cufile.h: six operation counters (ok, err), then read_bytes,
    /// write_bytes, the two bandwidths, the two average latencies, the two rates, and
    /// read_lat_sum_us and write_lat_sum_us at 160 and 168.
    #[test]
    fn decodes_cufiles_latency_sums_and_takes_their_difference() {
        let layout = StatsLayout::for_version(Version(1150)).unwrap();
        let mut buffer = vec![0u8; layout.level3_size()];
        put(&mut buffer, 0, 1024); // read_ops.ok
        put(&mut buffer, 160, 5_632_000); // read_lat_sum_us
        put(&mut buffer, 168, 7);
        // The averages and rates beside them must not leak in.
        for offset in [128, 136, 144, 152] {
            put(&mut buffer, offset, 999);
        }
        let stats = layout.decode(&buffer);
        assert_eq!(
            (stats.read_latency_sum_us, stats.write_latency_sum_us),
            (5_632_000, 7)
        );
        let mut before = stats.clone();
        before.read_ops_ok = 24;
        before.read_latency_sum_us = 132_000;
        // The measured passes' calls and their summed latency: a mean of 5500 µs.
        let measured = stats.since(&before);
        assert_eq!(
            (measured.read_ops_ok, measured.read_latency_sum_us),
            (1000, 5_500_000)
        );
    }

    #[test]
    fn decodes_per_gpu_counters_at_their_offsets() {
        let layout = StatsLayout::for_version(Version(1150)).unwrap();
        let mut buffer = vec![0u8; 8192];
        put(&mut buffer, 96, 1 << 30);
        buffer[1024..1028].copy_from_slice(&2u32.to_le_bytes());
        let gpu1 = 1032 + 248;
        put(&mut buffer, gpu1 + 16, 1 << 30);
        put(&mut buffer, gpu1 + 48, 256);
        put(&mut buffer, gpu1 + 72, 256);
        let stats = layout.decode(&buffer);
        assert_eq!(stats.read_bytes, 1 << 30);
        assert_eq!(stats.gpus.len(), 2);
        assert_eq!(
            (
                stats.gpus[1].n_total_reads,
                stats.gpus[1].n_posix_reads,
                stats.gpus[1].n_nvfs_reads
            ),
            (256, 256, 0)
        );
        let delta = stats.since(&Stats::default());
        assert_eq!(delta.gpus[1].read_bytes, 1 << 30);
    }

    /// The write half of `CUfilePerGpuStats_t` (`writes_bytes` after the 13 read fields, then
    /// `write_bw_bytes_per_sec`, `write_utilization`, `write_duration_us`, `n_total_writes`, ...)
    /// and `write_ops`/`write_bytes` of `CUfileStatsLevel1_t`, at their offsets in cufile.h.
    #[test]
    fn decodes_write_counters_at_their_offsets() {
        let layout = StatsLayout::for_version(Version(1150)).unwrap();
        let mut buffer = vec![0u8; layout.level3_size()];
        put(&mut buffer, 16, 256);
        put(&mut buffer, 104, 1 << 30);
        buffer[1024..1028].copy_from_slice(&1u32.to_le_bytes());
        let gpu0 = 1032;
        for (offset, value) in [
            (120, 1 << 30),
            (152, 256),
            (168, 0),
            (176, 250),
            (184, 6),
            (200, 1),
        ] {
            put(&mut buffer, gpu0 + offset, value);
        }
        // Fields between them (bandwidth, utilisation, duration, mmap) must not leak in.
        for offset in [128, 136, 144, 208, 240] {
            put(&mut buffer, gpu0 + offset, 999);
        }
        let stats = layout.decode(&buffer);
        assert_eq!((stats.write_ops_ok, stats.write_bytes), (256, 1 << 30));
        let g = &stats.gpus[0];
        assert_eq!(
            (
                g.writes_bytes,
                g.n_total_writes,
                g.n_nvfs_writes,
                g.n_posix_writes
            ),
            (1 << 30, 256, 0, 250)
        );
        assert_eq!(
            (
                g.n_unaligned_writes,
                g.n_p2p_writes,
                g.n_dr_writes,
                g.n_writes_err
            ),
            (6, 0, 0, 1)
        );
        assert_eq!(g.n_total_reads, 0);
        let later = {
            let mut more = stats.clone();
            more.gpus[0].n_posix_writes += 10;
            more
        };
        assert_eq!(later.since(&stats).gpus[0].n_posix_writes, 10);
    }

    #[test]
    fn describes_codes_by_name() {
        assert!(describe(5027).starts_with("CU_FILE_HANDLE_NOT_REGISTERED"));
        assert!(describe(-5027).starts_with("CU_FILE_HANDLE_NOT_REGISTERED"));
        assert!(describe(5).starts_with("errno 5"));
        assert_eq!(Version(1150).to_string(), "1.15");
    }
}
