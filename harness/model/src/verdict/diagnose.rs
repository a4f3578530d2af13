//! Likely causes of a path that was not the expected one, each with its fix, most likely first.
//! A cause is named only when some evidence points at it; otherwise the diagnosis says that
//! nothing recorded why, and how to find out.

use serde::{Deserialize, Serialize};

use super::stack::{self, AutoBlocker, CufileRoute, KvikioPosix};
use super::{Path, PathVerdict, expected_name};
use crate::evidence::{Bytes, CufileLogFindings, Evidence, FindingKind, clip, cufile_log};
use crate::scenario::{CompatMode, ExpectedPath};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub cause: String,
    pub fix: String,
}

pub const NVFS_FIX: &str = "load the module: `sudo modprobe nvidia-fs` (from the GDS packages, e.g. `nvidia-fs-dkms`), then check `lsmod | grep nvidia_fs` and `cat /proc/driver/nvidia-fs/stats`";
pub const STRICT_HINT: &str = "; set `properties.allow_compat_mode: false` (scenario key `cufile`) so that a missing GDS path is an error, not a silent fallback";
pub const UDEV_FIX: &str = "cuFile reads the file system from udev's database: in a container, mount it (`--volume /run/udev:/run/udev:ro`); on a host, check `udevadm info --query=property --name=/dev/<disk>` lists `ID_FS_USAGE` and run `udevadm trigger` if not";
pub const FS_FIX: &str = "put the data on a mount GDS supports (ext4 with `data=ordered` or xfs on local NVMe, or a supported distributed file system: Lustre, WekaFS, GPFS, BeeGFS, NFS over RDMA); `gdscheck -p` lists what is supported and `findmnt -T FILE` shows the mount";
pub const ODIRECT_FIX: &str = "the mount must accept `O_DIRECT` (tmpfs, overlayfs and many FUSE mounts refuse it): put the data on a file system that does, and check with `dd if=FILE of=/dev/null iflag=direct bs=1M count=1`";
pub const NVME_FIX: &str = "nvidia-fs is loaded but the NVMe driver did not register with it: rebuild nvidia-fs against the running nvme driver (MLNX_OFED/DOCA ships its own nvme) and check that `cat /proc/driver/nvidia-fs/modules` lists nvme";
const STATS_FIX: &str = "collect cuFile's level-3 counters in the worker (`cuFileSetStatsLevel(3)` after `cuFileDriverOpen`, then `cuFileStatsStart`; cuFile ≥ 1.15), or install gds_stats and set `profile.cufile_stats: 3`";

/// A log line's level, module and message, short enough for one line of text.
pub(crate) fn quote(line: &str) -> String {
    clip(cufile_log::message(line.trim()), 200)
}

fn cited(log: Option<&CufileLogFindings>, kind: FindingKind) -> Option<String> {
    let finding = log?.first(kind)?;
    Some(format!(
        " (cufile.log line {}: `{}`)",
        finding.line_number,
        quote(&finding.line)
    ))
}

struct Causes {
    list: Vec<Diagnosis>,
}

impl Causes {
    fn push(&mut self, cause: impl Into<String>, fix: impl Into<String>) {
        let cause = cause.into();
        if !self.list.iter().any(|d| d.cause == cause) {
            self.list.push(Diagnosis {
                cause,
                fix: fix.into(),
            });
        }
    }
}

pub(super) fn diagnose(e: &Evidence, v: &PathVerdict, expected: ExpectedPath) -> Vec<Diagnosis> {
    let mut causes = Causes { list: Vec::new() };
    let nothing_read = v.split.is_empty() && v.path == Path::Unknown;
    if v.involves(Path::CufilePosix) {
        cufile_compat(e, &mut causes);
    }
    if v.involves(Path::KvikioPosix) {
        kvikio_posix(e, &mut causes);
    }
    if nothing_read {
        // A worker that failed (KvikIO OFF raising, cuFileDriverOpen refusing) leaves only the
        // log and the host facts: they still say why.
        log_causes(
            e,
            &mut causes,
            "cuFile could not use GDS",
            if e.allow_compat_mode == Some(false) {
                Driver::First
            } else {
                Driver::Last
            },
        );
    }
    if v.involves(Path::Cufile) || (v.involves(Path::Unknown) && !nothing_read) {
        let unseen = format!("counted no {}", e.op.transfers());
        match v.conflicts.iter().find(|c| c.contains(&unseen)) {
            Some(conflict) => causes.push(
                format!(
                    "cuFile's counters did not see the {}: {conflict}",
                    e.op.transfers()
                ),
                "start the stats in the worker process itself, after `cuFileDriverOpen` and `cuFileSetStatsLevel(3)`, through the same libcufile KvikIO loaded (the wheel's `nvidia/cu13/lib/libcufile.so.0`)",
            ),
            None => causes.push(
                "no cuFile counters: the path through cuFile cannot be confirmed as nvfs",
                STATS_FIX,
            ),
        }
    }
    gds_flavour(e, v, expected, &mut causes);
    for error in &v.errors {
        causes.push(
            format!(
                "{error}: {} failed and may have been retried another way",
                e.op.transfers()
            ),
            "look for ERROR lines in cufile.log (raise `logging.level` to `DEBUG`) and for nvidia-fs messages in `dmesg`; the error counters of `/proc/driver/nvidia-fs/stats` say which step failed",
        );
    }
    if causes.list.is_empty()
        && let Some(conflict) = v.conflicts.first()
    {
        causes.push(
                format!("sources disagree: {conflict}"),
                "the evidence cannot be trusted until they agree: check that every counter covers the same process and interval as the reads",
            );
    }
    causes.list
}

/// A call cuFile itself refused, by its own log: in a failed trial, the library's refusal rather
/// than a fault of the storage or the gate. `None` when the log says nothing of the kind.
pub fn refused_call(log: Option<&CufileLogFindings>) -> Option<Diagnosis> {
    let why = cited(log, FindingKind::AsyncCallRefused)?;
    Some(Diagnosis {
        cause: format!(
            "cuFile refused a stream-ordered call (cuFileReadAsync or cuFileWriteAsync) when its stream ran it: its own check of the call's buffer range failed and it wrote -5 (EIO) as the byte count{why}"
        ),
        fix: "a limitation of this libcufile, not of the storage: register the buffer (`buffer: registered`), the range cuFile checks such calls against; with an unregistered buffer, name each call's own part of it as `bufPtr_base` with offset 0 (the gate's cufile-async reader and writer do)".into(),
    })
}

/// cuFile read through host memory: why.
fn cufile_compat(e: &Evidence, causes: &mut Causes) {
    let start = causes.list.len();
    let strict = e.allow_compat_mode != Some(false);
    if e.allow_compat_mode == Some(false) {
        causes.push(
            format!("cuFile did its {} in compat mode although the trial set `properties.allow_compat_mode: false`: the overlay did not reach cuFile", e.op.transfers()),
            "the worker must export `CUFILE_ENV_PATH_JSON` naming the overlay before its first cuFile call (cuFile reads its config once per process)",
        );
    }
    log_causes(e, causes, "cuFile compat mode", Driver::First);
    if e.buffer_registered == Some(false) && causes.list.len() == start {
        causes.push(
            "cuFile compat mode with an unregistered buffer: cuFile needs its own GPU bounce buffers for it and falls back to compat mode when it cannot allocate them",
            "register the buffer (`buffer: registered`) or raise `properties.max_device_cache_size_kb` in cufile.json",
        );
    }
    if causes.list.len() == start {
        causes.push(
            "cuFile compat mode, and nothing recorded why",
            format!("run `gdscheck -p` (it lists what is unsupported), check `lsmod | grep nvidia_fs`, and set `logging.level: DEBUG` in cufile.json to see the `cuFileHandleRegister` lines{}", if strict { STRICT_HINT } else { "" }),
        );
    }
}

/// Where the driver causes (no nvidia-fs, its NVMe hook, cuFile init) go among the file causes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Driver {
    First,
    Last,
    /// cuFile would have used compat mode, so the driver is not why it was bypassed.
    Skip,
}

/// Causes the host facts and cufile.log support. Driver causes (no nvidia-fs) explain compat
/// reads; file causes (udev, file system, `O_DIRECT`) explain a file cuFile would not register,
/// which is what sends KvikIO AUTO to POSIX or stops a worker, unless compat mode was forbidden.
fn log_causes(e: &Evidence, causes: &mut Causes, what: &str, driver: Driver) {
    let start = causes.list.len();
    let log = e.cufile_log.as_ref();
    let has = |kind| log.is_some_and(|l| l.has(kind));
    let why = |kind| cited(log, kind).unwrap_or_default();
    let strict = if e.allow_compat_mode == Some(false) {
        ""
    } else {
        STRICT_HINT
    };
    let diagnosis = |cause: String, fix: String| Diagnosis { cause, fix };
    let mut driver_causes = Vec::new();
    let mut file = Vec::new();
    if e.nvidia_fs_loaded == Some(false) || has(FindingKind::NvidiaFsNotLoaded) {
        driver_causes.push(diagnosis(
            format!(
                "{what}: nvidia-fs is not loaded{}",
                why(FindingKind::NvidiaFsNotLoaded)
            ),
            format!("{NVFS_FIX}{strict}"),
        ));
    }
    if has(FindingKind::NvmeNotRegistered) {
        driver_causes.push(diagnosis(
            format!(
                "{what}: the NVMe driver is not registered with nvidia-fs{}",
                why(FindingKind::NvmeNotRegistered)
            ),
            NVME_FIX.into(),
        ));
    }
    if has(FindingKind::DriverInitFailed) {
        driver_causes.push(diagnosis(
            format!("{what}: cuFile's driver did not initialise{}", why(FindingKind::DriverInitFailed)),
            format!("check the NVIDIA driver (`nvidia-smi`) and nvidia-fs (`lsmod | grep nvidia_fs`); `gdscheck -p` shows what cuFile sees{strict}"),
        ));
    }
    if has(FindingKind::UdevRecordMissing) {
        file.push(diagnosis(
            format!("{what}: udev has no record of the file's block device, so cuFile cannot tell its file system{}", why(FindingKind::UdevRecordMissing)),
            UDEV_FIX.into(),
        ));
    }
    if has(FindingKind::FilesystemUnsupported) {
        file.push(diagnosis(
            format!(
                "{what}: the file system or mount is not supported by GDS{}",
                why(FindingKind::FilesystemUnsupported)
            ),
            FS_FIX.into(),
        ));
    }
    if has(FindingKind::ODirectRefused) {
        file.push(diagnosis(
            format!(
                "{what}: the `O_DIRECT` open or read was refused{}",
                why(FindingKind::ODirectRefused)
            ),
            ODIRECT_FIX.into(),
        ));
    }
    if e.buffer_registered == Some(true) && has(FindingKind::BufRegisterFailed) {
        file.push(diagnosis(
            format!("{what}: `cuFileBufRegister` failed, so the registered-buffer path was not used{}", why(FindingKind::BufRegisterFailed)),
            "check the GPU's BAR1 space (`nvidia-smi -q -d MEMORY`, BAR1) and `properties.max_device_pinned_mem_size_kb` in cufile.json".into(),
        ));
    }
    let ordered = match driver {
        Driver::First => [driver_causes, file].concat(),
        Driver::Last => [file, driver_causes].concat(),
        Driver::Skip => file,
    };
    for found in ordered {
        causes.push(found.cause, found.fix);
    }
    if has(FindingKind::HandleRegisterFailed) && causes.list.len() == start {
        causes.push(
            format!("{what}: `cuFileHandleRegister` failed for the file{}", why(FindingKind::HandleRegisterFailed)),
            "the cufile.log lines before it say why; run `gdscheck -p` and check udev (`/run/udev`) and `O_DIRECT` on the mount",
        );
    }
    if causes.list.len() == start {
        for kind in [FindingKind::CompatMode, FindingKind::FileCompatMode] {
            if let Some(why) = cited(log, kind) {
                causes.push(
                    format!("{what}{why}"),
                    format!("`gdscheck -p` lists what is unsupported; check `properties.force_compat_mode` is false in cufile.json{strict}"),
                );
            }
        }
    }
}

/// KvikIO read with POSIX: its compat mode, small reads, or its silent per-file AUTO fallback.
fn kvikio_posix(e: &Evidence, causes: &mut Causes) {
    let start = causes.list.len();
    match stack::kvikio_posix(
        e.compat_mode,
        e.smallest_read.or(e.task_size),
        e.gds_threshold,
    ) {
        Some(KvikioPosix::CompatOn) => {
            causes.push(
                "KVIKIO_COMPAT_MODE=ON: KvikIO never calls cuFile",
                "set `compat_mode: AUTO` or `OFF` in the scenario",
            );
            return;
        }
        Some(KvikioPosix::BelowThreshold { read, threshold }) => causes.push(
            format!(
                "reads of {} are below KVIKIO_GDS_THRESHOLD ({}): KvikIO reads them with POSIX",
                Bytes(read),
                Bytes(threshold)
            ),
            "raise the read size (`pattern: { chunks: SIZE }`, `task_size`) above the threshold, or lower `gds_threshold` in the scenario",
        ),
        None => {}
    }
    if stack::auto_blockers(e.run_udev, None, None).contains(&AutoBlocker::NoRunUdev) {
        causes.push(
            "KvikIO AUTO uses cuFile only where `/run/udev` exists, and it is missing here",
            UDEV_FIX,
        );
    }
    let auto = match e.compat_mode {
        Some(CompatMode::OFF) => "KvikIO",
        _ => "KvikIO (AUTO) fell back to POSIX for the file",
    };
    // With compat mode allowed, a missing nvidia-fs would have sent the reads to cuFile's compat
    // mode, not to KvikIO's POSIX: only a forbidden compat mode makes the driver the cause.
    let without_nvfs =
        stack::cufile_route(false, None, Some(false), e.allow_compat_mode != Some(false));
    let driver = if without_nvfs == CufileRoute::Refused {
        Driver::First
    } else {
        Driver::Skip
    };
    log_causes(e, causes, auto, driver);
    if causes.list.len() == start {
        causes.push(
            "KvikIO (AUTO) fell back to POSIX for the file without a logged reason: its `O_DIRECT` open or `cuFileHandleRegister` failed",
            "run the scenario with `compat_mode: OFF`, which turns the fallback into an error that names the cause; check that udev has a record of the file's device (`/run/udev`) and that the mount accepts `O_DIRECT`",
        );
    }
}

/// The right family of path but the wrong member, or GDS where a fallback was expected.
fn gds_flavour(e: &Evidence, v: &PathVerdict, expected: ExpectedPath, causes: &mut Causes) {
    let want = expected_name(expected);
    match expected {
        ExpectedPath::P2p if v.involves(Path::Nvfs) => causes.push(
            "cuFile used nvidia-fs, not PCIe P2PDMA",
            "set `properties.use_pci_p2pdma: true` in cufile.json (needs a kernel with P2PDMA and NVIDIA's open kernel modules)",
        ),
        ExpectedPath::Nvfs if v.involves(Path::P2p) => causes.push(
            "cuFile used PCIe P2PDMA, not nvidia-fs",
            "set `properties.use_pci_p2pdma: false` in cufile.json and load nvidia-fs",
        ),
        ExpectedPath::KvikioPosix | ExpectedPath::CufilePosix
            if v.involves(Path::Nvfs) || v.involves(Path::P2p) =>
        {
            causes.push(
                format!("expected the {want} fallback, but the {} took GDS ({v})", e.op.transfers()),
                "check that the setting meant to force the fallback reached the worker (`KVIKIO_COMPAT_MODE=ON`, or `properties.force_compat_mode: true` through the overlay)",
            )
        }
        _ => {}
    }
}
