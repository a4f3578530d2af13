//! Test fixtures of this crate: a report around fixture records.

use gds_model::record::TrialRecord;
use gds_model::topology::{DiskLink, GpuLink, HostTopology, NumaNode, PcieLink};

/// A report of `trials` on a made-up host, with no baseline: the renderers' input.
pub fn report(trials: Vec<TrialRecord>) -> crate::Report {
    let totals = gds_baseline::outcome::Totals::of(&trials, 0, 0);
    crate::Report {
        schema_version: crate::SCHEMA_VERSION,
        gate_version: "0.0.0".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        duration_seconds: 1.0,
        time: None,
        command: vec!["gds-gate".into()],
        host: gds_runner::host::HostFacts {
            hostname: "gpu01".into(),
            kernel: "6.8.0".into(),
            cpus: 2,
            memory_bytes: None,
            gpu_unavailable: None,
            nvidia_driver_version: None,
        },
        data_dir: "data".into(),
        suites: Vec::new(),
        data: Vec::new(),
        trials,
        totals,
        notes: Vec::new(),
        doctor: Vec::new(),
        runner: None,
        fingerprint: None,
        baseline: None,
        control: None,
        direct_vs_posix: Vec::new(),
        rehearsal: None,
        registered_vs_unregistered: Vec::new(),
        scope: Default::default(),
        rate: Default::default(),
    }
}

/// The doctor's facts of a made-up one-node VM: one GPU at gen 5 x16, the data on a virtio disk,
/// neither tied to a NUMA node.
pub fn topology() -> HostTopology {
    let gen5_x16 = PcieLink {
        gen_current: Some(5),
        gen_max: Some(5),
        width_current: Some(16),
        width_max: Some(16),
    };
    HostTopology {
        gpus: vec![GpuLink {
            index: 0,
            pci_bus_id: Some("00000000:00:05.0".into()),
            pcie: gen5_x16,
            numa_node: Some(NumaNode::None),
        }],
        disk: Some(DiskLink {
            disk: "vda".into(),
            driver: Some("virtio_blk".into()),
            members: Vec::new(),
            numa_node: Some(NumaNode::None),
        }),
        unknown: Vec::new(),
    }
}
