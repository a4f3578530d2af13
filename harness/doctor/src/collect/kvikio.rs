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
    let probe = match run_tool(
        Path::new(&python),
        &["-c", KVIKIO_PROBE],
        Vec::new(),
        timeout,
    ) {
        Ok(output) => {
            let json = output.stdout.lines().rev().find(|l| l.starts_with('{'));
            match json.map(parse_probe) {
                Some(Ok(probe)) => Fact::Known(probe),
                Some(Err(error)) => Fact::Unknown(error),
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
        Err(error) => Fact::Unknown(error),
    };
    KvikioFacts {
        python,
        python_from,
        probed: true,
        probe,
    }
}

pub fn parse_probe(json: &str) -> Result<KvikioProbe, String> {
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
    let raw: Raw = serde_json::from_str(json)
        .map_err(|error| format!("the KvikIO probe printed unreadable JSON: {error}"))?;
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
