//! Facts about the host a run happened on, recorded in every report.

use std::ffi::CStr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    pub fn probe() -> HostFacts {
        HostFacts {
            hostname: hostname(),
            kernel: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            memory_bytes: meminfo("MemTotal:"),
            gpu_unavailable: probe_driver().err(),
            nvidia_driver_version: read_trimmed("/proc/driver/nvidia/version")
                .and_then(|text| driver_version(&text)),
        }
    }
}

/// The version in `/proc/driver/nvidia/version`: the first word of the `NVRM` line made of digits
/// and dots. Its position differs between the proprietary and the open kernel module.
pub fn hostname() -> String {
    read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into())
}

pub fn driver_version(text: &str) -> Option<String> {
    let line = text.lines().find(|line| line.starts_with("NVRM"))?;
    line.split_whitespace()
        .find(|word| word.contains('.') && word.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(str::to_owned)
}

/// Folders the GDS tools (`gdscheck`, `gds_stats`, `gdsio`) live in when they are not on `PATH`.
pub const GDS_TOOL_DIRS: &[&str] = &["/usr/local/cuda/gds/tools", "/usr/local/gds/tools"];

/// The first executable `name` on `PATH`, then in `extra`.
pub fn find_program(name: &str, extra: &[&str]) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(extra.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Memory the kernel says a new allocation can get without swapping.
pub fn available_memory() -> Option<u64> {
    meminfo("MemAvailable:")
}

fn meminfo(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with(key))?;
    let kib: u64 = line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

pub(crate) fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
}

/// GPU work needs the driver library; KvikIO needs it even for host reads. Loading it (and
/// unloading it again) is the test: a `/dev/nvidia0` without the library is as unusable as none.
fn probe_driver() -> Result<(), String> {
    const LIBCUDA: &CStr = c"libcuda.so.1";
    // SAFETY: dlopen/dlclose with a valid C string; the handle is not used otherwise.
    unsafe {
        let handle = libc::dlopen(LIBCUDA.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if handle.is_null() {
            return Err("no NVIDIA driver (libcuda.so.1 not found)".into());
        }
        libc::dlclose(handle);
    }
    Ok(())
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
