//! The NVIDIA driver, the CUDA version it supports, and each GPU's PCIe link and BAR1 size, from
//! `/proc/driver/nvidia/version`, `cuDriverGetVersion` (asked in a worker, when libcuda loads)
//! and `nvidia-smi`. The `nvidia-smi` parsers go by column and label names, never positions:
//! its output "is not guaranteed to be backwards compatible" (nvidia-smi(1)).

use std::path::Path;
use std::time::Duration;

use super::{read_text, run_ok};
use crate::facts::{DriverFacts, Fact, Gpu};
use gds_runner::host::HostFacts;

const QUERY: &str = "--query-gpu=index,name,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,compute_mode,memory.total";
const TIMEOUT: Duration = Duration::from_secs(30);

pub(super) fn driver(host: &HostFacts, nvidia_smi: Option<&str>) -> DriverFacts {
    let proc_version = read_text("/proc/driver/nvidia/version")
        .known()
        .and_then(|text| text.lines().next().map(str::to_owned))
        .map_or_else(
            || {
                Fact::Unknown(
                    "/proc/driver/nvidia/version is absent: the NVIDIA kernel module is not loaded"
                        .into(),
                )
            },
            Fact::Known,
        );
    let version = match (&host.nvidia_driver_version, &proc_version) {
        (Some(version), _) => Fact::Known(version.clone()),
        (None, Fact::Unknown(why)) => Fact::Unknown(why.clone()),
        (None, Fact::Known(line)) => Fact::Unknown(format!("no version in `{line}`")),
    };
    let libcuda = match &host.gpu_unavailable {
        None => Fact::Known("libcuda.so.1 loads".into()),
        Some(why) => Fact::Unknown(why.clone()),
    };
    let asked = gds_runner::job::probe::host().cuda_version.clone();
    let cuda_version = match asked.unwrap_or_else(|| Err("not asked".into())) {
        Ok(version) => Fact::Known(version),
        Err(why) => match nvidia_smi.map(|smi| run_ok(Path::new(smi), &[], TIMEOUT)) {
            Some(Ok(text)) => banner_cuda_version(&text).map_or_else(
                || Fact::Unknown(format!("{why}; and `nvidia-smi` printed no `CUDA Version`")),
                Fact::Known,
            ),
            Some(Err(error)) => Fact::Unknown(format!("{why}; {}", gds_model::error_line(&error))),
            None => Fact::Unknown(format!("{why}; and nvidia-smi is not installed")),
        },
    };
    let nvrtc = match gds_runner::job::probe::host().nvrtc.clone() {
        Some(Ok(name)) => Fact::Known(name),
        Some(Err(why)) => Fact::Unknown(why.into()),
        None => Fact::Unknown("the worker did not say".into()),
    };
    DriverFacts {
        proc_version,
        version,
        libcuda,
        cuda_version,
        nvrtc,
    }
}

/// `CUDA Version: 13.0` from `nvidia-smi`'s banner, or `CUDA Version : 13.0` from `-q`.
pub(super) fn banner_cuda_version(text: &str) -> Option<String> {
    let at = text.find("CUDA Version")?;
    let rest = text[at + "CUDA Version".len()..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let version: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (!version.is_empty()).then_some(version)
}

pub(super) fn gpus(nvidia_smi: Option<&str>) -> Fact<Vec<Gpu>> {
    let Some(smi) = nvidia_smi.map(Path::new) else {
        return Fact::Unknown(
            "nvidia-smi is not installed (it comes with the NVIDIA driver)".into(),
        );
    };
    let csv = match run_ok(smi, &[QUERY, "--format=csv"], TIMEOUT) {
        Ok(text) => text,
        Err(error) => return Fact::because(&error),
    };
    let mut gpus = match parse_query_csv(&csv) {
        Ok(gpus) => gpus,
        Err(error) => return Fact::Unknown(format!("`nvidia-smi {QUERY}`: {error}")),
    };
    // BAR1 is not a query field; a failure here leaves the sizes unknown, not the GPUs.
    if let Ok(text) = run_ok(smi, &["-q", "-d", "MEMORY"], TIMEOUT) {
        let bars = parse_bar1(&text);
        for (i, gpu) in gpus.iter_mut().enumerate() {
            let by_bus = gpu.pci_bus_id.as_ref().and_then(|id| {
                bars.iter()
                    .find(|(bus, _)| bus.eq_ignore_ascii_case(id))
                    .map(|(_, mib)| *mib)
            });
            gpu.bar1_mib = by_bus.or_else(|| (bars.len() == 1 && i == 0).then(|| bars[0].1));
        }
    }
    for gpu in &mut gpus {
        gpu.numa_node = gpu
            .pci_bus_id
            .as_deref()
            .and_then(sysfs_pci_address)
            .and_then(|address| {
                super::numa_node_above(&Path::new("/sys/bus/pci/devices").join(address))
            });
    }
    Fact::Known(gpus)
}

/// The PCI address sysfs names a device by (`0000:18:00.0`) for `nvidia-smi`'s bus id
/// (`00000000:18:00.0`: a domain of eight hex digits, upper case).
pub fn sysfs_pci_address(bus_id: &str) -> Option<String> {
    let (domain, rest) = bus_id.trim().split_once(':')?;
    let domain = u32::from_str_radix(domain, 16).ok()?;
    (rest.len() == "18:00.0".len()).then(|| format!("{domain:04x}:{}", rest.to_ascii_lowercase()))
}

/// Why `nvidia-smi --query-gpu` output is not the CSV asked for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CsvError {
    #[error("empty output")]
    Empty,
    #[error("no `name` column in the header")]
    NoNameColumn,
    #[error("line `{line}` has {fields} fields, the header {columns}")]
    FieldCount {
        line: String,
        fields: usize,
        columns: usize,
    },
}

/// `nvidia-smi --query-gpu=... --format=csv`: a header of field names (with ` [units]` when
/// `nounits` is not given), then one line per GPU. `[N/A]`, `[Not Supported]` and the like read
/// as absent.
pub fn parse_query_csv(text: &str) -> Result<Vec<Gpu>, CsvError> {
    let mut lines = text.lines().filter(|line| !line.trim().is_empty());
    let header: Vec<String> = lines
        .next()
        .ok_or(CsvError::Empty)?
        .split(',')
        .map(|name| {
            name.split('[')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string()
        })
        .collect();
    let column = |name: &str| header.iter().position(|h| h == name);
    let name_at = column("name").ok_or(CsvError::NoNameColumn)?;
    let mut gpus = Vec::new();
    for (row, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != header.len() {
            return Err(CsvError::FieldCount {
                line: line.to_string(),
                fields: cells.len(),
                columns: header.len(),
            });
        }
        let text = |name: &str| {
            column(name)
                .map(|i| cells[i])
                .filter(|v| !v.is_empty() && !v.starts_with('['))
        };
        let number = |name: &str| text(name).and_then(|v| v.parse::<u32>().ok());
        gpus.push(Gpu {
            index: number("index").unwrap_or(row as u32),
            name: cells[name_at].to_string(),
            pci_bus_id: text("pci.bus_id").map(str::to_owned),
            pcie_gen: number("pcie.link.gen.current"),
            pcie_gen_max: number("pcie.link.gen.max"),
            pcie_width: number("pcie.link.width.current"),
            pcie_width_max: number("pcie.link.width.max"),
            compute_mode: text("compute_mode").map(str::to_owned),
            memory_total_mib: text("memory.total")
                .and_then(|v| v.trim_end_matches("MiB").trim().parse().ok()),
            bar1_mib: None,
            numa_node: None,
        });
    }
    Ok(gpus)
}

/// `nvidia-smi -q -d MEMORY`: each GPU's bus id and its `BAR1 Memory Usage` → `Total` in MiB.
pub fn parse_bar1(text: &str) -> Vec<(String, u64)> {
    let mut found = Vec::new();
    let mut gpu: Option<String> = None;
    let mut in_bar1 = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(bus) = trimmed.strip_prefix("GPU ")
            && !line.starts_with(' ')
        {
            gpu = Some(bus.trim().to_string());
            in_bar1 = false;
        } else if trimmed.starts_with("BAR1 Memory Usage") {
            in_bar1 = true;
        } else if in_bar1 && let Some((key, value)) = trimmed.split_once(':') {
            if key.trim() == "Total" {
                let mib = value.trim().trim_end_matches("MiB").trim().parse().ok();
                // Without a `GPU <bus id>` line (output cut by grep), the bus is unknown.
                if let Some(mib) = mib {
                    found.push((gpu.clone().unwrap_or_default(), mib));
                }
                in_bar1 = false;
            }
        } else if !trimmed.contains(':') && !trimmed.is_empty() {
            // Another section's title (`Conf Compute Protected Memory Usage`).
            in_bar1 = false;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use gds_model::topology::NumaNode;

    #[test]
    fn csv_by_column_name_with_units_and_missing_values() {
        // Constructed in nvidia-smi's CSV shape (header with units, `[N/A]` for missing values).
        let text = "index, name, pci.bus_id, pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max, compute_mode, memory.total [MiB]\n0, NVIDIA H200, 00000000:00:05.0, 5, 5, 16, 16, Default, 143771 MiB\n1, NVIDIA H200, 00000000:00:06.0, [N/A], 5, 8, 16, Exclusive_Process, [N/A]\n";
        let gpus = parse_query_csv(text).unwrap();
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].name, "NVIDIA H200");
        assert_eq!(gpus[0].pci_bus_id.as_deref(), Some("00000000:00:05.0"));
        assert_eq!((gpus[0].pcie_gen, gpus[0].pcie_width), (Some(5), Some(16)));
        assert_eq!((gpus[1].pcie_gen, gpus[1].pcie_width), (None, Some(8)));
        assert_eq!(gpus[0].compute_mode.as_deref(), Some("Default"));
        assert_eq!(gpus[1].compute_mode.as_deref(), Some("Exclusive_Process"));
        assert_eq!(
            (gpus[0].memory_total_mib, gpus[1].memory_total_mib),
            (Some(143_771), None)
        );
        assert!(parse_query_csv("").is_err());
        assert!(parse_query_csv("index, name\n0\n").is_err());
    }

    #[test]
    fn the_sysfs_address_of_a_bus_id() {
        assert_eq!(
            sysfs_pci_address("00000000:9A:00.0").as_deref(),
            Some("0000:9a:00.0")
        );
        assert_eq!(
            sysfs_pci_address("00010000:18:00.1").as_deref(),
            Some("10000:18:00.1")
        );
        assert_eq!(sysfs_pci_address("not a bus"), None);
        assert_eq!(sysfs_pci_address("0000:18"), None);
    }

    #[test]
    fn a_devices_numa_node_is_its_own_or_its_nearest_ancestors() {
        // Fixture: a sysfs-shaped tree; the PCI function says node 1, the disk under it nothing.
        let root = tempfile::tempdir().unwrap();
        let function = root.path().join("pci0000:80/0000:80:01.0");
        let disk = function.join("virtio1/block/vda");
        std::fs::create_dir_all(&disk).unwrap();
        std::fs::write(function.join("numa_node"), "1\n").unwrap();
        assert_eq!(
            super::super::numa_node_above(&disk),
            Some(NumaNode::Node(1))
        );
        std::fs::write(function.join("numa_node"), "-1\n").unwrap();
        assert_eq!(super::super::numa_node_above(&disk), Some(NumaNode::None));
        std::fs::remove_file(function.join("numa_node")).unwrap();
        assert_eq!(super::super::numa_node_above(&disk), None);
    }

    #[test]
    fn cuda_version_from_either_banner() {
        assert_eq!(
            banner_cuda_version(
                "| NVIDIA-SMI 580.159   Driver Version: 580.159   CUDA Version: 13.0     |"
            )
            .as_deref(),
            Some("13.0")
        );
        assert_eq!(
            banner_cuda_version("CUDA Version                              : 13.0\n").as_deref(),
            Some("13.0")
        );
        assert_eq!(banner_cuda_version("no version here"), None);
    }
}
