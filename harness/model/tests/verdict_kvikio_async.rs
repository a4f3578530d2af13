//! The path verdict of KvikIO's stream-ordered calls (`kvikio_api: async`): KvikIO's statistics
//! leave out `raw_read_async`/`raw_write_async` that reach cuFile's stream API (KvikIO 26.10,
//! `kvikio/observation.hpp`: "The cuFile asynchronous API ... on a system with working GDS
//! reports nothing. In compatibility mode those calls fall back to `read()`/`write()` and *are*
//! reported"), so cuFile's counters place the bytes KvikIO did not count, and nothing else does.

// Each test binary uses part of the shared builders.
#[expect(dead_code)]
mod verdict_support;

use gds_model::evidence::{CufileLogFindings, Evidence};
use gds_model::path::Path;
use gds_model::scenario::{CompatMode, ExpectedPath, KvikioApi, Op};
use gds_model::verdict::judge_path;
use verdict_support::*;

/// KvikIO's five backends, all zero, and cuFile's GPU 0 with 256 POSIX reads of 1.00 GiB in all:
/// the counters of `entry-points::kvikio-async[compat=OFF,depth=1]` as recorded on the H200
/// (libcufile 1.15.1 in compat mode, no nvidia-fs, KvikIO 26.10.00; 4 passes of a 256 MiB file).
/// The cufile.log lines are that trial's, as its evidence quoted them.
fn h200_kvikio_async_off() -> Evidence {
    let mut e = h200(
        CompatMode::OFF,
        &[
            ("GDS", 0, 0),
            ("MMAP", 0, 0),
            ("POSIX", 0, 0),
            ("REMOTE_HDFS", 0, 0),
            ("REMOTE_HTTP", 0, 0),
        ],
        gpu0(256, 0, 0, 256, GIB),
    );
    e.kvikio_api = Some(KvikioApi::Async);
    e.smallest_read = Some(256 * MIB);
    e.buffer_registered = Some(false);
    e.kvikio_async = Some("cuFile's stream API (cuFileReadAsync), inferred from KvikIO's rules; unknown: whether the file is in KvikIO's compat mode (this KvikIO does not say)".into());
    e.cufile_log = Some(CufileLogFindings::scan(
        "03-12-2026 10:35:17:167 [pid=807 tid=807] NOTICE  cufio-drv:851 running in compatible mode\n\
         03-12-2026 10:35:17:486 [pid=807 tid=807] ERROR  cufio-topo-udev:300 assertion: g.edges.find(v) != g.edges.end() ,\n\
         03-12-2026 10:35:17:486 [pid=807 tid=807] ERROR  cufio-topo-udev:345 failed to compute node distance: 0000:00:06.0\n\
         03-12-2026 10:35:17:495 [pid=807 tid=807] ERROR  cufio-fs:79 mount option not found in mount table data device: /dev/vda\n",
    ));
    e
}

#[test]
fn h200_async_reads_kvikio_did_not_count_are_placed_by_cufile() {
    let e = h200_kvikio_async_off();
    let judged = judge_path(&e, ExpectedPath::CufilePosix, 0);
    assert!(judged.passed, "{judged}");
    assert_eq!(judged.verdict.path, Path::CufilePosix);
    assert_eq!(judged.verdict.bytes_on(Path::CufilePosix), GIB);
    assert_eq!(judged.verdict.bytes_on(Path::Unknown), 0);
    let text = judged.to_string();
    assert!(
        text.starts_with(
            "cufile-posix: KvikIO: no bytes (its stream-ordered calls are not counted); cuFile: 256 posix reads, 0 nvfs"
        ),
        "{text}"
    );
    assert!(
        text.contains("note: KvikIO's raw_read_async is not in KvikIO's statistics; cuFile's counters account for all 1.00 GiB"),
        "{text}"
    );
    assert!(!text.contains("placed nowhere"), "{text}");
    // Still the silent fallback the gate exists to catch: GDS was expected and did not happen.
    let strict = judge_path(&e, ExpectedPath::Gds, 0);
    assert!(!strict.passed);
    assert_eq!(strict.verdict.path, Path::CufilePosix);
}

/// The same counters from a `pread` trial: KvikIO documents that it counts `pread`, so a GiB it
/// did not count is not explained by cuFile's counters, and the trial stays unknown.
#[test]
fn a_pread_trial_kvikio_did_not_count_stays_unknown() {
    let mut e = h200_kvikio_async_off();
    e.kvikio_api = Some(KvikioApi::Pread);
    let judged = judge_path(&e, ExpectedPath::CufilePosix, 0);
    assert!(!judged.passed);
    assert_eq!(judged.verdict.path, Path::Unknown, "{judged}");
    assert_eq!(judged.verdict.bytes_on(Path::Unknown), GIB);
    assert!(
        judged
            .to_string()
            .contains("KvikIO accounted for 0 B of the 1.00 GiB read; the rest is placed nowhere"),
        "{judged}"
    );
    // Evidence of an older gate names no KvikIO call: it is read as before.
    e.kvikio_api = None;
    assert_eq!(
        judge_path(&e, ExpectedPath::Any, 0)
            .verdict
            .bytes_on(Path::Unknown),
        GIB
    );
}

/// Constructed: neither KvikIO nor cuFile counted the async reads. Never a pass.
#[test]
fn async_bytes_nobody_counted_stay_unknown() {
    let mut e = h200_kvikio_async_off();
    e.cufile = Some(vec![gpu0(0, 0, 0, 0, 0)]);
    let judged = judge_path(&e, ExpectedPath::CufilePosix, 0);
    assert!(!judged.passed);
    assert_eq!(judged.verdict.path, Path::Unknown, "{judged}");
    assert!(
        judged
            .reasons
            .iter()
            .any(|r| r.contains("the bytes took unknown")),
        "{judged}"
    );
    // Nor without cuFile's counters at all.
    e.cufile = None;
    let judged = judge_path(&e, ExpectedPath::CufilePosix, 0);
    assert!(!judged.passed);
    assert_eq!(judged.verdict.bytes_on(Path::Unknown), GIB, "{judged}");
}

/// Constructed: cuFile counted half of what KvikIO left out; the other half is placed nowhere and
/// the trial fails against any path.
#[test]
fn cufile_counting_part_of_the_async_bytes_places_only_that_part() {
    let mut e = h200_kvikio_async_off();
    e.cufile = Some(vec![gpu0(128, 0, 0, 128, GIB / 2)]);
    let judged = judge_path(&e, ExpectedPath::CufilePosix, 0);
    assert!(!judged.passed);
    assert_eq!(judged.verdict.path, Path::Mixed);
    assert_eq!(judged.verdict.bytes_on(Path::CufilePosix), GIB / 2);
    assert_eq!(judged.verdict.bytes_on(Path::Unknown), GIB / 2);
    let text = judged.to_string();
    assert!(
        text.contains("cuFile's counters account for 512 MiB of the 1.00 GiB it did not count"),
        "{text}"
    );
    assert!(
        text.contains("KvikIO and cuFile's counters accounted for 512 MiB of the 1.00 GiB read; the rest is placed nowhere"),
        "{text}"
    );
}

/// Constructed from KvikIO's documented behaviour: with `KVIKIO_COMPAT_MODE=ON` a
/// `raw_read_async` becomes a synchronous POSIX read that KvikIO counts, and cuFile sees nothing.
#[test]
fn compat_on_async_reads_are_kvikio_posix_by_kvikio_own_count() {
    let mut e = h200(
        CompatMode::ON,
        &[("GDS", 0, 0), ("POSIX", 256, GIB)],
        gpu0(0, 0, 0, 0, 0),
    );
    e.kvikio_api = Some(KvikioApi::Async);
    let judged = judge_path(&e, ExpectedPath::KvikioPosix, 0);
    assert!(judged.passed, "{judged}");
    assert_eq!(judged.verdict.path, Path::KvikioPosix);
    assert!(!judged.to_string().contains("not in KvikIO's statistics"));
    // If that KvikIO did not count them after all, nothing places the bytes.
    let mut silent = h200(CompatMode::ON, &[("POSIX", 0, 0)], gpu0(0, 0, 0, 0, 0));
    silent.kvikio_api = Some(KvikioApi::Async);
    let judged = judge_path(&silent, ExpectedPath::KvikioPosix, 0);
    assert!(!judged.passed);
    assert_eq!(judged.verdict.path, Path::Unknown, "{judged}");
}

/// Constructed: under compat mode ON cuFile must not see KvikIO's async reads; if it does, the
/// sources disagree.
#[test]
fn cufile_counting_async_reads_under_compat_on_is_a_disagreement() {
    let mut e = h200_kvikio_async_off();
    e.compat_mode = Some(CompatMode::ON);
    let judged = judge_path(&e, ExpectedPath::CufilePosix, 0);
    assert!(!judged.passed);
    assert!(
        judged
            .reasons
            .iter()
            .any(|r| r.contains("although KVIKIO_COMPAT_MODE=ON")),
        "{judged}"
    );
}

/// Constructed: a roundtrip written with `raw_write_async` and read back with `raw_read_async`
/// moves its bytes twice; cuFile's write and read counters, added, place both.
#[test]
fn async_writes_and_roundtrips_are_placed_by_cufiles_counters() {
    let mut e = h200_kvikio_async_off();
    e.op = Op::Write;
    let judged = judge_path(&e, ExpectedPath::CufilePosix, 0);
    assert!(judged.passed, "{judged}");
    assert!(
        judged
            .to_string()
            .contains("KvikIO's raw_write_async is not in KvikIO's statistics"),
        "{judged}"
    );
    e.op = Op::Roundtrip;
    e.bytes_read = 2 * GIB;
    e.cufile = Some(vec![gpu0(512, 0, 0, 512, 2 * GIB)]);
    let judged = judge_path(&e, ExpectedPath::CufilePosix, 0);
    assert!(judged.passed, "{judged}");
    assert!(
        judged
            .to_string()
            .contains("raw_write_async and raw_read_async is not in KvikIO's statistics"),
        "{judged}"
    );
}
