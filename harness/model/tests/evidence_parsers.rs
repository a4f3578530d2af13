//! The evidence parsers on verbatim real outputs (tests/fixtures/README.md names each source), and
//! on random, truncated and garbled text, which must never panic them.

use std::path::PathBuf;

use gds_model::evidence::{
    CufileLogFindings, FindingKind, GdsStats, GdsStatsError, NvfsReads, NvfsStats,
    nvfs_stats::IO_STATS_DISABLED,
};
use gds_model::explain::explain;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn gds_stats_level_3_sample_from_nvidias_guide() {
    let stats = GdsStats::parse(&fixture("gds_stats_l3_nvidia_guide.txt")).unwrap();
    assert_eq!(stats.version.as_deref(), Some("3"));
    assert_eq!(stats.global["Total Files"], "8");
    assert_eq!(stats.global["Total Read Size (MiB)"], "78193");
    assert_eq!(stats.global["Read BandWidth (GiB/s)"], "6.32129");
    // GPUs 0-3 and 15 are printed; `. . .` elides the rest. Pool-buffer and RDMA lines that also
    // start with `GPU` carry no `Read:` and are not read as GPUs.
    let gpus: Vec<u32> = stats.gpus.iter().map(|gpu| gpu.gpu).collect();
    assert_eq!(gpus, [0, 1, 2, 3, 15]);
    let gpu2 = &stats.gpus[2];
    assert_eq!(gpu2.read.n, Some(78193));
    assert_eq!(gpu2.read.posix, Some(0));
    assert_eq!(gpu2.read.nvfs, None, "this build prints no nvfs=");
    assert_eq!(gpu2.read.mib, Some(78193));
    assert_eq!(gpu2.read.bw, Some(6.32129));
    assert_eq!(gpu2.read.util_percent, Some(797.0));
    assert_eq!(gpu2.read.other["r_sparse"], "0");
    assert_eq!(gpu2.buf_register["n"], "8");
    assert_eq!(gpu2.other["Write"]["MiB"], "0");
    assert_eq!(gpu2.nvfs_reads(), Some((78193, true)));
    let counters = stats.counters();
    assert_eq!(counters[2].n_nvfs_reads, 78193);
    assert_eq!(counters[2].n_posix_reads, 0);
    assert_eq!(counters[2].read_bytes, 78193 << 20);
    assert_eq!(stats.read_errors(), 0);
    assert!(stats.warnings.is_empty(), "{:?}", stats.warnings);
}

#[test]
fn gds_stats_without_per_gpu_lines_says_what_to_run() {
    let error = GdsStats::parse(&fixture("gds_stats_watch_nvidia_guide.txt")).unwrap_err();
    assert!(
        matches!(error, GdsStatsError::NotGdsStats { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("gds_stats -p PID -l 3"));
}

#[test]
fn nvfs_stats_with_io_stats_enabled_from_a_public_issue() {
    // Tabs after the labels, as nvfs-stat.c prints them; the sample stops mid-line.
    let stats = NvfsStats::parse(&fixture("nvfs_stats_enabled_gds_nvidia_fs_issue46.txt")).unwrap();
    assert_eq!(stats.gds_version.as_deref(), Some("1.10.0.4"));
    assert_eq!(stats.stats_version.as_deref(), Some("4.0"));
    assert_eq!(stats.driver_version.as_deref(), Some("2.20.5"));
    assert_eq!(stats.io_stats_enabled, Some(true));
    assert_eq!(
        stats.reads,
        Some(NvfsReads {
            n: 0,
            ok: 0,
            err: 0,
            read_mib: 0
        })
    );
    assert_eq!(stats.sections["Sparse Reads"]["holes"], "0");
    assert_eq!(stats.sections["Ops"]["BatchIO"], "0");
    assert_eq!(stats.gpus[0].bdf, "0000:8b:00.0");
    assert_eq!(stats.gpus[0].uuid.as_deref(), Some("4964db7b-bd9e-ca3"));
}

#[test]
fn nvfs_stats_from_nvidias_troubleshooting_guide() {
    // Wrapped lines (continuations indented) and the old `2:7:47` version spelling.
    let stats = NvfsStats::parse(&fixture("nvfs_stats_troubleshooting_guide.txt")).unwrap();
    assert_eq!(stats.driver_version.as_deref(), Some("2:7:47"));
    assert_eq!(stats.reads.map(|r| r.n), Some(0));
    assert_eq!(stats.sections["Writes"]["pg-cache-eio"], "0");
    assert_eq!(stats.sections["Bar1-map"]["active"], "0");
    assert_eq!(stats.gpus.len(), 3);
    assert_eq!(stats.gpus[0].fields["cross_root_port(%)"], "0");
    assert_eq!(stats.gpus[1].fields["Registered_MiB"], "0");
}

#[test]
fn nvfs_stats_with_io_stats_disabled_has_no_read_counts() {
    let stats = NvfsStats::parse(&fixture("nvfs_stats_disabled_readme.txt")).unwrap();
    assert_eq!(stats.io_stats_enabled, Some(false));
    assert_eq!(stats.reads, None);
    assert_eq!(stats.read_errors, Some(0));
    assert_eq!(stats.gpus[0].fields["max_pinned_MiB"], "1");
    let delta = NvfsStats::delta(&stats, &stats);
    assert_eq!(delta.reads, None);
    assert_eq!(delta.note.as_deref(), Some(IO_STATS_DISABLED));
    assert!(IO_STATS_DISABLED.contains("rw_stats_enabled"));
}

#[test]
fn nvfs_stats_delta_over_a_trial_constructed() {
    let before = NvfsStats::parse(&fixture("nvfs_stats_constructed_before.txt")).unwrap();
    let after = NvfsStats::parse(&fixture("nvfs_stats_constructed_after.txt")).unwrap();
    let delta = NvfsStats::delta(&before, &after);
    assert_eq!(
        delta.reads,
        Some(NvfsReads {
            n: 256,
            ok: 256,
            err: 0,
            read_mib: 1024
        })
    );
    assert!(!delta.cumulative);
    assert_eq!(after.gpus[0].fields["Registered_MiB"], "1024");
}

#[test]
fn cufile_log_udev_and_compat_from_lmcache() {
    let found = CufileLogFindings::scan(&fixture("cufile_log_lmcache_issue795.txt"));
    let compat = found.first(FindingKind::CompatMode).unwrap();
    assert_eq!(compat.line_number, 1);
    assert!(compat.line.ends_with("running in compatible mode"));
    assert_eq!(found.count(FindingKind::UdevRecordMissing), 3);
    assert!(
        found
            .first(FindingKind::UdevRecordMissing)
            .unwrap()
            .line
            .contains("udev property not found: ID_FS_USAGE dm-0")
    );
    assert_eq!(found.count(FindingKind::FileCompatMode), 2);
    assert_eq!(found.lines, 8);
}

#[test]
fn cufile_log_nvidia_fs_not_loaded_and_nvme_from_gds_nvidia_fs() {
    let found = CufileLogFindings::scan(&fixture("cufile_log_gds_nvidia_fs_issue31.txt"));
    assert_eq!(found.count(FindingKind::NvidiaFsNotLoaded), 3);
    assert_eq!(found.count(FindingKind::NvmeNotRegistered), 2);
    assert_eq!(found.count(FindingKind::DriverInitFailed), 2);
    assert!(found.has(FindingKind::CompatMode));
    assert!(found.has(FindingKind::FileCompatMode));
}

#[test]
fn cufile_log_unsupported_file_from_tinygrad_and_gds_nvidia_fs() {
    let found = CufileLogFindings::scan(&fixture("cufile_log_tinygrad_issue51.txt"));
    let unsupported = found.first(FindingKind::FilesystemUnsupported).unwrap();
    assert!(
        unsupported
            .line
            .contains("GPUDirect Storage not supported on current file")
    );
    assert!(found.has(FindingKind::HandleRegisterFailed));

    let found = CufileLogFindings::scan(&fixture("cufile_log_gds_nvidia_fs_issue62.txt"));
    assert_eq!(found.count(FindingKind::UdevRecordMissing), 2);
    assert_eq!(found.count(FindingKind::FilesystemUnsupported), 2);
    assert_eq!(found.count(FindingKind::HandleRegisterFailed), 2);
}

#[test]
fn cufile_log_from_the_h200_without_a_udev_record() {
    let found = CufileLogFindings::scan(&fixture("cufile_log_h200_no_udev_record.txt"));
    // cuFile 1.15 says "no nvidia-fs" only as a failed open of its proc file.
    let nvfs = found.first(FindingKind::NvidiaFsNotLoaded).unwrap();
    assert!(
        nvfs.line
            .contains("failed to open /proc/driver/nvidia-fs/devcount")
    );
    assert!(found.has(FindingKind::CompatMode));
    assert_eq!(found.count(FindingKind::UdevRecordMissing), 2);
    let udev = found.first(FindingKind::UdevRecordMissing).unwrap();
    assert!(
        udev.line
            .ends_with("udev property not found: ID_FS_USAGE vda"),
        "{}",
        udev.line
    );
    let register = found.first(FindingKind::HandleRegisterFailed).unwrap();
    assert!(
        register.line.contains("cuFileHandleRegister error"),
        "{}",
        register.line
    );
    assert!(
        found
            .findings
            .iter()
            .all(|f| !f.line.contains("sysfs attribute not found")),
        "routine udev lines are not findings"
    );
}

#[test]
fn cufile_log_from_the_h200_with_a_udev_record() {
    let found = CufileLogFindings::scan(&fixture("cufile_log_h200_udev_record.txt"));
    assert!(found.has(FindingKind::NvidiaFsNotLoaded));
    assert!(found.has(FindingKind::CompatMode));
    assert!(!found.has(FindingKind::UdevRecordMissing));
    assert!(!found.has(FindingKind::HandleRegisterFailed));
    let mount = found.first(FindingKind::FilesystemUnsupported).unwrap();
    assert!(
        mount
            .line
            .contains("mount option not found in mount table data device: /dev/vda")
    );
}

const SAMPLES: [&str; 12] = [
    "gds_stats_l3_nvidia_guide.txt",
    "gds_stats_watch_nvidia_guide.txt",
    "nvfs_stats_enabled_gds_nvidia_fs_issue46.txt",
    "nvfs_stats_troubleshooting_guide.txt",
    "nvfs_stats_disabled_readme.txt",
    "nvfs_stats_constructed_after.txt",
    "cufile_log_lmcache_issue795.txt",
    "cufile_log_gds_nvidia_fs_issue31.txt",
    "cufile_log_tinygrad_issue51.txt",
    "cufile_log_gds_nvidia_fs_issue62.txt",
    "cufile_log_h200_no_udev_record.txt",
    "cufile_log_h200_udev_record.txt",
];

const SOUP: [&str; 40] = [
    "GPU",
    "GPU 0",
    "Read:",
    "Write:",
    "BufRegister:",
    "n=",
    "n=7",
    "posix=",
    "posix=18446744073709551615",
    "nvfs=1",
    "pcie",
    "p2pdma=3",
    "MiB=99999999999999999999",
    "err=1",
    "=",
    ":",
    " : ",
    "\t\t\t\t",
    "\n",
    "\n",
    "Reads",
    "IO stats: Enabled",
    "readMiB=5",
    "ok=",
    "uuid:",
    "[pid=1 tid=2] ",
    "ERROR  ",
    "5027",
    "udev property not found",
    "running in compatible mode",
    "nvidia-fs.ko driver not loaded",
    "cuFile STATS VERSION : 3",
    "PER_GPU STATS:",
    "GLOBAL STATS:",
    "util(%)=",
    "é",
    "…",
    "-1",
    "NaN",
    "O_DIRECT failed",
];

fn run_all(text: &str) {
    let _ = GdsStats::parse(text);
    if let Ok(stats) = NvfsStats::parse(text) {
        let _ = NvfsStats::delta(&stats, &stats);
    }
    let _ = CufileLogFindings::scan(text);
    let output = explain(Some(text), Some(text), Some(text));
    let _ = output.to_string();
}

/// Random bytes, random cuts of the real samples and random token soup: thousands of inputs, none
/// of which may panic a parser, the verdict or the report.
#[test]
fn arbitrary_and_truncated_text_never_panics() {
    let mut rng = StdRng::seed_from_u64(0x6d5_6a7e);
    let samples: Vec<String> = SAMPLES.iter().map(|name| fixture(name)).collect();
    for _ in 0..1500 {
        let len = rng.random_range(0..400);
        let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        run_all(&String::from_utf8_lossy(&bytes));
    }
    for _ in 0..1500 {
        let sample = &samples[rng.random_range(0..samples.len())];
        let mut start = rng.random_range(0..=sample.len());
        let mut end = rng.random_range(start..=sample.len());
        while !sample.is_char_boundary(start) {
            start -= 1;
        }
        while !sample.is_char_boundary(end) {
            end -= 1;
        }
        run_all(&sample[start..end.max(start)]);
        run_all(&sample[..end]);
    }
    for _ in 0..1500 {
        let words = rng.random_range(0..60);
        let text: String = (0..words)
            .map(|_| {
                let word = SOUP[rng.random_range(0..SOUP.len())];
                if rng.random_bool(0.5) {
                    format!("{word} ")
                } else {
                    word.to_string()
                }
            })
            .collect();
        run_all(&text);
    }
}
