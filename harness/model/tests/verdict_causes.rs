//! The judgement's causes and fixes: one test per cause the gate recognises, and the real
//! cufile.log and counters recorded on the H200.

// Each test binary uses part of the shared builders.
#[expect(dead_code)]
mod verdict_support;

use gds_model::evidence::{CufileGpuCounters, CufileLogFindings, Evidence};
use gds_model::path::Path;
use gds_model::scenario::{CompatMode, ExpectedPath, Reader};
use gds_model::verdict::judge_path;
use verdict_support::*;

#[test]
fn read_errors_fail_even_on_the_expected_path() {
    let mut counters = gpu0(256, 256, 0, 0, GIB);
    counters.n_reads_err = 3;
    let judged = judge_path(&cufile_trial(counters), ExpectedPath::Nvfs, 0);
    assert!(!judged.passed);
    assert_eq!(judged.reasons, ["cuFile counted 3 read errors"]);
    assert!(
        judged
            .likely_cause
            .unwrap()
            .starts_with("cuFile counted 3 read errors")
    );
    assert!(judged.fix.unwrap().contains("dmesg"));
}

#[test]
fn a_worker_that_read_nothing_is_explained_by_the_log() {
    // The strict leg on the H200: OFF, allow_compat_mode=false, no nvidia-fs: KvikIO raises.
    let mut e = Evidence::new(Reader::Kvikio, 0);
    e.compat_mode = Some(CompatMode::OFF);
    e.allow_compat_mode = Some(false);
    e.nvidia_fs_loaded = Some(false);
    e.cufile_log = Some(CufileLogFindings::scan(
        " 06-11-2023 20:12:02:865 [pid=157254 tid=157254] ERROR  cufio-drv:716 nvidia-fs.ko driver not loaded\n",
    ));
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert!(!judged.passed);
    assert!(judged.reasons[0].contains("read no bytes"));
    let cause = judged.likely_cause.unwrap();
    assert!(
        cause.starts_with("cuFile could not use GDS: nvidia-fs is not loaded (cufile.log line 1"),
        "{cause}"
    );
    assert!(
        !judged.fix.unwrap().contains("allow_compat_mode"),
        "already strict"
    );
}

#[test]
fn each_log_cause_has_its_fix() {
    let cases = [
        (
            " 06-04-2026 14:59:16:997 [pid=44990 tid=44990] ERROR  cufio:339 cuFileHandleRegister error: GPUDirect Storage not supported on current file\n",
            "the file system or mount is not supported",
            "findmnt",
        ),
        (
            // Constructed: no real cufile.log line about a refused O_DIRECT was found.
            "ERROR  cufio-fs:120 open with O_DIRECT failed: EINVAL\n",
            "`O_DIRECT` open or read was refused",
            "iflag=direct",
        ),
        (
            " 07-11-2023 16:58:54:420 [pid=45874 tid=45874] ERROR  cufio-fs:199 NVMe Driver not registered with nvidia-fs!!!\n",
            "NVMe driver is not registered",
            "/proc/driver/nvidia-fs/modules",
        ),
        (
            " 27-06-2025 07:45:35:135 [pid=48882 tid=48882] ERROR  cufio-fs:328 error creating udev_device for block device dev_no: 0:53\n",
            "udev has no record",
            "/run/udev",
        ),
        (
            " 02-11-2023 11:42:01:926 [pid=3540949 tid=3540949] NOTICE  cufio:1036 cuFileHandleRegister GDS not supported or disabled by config, using cuFile posix read/write with compat mode enabled\n",
            "cuFile compat mode (cufile.log line 1",
            "force_compat_mode",
        ),
        (
            "",
            "cuFile compat mode, and nothing recorded why",
            "gdscheck -p",
        ),
    ];
    for (log, cause, fix) in cases {
        let mut e = cufile_trial(gpu0(256, 0, 0, 256, GIB));
        e.cufile_log = Some(CufileLogFindings::scan(log));
        let judged = judge_path(&e, ExpectedPath::Gds, 0);
        assert!(!judged.passed);
        let (got_cause, got_fix) = (judged.likely_cause.unwrap(), judged.fix.unwrap());
        assert!(got_cause.contains(cause), "{got_cause}");
        assert!(got_fix.contains(fix), "{got_fix}");
    }
}

#[test]
fn settings_causes_and_fixes() {
    // The overlay said no compat mode, yet cuFile did compat reads.
    let mut e = cufile_trial(gpu0(256, 0, 0, 256, GIB));
    e.allow_compat_mode = Some(false);
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert!(
        judged
            .likely_cause
            .unwrap()
            .contains("allow_compat_mode: false`: the overlay did not reach cuFile")
    );
    assert!(judged.fix.unwrap().contains("CUFILE_ENV_PATH_JSON"));

    // A registered buffer whose registration failed.
    let mut e = cufile_trial(gpu0(256, 0, 0, 256, GIB));
    e.buffer_registered = Some(true);
    e.cufile_log = Some(CufileLogFindings::scan(
        " 27-06-2023 16:20:37:235 [pid=41294 tid=41294] ERROR  cufio:1185 cuFileBufRegister error, object allocation failed\n",
    ));
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert!(
        judged
            .likely_cause
            .unwrap()
            .contains("`cuFileBufRegister` failed")
    );
    assert!(judged.fix.unwrap().contains("BAR1"));

    // An unregistered buffer, and nothing else to blame.
    let mut e = cufile_trial(gpu0(256, 0, 0, 256, GIB));
    e.buffer_registered = Some(false);
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert!(judged.likely_cause.unwrap().contains("unregistered buffer"));
    assert!(judged.fix.unwrap().contains("buffer: registered"));

    // No /run/udev: KvikIO AUTO does not even try cuFile.
    let mut e = h200(
        CompatMode::AUTO,
        &[("POSIX", 256, GIB)],
        gpu0(0, 0, 0, 0, 0),
    );
    e.run_udev = Some(false);
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert!(
        judged
            .likely_cause
            .unwrap()
            .contains("`/run/udev` exists, and it is missing here")
    );

    // AUTO with nothing logged: the silent per-file fallback.
    let e = h200(
        CompatMode::AUTO,
        &[("POSIX", 256, GIB)],
        gpu0(0, 0, 0, 0, 0),
    );
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert!(
        judged
            .likely_cause
            .unwrap()
            .contains("without a logged reason")
    );
    assert!(judged.fix.unwrap().contains("compat_mode: OFF"));
}

#[test]
fn a_negative_control_that_took_gds_fails() {
    let mut e = h200(
        CompatMode::ON,
        &[("GDS", 256, GIB)],
        gpu0(256, 256, 0, 0, GIB),
    );
    e.nvidia_fs_loaded = Some(true);
    let judged = judge_path(&e, ExpectedPath::KvikioPosix, 0);
    assert!(!judged.passed);
    assert!(
        judged
            .reasons
            .iter()
            .any(|r| r.contains("although KVIKIO_COMPAT_MODE=ON"))
    );
    assert!(
        judged
            .likely_cause
            .unwrap()
            .starts_with("expected the kvikio-posix fallback, but the reads took GDS")
    );
}

/// The counters and cufile.log of a real cuFile read on the H200 (64 MiB, 16 reads of 4 MiB,
/// udev record written, no nvidia-fs): fixtures h200_udev_record_probe_result.json and
/// cufile_log_h200_udev_record.txt.
#[test]
fn the_h200_cufile_read_is_compat_mode_because_nvidia_fs_is_missing() {
    let probe: serde_json::Value =
        serde_json::from_str(&fixture("h200_udev_record_probe_result.json")).unwrap();
    let gpu = &probe["gpus"][0];
    let count = |key: &str| gpu[key].as_u64().unwrap();
    let mut e = Evidence::new(Reader::Cufile, probe["read_bytes"].as_u64().unwrap());
    e.cufile = Some(vec![CufileGpuCounters {
        gpu: 0,
        n_total_reads: count("n_total_reads"),
        n_nvfs_reads: count("n_nvfs_reads"),
        n_p2p_reads: count("n_p2p_reads"),
        n_posix_reads: count("n_posix_reads"),
        n_dr_reads: count("n_dr_reads"),
        n_unaligned_reads: count("n_unaligned_reads"),
        n_reads_err: count("n_reads_err"),
        read_bytes: count("read_bytes"),
    }]);
    e.cufile_log = Some(CufileLogFindings::scan(&fixture(
        "cufile_log_h200_udev_record.txt",
    )));
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert_eq!(judged.verdict.path, Path::CufilePosix);
    assert!(judged.summary.starts_with("expected gds, got cufile-posix: cuFile: 16 posix reads, 0 nvfs → cuFile compat mode: nvidia-fs is not loaded (cufile.log line "), "{}", judged.summary);
    assert!(
        judged
            .other_causes
            .iter()
            .any(|d| d.cause.contains("mount option not found"))
    );
    assert!(judge_path(&e, ExpectedPath::CufilePosix, 0).passed);
}

/// Without a udev record the H200's cuFile refuses the file (5027) and the worker reads nothing:
/// the blocking cause is udev, before nvidia-fs.
#[test]
fn the_h200_registration_failure_blames_udev_first() {
    let mut e = Evidence::new(Reader::Cufile, 0);
    e.cufile = Some(vec![gpu0(0, 0, 0, 0, 0)]);
    e.cufile_log = Some(CufileLogFindings::scan(&fixture(
        "cufile_log_h200_no_udev_record.txt",
    )));
    let judged = judge_path(&e, ExpectedPath::Gds, 0);
    assert!(!judged.passed);
    let cause = judged.likely_cause.unwrap();
    assert!(
        cause.starts_with("cuFile could not use GDS: udev has no record"),
        "{cause}"
    );
    assert!(cause.contains("ID_FS_USAGE vda"), "{cause}");
    assert!(
        judged
            .other_causes
            .iter()
            .any(|d| d.cause.contains("nvidia-fs is not loaded"))
    );
}
