//! Checks of the software stack: the NVIDIA driver and GPUs, libcufile and its driver, nvidia-fs,
//! the cufile.json in effect, KvikIO, and the GDS tools (with `gdscheck -p`'s findings).

use serde_json::Value;

use super::capability::{self, Can};
use super::{Check, State};
use crate::facts::{ConfigStatus, DriverOpen, Fact, Facts, SETTINGS};
use crate::fixes::{
    BAR1_FIX, CONFIG_SYNTAX_FIX, DRIVER_FIX, FORCE_COMPAT_FIX, LIBCUFILE_FIX, NVFS_FIX, NVME_FIX,
    NVRTC_FIX, PYTHON_FIX, RW_STATS_FIX, STRICT_HINT, TOOLS_FIX, UDEV_FIX, kvikio_install,
};

/// Below this, BAR1 limits the GPU memory cuFile can map for direct reads.
const SMALL_BAR1_MIB: u64 = 1024;

pub(super) fn driver(facts: &Facts, rows: &mut Vec<Check>) {
    let p = &facts.provenance;
    let mut host = format!("{}, kernel {}", p.hostname, p.kernel);
    if let Some(container) = &facts.platform.container {
        host.push_str(&format!("; container: {container}"));
    }
    rows.push(match facts.platform.wsl {
        true => Check::new(
            "host",
            State::Warn,
            format!("{host}; WSL: KvikIO AUTO never uses cuFile here"),
        ),
        false => Check::ok("host", host),
    });
    let d = &facts.driver;
    rows.push(match (&d.version, &d.libcuda) {
        (Fact::Known(version), Fact::Known(_)) => {
            Check::ok("NVIDIA driver", format!("{version}; libcuda.so.1 loads"))
        }
        (Fact::Known(version), Fact::Unknown(why)) => Check::new(
            "NVIDIA driver",
            State::Fail,
            format!("kernel module {version}, but {why}: GPU trials cannot run"),
        )
        .fix(DRIVER_FIX),
        (Fact::Unknown(_), Fact::Known(_)) => Check::new(
            "NVIDIA driver",
            State::Warn,
            format!(
                "libcuda.so.1 loads, but {}",
                d.proc_version
                    .why()
                    .unwrap_or("the module version is unknown")
            ),
        ),
        (Fact::Unknown(module), Fact::Unknown(lib)) => Check::new(
            "NVIDIA driver",
            State::Fail,
            format!("{lib}; {module}: GPU trials are ignored (or fail with --require-gpu)"),
        )
        .fix(DRIVER_FIX),
    });
    rows.push(match &d.cuda_version {
        Fact::Known(version) => Check::ok("CUDA", format!("the driver supports CUDA {version}")),
        Fact::Unknown(why) => Check::unknown("CUDA", why.clone()),
    });
    // Without the driver no GPU trial runs, and the row above says so already.
    if d.libcuda.known().is_some() {
        rows.push(match &d.nvrtc {
            Fact::Known(name) => Check::ok(
                "NVRTC",
                format!("{name} loads: the GPU verification kernels compile"),
            ),
            Fact::Unknown(why) if why.starts_with("not collected") => {
                Check::unknown("NVRTC", why.clone())
            }
            Fact::Unknown(why) => Check::new(
                "NVRTC",
                State::Fail,
                format!("{why}: GPU trials cannot verify the bytes they read"),
            )
            .fix(NVRTC_FIX),
        });
    }
    match &facts.gpus {
        Fact::Known(gpus) if gpus.is_empty() => {
            rows.push(Check::new("GPUs", State::Warn, "nvidia-smi lists no GPU"))
        }
        Fact::Known(gpus) => {
            for gpu in gpus {
                let bar1 = gpu
                    .bar1_mib
                    .map_or("BAR1 unknown".to_string(), |mib| format!("BAR1 {mib} MiB"));
                let pcie = gpu.pcie().text();
                let at = gpu
                    .pci_bus_id
                    .as_ref()
                    .map(|b| format!(" at {b}"))
                    .unwrap_or_default();
                // Two processes cannot hold a context at once: no worker starts ahead.
                let mode = match gpu.compute_mode.as_deref() {
                    Some(mode) if mode != "Default" => format!(
                        ", compute mode {mode} (each GPU worker starts after the last one exits)"
                    ),
                    _ => String::new(),
                };
                let evidence = format!("{}{at}, {pcie}, {bar1}{mode}", gpu.name);
                let component = format!("GPU {}", gpu.index);
                let narrow = gpu.pcie().narrower();
                rows.push(match gpu.bar1_mib {
                    Some(mib) if mib < SMALL_BAR1_MIB => Check::new(
                        component,
                        State::Warn,
                        format!("{evidence}: a small BAR1 limits the buffers cuFile can map"),
                    )
                    .fix(BAR1_FIX),
                    _ if narrow => Check::new(
                        component,
                        State::Warn,
                        format!("{evidence}: the link trained narrower than it can"),
                    ),
                    _ => Check::ok(component, evidence),
                });
            }
        }
        Fact::Unknown(why) => rows.push(Check::unknown("GPUs", why.clone())),
    }
}

pub(super) fn cufile(facts: &Facts, rows: &mut Vec<Check>) {
    let c = &facts.cufile;
    rows.push(match &c.library {
        Fact::Known(lib) => Check::ok(
            "libcufile",
            format!(
                "{} at {}{}",
                lib.version,
                lib.path,
                entry_points(lib.entry_points.as_deref())
            ),
        ),
        Fact::Unknown(why) => Check::new(
            "libcufile",
            State::Fail,
            format!("{why}; looked for {}", c.searched.join(", ")),
        )
        .fix(LIBCUFILE_FIX),
    });
    let nvfs = &facts.nvidia_fs;
    rows.push(match &c.driver_open {
        Fact::Known(DriverOpen::Opened {
            properties: Fact::Known(p),
        }) => {
            let evidence = format!(
                "opened; nvidia-fs {} ({}); supports: {}; control flags: {}; features: {}, {} I/Os per batch",
                p.nvfs_version,
                if p.nvfs_loaded {
                    "loaded"
                } else {
                    "not loaded"
                },
                list(&p.status_flags),
                list(&p.control_flags),
                list(&p.features),
                p.max_batch_io_size,
            );
            match p.nvfs_loaded {
                true => Check::ok("cuFileDriverOpen", evidence),
                false => Check::new(
                    "cuFileDriverOpen",
                    State::Warn,
                    format!(
                        "{evidence}: cuFile runs in compat mode, every read goes \
                        through host memory"
                    ),
                )
                .fix(format!("{NVFS_FIX}{STRICT_HINT}")),
            }
        }
        Fact::Known(DriverOpen::Opened {
            properties: Fact::Unknown(why),
        }) => Check::new(
            "cuFileDriverOpen",
            State::Warn,
            format!("opened, but its properties could not be read: {why}"),
        ),
        Fact::Known(DriverOpen::Failed { error }) => {
            Check::new("cuFileDriverOpen", State::Fail, error.clone()).fix(
                match nvfs.module_loaded {
                    false => format!(
                        "{NVFS_FIX}; or allow cuFile's compat mode \
                    (`properties.allow_compat_mode: true`)"
                    ),
                    true => "check `dmesg` for nvidia-fs errors and run `gdscheck -p`".to_string(),
                },
            )
        }
        Fact::Unknown(why) => Check::unknown("cuFileDriverOpen", why.clone()),
    });
    let p2pdma = setting(facts, "properties.use_pci_p2pdma").and_then(Value::as_bool) == Some(true);
    rows.push(match (nvfs.module_loaded, nvfs.proc_present) {
        (true, _) => {
            let version = nvfs
                .version
                .clone()
                .unwrap_or_else(|| "version unknown".into());
            let modules = nvfs
                .modules
                .known()
                .map(|m| format!("; registered: {}", list(m)))
                .unwrap_or_default();
            let evidence = format!("loaded, {version}{modules}");
            let nvme_data = facts.data_dir.block.known().is_some_and(|b| b.nvme);
            let nvme_registered = nvfs
                .modules
                .known()
                .map(|m| m.iter().any(|l| l.contains("nvme")));
            match (nvme_data, nvme_registered) {
                (true, Some(false)) => Check::new(
                    "nvidia-fs",
                    State::Warn,
                    format!(
                        "{evidence}: the data is on NVMe, and the NVMe driver is not registered"
                    ),
                )
                .fix(NVME_FIX),
                _ => Check::ok("nvidia-fs", evidence),
            }
        }
        (false, proc) => {
            let evidence = format!(
                "not loaded (no /sys/module/nvidia_fs{}): no read can take the nvfs path",
                if proc {
                    ""
                } else {
                    ", no /proc/driver/nvidia-fs"
                }
            );
            match p2pdma {
                true => Check::new(
                    "nvidia-fs",
                    State::Warn,
                    format!("{evidence}; P2PDMA is configured instead"),
                ),
                false => Check::new("nvidia-fs", State::Fail, evidence).fix(NVFS_FIX),
            }
        }
    });
    if nvfs.module_loaded {
        rows.push(match &nvfs.rw_stats_enabled {
            Fact::Known(true) => Check::ok(
                "nvfs rw_stats",
                "rw_stats_enabled=1: /proc/driver/nvidia-fs/stats counts \
                reads",
            ),
            Fact::Known(false) => Check::new(
                "nvfs rw_stats",
                State::Warn,
                "rw_stats_enabled=0: /proc/driver/nvidia-fs/stats counts no \
                    reads, so that source of path evidence stays empty",
            )
            .fix(RW_STATS_FIX),
            Fact::Unknown(why) => Check::unknown("nvfs rw_stats", why.clone()),
        });
    }
}

fn list(items: &[String]) -> String {
    match items.is_empty() {
        true => "none".into(),
        false => items.join(", "),
    }
}

fn setting<'a>(facts: &'a Facts, key: &str) -> Option<&'a Value> {
    facts.config.settings.get(key)
}

pub(super) fn config(facts: &Facts, rows: &mut Vec<Check>) {
    let c = &facts.config;
    let path = c.path.as_deref().unwrap_or("cufile.json");
    rows.push(match &c.status {
        ConfigStatus::Absent => Check::ok("cufile.json", c.why.clone()),
        ConfigStatus::Parsed => Check::ok("cufile.json", format!("{path} ({})", c.why)),
        ConfigStatus::Syntax {
            line,
            column,
            message,
        } => Check::new(
            "cufile.json",
            State::Fail,
            format!(
                "{path}:{line}:{column}: {message} ({}); every cufile and \
                kvikio trial fails to write its own cufile.json from it",
                c.why
            ),
        )
        .fix(CONFIG_SYNTAX_FIX),
        ConfigStatus::Unreadable { error } => Check::new(
            "cufile.json",
            State::Fail,
            format!("cannot read {path} ({}): {error}", c.why),
        )
        .fix(CONFIG_SYNTAX_FIX),
        ConfigStatus::NotAnObject => Check::new(
            "cufile.json",
            State::Fail,
            format!("{path} ({}) is not a JSON object at its top level", c.why),
        )
        .fix(CONFIG_SYNTAX_FIX),
    });
    if c.status != ConfigStatus::Parsed && c.status != ConfigStatus::Absent {
        return;
    }
    let shown: Vec<String> = SETTINGS
        .iter()
        .map(|(key, default)| match c.settings.get(*key) {
            Some(value) => format!("{key}={value}"),
            None => format!("{key}={default} (default)"),
        })
        .collect();
    let evidence = shown.join(", ");
    let flag = |key: &str, default: bool| {
        setting(facts, key)
            .and_then(Value::as_bool)
            .unwrap_or(default)
    };
    let nvfs_loaded = facts.nvidia_fs.module_loaded;
    rows.push(if flag("properties.force_compat_mode", false) {
        Check::new(
            "cufile settings",
            State::Warn,
            format!(
                "{evidence}: force_compat_mode sends every cuFile read \
            through host memory"
            ),
        )
        .fix(FORCE_COMPAT_FIX)
    } else if !flag("properties.allow_compat_mode", true) && !nvfs_loaded {
        Check::new(
            "cufile settings",
            State::Warn,
            format!(
                "{evidence}: compat mode is not allowed and nvidia-fs is not \
                loaded, so cuFileDriverOpen fails"
            ),
        )
        .fix(NVFS_FIX)
    } else {
        Check::ok("cufile settings", evidence)
    });
    if !c.unknown_keys.is_empty() {
        let keys: Vec<String> = c
            .unknown_keys
            .iter()
            .map(|k| match &k.suggestion {
                Some(s) => format!("`{}` (did you mean `{s}`?)", k.key),
                None => format!("`{}`", k.key),
            })
            .collect();
        rows.push(
            Check::new(
                "cufile keys",
                State::Warn,
                format!(
                    "{path} sets keys NVIDIA does not document: {}",
                    keys.join(", ")
                ),
            )
            .fix(
                "correct or remove them: cuFile ignores keys it does not \
                    know, so a misspelt setting silently keeps its default",
            ),
        );
    }
}

pub(super) fn kvikio(facts: &Facts, rows: &mut Vec<Check>) {
    let k = &facts.kvikio;
    let cuda_major = facts
        .driver
        .cuda_version
        .known()
        .and_then(|v| v.split('.').next()?.parse().ok());
    let probe = match &k.probe {
        Fact::Known(probe) => probe,
        Fact::Unknown(why) if !k.probed => {
            rows.push(Check::new(
                "KvikIO",
                State::Unknown,
                format!("{} (from {}): {why}", k.python, k.python_from),
            ));
            return;
        }
        Fact::Unknown(why) => {
            rows.push(
                Check::new(
                    "KvikIO",
                    State::Warn,
                    format!("{} (from {}): {why}", k.python, k.python_from),
                )
                .fix(PYTHON_FIX),
            );
            return;
        }
    };
    let version = |m: &crate::facts::Module| {
        m.version
            .clone()
            .unwrap_or_else(|| format!("missing ({})", m.error.as_deref().unwrap_or("?")))
    };
    let evidence = format!(
        "{} (Python {}, from {}): kvikio {}, cupy {}, cuda.bindings {}",
        probe.executable,
        probe.python_version,
        k.python_from,
        version(&probe.kvikio),
        version(&probe.cupy),
        version(&probe.cuda_bindings),
    );
    if probe.kvikio.version.is_none() {
        rows.push(Check::new("KvikIO", State::Warn, evidence).fix(kvikio_install(cuda_major)));
        return;
    }
    if probe.cupy.version.is_none() {
        let fix = format!("pip install cupy-cuda{}x", cuda_major.unwrap_or(13));
        rows.push(Check::new("KvikIO", State::Warn, evidence).fix(fix));
        return;
    }
    rows.push(Check::ok("KvikIO", evidence));
    let system = facts.cufile.library.known();
    let loaded = match probe.libcufile_loaded.as_slice() {
        [] => None,
        paths => Some(paths.join(", ")),
    };
    rows.push(match (&loaded, system) {
        (None, _) => Check::unknown(
            "KvikIO libcufile",
            format!(
                "KvikIO mapped no libcufile (find_library: {}; {})",
                probe.find_library.as_deref().unwrap_or("none"),
                list(&probe.errors)
            ),
        ),
        (Some(paths), Some(sys)) => {
            let kv = probe.libcufile_version.as_deref().unwrap_or("?");
            let evidence = format!(
                "KvikIO loads {paths} ({kv}); the gate's cufile reader loads {} ({})",
                sys.path, sys.version
            );
            if probe.libcufile_loaded.len() > 1 {
                Check::new(
                    "KvikIO libcufile",
                    State::Warn,
                    format!(
                        "{evidence}: two copies in one process are two cuFile \
                        drivers, and the counters of one miss the other's reads"
                    ),
                )
            } else if kv != "?" && kv != sys.version {
                Check::new(
                    "KvikIO libcufile",
                    State::Warn,
                    format!("{evidence}: the two readers run different cuFile versions"),
                )
            } else {
                Check::ok("KvikIO libcufile", evidence)
            }
        }
        (Some(paths), None) => Check::ok(
            "KvikIO libcufile",
            format!("KvikIO loads {paths}; the system has none the gate can load"),
        ),
    });
    let auto = capability::auto(facts);
    let register = capability::registration(facts);
    let env = probe
        .compat_mode_env
        .as_ref()
        .map(|v| format!(" (KVIKIO_COMPAT_MODE={v} is set here; the gate sets it per trial)"))
        .unwrap_or_default();
    let default = probe.compat_mode_default.as_deref().unwrap_or("unknown");
    let head = format!("default compat mode {default}{env}");
    rows.push(match (auto.can, register.can) {
        (Can::Yes, Can::Yes) => Check::ok(
            "KvikIO AUTO",
            format!(
                "{head}; AUTO uses cuFile: {}; files register: {}",
                auto.why, register.why
            ),
        ),
        (Can::Yes, Can::No) => Check::new(
            "KvikIO AUTO",
            State::Warn,
            format!(
                "{head}; AUTO tries cuFile ({}), but registering a file \
                fails, so it silently reads with POSIX: {}",
                auto.why, register.why
            ),
        )
        .fix(UDEV_FIX),
        (Can::No, _) => Check::new(
            "KvikIO AUTO",
            State::Warn,
            format!("{head}; AUTO reads with POSIX here: {}", auto.why),
        )
        .fix(UDEV_FIX),
        _ => Check::unknown(
            "KvikIO AUTO",
            format!(
                "{head}; AUTO: {}; per file, registration may still fail: {}",
                auto.why, register.why
            ),
        ),
    });
}

pub(super) fn tools(facts: &Facts, rows: &mut Vec<Check>) {
    let t = &facts.tools;
    let tools = [
        ("gdscheck", &t.gdscheck),
        ("gdsio", &t.gdsio),
        ("gds_stats", &t.gds_stats),
    ];
    let present: Vec<String> = tools
        .iter()
        .filter_map(|(name, path)| path.as_ref().map(|p| format!("{name} ({p})")))
        .collect();
    let missing: Vec<&str> = tools
        .iter()
        .filter(|(_, p)| p.is_none())
        .map(|(n, _)| *n)
        .collect();
    rows.push(match (present.is_empty(), missing.is_empty()) {
        (true, _) => Check::new(
            "GDS tools",
            State::Warn,
            "none installed: no gdscheck, gdsio, gds_stats",
        )
        .fix(TOOLS_FIX),
        (false, true) => Check::ok("GDS tools", present.join(", ")),
        (false, false) => Check::ok(
            "GDS tools",
            format!("{}; missing: {}", present.join(", "), missing.join(", ")),
        ),
    });
    rows.push(match &facts.gdscheck {
        Fact::Known(g) => {
            let r = &g.parsed;
            let direct = r.direct();
            let compat: Vec<&str> = r
                .support
                .iter()
                .filter(|s| !s.direct() && s.compat())
                .map(|s| s.name.as_str())
                .collect();
            let mut parts = vec![format!(
                "GDS {}, nvidia_fs {}",
                r.gds_version.as_deref().unwrap_or("?"),
                r.nvidia_fs_version.as_deref().unwrap_or("not loaded")
            )];
            parts.push(format!(
                "direct: {}",
                if direct.is_empty() {
                    "none".into()
                } else {
                    direct.join(", ")
                }
            ));
            if !compat.is_empty() {
                parts.push(format!("compat only: {}", compat.join(", ")));
            }
            if let Some(batch) = r.batch_limits() {
                parts.push(batch);
            }
            if let Some(iommu) = r.platform_info.get("IOMMU") {
                parts.push(format!("IOMMU {iommu}"));
            }
            match r.verification {
                Some(true) => Check::ok(
                    "gdscheck -p",
                    format!("{}; platform verification succeeded", parts.join("; ")),
                ),
                Some(false) => Check::new(
                    "gdscheck -p",
                    State::Fail,
                    format!("{}; platform verification FAILED", parts.join("; ")),
                )
                .fix("read the full `gdscheck -p` output (in --json) for the failing item"),
                None => Check::new(
                    "gdscheck -p",
                    State::Warn,
                    format!("{}; no verification line", parts.join("; ")),
                ),
            }
        }
        Fact::Unknown(why) => Check::unknown("gdscheck -p", why.clone()),
    });
}

/// `; batch API yes (cufile-batch), stream API no, statistics yes`: which optional entry points
/// the readers need this libcufile exports (nothing when the probe did not say). An API with
/// only some of its entry points names those it lacks.
fn entry_points(points: Option<&[String]>) -> String {
    let Some(points) = points else {
        return String::new();
    };
    let has = |symbols: &[&str]| {
        let missing = capability::lacking(points, symbols);
        if missing.is_empty() {
            "yes".to_string()
        } else if missing.len() == symbols.len() {
            "no".to_string()
        } else {
            format!("partly, no {}", capability::quoted(&missing))
        }
    };
    format!(
        "; batch API {} (cufile-batch), stream API {} (cufile-async), statistics {}",
        has(capability::BATCH_API),
        has(capability::STREAM_API),
        has(&["cuFileGetStatsL3"])
    )
}

#[cfg(test)]
mod tests {
    use super::entry_points;

    #[test]
    fn the_libcufile_row_says_which_entry_points_it_exports() {
        let points: Vec<String> = [
            "cuFileBatchIOSetUp",
            "cuFileBatchIOSubmit",
            "cuFileBatchIOGetStatus",
            "cuFileBatchIODestroy",
            "cuFileGetStatsL3",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            entry_points(Some(&points)),
            "; batch API yes (cufile-batch), stream API no (cufile-async), statistics yes"
        );
        // Constructed: a build with the stream-ordered reads but not the writes.
        let partial: Vec<String> = [
            "cuFileStreamRegister",
            "cuFileReadAsync",
            "cuFileStreamDeregister",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            entry_points(Some(&partial)),
            "; batch API no (cufile-batch), stream API partly, no `cuFileWriteAsync` (cufile-async), statistics no"
        );
        assert_eq!(entry_points(None), "", "facts of an older gate say nothing");
    }
}
