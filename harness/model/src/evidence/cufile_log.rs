//! cufile.log scanning: the lines that say why cuFile (or KvikIO through it) left the GDS path,
//! kept verbatim so a report can quote them. cuFile logs one line per thread and handle, so
//! repeats are folded into one finding with a count.

use std::path::Path;

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
    /// `cufio_async ... exceeds registered length`, `invalid inputs for specified flags`: cuFile
    /// refused a stream-ordered call (`cuFileReadAsync`/`cuFileWriteAsync`) when its stream ran
    /// it, and wrote a negative byte count.
    AsyncCallRefused,
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
    } else if has("cufio_async")
        && any(&[
            "exceeds registered length",
            "invalid inputs for specified flags",
        ])
    {
        AsyncCallRefused
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

/// The text of every cuFile log in `dir`: cuFile writes `cufile.log`, or
/// `cufile_<pid>_<date>.log` when `logging.dir` is set.
pub fn read_logs(dir: &Path) -> Option<String> {
    // Sorted, so that several logs (one per process) always come in the same order.
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("cufile") && name.ends_with(".log")
        })
        .collect();
    logs.sort();
    let text: String = logs
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap_or_default())
        .collect();
    (!text.is_empty()).then_some(text)
}

/// INFO lines `cuFileDriverOpen` writes, in order, each ending a step of the open (libcufile
/// 1.15 on an H200 with no nvidia-fs; see the fixtures). The probe for PCI P2PDMA runs even when
/// `use_pci_p2pdma` is false and creates a CUDA context for its test allocation.
const DRIVER_OPEN_STEPS: &[(&str, &str)] = &[
    ("Is PCIP2PDMA Supported", "P2PDMA probe"),
    ("Platform verification succeeded", "platform check"),
    (
        "POSIX pool buffer initialization complete",
        "device scan and POSIX pool",
    ),
    ("CUFile initialization complete", "topology and thread pool"),
];

/// How long each step of the driver open took, by the log's own timestamps (seconds from the
/// line ending the step before, or the first line). Steps whose line is missing are timed together
/// with the next one, under both names (`P2PDMA probe + platform check`); `None` without the
/// final line (logging below INFO, or the open failed).
pub fn driver_open_steps(text: &str) -> Option<Vec<(String, f64)>> {
    let mut lines = text
        .lines()
        .filter_map(|line| Some((timestamp(line)?, line)));
    let (mut last, _) = lines.next()?;
    let mut steps = Vec::new();
    let mut remaining = DRIVER_OPEN_STEPS;
    for (at, line) in lines {
        let Some(found) = remaining
            .iter()
            .position(|(marker, _)| line.contains(marker))
        else {
            continue;
        };
        let labels: Vec<&str> = remaining[..=found]
            .iter()
            .map(|&(_, label)| label)
            .collect();
        steps.push((labels.join(" + "), elapsed(last, at)));
        last = at;
        remaining = &remaining[found + 1..];
        if remaining.is_empty() {
            return Some(steps);
        }
    }
    None
}

/// Seconds from `from` to `to`, both times of day. Across midnight adds a day; a line another
/// thread logged a little out of order counts as no time.
fn elapsed(from: f64, to: f64) -> f64 {
    let step = to - from;
    if step < -43_200.0 {
        step + 86_400.0
    } else {
        step.max(0.0)
    }
}

/// Seconds of the day of a line's `hh:mm:ss:ms` (cuFile does not pad the milliseconds:
/// `11:51:01:24` is 24 ms after 11:51:01).
fn timestamp(line: &str) -> Option<f64> {
    let clock = line.split_whitespace().nth(1)?;
    let mut parts = clock.split(':').map(|part| part.parse::<u32>().ok());
    let (h, m, s, ms) = (
        parts.next()??,
        parts.next()??,
        parts.next()??,
        parts.next()??,
    );
    (parts.next().is_none() && h < 24 && m < 60 && s < 60 && ms < 1000)
        .then(|| f64::from(h * 3600 + m * 60 + s) + f64::from(ms) / 1000.0)
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

    /// Recorded logs (see the fixtures' README): the steps by their own timestamps.
    #[test]
    fn driver_open_steps_from_real_logs() {
        let steps = |name: &str| {
            let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(path).unwrap();
            super::driver_open_steps(&text)
                .unwrap()
                .into_iter()
                .map(|(label, seconds)| (label, (seconds * 1000.0).round() as u32))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            steps("cufile_log_h200_udev_record.txt"),
            [
                ("P2PDMA probe".to_string(), 487),
                ("platform check".to_string(), 3),
                ("device scan and POSIX pool".to_string(), 98),
                ("topology and thread pool".to_string(), 102),
            ]
        );
        // Its first line is `10:01:11:14`: 14 ms, unpadded, not 140.
        assert_eq!(
            steps("cufile_log_h200_no_udev_record.txt")[0],
            ("P2PDMA probe".to_string(), 471)
        );
    }

    #[test]
    fn driver_open_steps_need_the_final_line_and_merge_missing_ones() {
        let open = " 02-12-2026 10:01:12:725 [pid=562 tid=562] INFO   0:324 Lib being used\n";
        let pool = " 02-12-2026 10:01:13:313 [pid=562 tid=562] INFO   cufio-px-pool:456 POSIX pool buffer initialization complete\n";
        let done = " 02-12-2026 10:01:13:415 [pid=562 tid=562] INFO   cufio_core:1070 CUFile initialization complete\n";
        assert_eq!(super::driver_open_steps(&format!("{open}{pool}")), None);
        let steps = super::driver_open_steps(&format!("{open}{pool}{done}")).unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(
            steps[0].0,
            "P2PDMA probe + platform check + device scan and POSIX pool"
        );
        assert!((steps[0].1 - 0.588).abs() < 1e-6, "{steps:?}");
        assert_eq!(super::driver_open_steps("no timestamps here\n"), None);
        // A line logged out of order by another thread is no time, not most of a day.
        let early_done = done.replace("13:415", "13:310");
        let steps = super::driver_open_steps(&format!("{open}{pool}{early_done}")).unwrap();
        assert_eq!(steps[1].1, 0.0, "{steps:?}");
        assert_eq!(
            super::timestamp(" 02-12-2026 99999:00:00:000 [pid=1]"),
            None
        );
    }

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

    /// libcufile 1.15 (H200, no nvidia-fs) refusing `cuFileReadAsync` on an unregistered buffer
    /// at a buffer offset past the first call's extent: both lines are the refusal, not an
    /// anonymous error.
    #[test]
    fn a_refused_stream_ordered_call_is_its_own_finding() {
        let log = " 03-12-2026 09:41:29:189 [pid=777 tid=790] ERROR  cufio_async:731 async IO sinfo 0x556d97acc830 buf_offset + size  4194304 4194304 exceeds registered length: 4194304\n\
                   03-12-2026 09:41:29:189 [pid=777 tid=790] ERROR  cufio_async:807 sinfo 0x556d97acc830 invalid inputs for specified flags  0 bufptr 0x7f0328000000 buf_off 4194304 file_off 4194304 size 4194304\n\
                   03-12-2026 09:41:29:189 [pid=777 tid=790] ERROR  cufio_async:731 async IO sinfo 0x556d97accec0 buf_offset + size  8388608 4194304 exceeds registered length: 4194304\n";
        let found = CufileLogFindings::scan(log);
        assert_eq!(found.count(FindingKind::AsyncCallRefused), 3);
        assert!(!found.has(FindingKind::OtherError));
        assert!(
            found
                .first(FindingKind::AsyncCallRefused)
                .unwrap()
                .line
                .contains("exceeds registered length")
        );
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
