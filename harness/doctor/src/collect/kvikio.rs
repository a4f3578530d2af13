//! KvikIO as the gate's KvikIO worker would meet it: the same interpreter (`GDS_GATE_PYTHON`,
//! the suite's `python:`, else `python3`), asked from inside by a tiny script that prints JSON.

use std::path::Path;
use std::time::Duration;

use super::run_tool;
use crate::DoctorOptions;
use crate::facts::{Fact, KvikioFacts, KvikioProbe};

/// Prints what KvikIO, cupy and cuda.bindings are, KvikIO's default compat mode and what AUTO
/// decides (with `KVIKIO_COMPAT_MODE` unset), and which libcufile KvikIO mapped.
pub const KVIKIO_PROBE: &str = r#"
import importlib, json, os, sys
out = {"executable": sys.executable, "python_version": sys.version.split()[0], "errors": []}
out["compat_mode_env"] = os.environ.pop("KVIKIO_COMPAT_MODE", None)
def module(name):
    try:
        m = importlib.import_module(name)
        return {"version": str(getattr(m, "__version__", "unknown"))}
    except BaseException as e:
        return {"error": "%s: %s" % (type(e).__name__, e)}
out["cupy"] = module("cupy")
out["cuda_bindings"] = module("cuda.bindings")
out["kvikio"] = module("kvikio")
if "version" in out["kvikio"]:
    import kvikio, kvikio.defaults
    try:
        mode = kvikio.defaults.get("compat_mode") if hasattr(kvikio.defaults, "get") else kvikio.defaults.compat_mode()
        out["compat_mode_default"] = getattr(mode, "name", str(mode))
    except BaseException as e:
        out["errors"].append("compat_mode: %s: %s" % (type(e).__name__, e))
    try:
        out["auto_prefers_posix"] = bool(kvikio.defaults.is_compat_mode_preferred())
    except BaseException as e:
        out["errors"].append("is_compat_mode_preferred: %s: %s" % (type(e).__name__, e))
    try:
        import kvikio.cufile_driver
        out["libcufile_version"] = "%d.%d" % tuple(kvikio.cufile_driver.libcufile_version())
    except BaseException as e:
        out["errors"].append("libcufile_version: %s: %s" % (type(e).__name__, e))
try:
    import ctypes.util
    out["find_library"] = ctypes.util.find_library("cufile")
except BaseException as e:
    out["errors"].append("find_library: %s: %s" % (type(e).__name__, e))
loaded = set()
with open("/proc/self/maps") as maps:
    for line in maps:
        parts = line.split()
        if len(parts) >= 6 and os.path.basename(parts[5]).startswith("libcufile"):
            loaded.add(parts[5])
out["libcufile_loaded"] = sorted(loaded)
sys.stdout.write(json.dumps(out) + "\n")
sys.stdout.flush()
"#;

pub(super) fn kvikio(opts: &DoctorOptions) -> KvikioFacts {
    let (python, from) = gds_runner::tools::python(opts.python.as_deref());
    let python_from = from.to_string();
    if !opts.probe_kvikio {
        let probe = Fact::Unknown("not probed: no KvikIO trial is selected".into());
        return KvikioFacts {
            python,
            python_from,
            probed: false,
            probe,
        };
    }
    let timeout = Duration::from_secs(if opts.quick { 30 } else { 90 });
    let probe = probe(&python, timeout, &std::env::temp_dir());
    KvikioFacts {
        python,
        python_from,
        probed: true,
        probe,
    }
}

/// Runs [`KVIKIO_PROBE`] in `python`, unless that very interpreter hung at it before: a probe
/// that ran into `timeout` is remembered in `memory_dir` by the interpreter's identity (see
/// [`hung_marker`]), so that an interpreter that hangs costs the timeout once, not on every run.
/// Any change to the interpreter or to `PYTHONPATH`, or deleting the marker, probes again. The
/// probe only informs the doctor's forecast: the KvikIO trials still run and are judged.
pub fn probe(python: &str, timeout: Duration, memory_dir: &Path) -> Fact<KvikioProbe> {
    let marker = hung_marker(python, memory_dir);
    if let Some(marker) = marker.as_ref().filter(|marker| marker.exists()) {
        return Fact::Unknown(format!(
            "not probed: `{python}` hung at the KvikIO probe of an earlier run (more than {} s); delete `{}` to probe it again",
            timeout.as_secs(),
            marker.display()
        ));
    }
    match run_tool(
        Path::new(python),
        &["-c", KVIKIO_PROBE],
        Vec::new(),
        timeout,
    ) {
        Ok(output) => {
            if let (gds_model::record::Ending::TimedOut { .. }, Some(marker)) =
                (&output.ending, &marker)
            {
                // Best effort: without the marker the next run waits again, nothing worse.
                let _ = std::fs::write(marker, python.as_bytes());
            }
            let json = output.stdout.lines().rev().find(|l| l.starts_with('{'));
            match json.map(parse_probe) {
                Some(Ok(probe)) => Fact::Known(probe),
                Some(Err(error)) => Fact::because(&error),
                // Importing KvikIO can crash the interpreter (seen with a missing driver).
                None => Fact::Unknown(format!(
                    "the KvikIO probe in `{python}` {} without an answer{}",
                    output.ending,
                    output
                        .stderr
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map(|l| format!(": {}", l.trim()))
                        .unwrap_or_default()
                )),
            }
        }
        Err(error) => Fact::because(&error),
    }
}

/// Where a hang of `python` at the probe is remembered: a file in `dir` named by a hash of the
/// interpreter's real path, size and modification time and of `PYTHONPATH` (what decides what
/// the probe imports). `None` when the interpreter cannot be found.
fn hung_marker(python: &str, dir: &Path) -> Option<std::path::PathBuf> {
    let found = if python.contains('/') {
        std::path::PathBuf::from(python)
    } else {
        gds_runner::tools::find_program(python, &[])?
    };
    let real = std::fs::canonicalize(&found).ok()?;
    let meta = std::fs::metadata(&real).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    let identity = format!(
        "{}\0{}\0{modified}\0{}",
        real.display(),
        meta.len(),
        std::env::var("PYTHONPATH").unwrap_or_default()
    );
    // FNV-1a: only has to tell interpreters apart, stably across runs.
    let hash = identity.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    Some(dir.join(format!("gds-gate-kvikio-probe-hung-{hash:016x}")))
}

/// The KvikIO probe's last line is not the JSON it prints.
#[derive(Debug, thiserror::Error)]
#[error("the KvikIO probe printed unreadable JSON")]
pub struct UnreadableProbe(#[source] serde_json::Error);

pub fn parse_probe(json: &str) -> Result<KvikioProbe, UnreadableProbe> {
    #[derive(serde::Deserialize)]
    struct Raw {
        executable: String,
        python_version: String,
        kvikio: RawModule,
        cupy: RawModule,
        cuda_bindings: RawModule,
        compat_mode_env: Option<String>,
        compat_mode_default: Option<String>,
        auto_prefers_posix: Option<bool>,
        libcufile_version: Option<String>,
        #[serde(default)]
        libcufile_loaded: Vec<String>,
        find_library: Option<String>,
        #[serde(default)]
        errors: Vec<String>,
    }
    #[derive(serde::Deserialize)]
    struct RawModule {
        version: Option<String>,
        error: Option<String>,
    }
    let raw: Raw = serde_json::from_str(json).map_err(UnreadableProbe)?;
    let module = |m: RawModule| crate::facts::Module {
        version: m.version,
        error: m.error,
    };
    Ok(KvikioProbe {
        executable: raw.executable,
        python_version: raw.python_version,
        kvikio: module(raw.kvikio),
        cupy: module(raw.cupy),
        cuda_bindings: module(raw.cuda_bindings),
        compat_mode_env: raw.compat_mode_env,
        compat_mode_default: raw.compat_mode_default,
        auto_prefers_posix: raw.auto_prefers_posix,
        libcufile_version: raw.libcufile_version,
        libcufile_loaded: raw.libcufile_loaded,
        find_library: raw.find_library,
        errors: raw.errors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// An interpreter that hangs costs the timeout once: the next probe of the same interpreter
    /// answers at once, and a changed interpreter is probed again.
    #[test]
    fn an_interpreter_that_hung_at_the_probe_is_not_waited_for_again() {
        let dir = tempfile::tempdir().unwrap();
        let python = dir.path().join("python3");
        std::fs::write(&python, "#!/bin/sh\nexec sleep 30\n").unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        let python = python.display().to_string();
        let memory = dir.path().join("memory");
        std::fs::create_dir(&memory).unwrap();
        let timeout = Duration::from_millis(500);

        let first = probe(&python, timeout, &memory);
        assert!(
            matches!(&first, Fact::Unknown(why) if why.contains("did not finish")),
            "{first:?}"
        );
        let started = std::time::Instant::now();
        let second = probe(&python, timeout, &memory);
        assert!(
            started.elapsed() < Duration::from_millis(400),
            "waited again"
        );
        assert!(
            matches!(&second, Fact::Unknown(why) if why.starts_with("not probed:") && why.contains("hung")),
            "{second:?}"
        );
        // Another interpreter at the same path (reinstalled): probed again.
        std::fs::write(&python, "#!/bin/sh\necho '{}'\n").unwrap();
        let third = probe(&python, timeout, &memory);
        assert!(
            matches!(&third, Fact::Unknown(why) if !why.starts_with("not probed:")),
            "{third:?}"
        );
    }
}
