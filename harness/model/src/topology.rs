//! Where a GPU and the data dir's disk sit in the host (PCIe link, NUMA node), as the doctor read
//! them before the trials: the facts a reader's speed depends on beside the findings that need
//! them, such as a GPU reader slower than POSIX over the same file.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A GPU's PCIe link as `nvidia-smi` reports it: the generation and width it trained at, and the
/// most it can.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PcieLink {
    pub gen_current: Option<u32>,
    pub gen_max: Option<u32>,
    pub width_current: Option<u32>,
    pub width_max: Option<u32>,
}

impl PcieLink {
    /// `PCIe gen 5 x16`, `PCIe gen 4 (max 5) x8 (max 16)`, or `PCIe link unknown`.
    pub fn text(&self) -> String {
        let part = |current: Option<u32>, max: Option<u32>| match (current, max) {
            (Some(c), Some(m)) if c != m => format!("{c} (max {m})"),
            (Some(c), _) => c.to_string(),
            (None, _) => "?".into(),
        };
        match (self.gen_current, self.width_current) {
            (None, None) => "PCIe link unknown".into(),
            _ => format!(
                "PCIe gen {} x{}",
                part(self.gen_current, self.gen_max),
                part(self.width_current, self.width_max)
            ),
        }
    }

    /// The link trained narrower than it can.
    pub fn narrower(&self) -> bool {
        matches!((self.width_current, self.width_max), (Some(c), Some(m)) if c < m)
    }

    /// The link runs at a lower generation than it can. A GPU lowers its generation when idle to
    /// save power, so this says something only when read under load.
    pub fn slower(&self) -> bool {
        matches!((self.gen_current, self.gen_max), (Some(c), Some(m)) if c < m)
    }
}

/// A NUMA node as the kernel reports it for a PCI device (`/sys/.../numa_node`): a node, or none
/// (`-1`: the firmware ties the device to no node, as on a one-node host).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NumaNode {
    Node(u32),
    None,
}

impl NumaNode {
    /// The kernel's number: `-1` (or any negative) is none.
    pub fn from_sysfs(value: i64) -> NumaNode {
        u32::try_from(value).map_or(NumaNode::None, NumaNode::Node)
    }

    fn text(numa: Option<NumaNode>) -> String {
        match numa {
            Some(NumaNode::Node(node)) => format!("NUMA node {node}"),
            Some(NumaNode::None) => "no NUMA node".into(),
            None => "NUMA node unknown".into(),
        }
    }
}

/// One GPU: its index (as `nvidia-smi` numbers it), PCI address, link and NUMA node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GpuLink {
    pub index: u32,
    pub pci_bus_id: Option<String>,
    pub pcie: PcieLink,
    pub numa_node: Option<NumaNode>,
}

/// The whole disk under the data dir: its name, driver, the members of a RAID or device-mapper
/// volume, and the NUMA node of the PCI device it hangs off.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiskLink {
    pub disk: String,
    pub driver: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    pub numa_node: Option<NumaNode>,
}

/// Every GPU and the data dir's disk, as far as the doctor could read them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HostTopology {
    pub gpus: Vec<GpuLink>,
    pub disk: Option<DiskLink>,
    /// What could not be read, each with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
}

impl HostTopology {
    /// The facts beside a trial that read into GPU `gpu`.
    pub fn for_gpu(&self, gpu: u32) -> Topology {
        let link = self.gpus.iter().find(|link| link.index == gpu).cloned();
        let mut unknown = self.unknown.clone();
        if link.is_none() && !self.gpus.is_empty() {
            unknown.push(format!("the doctor lists no GPU {gpu}"));
        }
        Topology {
            gpu: link,
            disk: self.disk.clone(),
            unknown,
        }
    }
}

/// The facts beside one trial: its GPU's link and the data dir's disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Topology {
    pub gpu: Option<GpuLink>,
    pub disk: Option<DiskLink>,
    /// What could not be read, each with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
}

impl Topology {
    /// One line: `GPU 0 at 00000000:00:05.0: PCIe gen 5 x16, NUMA node 0; disk nvme0n1 (nvme):
    /// NUMA node 1`, or what is unknown and why.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if let Some(gpu) = &self.gpu {
            let at = gpu
                .pci_bus_id
                .as_ref()
                .map(|bus| format!(" at {bus}"))
                .unwrap_or_default();
            parts.push(format!(
                "GPU {}{at}: {}, {}",
                gpu.index,
                gpu.pcie.text(),
                NumaNode::text(gpu.numa_node)
            ));
        }
        if let Some(disk) = &self.disk {
            let driver = disk
                .driver
                .as_ref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            let members = if disk.members.is_empty() {
                String::new()
            } else {
                format!(" over {}", disk.members.join(", "))
            };
            parts.push(format!(
                "disk {}{driver}{members}: {}",
                disk.disk,
                NumaNode::text(disk.numa_node)
            ));
        }
        parts.extend(self.unknown.iter().cloned());
        if parts.is_empty() {
            "topology unknown".into()
        } else {
            parts.join("; ")
        }
    }

    /// What in the topology can make a GPU path slower than a host one: the GPU and the disk on
    /// different NUMA nodes (the bytes cross the link between the sockets), or a GPU link
    /// trained narrower than it can.
    pub fn concerns(&self) -> Vec<String> {
        let mut concerns = Vec::new();
        let gpu_node = self.gpu.as_ref().and_then(|gpu| gpu.numa_node);
        let disk_node = self.disk.as_ref().and_then(|disk| disk.numa_node);
        if let (Some(NumaNode::Node(gpu)), Some(NumaNode::Node(disk))) = (gpu_node, disk_node)
            && gpu != disk
        {
            concerns.push(format!(
                "the GPU is on NUMA node {gpu} and the disk on node {disk}: the bytes cross between the sockets"
            ));
        }
        if let Some(gpu) = self.gpu.as_ref().filter(|gpu| gpu.pcie.narrower()) {
            concerns.push(format!(
                "the GPU's link trained narrower than it can ({})",
                gpu.pcie.text()
            ));
        }
        concerns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(gen_current: u32, width_current: u32) -> PcieLink {
        PcieLink {
            gen_current: Some(gen_current),
            gen_max: Some(5),
            width_current: Some(width_current),
            width_max: Some(16),
        }
    }

    /// Fixture: a host of two GPUs, the data on an NVMe drive on NUMA node 1.
    fn host() -> HostTopology {
        HostTopology {
            gpus: vec![
                GpuLink {
                    index: 0,
                    pci_bus_id: Some("00000000:18:00.0".into()),
                    pcie: link(5, 16),
                    numa_node: Some(NumaNode::Node(0)),
                },
                GpuLink {
                    index: 1,
                    pci_bus_id: Some("00000000:9a:00.0".into()),
                    pcie: link(4, 8),
                    numa_node: Some(NumaNode::Node(1)),
                },
            ],
            disk: Some(DiskLink {
                disk: "nvme0n1".into(),
                driver: Some("nvme".into()),
                members: Vec::new(),
                numa_node: Some(NumaNode::Node(1)),
            }),
            unknown: Vec::new(),
        }
    }

    #[test]
    fn the_line_names_each_link_and_node() {
        assert_eq!(
            host().for_gpu(0).line(),
            "GPU 0 at 00000000:18:00.0: PCIe gen 5 x16, NUMA node 0; disk nvme0n1 (nvme): NUMA node 1"
        );
        assert_eq!(
            host().for_gpu(1).line(),
            "GPU 1 at 00000000:9a:00.0: PCIe gen 4 (max 5) x8 (max 16), NUMA node 1; disk nvme0n1 (nvme): NUMA node 1"
        );
        assert_eq!(
            host().for_gpu(7).line(),
            "disk nvme0n1 (nvme): NUMA node 1; the doctor lists no GPU 7"
        );
        let unread = HostTopology {
            unknown: vec!["GPUs: nvidia-smi is not installed".into()],
            ..HostTopology::default()
        };
        assert_eq!(
            unread.for_gpu(0).line(),
            "GPUs: nvidia-smi is not installed"
        );
        assert_eq!(Topology::default().line(), "topology unknown");
        assert_eq!(PcieLink::default().text(), "PCIe link unknown");
    }

    #[test]
    fn another_numa_node_or_a_narrow_link_is_a_concern() {
        assert_eq!(
            host().for_gpu(0).concerns(),
            [
                "the GPU is on NUMA node 0 and the disk on node 1: the bytes cross between the sockets"
            ]
        );
        assert_eq!(
            host().for_gpu(1).concerns(),
            ["the GPU's link trained narrower than it can (PCIe gen 4 (max 5) x8 (max 16))"]
        );
        // A host that ties no device to a node says nothing about crossing.
        let mut one_node = host();
        one_node.gpus[0].numa_node = Some(NumaNode::from_sysfs(-1));
        assert_eq!(one_node.gpus[0].numa_node, Some(NumaNode::None));
        assert!(one_node.for_gpu(0).concerns().is_empty());
    }
}
