//! What the host can do, one question at a time (does nvidia-fs read the data dir, can cuFile
//! register a file there, what does KvikIO AUTO decide), each answer with the facts it rests on.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::facts::{DriverOpen, Fact, Facts, KvikioProbe};
use gds_model::verdict::stack::{self, AutoBlocker};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Can {
    Yes,
    No,
    Unknown,
}

impl Can {
    pub fn word(self) -> &'static str {
        match self {
            Can::Yes => "yes",
            Can::No => "no",
            Can::Unknown => "unknown",
        }
    }
}

/// An answer and the facts it rests on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    pub can: Can,
    pub why: String,
}

pub(crate) fn yes(why: impl Into<String>) -> Answer {
    Answer {
        can: Can::Yes,
        why: why.into(),
    }
}

pub(crate) fn no(why: impl Into<String>) -> Answer {
    Answer {
        can: Can::No,
        why: why.into(),
    }
}

pub(crate) fn unknown(why: impl Into<String>) -> Answer {
    Answer {
        can: Can::Unknown,
        why: why.into(),
    }
}

/// The cufile.json settings a trial runs with: the host's file, then the scenario's overrides.
pub(crate) struct Settings {
    pub allow_compat: bool,
    pub force_compat: bool,
    pub p2pdma: bool,
}

impl Settings {
    pub(crate) fn of(facts: &Facts, overrides: &BTreeMap<String, Value>) -> Settings {
        let flag = |key: &str, default: bool| {
            overrides
                .get(key)
                .or_else(|| facts.config.settings.get(key))
                .and_then(Value::as_bool)
                .unwrap_or(default)
        };
        Settings {
            allow_compat: flag("properties.allow_compat_mode", true),
            force_compat: flag("properties.force_compat_mode", false),
            p2pdma: flag("properties.use_pci_p2pdma", false),
        }
    }
}

/// Whether GPU trials can start: the NVIDIA driver library loads.
pub(crate) fn gpu(facts: &Facts) -> Answer {
    match facts.driver.libcuda.why() {
        Some(why) => no(why),
        None => yes("the NVIDIA driver loads"),
    }
}

pub(crate) fn libcufile(facts: &Facts) -> Answer {
    match &facts.cufile.library {
        Fact::Known(lib) => yes(format!("libcufile {} loads", lib.version)),
        Fact::Unknown(why) => no(why.clone()),
    }
}

/// cuFile's batch API as the `cufile-batch` reader calls it (the worker's optional entry points,
/// `OPTIONAL_ENTRY_POINTS` in harness/worker/src/libcufile.rs, which the probe reports).
pub(crate) const BATCH_API: &[&str] = &[
    "cuFileBatchIOSetUp",
    "cuFileBatchIOSubmit",
    "cuFileBatchIOGetStatus",
    "cuFileBatchIODestroy",
];

/// cuFile's stream-ordered API as the `cufile-async` reader and writer call it.
pub(crate) const STREAM_API: &[&str] = &[
    "cuFileStreamRegister",
    "cuFileReadAsync",
    "cuFileWriteAsync",
    "cuFileStreamDeregister",
];

/// Which of `symbols` a probed list of exported entry points lacks.
pub(crate) fn lacking<'a>(points: &[String], symbols: &[&'a str]) -> Vec<&'a str> {
    symbols
        .iter()
        .filter(|symbol| !points.iter().any(|p| p == *symbol))
        .copied()
        .collect()
}

/// Whether the host's libcufile exports every one of `symbols`, the entry points `reader` needs.
pub(crate) fn entry_point(facts: &Facts, symbols: &[&str], reader: &str) -> Answer {
    match &facts.cufile.library {
        Fact::Known(lib) => match &lib.entry_points {
            Some(points) => match lacking(points, symbols).as_slice() {
                [] => yes(format!(
                    "libcufile {} exports {}",
                    lib.version,
                    quoted(symbols)
                )),
                missing => no(format!(
                    "libcufile {} (`{}`) has no {}: {reader} trials are ignored",
                    lib.version,
                    lib.path,
                    quoted(missing)
                )),
            },
            None => unknown(format!(
                "which entry points libcufile {} exports was not probed",
                lib.version
            )),
        },
        Fact::Unknown(why) => no(why.clone()),
    }
}

/// `` `a`, `b` ``.
pub(crate) fn quoted(symbols: &[&str]) -> String {
    symbols
        .iter()
        .map(|symbol| format!("`{symbol}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `cuFileHandleRegister` can succeed for a file in the data dir.
pub(crate) fn registration(facts: &Facts) -> Answer {
    let data = &facts.data_dir;
    if let Some(direct) = data.o_direct.known()
        && !direct.works
    {
        return no(format!("`O_DIRECT` is refused there ({})", direct.detail));
    }
    let Some(mount) = data.mount.known() else {
        return unknown(format!(
            "the data dir's mount is unknown: {}",
            data.mount.why().unwrap_or("")
        ));
    };
    if !mount.device.starts_with("0:") {
        if !data.run_udev {
            return no(
                "/run/udev does not exist, so cuFile cannot look up the file system of the block device and cuFileHandleRegister fails (5027)",
            );
        }
        match data.udev.known() {
            Some(record) if record.id_fs_usage.is_some() => {}
            Some(record) => {
                let device = data
                    .block
                    .known()
                    .map_or(mount.source.as_str(), |b| b.name.as_str());
                return no(format!(
                    "udev has no record with ID_FS_USAGE for {device} ({}{}), so cuFileHandleRegister fails (5027, `udev property not found`)",
                    record.path,
                    if record.exists { "" } else { " is missing" }
                ));
            }
            None => {
                return unknown(
                    data.udev
                        .why()
                        .unwrap_or("the udev record is unknown")
                        .to_string(),
                );
            }
        }
    }
    match data.o_direct.known() {
        Some(_) => yes(format!(
            "`O_DIRECT` works on {}{}",
            mount.fs_type,
            if mount.device.starts_with("0:") {
                ""
            } else {
                " and udev knows the device"
            }
        )),
        None => unknown(format!(
            "`O_DIRECT` is untested: {}",
            data.o_direct.why().unwrap_or("")
        )),
    }
}

/// Distributed file systems nvidia-fs reads directly, by mount type and driver status flag.
const DFS: &[(&str, &str)] = &[
    ("lustre", "lustre"),
    ("wekafs", "wekafs"),
    ("nfs", "nfs"),
    ("nfs4", "nfs"),
    ("gpfs", "gpfs"),
    ("beegfs", "beegfs"),
];

/// Whether nvidia-fs can carry reads of the data dir.
pub(crate) fn nvfs(facts: &Facts) -> Answer {
    let props = match facts.cufile.driver_open.known() {
        Some(DriverOpen::Opened { properties }) => properties.known(),
        _ => None,
    };
    let loaded = props.map_or(facts.nvidia_fs.module_loaded, |p| p.nvfs_loaded);
    if !loaded {
        return no("nvidia-fs is not loaded");
    }
    let Some(mount) = facts.data_dir.mount.known() else {
        return unknown("the data dir's mount is unknown");
    };
    let flags = props.map(|p| p.status_flags.clone());
    let gdscheck = facts.gdscheck.known().map(|g| &g.parsed);
    if let Some((_, flag)) = DFS.iter().find(|(fs, _)| *fs == mount.fs_type) {
        return match &flags {
            Some(flags) if flags.iter().any(|f| f == flag) => {
                yes(format!("nvidia-fs supports {flag}"))
            }
            Some(_) => no(format!("nvidia-fs was not built with {flag} support")),
            None => unknown(format!(
                "whether nvidia-fs supports {flag} is unknown (cuFile's properties were not read)"
            )),
        };
    }
    if !matches!(mount.fs_type.as_str(), "ext4" | "xfs") {
        return no(format!(
            "GDS does not read {} file systems directly",
            mount.fs_type
        ));
    }
    if let Some(mode) = mount
        .super_options
        .iter()
        .find(|o| *o == "data=journal" || *o == "data=writeback")
    {
        return no(format!(
            "ext4 is mounted with {mode}; GDS needs data=ordered"
        ));
    }
    let Some(block) = facts.data_dir.block.known() else {
        return unknown("the data dir's block device is unknown");
    };
    if !block.nvme {
        return no(format!(
            "the data is on {} ({}), not NVMe",
            block.disk,
            block.driver.as_deref().unwrap_or("driver unknown")
        ));
    }
    let registered = flags
        .as_ref()
        .map(|f| f.iter().any(|f| f == "nvme"))
        .or_else(|| gdscheck.and_then(|g| g.support("NVMe")).map(|s| s.direct()))
        .or_else(|| {
            facts
                .nvidia_fs
                .modules
                .known()
                .map(|m| m.iter().any(|l| l.contains("nvme")))
        });
    match registered {
        Some(true) => yes("nvidia-fs is loaded and the NVMe driver is registered with it"),
        Some(false) => no("the NVMe driver is not registered with nvidia-fs"),
        None => unknown("whether the NVMe driver is registered with nvidia-fs is unknown"),
    }
}

pub(crate) fn p2p(facts: &Facts, settings: &Settings) -> Answer {
    if !settings.p2pdma {
        return no("`properties.use_pci_p2pdma` is false");
    }
    if facts.data_dir.block.known().is_some_and(|b| !b.nvme) {
        return no("P2PDMA reads NVMe only, and the data is not on NVMe");
    }
    match facts
        .gdscheck
        .known()
        .and_then(|g| g.parsed.support("NVMe P2PDMA"))
    {
        Some(entry) if entry.direct() => yes("gdscheck: NVMe P2PDMA supported"),
        Some(entry) => no(format!("gdscheck: NVMe P2PDMA {}", entry.value)),
        None => unknown("P2PDMA support is unconfirmed (no `NVMe P2PDMA` line from gdscheck)"),
    }
}

/// What KvikIO AUTO decides for the process: cuFile when libcufile loads, `/run/udev` exists and
/// the host is not WSL (then, per file, registration may still fail).
pub(crate) fn auto(facts: &Facts) -> Answer {
    let probe = facts.kvikio.probe.known();
    let lib = match probe.and_then(kvikio_loads_cufile) {
        Some(loaded) => loaded,
        None => facts.cufile.library.known().is_some(),
    };
    let against: Vec<&str> = stack::auto_blockers(
        Some(facts.data_dir.run_udev),
        Some(facts.platform.wsl),
        Some(lib),
    )
    .into_iter()
    .map(AutoBlocker::describe)
    .collect();
    match (probe.and_then(|p| p.auto_prefers_posix), against.is_empty()) {
        (Some(true), _) => no(format!(
            "KvikIO itself prefers POSIX here{}",
            if against.is_empty() {
                String::new()
            } else {
                format!(": {}", against.join(", "))
            }
        )),
        (Some(false), _) => {
            yes("KvikIO says it will use cuFile (libcufile loads, /run/udev exists, not WSL)")
        }
        (None, true) => yes("libcufile loads, /run/udev exists and this is not WSL"),
        (None, false) => no(against.join(", ")),
    }
}

/// Whether KvikIO could load libcufile, as far as its probe tells.
pub(crate) fn kvikio_loads_cufile(probe: &KvikioProbe) -> Option<bool> {
    if !probe.libcufile_loaded.is_empty() || probe.libcufile_version.is_some() {
        Some(true)
    } else if probe
        .errors
        .iter()
        .any(|e| e.starts_with("libcufile_version"))
    {
        Some(false)
    } else {
        None
    }
}
