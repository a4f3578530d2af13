//! The path verdict of writing trials: cuFile's write counters (stats API and `gds_stats`'
//! `Write:` section) judged like the read counters, with the read counters of the same trial
//! left out of a `write` and added to a `roundtrip`'s.

// Each test binary uses part of the shared builders.
#[expect(dead_code)]
mod verdict_support;

use gds_model::cufile_abi::GpuCounters;
use gds_model::evidence::{CufileGpuCounters, Evidence, GdsStats};
use gds_model::path::Path;
use gds_model::scenario::{ExpectedPath, Op, Reader};
use gds_model::verdict::judge_path;
use verdict_support::*;

/// cuFile's counters after a cufile writer put 1 GiB in 256 writes of 4 MiB, all in compat mode
/// (what the H200 without nvidia-fs is expected to show; not yet recorded there), plus 16 reads
/// of an earlier step that a `write` must not count. Constructed.
fn compat_mode_writes() -> GpuCounters {
    GpuCounters {
        index: 0,
        uuid: "00".into(),
        read_bytes: 64 * MIB,
        n_total_reads: 16,
        n_posix_reads: 16,
        writes_bytes: GIB,
        n_total_writes: 256,
        n_posix_writes: 256,
        ..GpuCounters::default()
    }
}

fn writing(op: Op, counters: &GpuCounters) -> Evidence {
    let mut e = Evidence::new(Reader::Cufile, GIB);
    e.op = op;
    e.cufile = Some(vec![CufileGpuCounters::from_api(counters, op)]);
    e
}

#[test]
fn compat_mode_writes_are_cufile_posix_and_said_as_writes() {
    let judged = judge_path(
        &writing(Op::Write, &compat_mode_writes()),
        ExpectedPath::Gds,
        0,
    );
    assert_eq!(judged.verdict.path, Path::CufilePosix);
    assert!(!judged.passed);
    assert!(
        judged.summary.contains("cuFile: 256 posix writes, 0 nvfs"),
        "{}",
        judged.summary
    );
    let expected = judge_path(
        &writing(Op::Write, &compat_mode_writes()),
        ExpectedPath::CufilePosix,
        0,
    );
    assert!(expected.passed, "{expected}");
}

#[test]
fn nvfs_writes_are_gds_and_reads_of_a_write_trial_do_not_count() {
    let nvfs = GpuCounters {
        n_posix_writes: 0,
        n_nvfs_writes: 256,
        ..compat_mode_writes()
    };
    // The 16 posix reads are not the write's: the verdict is nvfs, not a mix.
    let judged = judge_path(&writing(Op::Write, &nvfs), ExpectedPath::Gds, 0);
    assert!(judged.passed, "{judged}");
    assert_eq!(judged.verdict.path, Path::Nvfs);
}

#[test]
fn a_roundtrip_counts_its_reads_and_writes_together() {
    let nvfs_writes_posix_reads = GpuCounters {
        n_posix_writes: 0,
        n_nvfs_writes: 256,
        ..compat_mode_writes()
    };
    let counters = CufileGpuCounters::from_api(&nvfs_writes_posix_reads, Op::Roundtrip);
    assert_eq!(
        (
            counters.n_total_reads,
            counters.n_nvfs_reads,
            counters.n_posix_reads,
            counters.read_bytes
        ),
        (272, 256, 16, GIB + 64 * MIB)
    );
    let judged = judge_path(
        &writing(Op::Roundtrip, &nvfs_writes_posix_reads),
        ExpectedPath::Gds,
        0,
    );
    assert!(!judged.passed, "a posix read back is a fallback: {judged}");
    assert!(
        judged.summary.contains("reads and writes"),
        "{}",
        judged.summary
    );
}

/// Verbatim NVIDIA sample (fixtures/README.md): GPU 2 read 78193 MiB and wrote nothing. Its
/// `Write:` section is read apart from `Read:`.
#[test]
fn gds_stats_write_sections_are_read_apart_from_reads() {
    let stats = GdsStats::parse(&fixture("gds_stats_l3_nvidia_guide.txt")).unwrap();
    let gpu2 = stats.gpus.iter().find(|gpu| gpu.gpu == 2).unwrap();
    assert_eq!(gpu2.counters_for(Op::Read).n_total_reads, 78193);
    let writes = gpu2.write_stats();
    assert_eq!(
        (
            writes.n,
            writes.posix,
            writes.unalign,
            writes.err,
            writes.mib
        ),
        (Some(0), Some(0), Some(0), Some(0), Some(0))
    );
    assert_eq!(
        gpu2.counters_for(Op::Write),
        CufileGpuCounters {
            gpu: 2,
            ..CufileGpuCounters::default()
        }
    );
    assert_eq!(gpu2.counters_for(Op::Roundtrip).n_total_reads, 78193);
    let mut e = Evidence::new(Reader::Cufile, GIB);
    e.op = Op::Write;
    e.gds_stats = Some(stats);
    let judged = judge_path(&e, ExpectedPath::Any, 0);
    assert!(judged.to_string().contains("no writes counted"), "{judged}");
}

/// Every line of a writing trial's evidence speaks of writes: the bytes written, the smallest
/// write, the errors cuFile counted; none says "read" for them.
#[test]
fn a_writing_trials_evidence_says_written_not_read() {
    let failing = GpuCounters {
        n_writes_err: 2,
        ..compat_mode_writes()
    };
    let mut e = writing(Op::Write, &failing);
    e.task_size = Some(4 * MIB);
    e.smallest_read = Some(MIB);
    let text = judge_path(&e, ExpectedPath::CufilePosix, 0).to_string();
    for needle in [
        "cufile, 1.00 GiB written",
        "smallest write 1.00 MiB",
        "cuFile counted 2 write errors",
    ] {
        assert!(text.contains(needle), "{needle}\n{text}");
    }
    let words: Vec<&str> = text.split(|c: char| !c.is_alphabetic()).collect();
    assert!(
        !words.contains(&"read") && !words.contains(&"reads"),
        "{text}"
    );
    let mut roundtrip = writing(Op::Roundtrip, &compat_mode_writes());
    roundtrip.bytes_read = 2 * GIB;
    let text = judge_path(&roundtrip, ExpectedPath::Any, 0).to_string();
    assert!(
        text.contains("cufile, 2.00 GiB written and read back"),
        "{text}"
    );
}

/// A writing trial whose counters saw nothing is told so in writes, and the diagnosis that
/// looks for that conflict still finds it.
#[test]
fn writes_the_counters_did_not_see_are_said_as_writes() {
    let judged = judge_path(
        &writing(Op::Write, &GpuCounters::default()),
        ExpectedPath::Gds,
        0,
    );
    assert!(!judged.passed);
    let text = judged.to_string();
    assert!(
        text.contains("counted no writes: the counters did not see these writes"),
        "{text}"
    );
    assert!(
        judged
            .likely_cause
            .as_deref()
            .is_some_and(|c| c.starts_with("cuFile's counters did not see the writes")),
        "{text}"
    );
}
