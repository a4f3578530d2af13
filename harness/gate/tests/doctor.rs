//! The doctor: parsers on verbatim outputs, every check on recorded facts, and a real
//! collection on whatever host runs the tests.

use std::path::PathBuf;

use gds_gate::doctor;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The quick form the gate runs before every trial: no slow tools, no cuFile driver opened.
#[test]
fn preflight_gives_one_line_per_problem() {
    let scratch = tempfile::tempdir().unwrap();
    let (trials, _) = doctor::load_trials(&[repo().join("scenarios/smoke.yaml")]).unwrap();
    let report = doctor::preflight(&scratch.path().join("data"), &trials, false);
    assert_eq!(report.trials.len(), trials.len());
    assert!(
        report
            .facts
            .gdscheck
            .why()
            .is_some_and(|w| w.contains("quick"))
    );
    let lines = doctor::short_summary(&report);
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("doctor: the selected suites"),
        "{lines:#?}"
    );
    let problems = report
        .checks
        .iter()
        .filter(|c| c.state.is_problem())
        .count();
    assert!(lines.len() > problems);
}

mod parsers {
    use gds_gate::doctor::collect::{parse_bar1, parse_query_csv};
    use gds_gate::doctor::gdscheck::parse;
    use gds_gate::mounts::{find_mount, parse_mountinfo};

    fn fixture(name: &str) -> String {
        let path = super::repo()
            .join("harness/gate/tests/fixtures/doctor")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn gdscheck_gds_1_1_magnumio_readme() {
        let r = parse(&fixture("gdscheck_magnumio_cucim_readme.txt"));
        assert_eq!(r.gds_version.as_deref(), Some("1.1.0.37"));
        assert_eq!(r.nvidia_fs_version.as_deref(), Some("2.6"));
        assert_eq!(r.libcufile_version.as_deref(), Some("2.4"));
        assert_eq!(r.direct(), vec!["NVMe"]);
        assert_eq!(r.support.len(), 10);
        assert_eq!(r.rdma["Mellanox PeerDirect"], "Enabled");
        assert_eq!(r.rdma["rdma_device_status"], "Up: 0 Down: 0");
        assert_eq!(r.platform_info["IOMMU"], "disabled");
        assert_eq!(r.verification, Some(true));
        // The command line and NVIDIA's own `...` elision are kept, not dropped.
        assert_eq!(
            r.unparsed,
            vec!["/usr/local/cuda/gds/tools/gdscheck -p", "..."]
        );
    }

    #[test]
    fn gdscheck_gds_1_7_nothing_supported() {
        let r = parse(&fixture("gdscheck_gds_nvidia_fs_issue31.txt"));
        assert_eq!(r.gds_version.as_deref(), Some("1.7.1.12"));
        assert_eq!(r.nvidia_fs_version.as_deref(), Some("2.17"));
        assert_eq!(r.platform.as_deref(), Some("x86_64"));
        assert!(r.direct().is_empty());
        assert_eq!(
            r.support("nvme").map(|s| s.value.as_str()),
            Some("Unsupported")
        );
        assert_eq!(r.config["properties.use_compat_mode"], "false");
        assert_eq!(
            r.config["properties.posix_pool_slab_size_kb"],
            "4 1024 16384"
        );
        assert_eq!(r.verification, None);
        assert_eq!(
            r.batch_limits().as_deref(),
            Some("batch up to 128 I/Os, 5 ms timeout")
        );
    }

    #[test]
    fn gdscheck_gds_1_16_compat_only_without_nvidia_fs() {
        let r = parse(&fixture("gdscheck_open_gpu_kernel_modules_issue15.txt"));
        assert_eq!(r.gds_version.as_deref(), Some("1.16.0.49"));
        assert_eq!(r.nvidia_fs_version, None);
        assert_eq!(r.nvidia_fs_minimum_version.as_deref(), Some("2.12"));
        assert!(r.direct().is_empty());
        let nvme = r.support("NVMe").unwrap();
        assert!(nvme.compat() && !nvme.direct());
        assert!(r.support("VIRTIOFS").is_some_and(|s| s.compat()));
        assert!(r.support("Userspace RDMA").is_some_and(|s| !s.compat()));
        assert_eq!(r.config["properties.per_buffer_cache_size_kb"], "1024");
    }

    #[test]
    fn gdscheck_gds_1_16_environment_and_two_versions() {
        let r = parse(&fixture("gdscheck_gds_nvidia_fs_issue77.txt"));
        assert_eq!(r.nvidia_fs_version.as_deref(), Some("2.27"));
        assert_eq!(r.nvidia_fs_minimum_version.as_deref(), Some("2.12"));
        assert_eq!(r.environment["CUFILE_LOGGING_LEVEL"], "TRACE");
        assert_eq!(r.support.len(), 13);
        assert_eq!(
            r.unparsed,
            vec!["root@proton-nvidia:/home/alok/gds# /usr/local/cuda/gds/tools/gdscheck.py -p"]
        );
    }

    #[test]
    fn gdscheck_gds_1_14_p2pdma_line() {
        let r = parse(&fixture("gdscheck_gds_nvidia_fs_issue75.txt"));
        assert_eq!(r.gds_version.as_deref(), Some("1.14.0.30"));
        let p2p = r.support("NVMe P2PDMA").unwrap();
        assert_eq!(p2p.value, "Unsupported");
        assert!(!p2p.direct());
        assert!(r.unparsed.is_empty(), "{:?}", r.unparsed);
    }

    #[test]
    fn nvidia_smi_bar1_without_the_gpu_line() {
        let bars = parse_bar1(&fixture(
            "nvidia_smi_bar1_open_gpu_kernel_modules_issue38.txt",
        ));
        assert_eq!(bars, vec![(String::new(), 65536)]);
    }

    #[test]
    fn nvidia_smi_query_csv_rejects_garbage() {
        assert!(
            parse_query_csv(
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
            )
            .is_err()
        );
    }

    #[test]
    fn this_hosts_mountinfo_has_a_root() {
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let entries = parse_mountinfo(&text);
        assert!(!entries.is_empty());
        let root = find_mount(&entries, std::path::Path::new("/")).unwrap();
        assert_eq!(root.mount_point, "/");
    }
}

/// Every check on recorded facts: the fixtures, and variants of them that each change one fact
/// (written out in the test, so the difference is explicit).
mod recorded {
    use gds_gate::doctor::facts::{ConfigStatus, DirectIo, Fact, Facts, Mount};
    use gds_gate::doctor::{self, Can, DoctorReport, Outcome, State};
    use gds_model::path::Path;
    use gds_model::scenario::TrialSpec;

    fn facts(name: &str) -> Facts {
        let path = super::repo()
            .join("harness/gate/tests/fixtures/doctor")
            .join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        doctor::parse_facts(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn trials(suite: &str) -> Vec<TrialSpec> {
        doctor::load_trials(&[super::repo().join("scenarios").join(suite)])
            .unwrap()
            .0
    }

    fn report(facts: Facts, suite: &str) -> DoctorReport {
        doctor::assess(facts, &trials(suite), false)
    }

    fn state(report: &DoctorReport, component: &str) -> State {
        report
            .checks
            .iter()
            .find(|c| c.component == component)
            .unwrap_or_else(|| panic!("no `{component}` row in {:#?}", report.checks))
            .state
    }

    fn row<'a>(report: &'a DoctorReport, component: &str) -> &'a gds_gate::doctor::Check {
        report
            .checks
            .iter()
            .find(|c| c.component == component)
            .unwrap()
    }

    fn can(report: &DoctorReport, subject: &str) -> Can {
        report
            .expectations
            .iter()
            .find(|e| e.subject == subject)
            .unwrap()
            .can
    }

    fn outcome<'a>(report: &'a DoctorReport, trial: &str) -> &'a Outcome {
        &report
            .trials
            .iter()
            .find(|t| t.name == trial)
            .unwrap_or_else(|| panic!("no trial {trial}"))
            .outcome
    }

    fn reason(outcome: &Outcome) -> &str {
        match outcome {
            Outcome::Fail { reason }
            | Outcome::Ignored { reason }
            | Outcome::Unknown { reason } => reason,
            Outcome::Pass { why, .. } => why,
        }
    }

    #[test]
    fn a_healthy_gds_host_constructed() {
        let report = report(facts("healthy.json"), "default.yaml");
        assert!(report.facts.provenance.source.starts_with("constructed"));
        let problems: Vec<_> = report
            .checks
            .iter()
            .filter(|c| c.state != State::Ok)
            .collect();
        assert!(problems.is_empty(), "{problems:#?}");
        assert_eq!(can(&report, "path nvfs"), Can::Yes);
        assert_eq!(can(&report, "path p2p"), Can::No);
        assert_eq!(can(&report, "KvikIO AUTO uses cuFile"), Can::Yes);
        assert_eq!(
            outcome(&report, "default::strict-gds"),
            &Outcome::Pass {
                path: Path::Nvfs,
                why: "nvidia-fs is loaded and the NVMe driver is registered with it".into()
            }
        );
        assert!(
            matches!(outcome(&report, "default::control-compat-on"), Outcome::Pass { path, .. } if *path == Path::KvikioPosix)
        );
        assert!(
            matches!(outcome(&report, "default::kvikio-small-reads"), Outcome::Pass { path, .. } if *path == Path::KvikioPosix)
        );
        assert!(report.verdict.can_pass, "{}", report.verdict.summary);
        assert_eq!(
            (
                report.verdict.fail,
                report.verdict.ignored,
                report.verdict.unknown
            ),
            (0, 0, 0)
        );
        assert_eq!(report.exit_code(), 0);
        // None of the default suite's files is there: its 2 GiB file, the second of the multi-gpu
        // scenario, the 128 MiB one of the buffers scenario, the 64 MiB one of the small reads,
        // the 16 MiB one of odd-offsets, the load's 16 of 64 MiB and the KV cache's 8 of 32 MiB.
        // The writing trials generate nothing: they write files of their own, kept for the next
        // run (the checkpoint's 1 GiB, and the KV cache's writing rank's copies of 4 of its files).
        assert!(
            row(&report, "free space").evidence.contains(
                "5.45 GiB to generate; the writing trials keep 1.12 GiB of files of their own"
            ),
            "{}",
            row(&report, "free space").evidence
        );
    }

    /// The H200 test machine as captured (`gds-gate doctor --collect`): udev record written,
    /// KvikIO installed, no nvidia-fs. Every cuFile read is cuFile compat POSIX, the double silent
    /// fallback the gate exists to catch, and the strict GDS leg cannot pass.
    #[test]
    fn the_h200_test_machine() {
        let report = report(facts("h200.json"), "default.yaml");
        assert_eq!(state(&report, "nvidia-fs"), State::Fail);
        assert_eq!(state(&report, "udev"), State::Ok);
        assert_eq!(state(&report, "block device"), State::Warn);
        assert_eq!(state(&report, "KvikIO"), State::Ok);
        assert_eq!(state(&report, "O_DIRECT"), State::Ok);
        assert_eq!(state(&report, "GDS tools"), State::Warn);
        assert_eq!(state(&report, "cufile settings"), State::Ok);
        assert!(
            row(&report, "GPU 0").evidence.contains("NVIDIA H200"),
            "{}",
            row(&report, "GPU 0").evidence
        );
        assert!(
            row(&report, "NVIDIA driver")
                .evidence
                .contains("580.159.04"),
            "{}",
            row(&report, "NVIDIA driver").evidence
        );
        assert_eq!(can(&report, "path nvfs"), Can::No);
        assert_eq!(can(&report, "path cufile-posix"), Can::Yes);
        let auto = outcome(&report, "default::kvikio[compat=AUTO,nthreads=1]");
        assert!(
            matches!(auto, Outcome::Pass { path, why } if *path == Path::CufilePosix && why.contains("nvidia-fs is not loaded")),
            "{auto:?}"
        );
        let strict = outcome(&report, "default::strict-gds");
        assert!(
            matches!(strict, Outcome::Fail { reason } if reason.contains("allow_compat_mode")),
            "{strict:?}"
        );
        assert!(matches!(
            outcome(&report, "default::cold-read[reader=posix,nthreads=1]"),
            Outcome::Pass { .. }
        ));
        assert!(!report.verdict.can_pass);
        assert_eq!(report.exit_code(), 1);
    }

    /// The same machine before its udev record was written (what it is out of the box): cuFile
    /// cannot register the file (5027) and KvikIO AUTO silently reads with POSIX.
    #[test]
    fn the_h200_without_a_udev_record() {
        let mut facts = facts("h200.json");
        if let Fact::Known(record) = &mut facts.data_dir.udev {
            record.exists = false;
            record.id_fs_usage = None;
            record.id_fs_type = None;
        }
        let report = report(facts, "default.yaml");
        assert_eq!(state(&report, "udev"), State::Fail);
        assert!(
            row(&report, "udev")
                .evidence
                .contains("b254:0 does not exist"),
            "{}",
            row(&report, "udev").evidence
        );
        assert_eq!(can(&report, "path cufile-posix"), Can::No);
        let cold = outcome(&report, "default::cold-read[reader=cufile,nthreads=1]");
        assert!(
            matches!(cold, Outcome::Fail { reason } if reason.contains("5027")),
            "{cold:?}"
        );
        assert!(!report.verdict.can_pass);
    }

    /// The driver and libcufile load, NVRTC does not: GPU trials cannot verify what they read,
    /// so they cannot pass, and the doctor says so instead of promising a pass.
    #[test]
    fn a_host_without_nvrtc() {
        let mut without = facts("healthy.json");
        without.driver.nvrtc =
            Fact::Unknown("NVRTC not found (looked for libnvrtc.so and 12 other names)".into());
        let judged = report(without, "default.yaml");
        assert_eq!(state(&judged, "NVRTC"), State::Fail);
        let fix = row(&judged, "NVRTC").fix.clone().unwrap_or_default();
        assert!(fix.contains("nvrtc"), "{fix}");
        let cufile = outcome(&judged, "default::cold-read[reader=cufile,nthreads=1]");
        assert!(
            matches!(cufile, Outcome::Fail { reason } if reason.contains("needs NVRTC")),
            "{cufile:?}"
        );
        let posix = outcome(&judged, "default::cold-read[reader=posix,nthreads=1]");
        assert!(matches!(posix, Outcome::Pass { .. }), "{posix:?}");
        assert!(!judged.verdict.can_pass);
        // Facts saved before NVRTC was asked judge nothing on it.
        let mut old = facts("healthy.json");
        old.driver.nvrtc = Fact::Unknown("not collected (facts saved by an older gds-gate)".into());
        let judged = report(old, "default.yaml");
        assert_eq!(state(&judged, "NVRTC"), State::Unknown);
        assert!(judged.verdict.can_pass);
    }

    #[test]
    fn a_container_without_run_udev() {
        let mut facts = facts("healthy.json");
        facts.platform.container = Some("/.dockerenv exists".into());
        facts.data_dir.run_udev = false;
        if let Fact::Known(record) = &mut facts.data_dir.udev {
            record.exists = false;
            record.id_fs_usage = None;
            record.id_fs_type = None;
        }
        if let Fact::Known(probe) = &mut facts.kvikio.probe {
            probe.auto_prefers_posix = Some(true);
        }
        let report = report(facts, "default.yaml");
        assert_eq!(state(&report, "udev"), State::Fail);
        assert!(
            row(&report, "udev")
                .fix
                .as_deref()
                .unwrap()
                .contains("--volume /run/udev:/run/udev:ro")
        );
        assert_eq!(state(&report, "KvikIO AUTO"), State::Warn);
        assert!(
            row(&report, "KvikIO AUTO")
                .evidence
                .contains("/run/udev does not exist")
        );
        assert_eq!(can(&report, "KvikIO AUTO uses cuFile"), Can::No);
        let auto = outcome(&report, "default::kvikio[compat=AUTO,nthreads=1]");
        assert!(
            matches!(auto, Outcome::Pass { path, .. } if *path == Path::KvikioPosix),
            "{auto:?}"
        );
        assert!(
            matches!(outcome(&report, "default::strict-gds"), Outcome::Fail { reason } if reason.contains("/run/udev"))
        );
        assert!(matches!(
            outcome(&report, "default::cold-read[reader=cufile,nthreads=1]"),
            Outcome::Fail { .. }
        ));
        assert!(!report.verdict.can_pass);
    }

    #[test]
    fn a_tmpfs_data_dir_without_o_direct() {
        let mut facts = facts("healthy.json");
        facts.data_dir.mount = Fact::Known(Mount {
            mount_point: "/dev/shm".into(),
            fs_type: "tmpfs".into(),
            source: "tmpfs".into(),
            device: "0:26".into(),
            options: vec!["rw".into(), "nosuid".into(), "nodev".into()],
            super_options: vec!["rw".into()],
        });
        facts.data_dir.block =
            Fact::Unknown("no block device: tmpfs from tmpfs (device 0:26)".into());
        facts.data_dir.udev =
            Fact::Unknown("tmpfs is not on a block device, so cuFile does not ask udev".into());
        facts.data_dir.o_direct = Fact::Known(DirectIo {
            works: false,
            detail: "open with O_DIRECT in /dev/shm/gds failed: Invalid argument (os error 22)"
                .into(),
        });
        let report = report(facts, "default.yaml");
        assert_eq!(state(&report, "data dir"), State::Warn);
        assert_eq!(state(&report, "O_DIRECT"), State::Fail);
        assert!(
            row(&report, "O_DIRECT")
                .fix
                .as_deref()
                .unwrap()
                .contains("iflag=direct")
        );
        assert_eq!(state(&report, "block device"), State::Warn);
        assert_eq!(state(&report, "udev"), State::Ok);
        assert_eq!(can(&report, "path nvfs"), Can::No);
        let auto = outcome(&report, "default::kvikio[compat=AUTO,nthreads=1]");
        assert!(
            matches!(auto, Outcome::Pass { path, why } if *path == Path::KvikioPosix && why.contains("silently")),
            "{auto:?}"
        );
        assert!(
            matches!(outcome(&report, "default::kvikio[compat=OFF,nthreads=1]"), Outcome::Fail { reason } if reason.contains("O_DIRECT"))
        );
        assert!(!report.verdict.can_pass);
    }

    #[test]
    fn a_missing_libcufile() {
        let mut facts = facts("healthy.json");
        facts.cufile.library = Fact::Unknown("libcufile not found".into());
        facts.cufile.driver_open = Fact::Unknown("not attempted: libcufile not found".into());
        if let Fact::Known(probe) = &mut facts.kvikio.probe {
            probe.libcufile_loaded.clear();
            probe.libcufile_version = None;
            probe.auto_prefers_posix = Some(true);
            probe.errors = vec![
                "libcufile_version: RuntimeError: cannot open shared object file libcufile.so.0"
                    .into(),
            ];
        }
        let report = report(facts, "default.yaml");
        assert_eq!(state(&report, "libcufile"), State::Fail);
        assert!(
            row(&report, "libcufile")
                .fix
                .as_deref()
                .unwrap()
                .contains("GDS_GATE_LIBCUFILE")
        );
        assert_eq!(state(&report, "cuFileDriverOpen"), State::Unknown);
        assert_eq!(can(&report, "reader cufile"), Can::No);
        assert!(
            matches!(outcome(&report, "default::cold-read[reader=cufile,nthreads=1]"), Outcome::Fail { reason } if reason.contains("libcufile"))
        );
        assert!(
            matches!(outcome(&report, "default::kvikio[compat=AUTO,nthreads=1]"), Outcome::Pass { path, .. } if *path == Path::KvikioPosix)
        );
        assert!(matches!(
            outcome(&report, "default::kvikio[compat=OFF,nthreads=1]"),
            Outcome::Fail { .. }
        ));
        assert!(matches!(
            outcome(&report, "default::cold-read[reader=h2d,nthreads=1]"),
            Outcome::Pass { .. }
        ));
        assert!(!report.verdict.can_pass);
    }

    #[test]
    fn a_cufile_json_with_a_syntax_error() {
        let mut facts = facts("healthy.json");
        facts.config.status = ConfigStatus::Syntax {
            line: 3,
            column: 21,
            message: "Expected comma".into(),
        };
        facts.config.settings.clear();
        let report = report(facts, "default.yaml");
        let config = row(&report, "cufile.json");
        assert_eq!(config.state, State::Fail);
        assert!(
            config
                .evidence
                .starts_with("/etc/cufile.json:3:21: Expected comma"),
            "{}",
            config.evidence
        );
        assert!(
            config
                .fix
                .as_deref()
                .unwrap()
                .contains("CUFILE_ENV_PATH_JSON")
        );
        assert!(
            report
                .checks
                .iter()
                .all(|c| c.component != "cufile settings")
        );
        for name in [
            "default::cold-read[reader=cufile,nthreads=1]",
            "default::kvikio[compat=ON,nthreads=1]",
        ] {
            assert!(
                matches!(outcome(&report, name), Outcome::Fail { reason } if reason.contains(":3:21")),
                "{name}"
            );
        }
        assert!(matches!(
            outcome(&report, "default::cold-read[reader=posix,nthreads=1]"),
            Outcome::Pass { .. }
        ));
        assert!(!report.verdict.can_pass);
    }

    #[test]
    fn no_gpu_ignores_gpu_trials_unless_required() {
        let mut facts = facts("healthy.json");
        facts.driver.libcuda = Fact::Unknown("no NVIDIA driver (libcuda.so.1 not found)".into());
        let lenient = doctor::assess(facts.clone(), &trials("smoke.yaml"), false);
        assert!(lenient.verdict.can_pass, "{}", lenient.verdict.summary);
        assert_eq!(lenient.verdict.ignored, 11);
        let strict = doctor::assess(facts, &trials("smoke.yaml"), true);
        assert!(!strict.verdict.can_pass);
        assert_eq!(strict.verdict.fail, 11);
        assert!(reason(outcome(&strict, "smoke::multi-file")).contains("POSIX"));
    }

    #[test]
    fn without_suites_the_host_alone_is_judged() {
        let healthy = doctor::assess(facts("healthy.json"), &[], false);
        assert!(healthy.verdict.can_pass && healthy.trials.is_empty());
        assert!(healthy.expectations.iter().all(|e| e.consequence.is_none()));
        let h200 = doctor::assess(facts("h200.json"), &[], false);
        assert!(!h200.verdict.can_pass);
        assert!(
            h200.verdict.summary.contains("nvidia-fs"),
            "{}",
            h200.verdict.summary
        );
    }

    /// The healthy host with the verbatim GDS 1.16.1.26 `gdscheck -p` of
    /// fixtures/doctor/gdscheck_gds_nvidia_fs_issue77.txt in place of its constructed one: the
    /// gdscheck row names what that output says, batch limits included.
    #[test]
    fn the_gdscheck_row_names_its_findings_and_batch_limits() {
        let mut host = facts("healthy.json");
        let path = super::repo()
            .join("harness/gate/tests/fixtures/doctor/gdscheck_gds_nvidia_fs_issue77.txt");
        let text = std::fs::read_to_string(path).unwrap();
        host.gdscheck = Fact::Known(gds_gate::doctor::facts::GdscheckFacts {
            parsed: gds_gate::doctor::gdscheck::parse(&text),
            text,
        });
        let report = report(host, "default.yaml");
        let gdscheck = row(&report, "gdscheck -p");
        assert_eq!(
            gdscheck.evidence,
            "GDS 1.16.1.26, nvidia_fs 2.27; direct: none; batch up to 128 I/Os, 5 ms timeout; no verification line"
        );
        assert_eq!(gdscheck.state, State::Warn);
    }

    #[test]
    fn stored_gdscheck_text_and_parse_agree() {
        for name in ["healthy.json", "h200.json"] {
            if let Fact::Known(g) = &facts(name).gdscheck {
                assert_eq!(
                    gds_gate::doctor::gdscheck::parse(&g.text),
                    g.parsed,
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn renders_table_json_and_short_form() {
        let report = report(facts("h200.json"), "default.yaml");
        let table = doctor::table(&report);
        assert!(table.starts_with("component"), "{table}");
        assert!(
            table.contains("path nvfs: no — nvidia-fs is not loaded"),
            "{table}"
        );
        assert!(
            table.contains("verdict: the selected suites cannot pass here"),
            "{table}"
        );
        let back: DoctorReport = serde_json::from_str(&doctor::json(&report)).unwrap();
        assert_eq!(back, report);
        let short = doctor::short_summary(&report);
        assert!(
            short
                .iter()
                .all(|l| l.starts_with("doctor: ") && !l.contains('\n')),
            "{short:#?}"
        );
        assert!(
            short
                .iter()
                .any(|l| l.starts_with("doctor: FAIL nvidia-fs:")),
            "{short:#?}"
        );
        assert!(short.last().unwrap().contains("cannot pass"));
        if std::env::var_os("GDS_GATE_DOCTOR_PRINT").is_some() {
            println!("{table}\n{}", short.join("\n"));
            println!(
                "{}",
                doctor::table(&self::report(facts("healthy.json"), "default.yaml"))
            );
        }
    }

    #[test]
    fn replay_reads_facts_and_rejects_other_json() {
        let text = std::fs::read_to_string(
            super::repo().join("harness/gate/tests/fixtures/doctor/h200.json"),
        )
        .unwrap();
        let opts = doctor::DoctorOptions::new(
            vec![super::repo().join("scenarios/default.yaml")],
            "unused".into(),
        );
        let (report, code) = doctor::replay(&text, &opts).unwrap();
        assert_eq!((code, report.verdict.can_pass), (1, false));
        let wrong = doctor::replay("{\"schema_version\": 99}", &opts)
            .unwrap_err()
            .to_string();
        assert!(wrong.contains("version 99"), "{wrong}");
        assert!(doctor::replay("[]", &opts).is_err());
    }
}

/// The gate's preflight does not start Python when no KvikIO trial is selected, and says so
/// without calling it a problem.
#[test]
fn preflight_skips_the_kvikio_probe_without_kvikio_trials() {
    let suite = gds_model::scenario::parse(
        std::path::Path::new("s.yaml"),
        "scenarios:\n  - name: r\n    files: { size: 1MiB }\n",
    )
    .unwrap();
    let trials = gds_model::scenario::expand(&suite);
    let report = gds_gate::doctor::preflight(std::path::Path::new("target"), &trials, false);
    assert!(!report.facts.kvikio.probed);
    assert!(
        !gds_gate::doctor::short_summary(&report)
            .iter()
            .any(|line| line.contains("KvikIO:")),
        "{:#?}",
        gds_gate::doctor::short_summary(&report)
    );
}
