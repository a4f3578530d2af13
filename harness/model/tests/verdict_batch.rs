//! The path verdict of the `cufile-batch` and `cufile-async` readers: cuFile's counters judged as
//! for `cufile`, the evidence naming the reader that handed cuFile the bytes.

// Each test binary uses part of the shared builders.
#[expect(dead_code)]
mod verdict_support;

use gds_model::cufile_abi::GpuCounters;
use gds_model::evidence::{CufileGpuCounters, Evidence};
use gds_model::path::Path;
use gds_model::scenario::{ExpectedPath, Op, Reader};
use gds_model::verdict::judge_path;
use verdict_support::*;

fn batch_reads(counters: GpuCounters) -> Evidence {
    let mut e = Evidence::new(Reader::CufileBatch, GIB);
    e.cufile = Some(vec![CufileGpuCounters::from_api(&counters, Op::Read)]);
    e
}

/// Constructed: 256 reads of 4 MiB in compat mode, as the H200 without nvidia-fs is expected to
/// count a batch trial (not yet recorded there).
#[test]
fn batch_reads_in_compat_mode_are_cufile_posix() {
    let judged = judge_path(
        &batch_reads(GpuCounters {
            read_bytes: GIB,
            n_total_reads: 256,
            n_posix_reads: 256,
            ..GpuCounters::default()
        }),
        ExpectedPath::Gds,
        0,
    );
    assert_eq!(judged.verdict.path, Path::CufilePosix);
    assert!(!judged.passed);
    let text = judged.to_string();
    assert!(text.contains("cufile-batch, 1.00 GiB read"), "{text}");
    assert!(text.contains("cuFile: 256 posix reads, 0 nvfs"), "{text}");
}

/// If cuFile's per-GPU counters do not count batch I/O, the trial must not pass as anything:
/// the reader handed cuFile a GiB that no counter saw.
#[test]
fn batch_reads_the_counters_missed_are_a_conflict_naming_the_reader() {
    let judged = judge_path(
        &batch_reads(GpuCounters::default()),
        ExpectedPath::CufilePosix,
        0,
    );
    assert!(!judged.passed);
    assert!(
        judged
            .reasons
            .iter()
            .any(|r| r.contains("the cufile-batch reader handed cuFile 1.00 GiB")),
        "{judged}"
    );
}

#[test]
fn stream_ordered_reads_are_judged_by_the_same_counters() {
    let mut e = batch_reads(GpuCounters {
        read_bytes: GIB,
        n_total_reads: 256,
        n_nvfs_reads: 256,
        ..GpuCounters::default()
    });
    e.reader = Reader::CufileAsync;
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert!(judged.passed, "{judged}");
    assert!(
        judged.to_string().contains("cufile-async, 1.00 GiB read"),
        "{judged}"
    );
}

/// KvikIO's async reads: the evidence says whether they could reach cuFile's stream API, as the
/// worker inferred it.
#[test]
fn kvikio_async_reads_say_which_way_kvikio_took() {
    let mut e = Evidence::new(Reader::Kvikio, GIB);
    e.kvikio_async =
        Some("synchronous fallback (inferred from KvikIO's rules): no cufile.json path".into());
    let text = judge_path(&e, ExpectedPath::Any, 0).to_string();
    assert!(
        text.contains("KvikIO raw_read_async: synchronous fallback (inferred from KvikIO's rules): no cufile.json path"),
        "{text}"
    );
}
