//! cufile.log scanning: the lines that say why cuFile (or KvikIO through it) left the GDS path,
//! kept verbatim so a report can quote them. cuFile logs one line per thread and handle, so
//! repeats are folded into one finding with a count.

use serde::{Deserialize, Serialize};

use super::clip;

/// Longest line kept: cufile.log lines are short; anything longer is not one.
const MAX_LINE_CHARS: usize = 400;
/// Distinct messages kept per kind; the rest only raise the count of the first.
const MAX_PER_KIND: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// `running in compatible mode`: the driver opened without nvidia-fs; every read is POSIX.
    CompatMode,
    /// `cuFileHandleRegister GDS not supported or disabled by config, using cuFile posix
    /// read/write with compat mode enabled`: this file is read in compat mode.
    FileCompatMode,
    /// `nvidia-fs.ko driver not loaded`, or `failed to open /proc/driver/nvidia-fs/devcount`.
    NvidiaFsNotLoaded,
    /// `NVMe Driver not registered with nvidia-fs!!!`: nvidia-fs is loaded but cannot reach NVMe.
    NvmeNotRegistered,
    /// `udev property not found: ID_FS_USAGE vda`, `error creating udev_device ...`.
    UdevRecordMissing,
    /// `GPUDirect Storage not supported on current file`, `Unsupported block device`, mount
    /// options, unsupported file systems.
    FilesystemUnsupported,
    /// An `O_DIRECT` open or read that failed.
    ODirectRefused,
    /// `cuFileHandleRegister error ...`, 5027, `CU_FILE_HANDLE_NOT_REGISTERED`.
    HandleRegisterFailed,
    /// `cuFileBufRegister error ...`.
    BufRegisterFailed,
    /// `cuInit Failed`, `cuFile initialization failed`, `driver initialization error`.
    DriverInitFailed,
    /// `gds path taken with ODIRECT fd` (DEBUG): a read went through nvidia-fs.
    GdsPathTaken,
    /// `cufile_posix_read` (TRACE): a read went through compat mode.
    PosixRead,
    /// Any other `ERROR` line.
    OtherError,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogFinding {
    pub kind: FindingKind,
    /// 1-based line of the first occurrence.
    pub line_number: usize,
    /// That line, verbatim (clipped past 400 characters).
    pub line: String,
    /// How many lines said the same (digits aside).
    pub count: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CufileLogFindings {
    pub findings: Vec<LogFinding>,
    /// Lines scanned.
    pub lines: usize,
}

impl CufileLogFindings {
    pub fn scan(text: &str) -> CufileLogFindings {
        let mut found = CufileLogFindings::default();
        // The normalized message of each finding, in step with `found.findings`.
        let mut keys: Vec<String> = Vec::new();
        for (index, line) in text.lines().enumerate() {
            found.lines = index + 1;
            let Some(kind) = classify(line) else {
                continue;
            };
            let key = normalize(line);
            let same_kind = || {
                found
                    .findings
                    .iter()
                    .zip(&keys)
                    .filter(|(f, _)| f.kind == kind)
            };
            let existing = same_kind()
                .position(|(_, seen)| *seen == key)
                .or_else(|| (same_kind().count() >= MAX_PER_KIND).then_some(0));
            if let Some(nth) = existing {
                if let Some(finding) = found
                    .findings
                    .iter_mut()
                    .filter(|f| f.kind == kind)
                    .nth(nth)
                {
                    finding.count += 1;
                }
                continue;
            }
            keys.push(key);
            found.findings.push(LogFinding {
                kind,
                line_number: index + 1,
                line: clip(line, MAX_LINE_CHARS),
                count: 1,
            });
        }
        found
    }

    pub fn first(&self, kind: FindingKind) -> Option<&LogFinding> {
        self.findings.iter().find(|finding| finding.kind == kind)
    }

    pub fn has(&self, kind: FindingKind) -> bool {
        self.first(kind).is_some()
    }

    /// Lines of this kind, repeats included.
    pub fn count(&self, kind: FindingKind) -> usize {
        self.findings
            .iter()
            .filter(|finding| finding.kind == kind)
            .map(|finding| finding.count)
            .sum()
    }
}

/// The kind of a line, most specific first: `cuFileHandleRegister error: GPUDirect Storage not
/// supported on current file` is a file-system finding before it is a registration error.
fn classify(line: &str) -> Option<FindingKind> {
    use FindingKind::*;
    let lower = line.to_ascii_lowercase();
    let has = |needle: &str| lower.contains(needle);
    let any = |needles: &[&str]| needles.iter().any(|needle| lower.contains(needle));
    let kind = if any(&["running in compatible mode", "running in compat mode"]) {
        CompatMode
    } else if has("gds not supported or disabled by config") {
        FileCompatMode
    } else if ((has("nvidia-fs") || has("nvidia_fs")) && has("not loaded"))
        // cuFile 1.15 says it only this way: `failed to open /proc/driver/nvidia-fs/devcount`.
        || (has("/proc/driver/nvidia-fs") && any(&["no such file", "failed to open"]))
    {
        NvidiaFsNotLoaded
    } else if has("not registered with nvidia-fs") {
        NvmeNotRegistered
    } else if any(&["udev property not found", "error creating udev_device"]) {
        // Not any line of the `cufio-udev` module: `sysfs attribute not found wwid vda` is routine.
        UdevRecordMissing
    } else if any(&[
        "not supported on current file",
        "unsupported block device",
        "mount options not specified",
        "mount option not found",
        "file system not supported",
        "filesystem not supported",
        "unsupported file system",
        "unsupported filesystem",
    ]) {
        FilesystemUnsupported
    } else if any(&["o_direct", "odirect", "direct_io", "direct io"])
        && any(&[
            "fail",
            "error",
            "not supported",
            "einval",
            "refused",
            "unable",
            "cannot",
        ])
        && !has("gds path taken")
    {
        ODirectRefused
    } else if has("cufilebufregister") && any(&["error", "fail"]) {
        BufRegisterFailed
    } else if any(&[
        "cu_file_handle_not_registered",
        "file descriptor is not registered",
    ]) || has_code(message(line), "5027")
        || (has("cufilehandleregister") && any(&["error", "fail"]))
    {
        HandleRegisterFailed
    } else if any(&[
        "cuinit failed",
        "cufile initialization failed",
        "driver initialization error",
    ]) {
        DriverInitFailed
    } else if has("gds path taken") {
        GdsPathTaken
    } else if has("cufile_posix_read") {
        PosixRead
    } else if line.contains(" ERROR ") || line.contains("ERROR  ") {
        OtherError
    } else {
        return None;
    };
    Some(kind)
}

/// `code` as a number of its own (`error 5027`, `(5027)`), not inside a longer one.
fn has_code(text: &str, code: &str) -> bool {
    text.match_indices(code).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + code.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric())
            && !after.is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

/// The line after cuFile's `DD-MM-YYYY hh:mm:ss:ms [pid=N tid=N] ` prefix: level, module and
/// message.
pub fn message(line: &str) -> &str {
    match line.find("] ") {
        Some(at) if line[..at].contains("[pid=") => &line[at + 2..],
        _ => line,
    }
}

/// The message without the timestamp, pid and digits, so that the same message from another
/// thread, fd or device number is one finding.
fn normalize(line: &str) -> String {
    let mut text = String::new();
    let mut last_was_digit = false;
    for c in message(line).trim().chars().take(MAX_LINE_CHARS) {
        let digit = c.is_ascii_digit();
        if !(digit && last_was_digit) {
            text.push(if digit { '#' } else { c });
        }
        last_was_digit = digit;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{CufileLogFindings, FindingKind};

    #[test]
    fn repeats_fold_into_one_finding() {
        let log = " 09-06-2025 07:01:23:837 [pid=276 tid=454] ERROR  cufio-udev:67 udev property not found: ID_FS_USAGE dm-0\n\
                   09-06-2025 07:01:23:838 [pid=276 tid=455] ERROR  cufio-udev:67 udev property not found: ID_FS_USAGE dm-0\n";
        let found = CufileLogFindings::scan(log);
        assert_eq!(found.findings.len(), 1);
        assert_eq!(found.count(FindingKind::UdevRecordMissing), 2);
        assert_eq!(found.findings[0].line_number, 1);
    }

    #[test]
    fn a_successful_gds_read_is_not_an_o_direct_failure() {
        let found =
            CufileLogFindings::scan("DEBUG  cufio_core:2971 gds path taken with ODIRECT fd: 224\n");
        assert!(found.has(FindingKind::GdsPathTaken));
        assert!(!found.has(FindingKind::ODirectRefused));
    }

    /// Constructed lines: the ways KvikIO and cuFile spell the registration error.
    #[test]
    fn registration_errors_by_code_and_name() {
        for line in [
            "cuFile error: CU_FILE_HANDLE_NOT_REGISTERED",
            "cuFileHandleRegister error 5027",
            "RuntimeError: cuFile error at: file descriptor is not registered",
        ] {
            let found = CufileLogFindings::scan(line);
            assert!(found.has(FindingKind::HandleRegisterFailed), "{line}");
        }
    }
}
