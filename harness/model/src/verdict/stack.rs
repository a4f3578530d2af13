//! Which path KvikIO and cuFile take for a read: the stack's documented behaviour (DESIGN.md, "The
//! stack under test") as the one set of rules that the doctor predicts with before a run and the
//! path verdict explains with after it. Each side words the outcome for its own reader; the
//! decisions are made here.
//!
//! - KvikIO with `KVIKIO_COMPAT_MODE=ON`, or for a read below `KVIKIO_GDS_THRESHOLD`, reads with
//!   its own POSIX path, whatever cuFile could do ([`kvikio_posix`]).
//! - KvikIO AUTO uses cuFile for the process only when libcufile loads, `/run/udev` exists and the
//!   host is not WSL ([`auto_blockers`]); then, per file, a failed `O_DIRECT` open or
//!   `cuFileHandleRegister` sends that file to POSIX without a word (OFF raises instead).
//! - cuFile reads a file it registered through P2PDMA or nvidia-fs when it can, in its own compat
//!   mode (POSIX through host memory) when it cannot and compat mode is allowed, and refuses
//!   otherwise; `force_compat_mode` means compat mode always ([`cufile_route`]).

use super::Path;
use crate::scenario::CompatMode;

/// Why KvikIO reads with its own POSIX path whatever cuFile could do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvikioPosix {
    /// `KVIKIO_COMPAT_MODE=ON`: KvikIO never calls cuFile.
    CompatOn,
    /// A read smaller than `KVIKIO_GDS_THRESHOLD` always goes through POSIX.
    BelowThreshold { read: u64, threshold: u64 },
}

/// [`KvikioPosix`] for a KvikIO read of `read` bytes, when one applies; unknown sizes decide
/// nothing.
pub fn kvikio_posix(
    compat: Option<CompatMode>,
    read: Option<u64>,
    threshold: Option<u64>,
) -> Option<KvikioPosix> {
    if compat == Some(CompatMode::ON) {
        return Some(KvikioPosix::CompatOn);
    }
    match (read, threshold) {
        (Some(read), Some(threshold)) if read < threshold => {
            Some(KvikioPosix::BelowThreshold { read, threshold })
        }
        _ => None,
    }
}

/// What stands against KvikIO AUTO using cuFile for the whole process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoBlocker {
    NoRunUdev,
    Wsl,
    NoLibcufile,
}

impl AutoBlocker {
    pub fn describe(self) -> &'static str {
        match self {
            AutoBlocker::NoRunUdev => "/run/udev does not exist",
            AutoBlocker::Wsl => "this is WSL",
            AutoBlocker::NoLibcufile => "libcufile does not load",
        }
    }
}

/// Everything known to stand against KvikIO AUTO using cuFile, in that order; a fact not known
/// (`None`) stands against nothing.
pub fn auto_blockers(
    run_udev: Option<bool>,
    wsl: Option<bool>,
    libcufile_loads: Option<bool>,
) -> Vec<AutoBlocker> {
    [
        (run_udev == Some(false), AutoBlocker::NoRunUdev),
        (wsl == Some(true), AutoBlocker::Wsl),
        (libcufile_loads == Some(false), AutoBlocker::NoLibcufile),
    ]
    .into_iter()
    .filter_map(|(applies, blocker)| applies.then_some(blocker))
    .collect()
}

/// Where cuFile sends the reads of a file it registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CufileRoute {
    /// `properties.force_compat_mode`: compat mode, whatever else is there.
    Forced,
    /// GDS through PCIe P2PDMA.
    P2p,
    /// GDS through nvidia-fs.
    Nvfs,
    /// Its compat mode: no GDS path, and compat mode allowed.
    Compat,
    /// No GDS path and compat mode forbidden (`properties.allow_compat_mode: false`): an error.
    Refused,
    /// Whether nvidia-fs can read is not known.
    Unknown,
}

impl CufileRoute {
    /// The path the bytes take, when they are read at all.
    pub fn path(self) -> Option<Path> {
        match self {
            CufileRoute::Forced | CufileRoute::Compat => Some(Path::CufilePosix),
            CufileRoute::P2p => Some(Path::P2p),
            CufileRoute::Nvfs => Some(Path::Nvfs),
            CufileRoute::Refused | CufileRoute::Unknown => None,
        }
    }
}

/// The route of a registered file's reads: forced compat mode first, then P2PDMA, then
/// nvidia-fs, then compat mode when allowed.
pub fn cufile_route(
    force_compat: bool,
    p2p: Option<bool>,
    nvfs: Option<bool>,
    allow_compat: bool,
) -> CufileRoute {
    if force_compat {
        return CufileRoute::Forced;
    }
    if p2p == Some(true) {
        return CufileRoute::P2p;
    }
    match nvfs {
        Some(true) => CufileRoute::Nvfs,
        None => CufileRoute::Unknown,
        Some(false) if allow_compat => CufileRoute::Compat,
        Some(false) => CufileRoute::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvikio_reads_posix_under_compat_on_and_below_the_threshold_only() {
        assert_eq!(
            kvikio_posix(Some(CompatMode::ON), None, None),
            Some(KvikioPosix::CompatOn)
        );
        assert_eq!(
            kvikio_posix(Some(CompatMode::AUTO), Some(4096), Some(16384)),
            Some(KvikioPosix::BelowThreshold {
                read: 4096,
                threshold: 16384
            })
        );
        assert_eq!(
            kvikio_posix(Some(CompatMode::OFF), Some(16384), Some(16384)),
            None
        );
        assert_eq!(kvikio_posix(None, None, Some(16384)), None);
    }

    #[test]
    fn auto_is_blocked_only_by_what_is_known() {
        assert_eq!(
            auto_blockers(Some(false), Some(true), Some(false)),
            [
                AutoBlocker::NoRunUdev,
                AutoBlocker::Wsl,
                AutoBlocker::NoLibcufile
            ]
        );
        assert!(auto_blockers(None, None, None).is_empty());
        assert!(auto_blockers(Some(true), Some(false), Some(true)).is_empty());
    }

    #[test]
    fn cufile_prefers_forced_compat_then_p2p_then_nvfs_then_compat() {
        assert_eq!(
            cufile_route(true, Some(true), Some(true), true),
            CufileRoute::Forced
        );
        assert_eq!(
            cufile_route(false, Some(true), Some(true), true),
            CufileRoute::P2p
        );
        assert_eq!(
            cufile_route(false, None, Some(true), false),
            CufileRoute::Nvfs
        );
        assert_eq!(cufile_route(false, None, None, true), CufileRoute::Unknown);
        assert_eq!(
            cufile_route(false, Some(false), Some(false), true).path(),
            Some(Path::CufilePosix)
        );
        assert_eq!(
            cufile_route(false, None, Some(false), false),
            CufileRoute::Refused
        );
    }
}
