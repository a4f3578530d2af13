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
    let message = in_suite_terms(crate::yaml::message(error));
    let hint = suggestion(&message);
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
            ("repetitions", "-1", "expected a whole number of 1 or more"),
            ("nthreads", "0", "expected a whole number of 1 or more"),
            (
                "warmup",
                "-2",
                "expected a whole number from 0 to 4294967295",
            ),
        ] {
            let text = format!(
                "scenarios:\n  - name: a\n    files: {{ size: 1MiB }}\n    {key}: {value}\n"
            );
            let error = crate::scenario::parse(std::path::Path::new("s.yaml"), &text)
                .expect_err(key)
                .to_string();
            assert!(
                error.contains(&format!("scenarios[0].{key}: ")) && error.contains(expected),
                "{error}"
            );
            assert!(!error.contains("u32"), "{error}");
        }
    }
}
