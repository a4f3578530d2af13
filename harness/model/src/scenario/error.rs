//! Errors in suite files: always the file, line and column, what was expected, and a fix.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::suggest::nearest;

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read scenario file `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}", Invalid { file, line: *line, column: *column, message, hint: hint.as_deref() })]
    Invalid {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
        hint: Option<String>,
    },
    /// Several errors of one suite file, in the file's order: each shown as the gate shows an
    /// error, the later ones on `error:` lines of their own. Never fewer than two.
    #[error("{}", several(.0))]
    Several(Vec<ScenarioError>),
}

impl ScenarioError {
    /// One error for `errors` (at least one): in the order of the file, one per position.
    pub(super) fn gathered(mut errors: Vec<ScenarioError>) -> ScenarioError {
        errors.sort_by_key(ScenarioError::position);
        errors.dedup_by_key(|error| error.position());
        ScenarioError::from_each(errors)
    }

    /// `errors` as one error: the only one, or [`ScenarioError::Several`].
    pub(super) fn from_each(mut errors: Vec<ScenarioError>) -> ScenarioError {
        match errors.len() {
            1 => errors.remove(0),
            _ => ScenarioError::Several(errors),
        }
    }

    /// Each error this one holds: itself, or the several.
    pub fn into_each(self) -> Vec<ScenarioError> {
        match self {
            ScenarioError::Several(errors) => errors,
            error => vec![error],
        }
    }

    /// (line, column) of an error in a suite's text; the start for the others.
    pub(super) fn position(&self) -> (usize, usize) {
        match self {
            ScenarioError::Invalid { line, column, .. } => (*line, *column),
            ScenarioError::Read { .. } | ScenarioError::Several(_) => (0, 0),
        }
    }
}

fn several(errors: &[ScenarioError]) -> String {
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    shown.join("\nerror: ")
}

struct Invalid<'a> {
    file: &'a PathBuf,
    line: usize,
    column: usize,
    message: &'a str,
    hint: Option<&'a str>,
}

impl fmt::Display for Invalid<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message
        )?;
        if let Some(hint) = self.hint {
            write!(f, "\n  help: {hint}")?;
        }
        Ok(())
    }
}

/// Turns a yaml_serde error on `text` into ours, with a "did you mean" for unknown keys and
/// values.
pub(super) fn from_yaml(
    file: &std::path::Path,
    text: &str,
    error: &yaml_serde::Error,
) -> ScenarioError {
    let (line, column) = crate::yaml::position(error, text);
    let message = crate::yaml::message(error);
    let (message, hint) = match not_a_count(&message) {
        Some((message, hint)) => (message, Some(hint)),
        None => {
            let message = in_suite_terms(message);
            let hint = suggestion(&message);
            (message, hint)
        }
    };
    ScenarioError::Invalid {
        file: file.to_path_buf(),
        line,
        column,
        message,
        hint,
    }
}

/// serde names Rust's types (`expected a nonzero u32`); a suite's author reads numbers.
fn in_suite_terms(message: String) -> String {
    const TYPES: [(&str, &str); 5] = [
        (
            "expected a nonzero u32",
            "expected a whole number of 1 or more",
        ),
        (
            "expected a nonzero u64",
            "expected a whole number of 1 or more",
        ),
        (
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        ),
        ("expected u64", "expected a whole number of 0 or more"),
        ("expected f64", "expected a number"),
    ];
    TYPES.iter().fold(message, |message, (serde, ours)| {
        message.replace(serde, ours)
    })
}

/// serde's "scenarios[0].repetitions: invalid type: integer `-1`, expected a nonzero u32" said in
/// the suite's terms, with its fix: "scenarios[0]: `repetitions` must be a whole number of at
/// least 1, found -1". Whole-number keys only; the others keep serde's message.
fn not_a_count(message: &str) -> Option<(String, String)> {
    const COUNTS: [(&str, u64, u64); 4] = [
        ("a nonzero u32", 1, u32::MAX as u64),
        ("a nonzero u64", 1, u64::MAX),
        ("u32", 0, u32::MAX as u64),
        ("u64", 0, u64::MAX),
    ];
    let (before, expected) = message.rsplit_once(", expected ")?;
    let &(_, min, max) = COUNTS.iter().find(|(name, ..)| *name == expected)?;
    let (path, found) = ["invalid type: ", "invalid value: "]
        .iter()
        .find_map(|kind| before.split_once(&format!(": {kind}")))?;
    let found = shown(found);
    let (within, key) = match path
        .strip_prefix("scenarios[")
        .and_then(|rest| rest.split_once("]."))
    {
        Some((index, key)) => (format!("scenarios[{index}]: "), key),
        None => match path.strip_prefix("defaults.") {
            Some(key) => ("defaults: ".to_string(), key),
            None => (String::new(), path),
        },
    };
    let too_large = found.parse::<i128>().is_ok_and(|n| n > i128::from(max));
    let bound = if too_large {
        format!("at most {max}")
    } else {
        format!("at least {min}")
    };
    let message = format!("{within}`{key}` must be a whole number of {bound}, found {found}");
    // `nthreads[1]` is an item of `nthreads`; `pattern.random.count` is `count` of `random`.
    let name = key.split('[').next().unwrap_or(key);
    let hint = match name {
        "repetitions" => "write how many measured passes each trial makes, without quotes, e.g. `repetitions: 5` (the default)".to_string(),
        "warmup" => "write how many unmeasured passes come before them, e.g. `warmup: 1` (the default), or `warmup: 0` for none".to_string(),
        "rounds" => "write how many workers the measured passes are split over, from 1 to `repetitions`, e.g. `rounds: 1` (the default)".to_string(),
        "nthreads" => "write the reader threads, e.g. `nthreads: 8`, or a list such as `nthreads: [1, 8]` for a trial each".to_string(),
        _ if too_large => format!("write a whole number from {min} to {max}"),
        _ => format!("write a whole number of {min} or more: digits only, without a sign, a decimal point or quotes"),
    };
    Some((message, hint))
}

/// serde's description of the value it did not take, as the suite wrote it: "integer `-1`" is
/// `-1`, "string \"abc\"" is `"abc"`.
fn shown(found: &str) -> String {
    for kind in ["integer ", "floating point ", "boolean "] {
        if let Some(value) = found.strip_prefix(kind) {
            return value.trim_matches('`').to_string();
        }
    }
    if let Some(text) = found.strip_prefix("string ") {
        return text.to_string();
    }
    match found {
        "sequence" => "a list".into(),
        "map" => "a mapping".into(),
        "unit value" => "null".into(),
        other => other.into(),
    }
}

/// For serde's "unknown field `x`, expected one of `a`, `b`" (and "unknown variant"), the nearest
/// valid name.
fn suggestion(message: &str) -> Option<String> {
    let (kind, rest) = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|prefix| {
            message
                .find(prefix)
                .map(|at| (*prefix, &message[at + prefix.len()..]))
        })?;
    let (unknown, expected) = rest.split_once('`')?;
    let candidates: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let nearest = nearest(unknown, &candidates)?;
    let what = if kind.contains("field") {
        "key"
    } else {
        "value"
    };
    Some(format!("did you mean the {what} `{nearest}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_nearest_field_and_variant() {
        let hint = suggestion(
            "scenarios[0]: unknown field `compat_mdoe`, expected one of `name`, `compat_mode`, `cache`",
        );
        assert_eq!(hint.as_deref(), Some("did you mean the key `compat_mode`?"));
        let hint = suggestion(
            "reader: unknown variant `cufle`, expected one of `posix`, `h2d`, `cufile`, `kvikio`",
        );
        assert_eq!(hint.as_deref(), Some("did you mean the value `cufile`?"));
        assert_eq!(
            suggestion("unknown field `zzzzzzzz`, expected `name`"),
            None
        );
        assert_eq!(suggestion("invalid type: map"), None);
    }

    #[test]
    fn numbers_out_of_range_are_said_in_the_suites_terms() {
        for (key, value, expected) in [
            (
                "repetitions",
                "-1",
                "must be a whole number of at least 1, found -1",
            ),
            (
                "nthreads",
                "0",
                "must be a whole number of at least 1, found 0",
            ),
            (
                "warmup",
                "-2",
                "must be a whole number of at least 0, found -2",
            ),
            (
                "gpu",
                "[0, 4294967296]",
                "must be a whole number of at most 4294967295",
            ),
        ] {
            let text = format!(
                "scenarios:\n  - name: a\n    files: {{ size: 1MiB }}\n    {key}: {value}\n"
            );
            let error = crate::scenario::parse(std::path::Path::new("s.yaml"), &text)
                .expect_err(key)
                .to_string();
            assert!(
                error.contains(&format!("scenarios[0]: `{key}")) && error.contains(expected),
                "{error}"
            );
            assert!(error.contains("\n  help: write "), "{error}");
            assert!(!error.contains("u32"), "{error}");
        }
    }

    #[test]
    fn only_whole_number_messages_are_rewritten() {
        assert_eq!(shown("string \"x\""), "\"x\"");
        assert_eq!(shown("sequence"), "a list");
        assert_eq!(
            not_a_count("scenarios[0].reader: invalid type: integer `1`, expected a string"),
            None
        );
        let (message, _) =
            not_a_count("defaults.files.count: invalid value: integer `0`, expected a nonzero u32")
                .unwrap();
        assert_eq!(
            message,
            "defaults: `files.count` must be a whole number of at least 1, found 0"
        );
    }
}
