//! `explain` on saved outputs: the verdict and diagnosis someone debugging a host gets.

use std::path::PathBuf;

use gds_model::explain::explain;
use gds_model::path::Path;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn nvidias_level_3_sample_is_nvfs() {
    let output = explain(Some(&fixture("gds_stats_l3_nvidia_guide.txt")), None, None);
    assert_eq!(output.judgement.verdict.path, Path::Nvfs);
    assert!(output.judgement.passed, "{output}");
    assert_eq!(output.gpus, ["GPU 2 read 78193 MiB with posix=0 → nvfs"]);
    let text = output.to_string();
    assert!(
        text.starts_with("verdict: nvfs\n  GPU 2 read 78193 MiB with posix=0 → nvfs\n"),
        "{text}"
    );
    assert!(
        text.contains("gds_stats: 78193 nvfs reads, 0 posix (nvfs = n − posix)"),
        "{text}"
    );
    assert!(
        text.contains("diagnosis: the reads went through GPUDirect Storage"),
        "{text}"
    );
}

#[test]
fn nvfs_stats_with_io_stats_off_are_reported_as_such() {
    let output = explain(
        Some(&fixture("gds_stats_l3_nvidia_guide.txt")),
        Some(&fixture("nvfs_stats_disabled_readme.txt")),
        None,
    );
    assert!(output.judgement.passed, "{output}");
    let text = output.to_string();
    assert!(
        text.contains("nvidia-fs   nvidia-fs IO stats are disabled"),
        "{text}"
    );
    assert!(text.contains("host        nvidia-fs is loaded"), "{text}");
}

#[test]
fn nvidia_fs_that_counted_no_reads_contradicts_an_nvfs_claim() {
    // nvidia-fs's counters since load say 0 reads, gds_stats says 78193 nvfs reads: the two
    // were not taken on the same host, or nvfs was inferred wrongly. Either way, not a pass.
    let output = explain(
        Some(&fixture("gds_stats_l3_nvidia_guide.txt")),
        Some(&fixture("nvfs_stats_enabled_gds_nvidia_fs_issue46.txt")),
        None,
    );
    assert!(!output.judgement.passed);
    assert_eq!(
        output.judgement.verdict.conflicts,
        ["cuFile counted 78193 nvfs reads but nvidia-fs counted none since it was loaded"]
    );
}

#[test]
fn the_h200_log_alone_says_compat_mode_and_why() {
    let output = explain(
        None,
        None,
        Some(&fixture("cufile_log_h200_udev_record.txt")),
    );
    assert_eq!(output.judgement.verdict.path, Path::CufilePosix);
    assert!(!output.judgement.passed);
    let cause = output.judgement.likely_cause.clone().unwrap();
    assert!(
        cause.starts_with("cuFile compat mode: nvidia-fs is not loaded (cufile.log line 12: `"),
        "{cause}"
    );
    assert!(output.problems[0].starts_with("no --gds-stats"));
    let text = output.to_string();
    assert!(
        text.contains("fix: load the module: `sudo modprobe nvidia-fs`"),
        "{text}"
    );
}

#[test]
fn unreadable_inputs_are_named_with_the_fix() {
    let output = explain(Some("hello\n"), Some("world\n"), Some(""));
    assert_eq!(output.problems.len(), 2, "{:?}", output.problems);
    assert!(output.problems[0].starts_with("--gds-stats: not `gds_stats` output"));
    assert!(
        output.problems[1].starts_with("--nvfs-stats: not `/proc/driver/nvidia-fs/stats` output")
    );
    assert!(output.problems[1].contains("cat /proc/driver/nvidia-fs/stats"));
    assert!(!output.judgement.passed);
}
