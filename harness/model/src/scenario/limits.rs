//! Bounds on what a suite may ask for, checked while it is validated and reported with the line:
//! `validate` then finds what would otherwise stall the parser, exhaust the gate's memory, or
//! fail part-way through a run (a thread the worker cannot start, a folder name the file system
//! refuses, a name libtest cannot print).

use std::collections::HashSet;
use std::fmt::Debug;
use std::hash::Hash;

use super::model::Pattern;
use super::size::ByteSize;
use super::{FileSet, Scenario, ScenarioError, Suite, Validator, expand};

/// Suite files are a few KiB; the parser's time grows with the input.
pub const MAX_SUITE_BYTES: usize = 1 << 20;
/// Nesting of flow collections (`[`, `{`): the parser's time grows with its square (40 000
/// levels took seconds), and no suite needs more than a handful.
pub const MAX_FLOW_DEPTH: usize = 64;
/// Trials of one suite: each is a worker process reading gigabytes.
pub const MAX_TRIALS: u64 = 10_000;
/// Characters of a trial name: it names the trial's folder (255 bytes at most on every common
/// file system, with room for the suffix that keeps folder names apart), and libtest prints it.
pub const MAX_TRIAL_NAME: usize = 200;
/// Reader threads (`KVIKIO_NTHREADS` for KvikIO): far above what saturates any storage, far below
/// what a worker can fail to start.
pub const MAX_NTHREADS: u32 = 1024;
/// Most batches in flight and I/Os per batch (`queue_depth`, `batch_size`) a scenario may ask for.
pub const MAX_BATCH: u32 = 1024;
/// `warmup + repetitions`.
pub const MAX_PASSES: u64 = 1000;
/// Reads of one pass: each is a segment of the plan the worker receives as JSON (about 100 bytes
/// each); 4 GiB in 64 KiB chunks is 65 536.
pub const MAX_READS: u64 = 65_536;
/// Tasks of one pass (reads split by `task_size`), which the worker holds in memory: 8 GiB in
/// 4 KiB tasks is 2 Mi.
pub const MAX_TASKS: u64 = 1 << 21;

/// Checks on the raw text, before the parser sees it.
pub(super) fn check_text(text: &str) -> Result<(), Problem> {
    if text.len() > MAX_SUITE_BYTES {
        return Err(Problem {
            at: (1, 1),
            message: format!(
                "the suite file is {} bytes; at most {MAX_SUITE_BYTES} are read",
                text.len()
            ),
            hint: "a suite holds scenarios, not data: split it into several files".into(),
        });
    }
    if let Some(at) = too_deep(text) {
        return Err(Problem {
            at,
            message: format!(
                "flow collections (`[` and `{{`) are nested more than {MAX_FLOW_DEPTH} deep"
            ),
            hint: "a suite needs two or three levels, e.g. `files: { size: 4GiB }`; close the brackets".into(),
        });
    }
    Ok(())
}

/// A limit exceeded, before a [`ScenarioError`] is made of it.
pub(super) struct Problem {
    pub at: (usize, usize),
    pub message: String,
    pub hint: String,
}

/// Where the flow nesting first exceeds [`MAX_FLOW_DEPTH`]. Brackets in quoted scalars and
/// comments do not count; any other bracket does, which can only overcount (a `[` inside a plain
/// scalar), so a hostile file cannot hide its nesting from this scan.
fn too_deep(text: &str) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    for code in crate::yaml::code_chars(text) {
        match code.c {
            '[' | '{' => {
                depth += 1;
                if depth > MAX_FLOW_DEPTH {
                    return Some((code.line, code.column));
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// A pass past [`MAX_READS`] or [`MAX_TASKS`], and how to bring it under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanTooLarge {
    #[error(
        "one pass would make {reads} reads, at most {MAX_READS}: use larger `pattern.chunks`, a smaller `pattern.random.count`, or fewer or smaller files"
    )]
    Reads { reads: u64 },
    #[error(
        "one pass would split into {tasks} tasks of `task_size: {}`, at most {MAX_TASKS}: use a larger `task_size` (KvikIO's default is 4MiB) or smaller files",
        ByteSize(*task_size)
    )]
    Tasks { tasks: u64, task_size: u64 },
}

/// The reads and tasks of one pass over files of `sizes`, each read `copies` times over (the
/// `count` generated files of one size), against [`MAX_READS`] and [`MAX_TASKS`]: a problem and
/// its fix, or nothing. Used for generated files while validating, and for a user's own file
/// (whose size is known only then) before its trial's plan is built.
pub fn check_plan(
    sizes: &[u64],
    copies: u64,
    pattern: &Pattern,
    task_size: u64,
) -> Result<(), PlanTooLarge> {
    let reads = reads_per_pass(sizes, pattern).saturating_mul(copies);
    if reads > MAX_READS {
        return Err(PlanTooLarge::Reads { reads });
    }
    let tasks = tasks_per_pass(sizes, pattern, task_size).saturating_mul(copies);
    if tasks > MAX_TASKS {
        return Err(PlanTooLarge::Tasks { tasks, task_size });
    }
    Ok(())
}

/// Reads of one pass over files of these sizes, counted without building the read plan, so that
/// the limits are checked before anything is allocated.
pub fn reads_per_pass(sizes: &[u64], pattern: &Pattern) -> u64 {
    sizes
        .iter()
        .map(|&size| match pattern {
            Pattern::Whole => 1,
            Pattern::Chunks(chunk) => size.div_ceil(chunk.bytes()),
            Pattern::Random(random) => u64::from(random.count.get()),
        })
        .fold(0, u64::saturating_add)
}

/// Tasks of `task_size` bytes one pass splits into (as the read plan splits its reads), counted
/// without building them.
pub fn tasks_per_pass(sizes: &[u64], pattern: &Pattern, task_size: u64) -> u64 {
    let task_size = task_size.max(1);
    let tasks = |len: u64| len.div_ceil(task_size);
    sizes
        .iter()
        .map(|&size| match pattern {
            Pattern::Whole => tasks(size),
            Pattern::Chunks(chunk) => {
                let chunk = chunk.bytes();
                (size / chunk)
                    .saturating_mul(tasks(chunk))
                    .saturating_add(tasks(size % chunk))
            }
            Pattern::Random(random) => {
                u64::from(random.count.get()).saturating_mul(tasks(random.size.bytes()))
            }
        })
        .fold(0, u64::saturating_add)
}

impl Validator<'_> {
    /// The limits of one scenario: passes, threads, one value at most once per axis, and the plan
    /// of its generated files. `at` gives a key's position.
    pub(super) fn scenario_limits(
        &self,
        s: &Scenario,
        context: &str,
        at: &dyn Fn(&str) -> (usize, usize),
    ) -> Result<(), ScenarioError> {
        let passes = u64::from(s.warmup) + u64::from(s.repetitions);
        if passes > MAX_PASSES {
            let key = if s.warmup > s.repetitions {
                "warmup"
            } else {
                "repetitions"
            };
            return Err(self.error(
                at(key),
                format!(
                    "{context}: `warmup: {}` and `repetitions: {}` make {passes} passes per trial, at most {MAX_PASSES}",
                    s.warmup, s.repetitions
                ),
                "1 warm-up pass and 5 to 20 measured ones are typical; the baseline's statistics come from repeated runs, not from many passes",
            ));
        }
        if s.rounds > s.repetitions {
            return Err(self.error(
                at("rounds"),
                format!(
                    "{context}: `rounds: {}` splits `repetitions: {}` measured passes, so each round needs one at least",
                    s.rounds, s.repetitions
                ),
                "set `rounds` to at most `repetitions` (3 rounds of the default suite's 3 passes: one pass each)",
            ));
        }
        if s.rounds > 1 && s.gpu_set.is_some() {
            return Err(self.error(
                at("rounds"),
                format!("{context}: `rounds` does not apply to a trial over several GPUs (`gpus`)"),
                "remove `rounds` from this scenario; its workers read at the same time, in one round",
            ));
        }
        if let Some(&threads) = s.nthreads.iter().find(|&&n| n > MAX_NTHREADS) {
            return Err(self.error(
                at("nthreads"),
                format!("{context}: `nthreads: {threads}` is more than {MAX_NTHREADS} threads"),
                "8 to 64 threads saturate NVMe and parallel file systems; use at most 1024",
            ));
        }
        for (key, values) in [
            ("queue_depth", &s.queue_depths),
            ("batch_size", &s.batch_sizes),
        ] {
            if let Some(&value) = values.iter().find(|&&n| n > MAX_BATCH) {
                return Err(self.error(
                    at(key),
                    format!("{context}: `{key}: {value}` is more than {MAX_BATCH}"),
                    "cuFile's default `properties.io_batchsize` is 128 I/Os per batch; a few batches in flight keep a device busy",
                ));
            }
        }
        let size = |bytes: &u64| ByteSize(*bytes).to_string();
        let lowercase = |value: &dyn Debug| format!("{value:?}").to_lowercase();
        self.distinct(at, context, "reader", &s.readers, |r| r.name().into())?;
        self.distinct(
            at,
            context,
            "compat_mode",
            &s.compat_modes,
            ToString::to_string,
        )?;
        self.distinct(at, context, "nthreads", &s.nthreads, ToString::to_string)?;
        self.distinct(
            at,
            context,
            "queue_depth",
            &s.queue_depths,
            ToString::to_string,
        )?;
        self.distinct(
            at,
            context,
            "batch_size",
            &s.batch_sizes,
            ToString::to_string,
        )?;
        self.distinct(at, context, "kvikio_api", &s.kvikio_apis, |api| {
            api.name().into()
        })?;
        self.distinct(at, context, "task_size", &s.task_sizes, size)?;
        self.distinct(at, context, "gds_threshold", &s.gds_thresholds, size)?;
        self.distinct(
            at,
            context,
            "bounce_buffer_size",
            &s.bounce_buffer_sizes,
            size,
        )?;
        self.distinct(at, context, "cache", &s.caches, |c| lowercase(c))?;
        self.distinct(at, context, "buffer", &s.buffers, |b| lowercase(b))?;
        self.distinct(at, context, "gpu", &s.gpus, ToString::to_string)?;
        if let FileSet::Generated { size, count, .. } = s.files {
            for &task_size in &s.task_sizes {
                if let Err(problem) = check_plan(&[size], count.into(), &s.pattern, task_size) {
                    let key = match &s.pattern {
                        _ if matches!(problem, PlanTooLarge::Tasks { .. }) => "task_size",
                        Pattern::Whole => "files",
                        _ => "pattern",
                    };
                    return Err(self.error(
                        at(key),
                        format!("{context}: {problem}"),
                        "the plan goes to the worker as JSON and its tasks are held in memory",
                    ));
                }
            }
        }
        Ok(())
    }

    /// A value listed twice makes the same trial twice under one name.
    fn distinct<T: Hash + Eq>(
        &self,
        at: &dyn Fn(&str) -> (usize, usize),
        context: &str,
        key: &str,
        values: &[T],
        show: impl Fn(&T) -> String,
    ) -> Result<(), ScenarioError> {
        let mut seen = HashSet::new();
        match values.iter().find(|value| !seen.insert(*value)) {
            None => Ok(()),
            Some(twice) => Err(self.error(
                at(key),
                format!(
                    "{context}: `{key}` lists {} twice; each value of a list makes its own trial",
                    show(twice)
                ),
                &format!("list each value of `{key}` once"),
            )),
        }
    }

    /// The limits of the expanded suite: how many trials (counted before they are built) and how
    /// long their names are.
    pub(super) fn expansion_limits(&self, suite: &Suite) -> Result<(), ScenarioError> {
        let mut total = 0u64;
        for (index, scenario) in suite.scenarios.iter().enumerate() {
            let count = expand::trial_count(scenario);
            total = total.saturating_add(count);
            if total > MAX_TRIALS {
                return Err(self.error(
                    (scenario.line, 1),
                    format!(
                        "scenarios[{index}] (`{}`) expands into {count} trials (one per combination of its lists), which brings the suite to {total}; at most {MAX_TRIALS}",
                        scenario.name
                    ),
                    "shorten the lists, or split the matrix into scenarios (or suites) that each vary fewer keys",
                ));
            }
        }
        let trials = expand(suite);
        if let Some(trial) = trials
            .iter()
            .find(|t| t.name.chars().count() > MAX_TRIAL_NAME)
        {
            let shown: String = trial.name.chars().take(60).collect();
            return Err(self.error(
                (trial.source_line, 1),
                format!(
                    "trial `{shown}…` has a name of {} characters, at most {MAX_TRIAL_NAME}: it names the trial's folder and its line in every report",
                    trial.name.chars().count()
                ),
                "shorten `suite:` or the scenario's `name:`, or vary fewer keys in one scenario",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_depth_ignores_quotes_and_comments_and_counts_the_rest() {
        let nested = |n: usize| format!("a: {}{}\n", "[".repeat(n), "]".repeat(n));
        assert_eq!(too_deep(&nested(MAX_FLOW_DEPTH)), None);
        assert_eq!(too_deep(&nested(MAX_FLOW_DEPTH + 1)), Some((1, 68)));
        // Closing brackets hidden in a comment, a quoted scalar or an escaped quote do not close.
        let hidden = "a: [ # ]\n".repeat(MAX_FLOW_DEPTH + 1);
        assert!(too_deep(&hidden).is_some());
        let quoted = "[ ']' [ \"]\" [ 'it''s ]' ".repeat(MAX_FLOW_DEPTH);
        assert!(too_deep(&quoted).is_some());
        let escaped = "[ \"\\\"]\" ".repeat(MAX_FLOW_DEPTH + 1);
        assert!(too_deep(&escaped).is_some());
        // Brackets inside quotes and comments are not nesting either.
        let text = format!("d: '{0}'\ne: \"{0}\" # {0}\n", "[".repeat(100));
        assert_eq!(too_deep(&text), None);
        assert_eq!(too_deep("d: it's [a] and [b]\n"), None);
    }
}
