//! What the binary's tests share: a scratch area on the build disk, the gate run in it, and a
//! baseline pinned to a level this host cannot reach. A test file declares it `pub mod support;`
//! (public, so that what one file does not use is not dead code).

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

pub const GATE: &str = env!("CARGO_BIN_EXE_gds-gate");

/// A one-trial suite of one small file.
pub const SMALL: &str = "suite: small\nscenarios:\n  - name: read\n    files: { size: 3MiB, seed: 5 }\n    repetitions: 2\n";

/// A scratch area on the build disk (not /tmp, which may be tmpfs and never drops its pages).
#[derive(Default)]
pub struct Scratch {
    dir: ScratchDir,
}

/// A fresh, empty folder per test.
struct ScratchDir(tempfile::TempDir);

impl Default for ScratchDir {
    fn default() -> ScratchDir {
        ScratchDir(tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap())
    }
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch::default()
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.0.path().join(name)
    }
    pub fn data(&self) -> PathBuf {
        self.path("data")
    }
    pub fn out(&self) -> PathBuf {
        self.path("out")
    }
    /// The run history of this scratch's runs (`GDS_GATE_HISTORY`): a test's runs must not
    /// append to the repository's own.
    pub fn history(&self) -> PathBuf {
        self.path("history.jsonl")
    }
    pub fn suite(&self, text: &str) -> PathBuf {
        let path = self.path("suite.yaml");
        fs::write(&path, text).unwrap();
        path
    }
    /// Runs the gate with this scratch's data and report directories.
    pub fn gate(&self, args: &[&str]) -> Run {
        self.gate_with(args, &[])
    }
    /// [`Scratch::gate`] with these environment variables set.
    pub fn gate_with(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let output = Command::new(GATE)
            .args(args)
            .arg("--data-dir")
            .arg(self.data())
            .arg("--out")
            .arg(self.out())
            .arg("--baselines")
            .arg(self.path("baselines"))
            .hermetic(self)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        Run::from(output)
    }
    pub fn report(&self) -> serde_json::Value {
        serde_json::from_str(&fs::read_to_string(self.out().join("report.json")).unwrap()).unwrap()
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl Scratch {
    /// Runs the gate with only `args` (subcommands that take no --out).
    pub fn gate_plain(&self, args: &[&str]) -> Run {
        Command::new(GATE)
            .args(args)
            .hermetic(self)
            .output()
            .unwrap()
            .into()
    }
}

/// The same gate whether the tests run on a laptop, on the GPU runner or in CI: the repository
/// root as working directory, this scratch's history, and none of the caller's settings (CI's
/// `CI=true` would refuse every bless).
trait Hermetic {
    fn hermetic(&mut self, scratch: &Scratch) -> &mut Self;
}

impl Hermetic for Command {
    fn hermetic(&mut self, scratch: &Scratch) -> &mut Self {
        self.current_dir(repo())
            .env("GDS_GATE_HISTORY", scratch.history())
            // The runner's control at test size (256 MiB by default).
            .env("GDS_GATE_CONTROL_SIZE", "1MiB")
            // A confirmation must not wait up to 120 s for a test host that is busier than it was
            // at bless (other tests run beside it): a slow test, not a finding.
            .env("GDS_GATE_RUNNER_WAIT", "0")
            .env_remove("CI")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("GDS_GATE_REQUIRE_GPU")
            .env_remove("GDS_GATE_RUNNER")
    }
}

/// Rewrites a baseline as if every pass of every blessed run had read at `gbps`: a level far from
/// this host's, with no spread to hide a difference in.
pub fn pin_baseline(path: &std::path::Path, gbps: f64) {
    use gds_gate::baseline::{Loaded, file};
    let Loaded::Present(mut baseline) = file::read(path).unwrap() else {
        panic!("no baseline at {}", path.display());
    };
    for trial in baseline.trials.values_mut() {
        for run in &mut trial.runs {
            run.iter_mut().for_each(|pass| *pass = gbps);
        }
        trial.run_medians_gbps.iter_mut().for_each(|g| *g = gbps);
        (trial.median_gbps, trial.min_gbps, trial.max_gbps) = (gbps, gbps, gbps);
    }
    file::write(path, &baseline).unwrap();
}

/// The repository root, where the gate's tests run it.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Checks every `report.json` and `merged.json` under `dir` against the published schema
/// (`docs/report.schema.json`), made strict: a property the schema does not describe fails too.
/// `Scratch` calls it when a test is done with its folder, so every report the tests write is
/// checked; tests with folders of their own call it themselves.
pub fn validate_reports(dir: &std::path::Path) {
    if std::thread::panicking() {
        return;
    }
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                pending.push(path);
            } else if path.file_name().is_some_and(|name| name == "report.json") {
                validate_report(&path, reports::strict(true));
            } else if path.file_name().is_some_and(|name| name == "merged.json") {
                // A merged report is a report with each run's own facts beside it (`runs`).
                validate_report(&path, reports::strict(false));
            }
        }
    }
}

fn validate_report(path: &std::path::Path, validator: &jsonschema::Validator) {
    let Ok(text) = fs::read_to_string(path) else {
        return;
    };
    // A report cut short (a gate killed mid-write leaves none: reports are written atomically)
    // or one a test wrote by hand to be refused is not the gate's: only parseable reports of
    // this schema version are checked.
    let Ok(report) = serde_json::from_str::<serde_json::Value>(&text) else {
        return;
    };
    if report["schema_version"] != serde_json::json!(gds_gate::report::SCHEMA_VERSION) {
        return;
    }
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|error| format!("  {} at {}", error, error.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{} does not match {} (run `cargo xtask docs` if the types changed):\n{}",
        path.display(),
        gds_gate::report::schema::PATH,
        errors.join("\n")
    );
}

mod reports {
    use std::sync::OnceLock;

    use serde_json::Value;

    /// The published schema with every object closed (`unevaluatedProperties: false`), the
    /// root left open for a merged report's `runs` when `closed_root` is false.
    pub fn strict(closed_root: bool) -> &'static jsonschema::Validator {
        static CLOSED: OnceLock<jsonschema::Validator> = OnceLock::new();
        static OPEN_ROOT: OnceLock<jsonschema::Validator> = OnceLock::new();
        let cell = if closed_root { &CLOSED } else { &OPEN_ROOT };
        cell.get_or_init(|| {
            let path = super::repo().join(gds_gate::report::schema::PATH);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
            let mut schema: Value = serde_json::from_str(&text).unwrap();
            close(&mut schema);
            if !closed_root {
                schema
                    .as_object_mut()
                    .unwrap()
                    .remove("unevaluatedProperties");
            }
            jsonschema::draft202012::new(&schema)
                .unwrap_or_else(|error| panic!("{} is not a schema: {error}", path.display()))
        })
    }

    fn close(schema: &mut Value) {
        match schema {
            Value::Object(object) => {
                if object.contains_key("properties") && !object.contains_key("additionalProperties")
                {
                    object.insert("unevaluatedProperties".into(), false.into());
                }
                object.values_mut().for_each(close);
            }
            Value::Array(items) => items.iter_mut().for_each(close),
            _ => {}
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        validate_reports(self.dir.0.path());
    }
}

/// `source` (C) built into the shared library `dir/lib<name>.so`, for a worker to preload (a
/// fixture library: one that blocks, one that is slow); `None` without a C compiler.
pub fn preload_library(dir: &std::path::Path, name: &str, source: &str) -> Option<PathBuf> {
    let c = dir.join(format!("{name}.c"));
    fs::write(&c, source).unwrap();
    let library = dir.join(format!("lib{name}.so"));
    let compiled = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&c)
        .arg("-ldl")
        .status();
    compiled
        .is_ok_and(|status| status.success())
        .then_some(library)
}
