//! The path verdict on every kind of evidence: each path, mixes, sources that disagree and
//! missing sources. The KvikIO rows are the ones measured on an H200 test machine without nvidia-fs
//! (DESIGN.md).

// Each test binary uses part of the shared builders.
#[expect(dead_code)]
mod verdict_support;

use gds_model::evidence::{
    CufileGpuCounters, CufileLogFindings, Evidence, NvfsEvidence, NvfsReads, NvfsStatsDelta,
};
use gds_model::path::Path;
use gds_model::scenario::{CompatMode, Expectations, ExpectedPath, Integrity, Reader};
use gds_model::verdict::{judge_path, judge_path_of_trial, verdict};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use verdict_support::*;

#[test]
fn posix_and_h2d_readers_have_one_path() {
    let host = judge_path(&Evidence::new(Reader::Posix, GIB), ExpectedPath::Host, 0);
    assert!(host.passed, "{host}");
    assert_eq!(host.verdict.path, Path::Host);
    let bounce = judge_path(&Evidence::new(Reader::H2d, GIB), ExpectedPath::Bounce, 0);
    assert!(bounce.passed, "{bounce}");
    assert_eq!(bounce.verdict.split[&Path::Bounce], GIB);
}

/// CPU per GiB stands in the evidence beside the counters (figures of the H200, a posix trial);
/// the path is still decided by the reader and the counters.
#[test]
fn cpu_per_gib_is_shown_as_evidence_and_does_not_decide_the_path() {
    let mut e = Evidence::new(Reader::Posix, GIB);
    e.cpu_seconds_per_gib = Some(1.557);
    let judged = judge_path(&e, ExpectedPath::Host, 0);
    assert!(judged.passed, "{judged}");
    assert_eq!(judged.verdict.path, Path::Host);
    let text = judged.to_string();
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("CPU") && l.contains("1.557 s/GiB of the worker's")),
        "{text}"
    );
}

#[test]
fn h200_compat_on_is_kvikio_posix() {
    let e = h200(CompatMode::ON, &[("POSIX", 256, GIB)], gpu0(0, 0, 0, 0, 0));
    let control = judge_path(&e, ExpectedPath::KvikioPosix, 0);
    assert!(control.passed, "{control}");
    assert_eq!(
        control.summary,
        "kvikio-posix: KvikIO: POSIX 1.00 GiB; cuFile: no reads counted"
    );
    let strict = judge_path(&e, ExpectedPath::Gds, 0);
    assert!(!strict.passed);
    assert_eq!(
        strict.likely_cause.as_deref(),
        Some("KVIKIO_COMPAT_MODE=ON: KvikIO never calls cuFile")
    );
    assert!(strict.fix.unwrap().contains("compat_mode: AUTO"));
}

#[test]
fn h200_auto_without_udev_record_is_kvikio_posix_with_the_udev_fix() {
    let mut e = h200(
        CompatMode::AUTO,
        &[("POSIX", 256, GIB)],
        gpu0(0, 0, 0, 0, 0),
    );
    e.cufile_log = Some(CufileLogFindings::scan(UDEV_LOG));
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert_eq!(judged.verdict.path, Path::KvikioPosix);
    assert!(!judged.passed);
    let cause = judged.likely_cause.unwrap();
    assert!(
        cause.starts_with("KvikIO (AUTO) fell back to POSIX for the file: udev has no record"),
        "{cause}"
    );
    assert!(
        cause.contains("udev property not found: ID_FS_USAGE vda"),
        "{cause}"
    );
    assert!(
        judged
            .fix
            .unwrap()
            .contains("--volume /run/udev:/run/udev:ro")
    );
    assert!(
        judged.evidence_table.contains("cufile.log  line 1: `"),
        "{}",
        judged.evidence_table
    );
}

#[test]
fn h200_auto_and_off_with_udev_record_are_cufile_compat_mode() {
    for compat in [CompatMode::AUTO, CompatMode::OFF] {
        let e = h200(
            compat,
            &[("GDS", 256, GIB), ("POSIX", 0, 0)],
            gpu0(256, 0, 0, 256, GIB),
        );
        let judged = judge_path(&e, ExpectedPath::Gds, 0);
        assert_eq!(judged.verdict.path, Path::CufilePosix);
        assert!(!judged.passed);
        assert_eq!(
            judged.summary,
            "expected gds, got cufile-posix: KvikIO: GDS 1.00 GiB; cuFile: 256 posix reads, 0 nvfs → cuFile compat mode: nvidia-fs is not loaded"
        );
        let fix = judged.fix.unwrap();
        assert!(
            fix.contains("modprobe nvidia-fs") && fix.contains("lsmod"),
            "{fix}"
        );
        assert!(fix.contains("allow_compat_mode: false"), "{fix}");
        assert!(
            judged.verdict.conflicts.is_empty(),
            "{:?}",
            judged.verdict.conflicts
        );
        assert!(judge_path(&e, ExpectedPath::CufilePosix, 0).passed);
    }
}

#[test]
fn nvfs_and_p2p_paths() {
    let mut e = cufile_trial(gpu0(256, 256, 0, 0, GIB));
    e.nvidia_fs_loaded = Some(true);
    e.nvfs = Some(NvfsEvidence::Delta(NvfsStatsDelta {
        io_stats_enabled: Some(true),
        reads: Some(NvfsReads {
            n: 256,
            ok: 256,
            err: 0,
            read_mib: 1024,
        }),
        read_errors: Some(0),
        ..NvfsStatsDelta::default()
    }));
    for expected in [ExpectedPath::Nvfs, ExpectedPath::Gds, ExpectedPath::Any] {
        let judged = judge_path(&e, expected, 0);
        assert!(judged.passed, "{judged}");
        assert_eq!(judged.verdict.path, Path::Nvfs);
    }
    let wrong = judge_path(&e, ExpectedPath::P2p, 0);
    assert!(!wrong.passed);
    assert!(wrong.fix.unwrap().contains("use_pci_p2pdma: true"));

    let p2p = cufile_trial(gpu0(256, 0, 256, 0, GIB));
    assert!(judge_path(&p2p, ExpectedPath::Gds, 0).passed);
    let judged = judge_path(&p2p, ExpectedPath::Nvfs, 0);
    assert_eq!(judged.verdict.path, Path::P2p);
    assert!(judged.fix.unwrap().contains("use_pci_p2pdma: false"));
}

#[test]
fn a_small_tail_below_the_threshold_makes_a_mix_within_max_fallback_bytes() {
    let mut e = h200(
        CompatMode::AUTO,
        &[("GDS", 255, GIB - 8 * 1024), ("POSIX", 1, 8 * 1024)],
        gpu0(255, 255, 0, 0, GIB - 8 * 1024),
    );
    e.nvidia_fs_loaded = Some(true);
    e.nvfs = None;
    e.smallest_read = Some(8 * 1024);
    let strict = judge_path(&e, ExpectedPath::Gds, 0);
    assert_eq!(strict.verdict.path, Path::Mixed);
    assert_eq!(strict.verdict.split[&Path::KvikioPosix], 8 * 1024);
    assert_eq!(strict.verdict.split[&Path::Nvfs], GIB - 8 * 1024);
    assert!(!strict.passed);
    assert!(
        strict
            .likely_cause
            .unwrap()
            .contains("below KVIKIO_GDS_THRESHOLD (16.0 KiB)")
    );
    assert!(strict.fix.unwrap().contains("lower `gds_threshold`"));
    assert!(judge_path(&e, ExpectedPath::Gds, 8 * 1024).passed);
    let mut expect = Expectations {
        path: ExpectedPath::Gds,
        max_fallback_bytes: None,
        integrity: Integrity::Exact,
        tolerance: 0.1,
        cpu_tolerance: 0.2,
        load_tolerance: 0.5,
        latency_tolerance: 0.5,
    };
    assert!(
        !judge_path_of_trial(&e, &expect).passed,
        "no max_fallback_bytes allows none"
    );
    expect.max_fallback_bytes = Some(8 * 1024);
    assert!(judge_path_of_trial(&e, &expect).passed);
}

#[test]
fn a_mix_inside_cufile_is_split_by_read_counts() {
    let v = verdict(&cufile_trial(gpu0(256, 192, 0, 64, GIB)));
    assert_eq!(v.path, Path::Mixed);
    assert!(v.approximate);
    assert_eq!(v.split[&Path::Nvfs], 768 * MIB);
    assert_eq!(v.split[&Path::CufilePosix], 256 * MIB);
    assert!(
        v.to_string()
            .starts_with("mixed (nvfs 768 MiB, cufile-posix 256 MiB"),
        "{v}"
    );
}

#[test]
fn kvikio_gds_that_cufile_never_counted_is_a_disagreement() {
    let e = h200(CompatMode::OFF, &[("GDS", 256, GIB)], gpu0(0, 0, 0, 0, 0));
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert_eq!(judged.verdict.path, Path::Cufile);
    assert!(!judged.passed);
    assert!(
        judged.reasons.iter().any(|r| r.starts_with(
            "sources disagree: KvikIO handed cuFile 1.00 GiB but cuFile counted no reads"
        )),
        "{:?}",
        judged.reasons
    );
    assert!(
        judged
            .likely_cause
            .unwrap()
            .starts_with("cuFile's counters did not see the reads")
    );
    // `any` does not judge the path, disagreement or not.
    assert!(judge_path(&e, ExpectedPath::Any, 0).passed);
}

#[test]
fn cufile_counts_that_kvikio_did_not_report_are_a_disagreement() {
    let e = h200(
        CompatMode::AUTO,
        &[("POSIX", 256, GIB)],
        gpu0(256, 0, 0, 256, GIB),
    );
    let judged = judge_path(&e, ExpectedPath::KvikioPosix, 0);
    assert!(!judged.passed);
    assert_eq!(
        judged.verdict.conflicts,
        ["KvikIO reported nothing through GDS but cuFile counted 256 reads"]
    );
}

#[test]
fn stats_api_and_gds_stats_that_disagree_fail_and_say_both() {
    let mut e = cufile_trial(gpu0(256, 256, 0, 0, GIB));
    e.gds_stats = Some(
        gds_model::evidence::GdsStats::parse("GPU 0 Read: n=256 posix=256 err=0 MiB=1024\n")
            .unwrap(),
    );
    let judged = judge_path(&e, ExpectedPath::Nvfs, 0);
    assert!(!judged.passed);
    assert_eq!(
        judged.verdict.conflicts,
        ["cuFile: 256 nvfs reads, 0 posix; gds_stats: 256 posix reads, 0 nvfs (nvfs = n − posix)"]
    );
}

#[test]
fn nvfs_counts_without_nvidia_fs_are_a_disagreement() {
    let mut e = cufile_trial(gpu0(256, 256, 0, 0, GIB));
    e.nvidia_fs_loaded = Some(false);
    let judged = judge_path(&e, ExpectedPath::Nvfs, 0);
    assert!(!judged.passed);
    assert_eq!(
        judged.verdict.conflicts,
        ["cuFile counted 256 nvfs reads but nvidia-fs is not loaded"]
    );

    let mut e = cufile_trial(gpu0(256, 256, 0, 0, GIB));
    e.nvfs = Some(NvfsEvidence::Delta(NvfsStatsDelta {
        io_stats_enabled: Some(true),
        reads: Some(NvfsReads::default()),
        ..NvfsStatsDelta::default()
    }));
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert!(!judged.passed);
    assert_eq!(
        judged.verdict.conflicts,
        ["cuFile counted 256 nvfs reads but nvidia-fs counted none during the trial"]
    );

    let mut e = cufile_trial(gpu0(256, 256, 0, 0, GIB));
    e.cufile_log = Some(CufileLogFindings::scan(
        "NOTICE  cufio-drv:720 running in compatible mode\n",
    ));
    assert!(!judge_path(&e, ExpectedPath::Gds, 0).passed);
}

#[test]
fn missing_sources_never_pass_a_gds_expectation() {
    let e = Evidence::new(Reader::Cufile, GIB);
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert_eq!(judged.verdict.path, Path::Cufile);
    assert!(!judged.passed);
    assert_eq!(
        judged.likely_cause.as_deref(),
        Some("no cuFile counters: the path through cuFile cannot be confirmed as nvfs")
    );
    assert!(
        judged
            .evidence_table
            .contains("cuFile      stats API counters not collected"),
        "{}",
        judged.evidence_table
    );
    assert!(judge_path(&e, ExpectedPath::Any, 0).passed);

    let e = Evidence::new(Reader::Kvikio, GIB);
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert_eq!(judged.verdict.path, Path::Unknown);
    assert!(!judged.passed);
    let judged = judge_path(&e, ExpectedPath::KvikioPosix, 0);
    assert!(!judged.passed, "unknown bytes are no negative-control pass");
}

#[test]
fn without_counters_cufile_log_can_still_say_compat_mode() {
    let mut e = Evidence::new(Reader::Cufile, GIB);
    e.cufile_log = Some(CufileLogFindings::scan(
        " 06-11-2023 18:40:43:90 [pid=59193 tid=59193] NOTICE  cufio-drv:720 running in compatible mode\n",
    ));
    let judged = judge_path(&e, ExpectedPath::CufilePosix, 0);
    assert!(judged.passed, "{judged}");
    assert!(judged.verdict.notes[0].contains("taken from cufile.log alone"));
}

#[test]
fn kvikio_without_its_split_leans_on_cufile() {
    let mut e = Evidence::new(Reader::Kvikio, GIB);
    e.cufile = Some(vec![gpu0(256, 0, 0, 256, GIB)]);
    assert_eq!(verdict(&e).path, Path::CufilePosix);
    e.cufile = Some(vec![gpu0(0, 0, 0, 0, 0)]);
    assert_eq!(verdict(&e).path, Path::KvikioPosix);
}

#[test]
fn evidence_round_trips_through_json() {
    let mut e = h200(
        CompatMode::AUTO,
        &[("GDS", 256, GIB)],
        gpu0(256, 0, 0, 256, GIB),
    );
    e.cufile_log = Some(CufileLogFindings::scan(UDEV_LOG));
    let json = serde_json::to_string(&e).unwrap();
    let back: Evidence = serde_json::from_str(&json).unwrap();
    assert_eq!(back, e);
    // A worker may send only what it has.
    let minimal: Evidence = serde_json::from_str(r#"{"reader":"cufile","bytes_read":5}"#).unwrap();
    assert_eq!(minimal, Evidence::new(Reader::Cufile, 5));
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    let json = serde_json::to_value(&judged).unwrap();
    assert_eq!(json["verdict"]["path"], "cufile-posix");
    assert_eq!(json["verdict"]["split"]["cufile-posix"], GIB);
    let back: gds_model::verdict::PathJudgement = serde_json::from_value(json).unwrap();
    assert_eq!(back, judged);
}

/// Counters anywhere in u64 (sums overflow, fields contradict) never panic the verdict.
/// PyTorch hands every byte to cuFile: on the H200 (no nvidia-fs) cuFile's counters show its
/// compat mode, as for the cufile reader; counters that saw nothing are a disagreement, never
/// PyTorch's own POSIX (it has none).
#[test]
fn torch_is_judged_by_cufiles_counters_alone() {
    let mut e = cufile_trial(gpu0(1, 0, 0, 1, GIB));
    e.reader = Reader::Torch;
    e.nvidia_fs_loaded = Some(false);
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert_eq!(judged.verdict.path, Path::CufilePosix);
    assert!(!judged.passed);
    assert!(
        judged.summary.starts_with("expected gds, got cufile-posix")
            && judged.summary.contains("1 posix reads"),
        "{}",
        judged.summary
    );
    assert!(judge_path(&e, ExpectedPath::CufilePosix, 0).passed);
    assert!(
        judged.evidence_table.contains("torch, 1.00 GiB read"),
        "{}",
        judged.evidence_table
    );

    e.cufile = Some(vec![gpu0(0, 0, 0, 0, 0)]);
    let judged = judge_path(&e, ExpectedPath::Any, 0);
    assert_eq!(judged.verdict.path, Path::Cufile);
    assert!(
        judged.verdict.conflicts[0].starts_with("the torch reader handed cuFile 1.00 GiB"),
        "{:?}",
        judged.verdict.conflicts
    );
}

#[test]
fn random_evidence_never_panics() {
    let mut rng = StdRng::seed_from_u64(5);
    let pick = |rng: &mut StdRng| match rng.random_range(0..4) {
        0 => 0,
        1 => rng.random_range(0..1000),
        2 => u64::MAX - rng.random_range(0..3),
        _ => rng.random(),
    };
    let readers = [
        Reader::Posix,
        Reader::H2d,
        Reader::Cufile,
        Reader::Kvikio,
        Reader::Torch,
    ];
    let expectations = [
        ExpectedPath::Nvfs,
        ExpectedPath::P2p,
        ExpectedPath::Gds,
        ExpectedPath::CufilePosix,
        ExpectedPath::KvikioPosix,
        ExpectedPath::Host,
        ExpectedPath::Bounce,
        ExpectedPath::Any,
    ];
    for _ in 0..3000 {
        let mut e = Evidence::new(readers[rng.random_range(0..4)], pick(&mut rng));
        if rng.random_bool(0.7) {
            let gpus = rng.random_range(0..3);
            e.cufile = Some(
                (0..gpus)
                    .map(|gpu| CufileGpuCounters {
                        gpu,
                        n_total_reads: pick(&mut rng),
                        n_nvfs_reads: pick(&mut rng),
                        n_p2p_reads: pick(&mut rng),
                        n_posix_reads: pick(&mut rng),
                        n_reads_err: pick(&mut rng),
                        read_bytes: pick(&mut rng),
                        ..CufileGpuCounters::default()
                    })
                    .collect(),
            );
        }
        if rng.random_bool(0.7) {
            e.kvikio = Some(backends(&[
                ("GDS", pick(&mut rng), pick(&mut rng)),
                ("POSIX", pick(&mut rng), pick(&mut rng)),
                ("MMAP", pick(&mut rng), pick(&mut rng)),
            ]));
        }
        if rng.random_bool(0.5) {
            e.nvfs = Some(NvfsEvidence::Delta(NvfsStatsDelta {
                reads: Some(NvfsReads {
                    n: pick(&mut rng),
                    ok: 0,
                    err: pick(&mut rng),
                    read_mib: pick(&mut rng),
                }),
                read_errors: Some(pick(&mut rng)),
                ..NvfsStatsDelta::default()
            }));
        }
        e.nvidia_fs_loaded = [None, Some(true), Some(false)][rng.random_range(0..3)];
        e.compat_mode = [
            None,
            Some(CompatMode::ON),
            Some(CompatMode::OFF),
            Some(CompatMode::AUTO),
        ][rng.random_range(0..4)];
        e.gds_threshold = rng.random_bool(0.5).then(|| pick(&mut rng));
        e.smallest_read = rng.random_bool(0.5).then(|| pick(&mut rng));
        let judged = judge_path(&e, expectations[rng.random_range(0..8)], pick(&mut rng));
        let _ = judged.to_string();
    }
}
