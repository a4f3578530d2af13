//! Parser of `gdscheck -p` (NVIDIA's platform check in `gds/tools`).
//!
//! The output is `key : value` lines grouped under banner sections (`DRIVER CONFIGURATION:`,
//! `CUFILE CONFIGURATION:`, `GPU INFO:`, `PLATFORM INFO:`), and its vocabulary changed over GDS
//! releases: driver entries read `Supported`/`Unsupported` up to about GDS 1.14, then `nvfs`,
//! `compat` or both; old builds put two versions on one header line. So lines are classified by
//! what they say rather than by position, and anything not understood is kept, not dropped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GdscheckReport {
    /// `GDS release version`.
    pub gds_version: Option<String>,
    pub nvidia_fs_version: Option<String>,
    pub nvidia_fs_minimum_version: Option<String>,
    pub libcufile_version: Option<String>,
    /// The header's `Platform:` (architecture).
    pub platform: Option<String>,
    /// `ENVIRONMENT:` entries (cuFile variables set when it ran).
    pub environment: BTreeMap<String, String>,
    /// `DRIVER CONFIGURATION:`: one entry per file system or transport, in order.
    pub support: Vec<Support>,
    /// The `--Mellanox PeerDirect`, `--rdma library`, ... lines, keys without the dashes.
    pub rdma: BTreeMap<String, String>,
    /// `CUFILE CONFIGURATION:`: the configuration cuFile ended up with.
    pub config: BTreeMap<String, String>,
    pub gpus: Vec<GdscheckGpu>,
    /// `PLATFORM INFO:` entries (`IOMMU`, `Nvidia Driver Info Status`, ...).
    pub platform_info: BTreeMap<String, String>,
    /// `Platform verification succeeded` (true) or `... failed` (false); absent when not printed.
    pub verification: Option<bool>,
    /// Lines such as `warn: error opening log file: ...`.
    pub warnings: Vec<String>,
    /// Lines the parser did not understand, kept verbatim.
    pub unparsed: Vec<String>,
}

/// One `DRIVER CONFIGURATION` entry, e.g. `NVMe : Supported` or `NVMe : nvfs, compat`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Support {
    pub name: String,
    pub value: String,
}

impl Support {
    /// Whether the direct GDS path (nvidia-fs or P2PDMA) is available for this entry.
    pub fn direct(&self) -> bool {
        let value = self.value.to_ascii_lowercase();
        value == "supported"
            || value
                .split(',')
                .any(|token| matches!(token.trim(), "nvfs" | "p2p" | "p2pdma"))
    }

    /// Whether cuFile can at least read it in compat mode.
    pub fn compat(&self) -> bool {
        self.value
            .to_ascii_lowercase()
            .split(',')
            .any(|token| token.trim() == "compat")
    }
}

/// One `GPU INFO` line: `GPU index 0 NVIDIA H100 80GB HBM3 bar:1 bar size (MiB):131072 supports
/// GDS, IOMMU State: Disabled`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GdscheckGpu {
    pub index: u32,
    pub name: String,
    pub bar1_mib: Option<u64>,
    pub supports_gds: bool,
    pub iommu_state: Option<String>,
}

impl GdscheckReport {
    /// The entry for `name` (case-insensitive), e.g. `NVMe`, `NVMe P2PDMA`.
    pub fn support(&self, name: &str) -> Option<&Support> {
        self.support
            .iter()
            .find(|entry| entry.name.eq_ignore_ascii_case(name))
    }

    /// `batch up to 128 I/Os, 5 ms timeout`: the batch limits of the configuration cuFile ended up
    /// with (`properties.max_batch_io_size`, `properties.max_batch_io_timeout_msecs`), what a
    /// `cufile-batch` trial's `batch_size` must stay within; None when gdscheck printed neither.
    /// gdscheck says nothing of the stream-ordered API: the doctor's libcufile row does.
    pub fn batch_limits(&self) -> Option<String> {
        let size = self.config.get("properties.max_batch_io_size");
        let timeout = self.config.get("properties.max_batch_io_timeout_msecs");
        match (size, timeout) {
            (None, None) => None,
            (size, timeout) => {
                let mut text = format!("batch up to {} I/Os", size.map_or("?", String::as_str));
                if let Some(ms) = timeout {
                    text.push_str(&format!(", {ms} ms timeout"));
                }
                Some(text)
            }
        }
    }

    /// Entries with a direct GDS path.
    pub fn direct(&self) -> Vec<&str> {
        self.support
            .iter()
            .filter(|entry| entry.direct())
            .map(|entry| entry.name.as_str())
            .collect()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Header,
    Environment,
    Driver,
    Config,
    Gpu,
    Platform,
}

const HEADER_LABELS: &[&str] = &[
    "GDS release version (beta):",
    "GDS release version:",
    "nvidia_fs minimum version:",
    "nvidia_fs version:",
    "libcufile version:",
    "Platform:",
];

const CONFIG_PREFIXES: &[&str] = &[
    "properties.",
    "execution.",
    "profile.",
    "fs.",
    "logging.",
    "miscellaneous.",
    "denylist.",
];

pub fn parse(text: &str) -> GdscheckReport {
    let mut report = GdscheckReport::default();
    let mut section = Section::Header;
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.chars().all(|c| c == '=') {
            continue;
        }
        if let Some(next) = banner(line) {
            section = next;
            continue;
        }
        if section == Section::Header && header(line, &mut report) {
            continue;
        }
        if line.starts_with("warn:") || line.starts_with("WARN") || line.starts_with("error:") {
            report.warnings.push(line.to_string());
        } else if let Some(rest) = line.strip_prefix("Platform verification") {
            report.verification = Some(rest.trim().starts_with("succeeded"));
        } else if let Some(gpu) = line.strip_prefix("GPU index ").and_then(gpu_line) {
            report.gpus.push(gpu);
        } else if let Some((key, value)) = key_value(line) {
            classify(section, (key, value), line, &mut report);
        } else {
            report.unparsed.push(line.to_string());
        }
    }
    report
}

fn banner(line: &str) -> Option<Section> {
    let upper = line.trim_end_matches(':').to_ascii_uppercase();
    if !line.ends_with(':') {
        return None;
    }
    Some(match upper.as_str() {
        "ENVIRONMENT" => Section::Environment,
        "DRIVER CONFIGURATION" => Section::Driver,
        // Beta builds list the driver entries and the properties under one banner.
        "CUFILE CONFIGURATION" => Section::Config,
        "GPU INFO" => Section::Gpu,
        "PLATFORM INFO" => Section::Platform,
        _ => return None,
    })
}

/// Header lines, which may hold two labels (`nvidia_fs version:  2.17 libcufile version: 2.12`).
fn header(line: &str, report: &mut GdscheckReport) -> bool {
    let mut found: Vec<(usize, &str)> = Vec::new();
    for label in HEADER_LABELS {
        if let Some(at) = line.find(label) {
            found.push((at, label));
        }
    }
    if found.is_empty() {
        return false;
    }
    found.sort();
    for (i, (at, label)) in found.iter().enumerate() {
        let end = found.get(i + 1).map_or(line.len(), |(next, _)| *next);
        let value = line[at + label.len()..end].trim().to_string();
        let slot = match *label {
            "GDS release version (beta):" | "GDS release version:" => &mut report.gds_version,
            "nvidia_fs minimum version:" => &mut report.nvidia_fs_minimum_version,
            "nvidia_fs version:" => &mut report.nvidia_fs_version,
            "libcufile version:" => &mut report.libcufile_version,
            _ => &mut report.platform,
        };
        *slot = Some(value);
    }
    true
}

fn key_value(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once(':')?;
    let key = key.trim();
    (!key.is_empty()).then(|| (key, value.trim()))
}

fn classify(section: Section, (key, value): (&str, &str), line: &str, report: &mut GdscheckReport) {
    let entry = (key.to_string(), value.to_string());
    if let Some(name) = key.strip_prefix("--") {
        report.rdma.insert(name.trim().to_string(), entry.1);
    } else if CONFIG_PREFIXES.iter().any(|prefix| key.starts_with(prefix)) {
        report.config.insert(entry.0, entry.1);
    } else if key.eq_ignore_ascii_case("IOMMU") || section == Section::Platform {
        report.platform_info.insert(entry.0, entry.1);
    } else {
        match section {
            Section::Environment => {
                report.environment.insert(entry.0, entry.1);
            }
            Section::Driver | Section::Config => report.support.push(Support {
                name: entry.0,
                value: entry.1,
            }),
            _ => report.unparsed.push(line.to_string()),
        }
    }
}

fn gpu_line(rest: &str) -> Option<GdscheckGpu> {
    let (index, rest) = rest.trim().split_once(' ')?;
    let index = index.parse().ok()?;
    let (name, rest) = match rest.find(" bar:") {
        Some(at) => (rest[..at].trim(), &rest[at..]),
        None => (rest.trim(), ""),
    };
    let bar1_mib = rest.split_once("(MiB):").and_then(|(_, after)| {
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    });
    let lower = rest.to_ascii_lowercase();
    Some(GdscheckGpu {
        index,
        name: name.to_string(),
        bar1_mib,
        supports_gds: lower.contains("supports gds") && !lower.contains("not support"),
        iommu_state: rest
            .split_once("IOMMU State:")
            .map(|(_, state)| state.trim().to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Constructed in the format of the GDS 1.13+ `GPU INFO` and `PLATFORM INFO` sections (the
    /// verbatim samples in tests/fixtures/doctor end before them, except the MagnumIO one).
    const TAIL: &str = " =========
 GPU INFO:
 =========
 GPU index 0 NVIDIA H200 bar:1 bar size (MiB):262144 supports GDS, IOMMU State: Disabled
 ==============
 PLATFORM INFO:
 ==============
 IOMMU: disabled
 Nvidia Driver Info Status: Supported(Nvidia Open Driver Installed)
 Cuda Driver Version Installed:  13000
 Platform verification succeeded
";

    #[test]
    fn reads_the_gpu_and_platform_sections() {
        let report = parse(TAIL);
        assert_eq!(
            report.gpus,
            vec![GdscheckGpu {
                index: 0,
                name: "NVIDIA H200".into(),
                bar1_mib: Some(262144),
                supports_gds: true,
                iommu_state: Some("Disabled".into()),
            }]
        );
        assert_eq!(report.platform_info["IOMMU"], "disabled");
        assert_eq!(
            report.platform_info["Cuda Driver Version Installed"],
            "13000"
        );
        assert_eq!(report.verification, Some(true));
        assert!(report.unparsed.is_empty(), "{:?}", report.unparsed);
    }

    #[test]
    fn two_versions_on_one_header_line() {
        let report = parse(
            " GDS release version: 1.13.0.11\n nvidia_fs version:  2.17 libcufile version: 2.12\n Platform: x86_64\n",
        );
        assert_eq!(report.gds_version.as_deref(), Some("1.13.0.11"));
        assert_eq!(report.nvidia_fs_version.as_deref(), Some("2.17"));
        assert_eq!(report.libcufile_version.as_deref(), Some("2.12"));
        assert_eq!(report.platform.as_deref(), Some("x86_64"));
    }

    #[test]
    fn support_values_old_and_new() {
        let entry = |value: &str| Support {
            name: "NVMe".into(),
            value: value.into(),
        };
        assert!(entry("Supported").direct());
        assert!(!entry("Unsupported").direct() && !entry("Unsupported").compat());
        assert!(!entry("compat").direct() && entry("compat").compat());
        assert!(entry("nvfs, compat").direct() && entry("nvfs, compat").compat());
    }

    #[test]
    fn a_failed_verification_and_odd_lines_are_kept() {
        let report = parse("Platform verification failed\nsomething odd\n");
        assert_eq!(report.verification, Some(false));
        assert_eq!(report.unparsed, vec!["something odd".to_string()]);
    }
}
