//! Facts about the host a run happens on, each read once per process: [`HostFacts`], recorded in
//! every report, and [`GdsHost`], what the verdict, the fingerprint and the doctor need to know of
//! nvidia-fs and udev. Whether the NVIDIA driver loads is asked in a worker process
//! ([`crate::job::probe`]).

use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostFacts {
    pub hostname: String,
    pub kernel: String,
    pub cpus: usize,
    pub memory_bytes: Option<u64>,
    /// `None` when the NVIDIA driver is present; otherwise why GPU trials cannot run.
    pub gpu_unavailable: Option<String>,
    pub nvidia_driver_version: Option<String>,
}

impl HostFacts {
    /// This host's facts, read once per process: every part of a run sees the same.
    pub fn probe() -> HostFacts {
        static FACTS: OnceLock<HostFacts> = OnceLock::new();
        FACTS
            .get_or_init(|| HostFacts {
                hostname: hostname(),
                kernel: read_trimmed("/proc/sys/kernel/osrelease")
                    .unwrap_or_else(|| "unknown".into()),
                cpus: std::thread::available_parallelism().map_or(1, usize::from),
                memory_bytes: gds_model::meminfo::total_memory(),
                gpu_unavailable: crate::job::probe::host()
                    .libcuda
                    .clone()
                    .err()
                    .map(String::from),
                nvidia_driver_version: read_trimmed("/proc/driver/nvidia/version")
                    .and_then(|text| driver_version(&text)),
            })
            .clone()
    }
}

/// The host's name, without asking anything else (what bless and report need).
pub fn hostname() -> String {
    read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into())
}

/// What the GDS stack's kernel side looks like to the path verdict, the fingerprint and the
/// doctor: whether nvidia-fs is loaded, its version, and whether udev's database is there (cuFile
/// needs it to register files; KvikIO AUTO needs it to use cuFile at all).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GdsHost {
    /// `/sys/module/nvidia_fs` exists.
    pub nvidia_fs_loaded: bool,
    /// `/sys/module/nvidia_fs/version`.
    pub nvidia_fs_version: Option<String>,
    /// `/run/udev` exists.
    pub run_udev: bool,
}

/// [`GdsHost`], read once per process.
pub fn gds() -> &'static GdsHost {
    static GDS: OnceLock<GdsHost> = OnceLock::new();
    GDS.get_or_init(|| GdsHost {
        nvidia_fs_loaded: Path::new("/sys/module/nvidia_fs").exists(),
        nvidia_fs_version: read_trimmed("/sys/module/nvidia_fs/version"),
        run_udev: Path::new("/run/udev").exists(),
    })
}

/// The version in `/proc/driver/nvidia/version`: the first word of the `NVRM` line made of digits
/// and dots. Its position differs between the proprietary and the open kernel module.
pub fn driver_version(text: &str) -> Option<String> {
    let line = text.lines().find(|line| line.starts_with("NVRM"))?;
    line.split_whitespace()
        .find(|word| word.contains('.') && word.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(str::to_owned)
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_version_from_both_kernel_modules() {
        // Verbatim from an H200 test machine (open kernel module).
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \nGCC version:";
        assert_eq!(driver_version(open).as_deref(), Some("580.159.04"));
        // Constructed in the proprietary module's format.
        let proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023";
        assert_eq!(driver_version(proprietary).as_deref(), Some("535.129.03"));
        assert_eq!(driver_version("garbage"), None);
    }

    #[test]
    fn probe_reads_this_host() {
        let facts = HostFacts::probe();
        assert!(facts.cpus >= 1);
        assert!(facts.memory_bytes.unwrap_or(0) > 0);
        assert!(!facts.kernel.is_empty());
        if let Some(reason) = &facts.gpu_unavailable {
            assert!(reason.contains("libcuda.so.1"));
        }
    }
}
