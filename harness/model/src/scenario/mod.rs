//! Suite files: load, validate strictly, and expand into trials.
//!
//! A suite file holds `defaults` and a list of `scenarios`; both use the same keys. Any key that
//! takes one value also takes a list, and a scenario expands into one trial per combination of its
//! lists (see [`expand`]).

mod error;
mod expand;
pub mod limits;
mod load;
mod locate;
mod model;
mod passes;
pub mod ranks;
mod shape;
pub mod size;
pub mod window_mode;
mod writes;

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

pub use error::ScenarioError;
pub use expand::{Expectations, FileSet, TrialSpec, expand, passes_in_round};
pub use model::{
    BufferKind, Cache, CompatMode, ExpectedPath, GpuSet, Integrity, KvikioApi, Op, Pattern,
    RandomReads, Reader,
};
use passes::MAX_ERRORS;
pub use ranks::Ranks;
pub use shape::ReadShape;

use model::{Files, ScenarioFields, SuiteFile};
use size::{ByteSize, Fraction, PositiveSize};

/// A validated suite: every scenario has its defaults applied and its axes resolved.
#[derive(Clone, Debug)]
pub struct Suite {
    pub name: String,
    pub path: PathBuf,
    pub description: Option<String>,
    pub python: Option<String>,
    pub require_kvikio: bool,
    pub budget: Option<size::Budget>,
    pub scenarios: Vec<Scenario>,
}

/// One scenario with defaults applied. Lists are matrix axes.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    /// Line of the scenario's `name:` in the suite file, for annotations.
    pub line: usize,
    pub files: FileSet,
    pub readers: Vec<Reader>,
    /// `op:`: read (the default), write or roundtrip; a matrix axis.
    pub ops: Vec<Op>,
    pub compat_modes: Vec<CompatMode>,
    pub nthreads: Vec<u32>,
    pub task_sizes: Vec<u64>,
    pub gds_thresholds: Vec<u64>,
    pub bounce_buffer_sizes: Vec<u64>,
    pub queue_depths: Vec<u32>,
    pub batch_sizes: Vec<u32>,
    pub kvikio_apis: Vec<KvikioApi>,
    pub cufile: BTreeMap<String, serde_json::Value>,
    pub pattern: Pattern,
    pub caches: Vec<Cache>,
    pub warmup: u32,
    pub repetitions: u32,
    pub rounds: u32,
    pub buffers: Vec<BufferKind>,
    pub gpus: Vec<u32>,
    pub windows: Vec<window_mode::WindowMode>,
    /// `gpus:`: every trial of the scenario reads with all these GPUs at once.
    pub gpu_set: Option<GpuSet>,
    /// `ranks:`: every trial of the scenario reads with this many workers at once on its GPU.
    pub ranks: Option<Ranks>,
    /// `writers:`: of the ranks, this many write (and read back) while the others read.
    pub writers: u32,
    pub expect: Expectations,
}

/// KvikIO's own defaults, so that a scenario that says nothing measures what users get.
pub mod defaults {
    pub const NTHREADS: u32 = 1;
    /// `cufile-batch`: one batch in flight.
    pub const QUEUE_DEPTH: u32 = 1;
    /// `cufile-batch`: 32 I/Os per batch, a quarter of cuFile's default `properties.io_batchsize`
    /// (128).
    pub const BATCH_SIZE: u32 = 32;
    pub const TASK_SIZE: u64 = 4 << 20;
    pub const GDS_THRESHOLD: u64 = 16 << 10;
    pub const BOUNCE_BUFFER_SIZE: u64 = 16 << 20;
    pub const WARMUP: u32 = 1;
    pub const REPETITIONS: u32 = 5;
    pub const TOLERANCE: f64 = 0.10;
    /// CPU time per GiB moves more than throughput with the host's load (a page-cache miss, a
    /// context switch), so its default allowance is wider.
    pub const CPU_TOLERANCE: f64 = 0.20;
    /// A load's set-up steps last milliseconds and move with what else the host does, so their
    /// default allowance is wider still.
    pub const LOAD_TOLERANCE: f64 = 0.50;
    /// `expect.latency_tolerance`: a read-call latency percentile may rise this much beside
    /// writes (`writers:`); tails move more than medians.
    pub const LATENCY_TOLERANCE: f64 = 0.50;
    pub const SEED: u64 = 1;
}

const NTHREADS_DEFAULT: NonZeroU32 = NonZeroU32::new(defaults::NTHREADS).unwrap();
const QUEUE_DEPTH_DEFAULT: NonZeroU32 = NonZeroU32::new(defaults::QUEUE_DEPTH).unwrap();
const BATCH_SIZE_DEFAULT: NonZeroU32 = NonZeroU32::new(defaults::BATCH_SIZE).unwrap();

pub fn load(path: &Path) -> Result<Suite, ScenarioError> {
    let bytes = std::fs::read(path).map_err(|source| ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let text = crate::fsutil::utf8(bytes).map_err(|bad| {
        invalid(
            path,
            (bad.line, bad.column),
            bad.to_string(),
            Some("save the suite as UTF-8 (YAML files are UTF-8)".into()),
        )
    })?;
    parse(path, &text)
}

/// Parses and validates `text`, naming `path` in errors.
pub fn parse(path: &Path, text: &str) -> Result<Suite, ScenarioError> {
    // A byte-order mark is allowed at the start of a YAML stream; editors on Windows write one.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(invalid(
            path,
            (1, 1),
            "the suite file is empty".into(),
            Some(
                "a suite needs at least `scenarios:` with one scenario; see scenarios/smoke.yaml"
                    .into(),
            ),
        ));
    }
    if let Err(problem) = limits::check_text(text) {
        return Err(invalid(
            path,
            problem.at,
            problem.message,
            Some(problem.hint),
        ));
    }
    let validator = Validator { path, text };
    match yaml_serde::from_str::<SuiteFile>(text) {
        Ok(file) => validator.suite(file),
        Err(error) => Err(validator.every_error(&error)),
    }
}

fn invalid(
    path: &Path,
    (line, column): (usize, usize),
    message: String,
    hint: Option<String>,
) -> ScenarioError {
    ScenarioError::Invalid {
        file: path.to_path_buf(),
        line,
        column,
        message,
        hint,
    }
}

/// Checks what serde cannot: names, combinations of keys, defaults. Positions come from the text,
/// since these checks run after deserialisation.
struct Validator<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Validator<'_> {
    fn error(&self, at: (usize, usize), message: String, hint: &str) -> ScenarioError {
        let hint = (!hint.is_empty()).then(|| hint.to_string());
        invalid(self.path, at, message, hint)
    }

    fn suite(&self, file: SuiteFile) -> Result<Suite, ScenarioError> {
        let (name, mut errors) = match self.suite_name(file.suite) {
            Ok(name) => (name, Vec::new()),
            Err(error) => (String::new(), vec![error]),
        };
        errors.extend(self.defaults_name(&file.defaults).err());
        errors.extend(self.some_scenarios(file.scenarios.len()).err());
        let scenarios = self.scenarios(
            file.scenarios.into_iter().enumerate(),
            &file.defaults,
            &mut errors,
        );
        if !errors.is_empty() {
            return Err(self.gathered(errors, None));
        }
        let suite = Suite {
            name,
            path: self.path.to_path_buf(),
            description: file.description,
            python: file.python,
            require_kvikio: file.require_kvikio,
            budget: file.budget,
            scenarios,
        };
        self.expansion_limits(&suite)?;
        Ok(suite)
    }

    /// Every error of a file that does not deserialise (`first` is where its parse stopped): the
    /// first of each top-level key, of `defaults` and of each scenario (see [`passes`]), and
    /// the checks after deserialisation of the parts that did.
    fn every_error(&self, first: &yaml_serde::Error) -> ScenarioError {
        let yaml = |error: &yaml_serde::Error| error::from_yaml(self.path, self.text, error);
        // Not YAML (or not one document): the parts cannot be read apart.
        if yaml_serde::from_str::<serde::de::IgnoredAny>(self.text).is_err() {
            return yaml(first);
        }
        let parts = passes::read(self.text);
        let mut errors = vec![yaml(first)];
        errors.extend(parts.errors.iter().map(yaml));
        if let Some(top) = &parts.top {
            errors.extend(self.suite_name(top.suite.clone()).err());
            errors.extend(self.some_scenarios(top.scenarios.len()).err());
        }
        if let Some(defaults) = &parts.defaults {
            errors.extend(self.defaults_name(defaults).err());
            self.scenarios(parts.scenarios, defaults, &mut errors);
        }
        let beyond = parts
            .beyond
            .as_ref()
            .map(|error| crate::yaml::position(error, self.text));
        self.gathered(errors, beyond)
    }

    /// `errors` as one, in the file's order: at most [`MAX_ERRORS`], then a line at the first
    /// one not shown (`beyond`: one found past them, if any).
    fn gathered(
        &self,
        errors: Vec<ScenarioError>,
        beyond: Option<(usize, usize)>,
    ) -> ScenarioError {
        let mut errors = ScenarioError::gathered(errors).into_each();
        let not_shown = errors
            .get(MAX_ERRORS)
            .map(ScenarioError::position)
            .into_iter()
            .chain(beyond)
            .min();
        if let Some(at) = not_shown {
            errors.truncate(MAX_ERRORS);
            errors.push(self.error(
                at,
                format!(
                    "there is an error here too, and maybe more after it: at most {MAX_ERRORS} errors of a file are shown at once"
                ),
                "fix the errors above and validate the file again",
            ));
        }
        ScenarioError::from_each(errors)
    }

    /// The suite's name: `suite:`, else the file's stem.
    fn suite_name(&self, suite: Option<String>) -> Result<String, ScenarioError> {
        let name = match suite {
            Some(name) => name,
            None => self
                .path
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_else(|| "suite".into()),
        };
        if let Err(problem) = check_name(&name) {
            let at = locate::key(self.text, 0, "suite").unwrap_or((1, 1));
            return Err(self.error(
                at,
                format!("suite name `{name}` {problem}"),
                "set `suite:` to a name such as `nightly`",
            ));
        }
        Ok(name)
    }

    fn defaults_name(&self, defaults: &ScenarioFields) -> Result<(), ScenarioError> {
        if defaults.name.is_some() {
            let at = locate::key(self.text, 0, "defaults").unwrap_or((1, 1));
            return Err(self.error(
                at,
                "`defaults` cannot have a `name`".into(),
                "move `name:` into a scenario under `scenarios:`",
            ));
        }
        Ok(())
    }

    fn some_scenarios(&self, count: usize) -> Result<(), ScenarioError> {
        if count == 0 {
            let at = locate::key(self.text, 0, "scenarios").unwrap_or((1, 1));
            return Err(self.error(
                at,
                "the suite has no scenarios".into(),
                "add at least one scenario under `scenarios:`, e.g. `- name: cold-read`",
            ));
        }
        Ok(())
    }

    /// The scenarios (with their index in the file) that pass their own checks; the first error
    /// of each that does not, and of each that repeats an earlier one's name, goes to `errors`.
    fn scenarios(
        &self,
        fields: impl IntoIterator<Item = (usize, ScenarioFields)>,
        defaults: &ScenarioFields,
        errors: &mut Vec<ScenarioError>,
    ) -> Vec<Scenario> {
        let mut scenarios: Vec<Scenario> = Vec::new();
        for (index, fields) in fields {
            let scenario = match self.scenario(index, fields, defaults) {
                Ok(scenario) => scenario,
                Err(error) => {
                    errors.push(error);
                    continue;
                }
            };
            let before = scenarios
                .iter()
                .filter(|other| other.name == scenario.name)
                .count();
            if before > 0 {
                // This scenario's own `name:`, which the scenario's `line` (the first of its
                // name) is not.
                let item = locate::nth_list_item(self.text, "scenarios", index);
                let next = locate::nth_list_item(self.text, "scenarios", index + 1);
                let at = item
                    .and_then(|(line, _)| {
                        locate::key_before(self.text, line - 1, next.map(|(l, _)| l), "name")
                    })
                    .or_else(|| locate::nth_name(self.text, &scenario.name, before))
                    .unwrap_or((scenario.line, 1));
                errors.push(self.error(
                    at,
                    format!("scenarios[{index}]: duplicate scenario name `{}`", scenario.name),
                    "scenario names must be unique within a suite: they name the trials and their baselines",
                ));
            }
            scenarios.push(scenario);
        }
        scenarios
    }

    /// Position of `key` for the scenario that starts on `start` (before `next`, where the next
    /// one starts) and names itself on `line`: in the scenario when it is there, else under
    /// `defaults`, else the scenario's line.
    fn key_position(
        &self,
        (start, next): (usize, Option<usize>),
        line: usize,
        key: &str,
    ) -> (usize, usize) {
        locate::key_before(self.text, start - 1, next, key)
            .or_else(|| {
                let (defaults, _) = locate::key(self.text, 0, "defaults")?;
                let end = locate::block_end(self.text, defaults - 1);
                locate::key_before(self.text, defaults, end, key)
            })
            .unwrap_or((line, 1))
    }

    fn scenario(
        &self,
        index: usize,
        fields: ScenarioFields,
        defaults: &ScenarioFields,
    ) -> Result<Scenario, ScenarioError> {
        let scenario_start = locate::nth_list_item(self.text, "scenarios", index).unwrap_or((1, 1));
        let Some(name) = fields.name.clone() else {
            return Err(self.error(
                scenario_start,
                format!("scenarios[{index}]: missing key `name`"),
                "give every scenario a `name:`, e.g. `name: cold-read`",
            ));
        };
        let line = locate::nth_name(self.text, &name, 0).map_or(scenario_start.0, |(line, _)| line);
        let span = (
            scenario_start.0.min(line),
            locate::nth_list_item(self.text, "scenarios", index + 1).map(|(next, _)| next),
        );
        let here = |key: &str| self.key_position(span, line, key);
        if let Err(problem) = check_name(&name) {
            return Err(self.error(
                (line, 1),
                format!("scenarios[{index}]: scenario name `{name}` {problem}"),
                "use letters, digits, `-`, `_` and `.`, e.g. `cold-read`",
            ));
        }
        let context = format!("scenarios[{index}] (`{name}`)");

        let files = match fields.files.as_ref().or(defaults.files.as_ref()) {
            Some(files) => self.files(files, &context, here("files"))?,
            None => return Err(self.error((line, 1), format!("{context}: missing key `files`"), "add `files: { size: 4GiB }` (generated data) or `files: { path: /data/my.bin }` (your own file), here or under `defaults`")),
        };

        macro_rules! pick {
            ($key:ident, $default:expr) => {
                fields
                    .$key
                    .clone()
                    .or_else(|| defaults.$key.clone())
                    .map_or_else(|| vec![$default], |values| values.0)
            };
        }
        let rank_set = fields.ranks.clone().or_else(|| defaults.ranks.clone());
        // A list of ranks names the readers; the trial is named after the first.
        let readers = match &rank_set {
            Some(Ranks::Readers(list)) if !list.is_empty() => {
                let mut distinct = list.clone();
                distinct.sort_by_key(|reader| reader.name());
                distinct.dedup();
                distinct
            }
            _ => pick!(reader, Reader::Posix),
        };
        let ops = pick!(op, Op::Read);
        let pattern = fields
            .pattern
            .clone()
            .or_else(|| defaults.pattern.clone())
            .unwrap_or(Pattern::Whole);
        let expect_fields = fields
            .expect
            .clone()
            .or_else(|| defaults.expect.clone())
            .unwrap_or_default();
        let mut cufile = defaults.cufile.clone().unwrap_or_default();
        cufile.extend(fields.cufile.clone().unwrap_or_default());

        for (key, value) in &cufile {
            match crate::cufile_config::check(key, value) {
                Ok(()) => {}
                Err(error @ crate::cufile_config::ConfigError::WrongValue { expected, .. }) => {
                    return Err(self.error(
                        here(key),
                        format!("{context}: {error}"),
                        &format!("set `{key}` to {expected}, as NVIDIA's cufile.json takes it (numbers and `true`/`false` without quotes)"),
                    ));
                }
                Err(error) => {
                    return Err(self.error(
                        here(key),
                        format!("{context}: {error}"),
                        "the keys are those of NVIDIA's cufile.json, written as dotted paths",
                    ));
                }
            }
        }
        if let Pattern::Random(random) = &pattern {
            self.random_pattern(random, &files, &context, here("pattern"))?;
        }
        let integrity = match (expect_fields.integrity, &files) {
            (Some(Integrity::Exact), FileSet::User { .. }) => {
                return Err(self.error(here("integrity"), format!("{context}: `expect.integrity: exact` needs generated files, but `files` names a file of yours"), "use `integrity: checksum` for your own files: the gate checksums them once and compares every read against it"));
            }
            (Some(integrity), _) => integrity,
            (None, FileSet::Generated { .. }) => Integrity::Exact,
            (None, FileSet::User { .. }) => Integrity::Checksum,
        };
        let gpu_set = fields.gpus.clone().or_else(|| defaults.gpus.clone());
        let windows = pick!(window, window_mode::WindowMode::Auto);
        if let Some(&op) = ops.iter().find(|op| op.writes()) {
            self.writes(op, &files, &pattern, gpu_set.as_ref(), &context, &here)?;
            self.writers(op, &readers, &context, &here)?;
        }
        if ops.contains(&Op::Load) {
            let apis = pick!(kvikio_api, KvikioApi::Pread);
            self.loads(&readers, &apis, &pattern, gpu_set.as_ref(), &context, &here)?;
        }
        if let Some(&op) = ops.iter().find(|op| **op != Op::Read) {
            self.whole_window(op, &files, &windows, &context, here("window"))?;
        }
        if let Some(set) = &gpu_set {
            let gpu_list = fields.gpu.as_ref().or(defaults.gpu.as_ref());
            self.gpu_set(
                set,
                gpu_list,
                &readers,
                &files,
                &context,
                here("gpus"),
                || here("gpu"),
            )?;
        }
        let rounds = fields.rounds.or(defaults.rounds).map_or(1, u32::from);
        let writers = fields.writers.or(defaults.writers).unwrap_or(0);
        if writers > 0 && rank_set.is_none() {
            return Err(self.error(
                here("writers"),
                format!("{context}: `writers: {writers}` names ranks that write, but the scenario has no `ranks`"),
                "add `ranks: N` (more than `writers`): the last `writers` ranks write while the others read",
            ));
        }
        if let Some(ranks) = &rank_set {
            let with = ranks::RankContext {
                readers: &readers,
                writers,
                // A default `reader` is for the other scenarios; the list replaces it here.
                reader_given: fields.reader.is_some(),
                ops: &ops,
                files: &files,
                gpu_set: gpu_set.as_ref(),
                rounds,
                windows: &windows,
            };
            self.ranks(ranks, with, &context, &here)?;
        }
        let path = expect_fields.path.unwrap_or(ExpectedPath::Any);
        for reader in &readers {
            if let Some(problem) = impossible_path(*reader, path) {
                return Err(self.error(
                    here("path"),
                    format!("{context}: {problem}"),
                    "set `expect.path` to what this reader can produce, or `any`",
                ));
            }
        }

        let scenario = Scenario {
            name,
            description: fields.description.clone(),
            line,
            files,
            readers: match &rank_set {
                Some(Ranks::Readers(list)) => vec![list[0]],
                _ => readers,
            },
            ops,
            compat_modes: pick!(compat_mode, CompatMode::AUTO),
            nthreads: pick!(nthreads, NTHREADS_DEFAULT)
                .into_iter()
                .map(u32::from)
                .collect(),
            task_sizes: pick!(task_size, PositiveSize(ByteSize(defaults::TASK_SIZE)))
                .into_iter()
                .map(PositiveSize::bytes)
                .collect(),
            gds_thresholds: pick!(gds_threshold, ByteSize(defaults::GDS_THRESHOLD))
                .into_iter()
                .map(|size| size.0)
                .collect(),
            bounce_buffer_sizes: pick!(
                bounce_buffer_size,
                PositiveSize(ByteSize(defaults::BOUNCE_BUFFER_SIZE))
            )
            .into_iter()
            .map(PositiveSize::bytes)
            .collect(),
            queue_depths: pick!(queue_depth, QUEUE_DEPTH_DEFAULT)
                .into_iter()
                .map(u32::from)
                .collect(),
            batch_sizes: pick!(batch_size, BATCH_SIZE_DEFAULT)
                .into_iter()
                .map(u32::from)
                .collect(),
            kvikio_apis: pick!(kvikio_api, KvikioApi::Pread),
            cufile,
            pattern,
            caches: pick!(cache, Cache::Cold),
            warmup: fields
                .warmup
                .or(defaults.warmup)
                .unwrap_or(defaults::WARMUP),
            repetitions: fields
                .repetitions
                .or(defaults.repetitions)
                .map_or(defaults::REPETITIONS, u32::from),
            rounds,
            buffers: pick!(buffer, BufferKind::Unregistered),
            gpus: match &gpu_set {
                // `gpus` replaces a single `gpu` (a list was refused above); the trial's own
                // `gpu` is the first of the set until the set is resolved at run time.
                Some(GpuSet::List(list)) => vec![list[0]],
                Some(GpuSet::All) => vec![0],
                None => pick!(gpu, 0),
            },
            windows,
            gpu_set,
            ranks: rank_set,
            writers,
            expect: Expectations {
                path,
                max_fallback_bytes: expect_fields.max_fallback_bytes.map(|size| size.0),
                integrity,
                tolerance: expect_fields
                    .tolerance
                    .map_or(defaults::TOLERANCE, |Fraction(f)| f),
                cpu_tolerance: expect_fields
                    .cpu_tolerance
                    .map_or(defaults::CPU_TOLERANCE, |Fraction(f)| f),
                load_tolerance: expect_fields
                    .load_tolerance
                    .map_or(defaults::LOAD_TOLERANCE, |Fraction(f)| f),
                latency_tolerance: expect_fields
                    .latency_tolerance
                    .map_or(defaults::LATENCY_TOLERANCE, |Fraction(f)| f),
            },
        };
        self.scenario_limits(&scenario, &context, &here)?;
        Ok(scenario)
    }

    fn files(
        &self,
        files: &Files,
        context: &str,
        at: (usize, usize),
    ) -> Result<FileSet, ScenarioError> {
        match (files.size, &files.path) {
            (Some(size), None) => Ok(FileSet::Generated {
                size: size.bytes(),
                seed: files.seed.unwrap_or(defaults::SEED),
                count: files.count.map_or(1, u32::from),
            }),
            (None, Some(path)) if files.seed.is_none() && files.count.is_none() => {
                // A relative path is relative to the suite file, so a suite can travel with its data.
                let base = self.path.parent().unwrap_or(Path::new("."));
                Ok(FileSet::User { path: base.join(path) })
            }
            (None, Some(_)) => Err(self.error(at, format!("{context}: `files.seed` and `files.count` apply to generated files, not to `files.path`"), "remove `seed`/`count`, or replace `path` with `size` to read generated data")),
            (Some(_), Some(_)) => Err(self.error(at, format!("{context}: `files` has both `size` and `path`"), "use `size` (with `seed`, `count`) for generated data, or `path` for a file of yours, not both")),
            (None, None) => Err(self.error(at, format!("{context}: `files` needs `size` or `path`"), "e.g. `files: { size: 4GiB, seed: 1 }` or `files: { path: /data/ckpt.bin }`")),
        }
    }

    /// `gpus:` is one trial over several GPUs: it needs a GPU reader, cannot be combined with a
    /// `gpu` axis, and cannot split a file of the user's (whose checksum covers the whole file).
    #[expect(clippy::too_many_arguments)]
    fn gpu_set(
        &self,
        set: &GpuSet,
        gpu_list: Option<&model::OneOrMany<u32>>,
        readers: &[Reader],
        files: &FileSet,
        context: &str,
        at: (usize, usize),
        gpu_at: impl FnOnce() -> (usize, usize),
    ) -> Result<(), ScenarioError> {
        if let Some(list) = gpu_list.filter(|list| list.0.len() > 1) {
            let (gpu_line, _) = gpu_at();
            let shown: Vec<String> = list.0.iter().map(u32::to_string).collect();
            return Err(self.error(
                at,
                format!(
                    "{context}: `gpus: {set}` (line {}) and `gpu: [{}]` (line {gpu_line}) cannot be combined",
                    at.0,
                    shown.join(", ")
                ),
                "`gpu: [0, 1]` makes one trial per GPU; `gpus: [0, 1]` makes one trial that reads with all of them at once. Keep one of the two",
            ));
        }
        if let GpuSet::List(list) = set
            && let Some(twice) = list
                .iter()
                .enumerate()
                .find_map(|(i, gpu)| list[..i].contains(gpu).then_some(*gpu))
        {
            return Err(self.error(
                at,
                format!("{context}: GPU {twice} is listed twice in `gpus`"),
                "list each GPU once, e.g. `gpus: [0, 1]`",
            ));
        }
        if readers.contains(&Reader::Posix) {
            return Err(self.error(
                at,
                format!("{context}: `gpus` does not apply to reader `posix`, which reads into host memory and uses no GPU"),
                "remove `posix` from `reader` (use `h2d`, `cufile` or `kvikio`), or read with `posix` in a scenario without `gpus`",
            ));
        }
        let several = match set {
            GpuSet::All => true,
            GpuSet::List(list) => list.len() > 1,
        };
        if let (true, FileSet::User { path }) = (several, files) {
            return Err(self.error(
                at,
                format!(
                    "{context}: `gpus: {set}` cannot split your own file `{}` across GPUs: its checksum covers the whole file, so a part of it read on one GPU cannot be verified",
                    path.display()
                ),
                "read your file with one GPU (`gpu: N`), or use generated files (`files: { size: 4GiB, count: 2 }`), which are split across GPUs by whole files or by ranges the generator can verify",
            ));
        }
        Ok(())
    }

    fn random_pattern(
        &self,
        random: &RandomReads,
        files: &FileSet,
        context: &str,
        at: (usize, usize),
    ) -> Result<(), ScenarioError> {
        let FileSet::Generated { size, .. } = files else {
            return Err(self.error(at, format!("{context}: `pattern: random` needs generated files"), "random reads of your own file cannot be verified without reading all of it; use `pattern: whole` or `chunks`"));
        };
        let align = random.align.bytes();
        if !align.is_multiple_of(8) {
            return Err(self.error(
                at,
                format!(
                    "{context}: `pattern.random.align` is {align}, expected a multiple of 8 bytes"
                ),
                "use `align: 4KiB` (what O_DIRECT needs)",
            ));
        }
        if random.size.bytes() > *size {
            return Err(self.error(
                at,
                format!(
                    "{context}: random reads of {} do not fit in files of {}",
                    random.size,
                    ByteSize(*size)
                ),
                "make `pattern.random.size` at most `files.size`",
            ));
        }
        // Every read would be drawn from one offset: the "random" pass would read the same bytes
        // `count` times, from the page cache or the device's after the first.
        let count = random.count.get();
        if count > 1 && random.offsets(*size) < 2 {
            return Err(self.error(
                at,
                format!(
                    "{context}: random reads of {} aligned to {} fit at one offset only in files of {}, so all {count} reads would read the same bytes",
                    random.size,
                    random.align,
                    ByteSize(*size)
                ),
                "use a smaller `pattern.random.align` (4KiB is what O_DIRECT needs), a smaller `pattern.random.size` or larger files, or `count: 1`",
            ));
        }
        Ok(())
    }
}

/// A reader that can only produce one path cannot meet another expectation.
fn impossible_path(reader: Reader, path: ExpectedPath) -> Option<String> {
    use ExpectedPath::*;
    let possible: &[ExpectedPath] = match reader {
        Reader::Posix => &[Host, Any],
        Reader::H2d => &[Bounce, Any],
        Reader::Cufile | Reader::CufileBatch | Reader::CufileAsync => {
            &[Nvfs, P2p, Gds, CufilePosix, Any]
        }
        Reader::Kvikio => &[Nvfs, P2p, Gds, CufilePosix, KvikioPosix, Any],
        // PyTorch has no POSIX path of its own: a handle cuFile refuses is an error.
        Reader::Torch => &[Nvfs, P2p, Gds, CufilePosix, Any],
    };
    (!possible.contains(&path)).then(|| {
        let path = serde_json::to_value(path)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        format!("reader `{}` cannot take the path `{path}`", reader.name())
    })
}

/// Names end up in trial names, file names and baselines: keep them plain.
fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        Err("is empty")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Err("may only contain letters, digits, `-`, `_` and `.`")
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_batch;
#[cfg(test)]
mod tests_ranks;
#[cfg(test)]
mod tests_torch;
