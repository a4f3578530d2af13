//! Checks of where the data lives (mount, device, `O_DIRECT`, udev, space) and of the platform
//! around it (IOMMU, ACS, topology, container or WSL).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{Check, State};
use crate::collect::parse_cmdline_iommu;
use crate::facts::{Fact, Facts};
use crate::fixes::{ACS_FIX, FS_FIX, IOMMU_FIX, ODIRECT_FIX, SPACE_FIX, UDEV_FIX};
use gds_model::scenario::TrialSpec;
use gds_model::units::format_bytes;
use gds_runner::data::GeneratedFile;
use gds_runner::prepare::FileKey;

/// File systems cuFile cannot use for GDS at all (no `O_DIRECT`, or no device under them).
const UNSUPPORTED_FS: &[&str] = &[
    "tmpfs", "ramfs", "overlay", "squashfs", "9p", "vfat", "btrfs", "zfs",
];
/// File systems nvidia-fs reads without a local block device.
const DISTRIBUTED_FS: &[&str] = &["lustre", "wekafs", "nfs", "nfs4", "gpfs", "beegfs"];

/// Bytes of generated files the runnable trials read, and how many of them exist already.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SpaceNeed {
    pub files: usize,
    pub total: u64,
    pub present: u64,
    pub to_generate: u64,
    /// The writing trials' own files (kept between runs): room they need beside the generated
    /// data.
    pub to_write: u64,
}

/// Whether a writing trial writes the copy of its file `file`: every one, or with writing ranks
/// (`writers:`) those of the last ranks, as whole files go round-robin to the ranks.
fn writes_copy(spec: &TrialSpec, file: usize) -> bool {
    let ranks = spec.ranks.len();
    spec.op.writes() || ranks == 0 || file % ranks >= ranks - spec.writers as usize
}

/// Deduplicated by (seed, size) like the gate's data preparation; only trials that can run
/// here get their data prepared (a GPU trial without a driver does not).
pub(crate) fn space_needed(facts: &Facts, trials: &[TrialSpec]) -> SpaceNeed {
    let gpu = facts.driver.libcuda.known().is_some();
    let runnable = || trials.iter().filter(move |spec| gpu || !spec.uses_gpu());
    // A writing trial writes files of its own, kept for the next run (which blanks them in
    // place), so each distinct one takes its space for good.
    let to_write = runnable()
        .filter(|spec| spec.writes())
        .filter_map(|spec| {
            let copies =
                gds_model::write::written_paths(Path::new(&facts.data_dir.path), &spec.files)?;
            Some(
                copies
                    .into_iter()
                    .enumerate()
                    .filter(|(file, _)| writes_copy(spec, *file))
                    .map(|(_, copy)| copy),
            )
        })
        .flatten()
        .collect::<BTreeMap<_, _>>()
        .into_values()
        .fold(0u64, u64::saturating_add);
    let keys: BTreeSet<(u64, u64)> = runnable()
        .filter(|spec| !spec.op.writes())
        .flat_map(|spec| FileKey::of(&spec.files))
        .filter_map(|key| match key {
            FileKey::Generated { seed, size } => Some((seed, size)),
            FileKey::User(_) => None,
        })
        .collect();
    let mut need = SpaceNeed {
        files: keys.len(),
        to_write,
        ..SpaceNeed::default()
    };
    // Saturating: sizes near 2^64 are refused when generated, not wrapped into small ones here.
    for (seed, size) in keys {
        need.total = need.total.saturating_add(size);
        let name = GeneratedFile { seed, size }.file_name();
        match facts.data_dir.existing_files.get(&name) {
            Some(&existing) if existing == size => need.present = need.present.saturating_add(size),
            _ => need.to_generate = need.to_generate.saturating_add(size),
        }
    }
    need
}

pub(super) fn data_dir(facts: &Facts, trials: &[TrialSpec], rows: &mut Vec<Check>) {
    let data = &facts.data_dir;
    let place = match (&data.probed, data.exists) {
        (Fact::Known(_), true) => data.path.clone(),
        (Fact::Known(probed), false) => format!("{} (to be created; probed {probed})", data.path),
        (Fact::Unknown(why), _) => format!("{} ({why})", data.path),
    };
    let mount = data.mount.known();
    rows.push(match mount {
        Some(m) => {
            let options = [m.options.join(","), m.super_options.join(",")]
                .into_iter()
                .filter(|o| !o.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            let options = match options.is_empty() {
                true => String::new(),
                false => format!(" ({options})"),
            };
            let evidence = format!(
                "{place} on {}: {} from {}{options}",
                m.mount_point, m.fs_type, m.source
            );
            let ext4_mode = m
                .super_options
                .iter()
                .find(|o| *o == "data=journal" || *o == "data=writeback");
            if UNSUPPORTED_FS.contains(&m.fs_type.as_str()) || m.fs_type.starts_with("fuse") {
                Check::new(
                    "data dir",
                    State::Warn,
                    format!("{evidence}: GDS does not support {}", m.fs_type),
                )
                .fix(FS_FIX)
            } else if let Some(mode) = ext4_mode {
                Check::new(
                    "data dir",
                    State::Warn,
                    format!("{evidence}: GDS needs ext4 with data=ordered, not {mode}"),
                )
                .fix(FS_FIX)
            } else {
                Check::ok("data dir", evidence)
            }
        }
        None => Check::unknown(
            "data dir",
            format!("{place}: {}", data.mount.why().unwrap_or("")),
        ),
    });
    let on_block = mount.is_some_and(|m| !m.device.starts_with("0:"));
    match (&data.block, mount) {
        (Fact::Known(block), _) => {
            let members = match block.members.is_empty() {
                true => String::new(),
                false => format!(", members {}", block.members.join(" ")),
            };
            let evidence = format!(
                "{} on {} (driver {}{members})",
                block.name,
                block.disk,
                block.driver.as_deref().unwrap_or("unknown")
            );
            rows.push(match block.nvme {
                true => Check::ok("block device", format!("{evidence}: NVMe")),
                false => Check::new(
                    "block device",
                    State::Warn,
                    format!(
                        "{evidence}: not NVMe, so nvidia-fs cannot read it directly; \
                        cuFile reads it in compat mode at best"
                    ),
                )
                .fix(FS_FIX),
            });
        }
        (Fact::Unknown(_), Some(m)) if DISTRIBUTED_FS.contains(&m.fs_type.as_str()) => {
            rows.push(Check::ok(
                "block device",
                format!("none needed: {} is a distributed file system", m.fs_type),
            ));
        }
        (Fact::Unknown(why), _) if on_block => {
            rows.push(Check::unknown("block device", why.clone()))
        }
        (Fact::Unknown(why), _) => {
            rows.push(Check::new("block device", State::Warn, why.clone()).fix(FS_FIX))
        }
    }
    rows.push(match &data.o_direct {
        Fact::Known(direct) if direct.works => Check::ok("O_DIRECT", direct.detail.clone()),
        Fact::Known(direct) => Check::new(
            "O_DIRECT",
            State::Fail,
            format!(
                "{}: cuFile cannot register files there and KvikIO falls back to POSIX",
                direct.detail
            ),
        )
        .fix(ODIRECT_FIX),
        Fact::Unknown(why) => Check::unknown("O_DIRECT", why.clone()),
    });
    rows.push(udev(facts, on_block));
    rows.push(space(facts, trials));
}

fn udev(facts: &Facts, on_block: bool) -> Check {
    let data = &facts.data_dir;
    let device = data
        .block
        .known()
        .map(|b| b.name.clone())
        .or_else(|| data.mount.known().map(|m| m.source.clone()))
        .unwrap_or_else(|| "the data dir's device".into());
    if !data.run_udev {
        let evidence = "/run/udev does not exist (a container without udev's \
            database?): KvikIO AUTO never tries cuFile";
        return match on_block {
            true => Check::new(
                "udev",
                State::Fail,
                format!(
                    "{evidence}, and cuFileHandleRegister cannot tell the file \
                    system of {device} (fails with 5027)"
                ),
            )
            .fix(UDEV_FIX),
            false => Check::new("udev", State::Warn, evidence).fix(UDEV_FIX),
        };
    }
    match &data.udev {
        Fact::Known(record) if record.id_fs_usage.is_some() => Check::ok(
            "udev",
            format!(
                "{}: ID_FS_USAGE={}{}",
                record.path,
                record.id_fs_usage.as_deref().unwrap_or(""),
                record
                    .id_fs_type
                    .as_ref()
                    .map(|t| format!(", ID_FS_TYPE={t}"))
                    .unwrap_or_default()
            ),
        ),
        Fact::Known(record) => Check::new(
            "udev",
            State::Fail,
            format!(
                "{} {}: cuFileHandleRegister fails with 5027 (`udev property \
                    not found: ID_FS_USAGE {device}`) and KvikIO AUTO silently \
                    reads with POSIX",
                record.path,
                if record.exists {
                    "has no ID_FS_USAGE"
                } else {
                    "does not exist"
                }
            ),
        )
        .fix(UDEV_FIX),
        Fact::Unknown(why) if !on_block => Check::ok("udev", format!("/run/udev exists; {why}")),
        Fact::Unknown(why) => Check::unknown("udev", why.clone()),
    }
}

fn space(facts: &Facts, trials: &[TrialSpec]) -> Check {
    let Some(&free) = facts.data_dir.free_bytes.known() else {
        return Check::unknown(
            "free space",
            facts.data_dir.free_bytes.why().unwrap_or("").to_string(),
        );
    };
    let free_text = format!("{} free", format_bytes(free, 1));
    if trials.is_empty() {
        return Check::ok("free space", format!("{free_text}; no suite selected"));
    }
    let need = space_needed(facts, trials);
    let writes = if need.to_write > 0 {
        format!(
            "; the writing trials keep {} of files of their own",
            format_bytes(need.to_write, 2)
        )
    } else {
        String::new()
    };
    let evidence = format!(
        "the selected suites read {} generated file(s), {} in all, {} \
            of it already there; {} to generate{writes}, {free_text}",
        need.files,
        format_bytes(need.total, 2),
        format_bytes(need.present, 2),
        format_bytes(need.to_generate, 2),
    );
    match need.to_generate.saturating_add(need.to_write) > free {
        true => Check::new("free space", State::Fail, evidence).fix(SPACE_FIX),
        false => Check::ok("free space", evidence),
    }
}

pub(super) fn platform(facts: &Facts, rows: &mut Vec<Check>) {
    let platform = &facts.platform;
    let cmdline = platform
        .kernel_cmdline
        .known()
        .map(|c| parse_cmdline_iommu(c));
    let params = match &cmdline {
        Some(params) if !params.is_empty() => format!("kernel command line: {}", params.join(" ")),
        Some(_) => "no iommu= on the kernel command line".into(),
        None => "kernel command line unknown".into(),
    };
    rows.push(match &platform.iommu_units {
        Fact::Known(units) if units.is_empty() => Check::ok(
            "IOMMU",
            format!("off: no units in /sys/class/iommu; {params}"),
        ),
        Fact::Known(units) => {
            let off_or_pt = cmdline
                .iter()
                .flatten()
                .any(|p| p.ends_with("=off") || p == "iommu=pt");
            let evidence = format!(
                "{} unit(s) in /sys/class/iommu ({}); {params}",
                units.len(),
                units.join(", ")
            );
            match off_or_pt {
                true => Check::ok("IOMMU", format!("{evidence} (pass-through or off)")),
                false => Check::new(
                    "IOMMU",
                    State::Warn,
                    format!("{evidence}: translation on, which GDS does not support reliably"),
                )
                .fix(IOMMU_FIX),
            }
        }
        Fact::Unknown(why) => Check::unknown("IOMMU", format!("{why}; {params}")),
    });
    rows.push(match &platform.acs {
        Fact::Known(acs) if acs.source_validation.is_empty() => Check::ok(
            "PCIe ACS",
            format!(
                "{} device(s) with ACS, none with source validation on",
                acs.devices
            ),
        ),
        Fact::Known(acs) => Check::new(
            "PCIe ACS",
            State::Warn,
            format!(
                "source validation on at {} of {} ACS device(s) ({}): \
                    peer-to-peer reads are routed through the root complex",
                acs.source_validation.len(),
                acs.devices,
                acs.source_validation.join(", ")
            ),
        )
        .fix(ACS_FIX),
        Fact::Unknown(why) => Check::unknown("PCIe ACS", why.clone()),
    });
    rows.push(match &platform.topology {
        Fact::Known(text) => Check::ok("topology", format!("nvidia-smi topo -m:\n{text}")),
        Fact::Unknown(why) => Check::unknown("topology", why.clone()),
    });
}
