//! The two stacks of a rehearsal (`gds-gate rehearse --stacks FILE`): each a name and the
//! environment its workers get on top of the gate's own (a libcufile through `LD_LIBRARY_PATH`,
//! KvikIO through `PYTHONPATH`, a `cufile.json` through `CUFILE_ENV_PATH_JSON`). Stack A is what
//! the runner has now, stack B the upgrade to rehearse.
//!
//! ```yaml
//! a: { name: cuda-13.0 }
//! b:
//!   name: cuda-13.2
//!   env: { LD_LIBRARY_PATH: /opt/cuda-13.2/lib64 }
//! tolerance: 5%
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The tolerance a stacks file without `tolerance:` gets: B may read this much slower than A
/// before it fails, when the rounds are sure of it.
pub const DEFAULT_TOLERANCE: f64 = 0.05;

/// One stack: its name (in trial names, as `trial @name`) and its workers' environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stack {
    pub name: String,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

impl Stack {
    /// The environment as the launcher takes it.
    pub fn env_pairs(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect()
    }

    /// The `cufile.json` this stack's workers start from, when it names one.
    pub fn cufile_json(&self) -> Option<&Path> {
        self.env
            .get("CUFILE_ENV_PATH_JSON")
            .filter(|path| !path.is_empty())
            .map(Path::new)
    }
}

/// Stack A (the runner's now), stack B (the candidate) and how much slower B may be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stacks {
    pub a: Stack,
    pub b: Stack,
    /// A fraction: B fails as slower when the rounds are sure its rate is below (1 − this) × A's.
    pub tolerance: f64,
}

/// The file as written; `tolerance` as a percentage or a fraction.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StacksFile {
    a: Stack,
    b: Stack,
    #[serde(default)]
    tolerance: Option<yaml_serde::Value>,
}

/// A stacks file that cannot be used, with where and what to write instead.
#[derive(Debug, thiserror::Error)]
pub enum StacksError {
    #[error("cannot read the stacks file `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: {message}\n  expected: `a:` and `b:`, each with `name:` and optional `env:` (a mapping of variable to value), and an optional `tolerance:` such as `5%`", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}: {key}: {problem}\n  fix: {fix}", path.display())]
    Invalid {
        path: PathBuf,
        key: String,
        problem: String,
        fix: String,
    },
}

/// Reads and checks a stacks file.
pub fn load(path: &Path) -> Result<Stacks, StacksError> {
    let text = std::fs::read_to_string(path).map_err(|source| StacksError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &text)
}

/// Parses and checks the text of a stacks file read from `path`.
pub fn parse(path: &Path, text: &str) -> Result<Stacks, StacksError> {
    let file: StacksFile = yaml_serde::from_str(text).map_err(|error| {
        let (line, column) = crate::yaml::position(&error, text);
        StacksError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message: crate::yaml::message(&error),
        }
    })?;
    let invalid = |key: &str, problem: String, fix: &str| StacksError::Invalid {
        path: path.to_path_buf(),
        key: key.to_string(),
        problem,
        fix: fix.to_string(),
    };
    for (key, stack) in [("a", &file.a), ("b", &file.b)] {
        let name_ok = !stack.name.is_empty()
            && stack
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if !name_ok {
            return Err(invalid(
                &format!("{key}.name"),
                format!("`{}` is not a stack name", stack.name),
                "letters, digits, `.`, `_` and `-` only (it becomes part of trial names), e.g. `cuda-13.2`",
            ));
        }
        if let Some(bad) = stack
            .env
            .keys()
            .find(|k| k.is_empty() || k.contains(['=', '\0']))
        {
            return Err(invalid(
                &format!("{key}.env"),
                format!("`{bad}` is not an environment variable name"),
                "a name without `=`, e.g. `LD_LIBRARY_PATH`",
            ));
        }
    }
    if file.a.name == file.b.name {
        return Err(invalid(
            "b.name",
            format!("both stacks are called `{}`", file.b.name),
            "give the two stacks different names",
        ));
    }
    let tolerance = match &file.tolerance {
        None => DEFAULT_TOLERANCE,
        Some(value) => fraction(value).ok_or_else(|| {
            invalid(
                "tolerance",
                format!("{} is not a tolerance", shown(value)),
                "a percentage or fraction above 0 and below 1, e.g. `5%` or `0.05`",
            )
        })?,
    };
    Ok(Stacks {
        a: file.a,
        b: file.b,
        tolerance,
    })
}

/// `5%` or `0.05` as 0.05; `None` outside (0, 1).
fn fraction(value: &yaml_serde::Value) -> Option<f64> {
    let fraction = match value {
        yaml_serde::Value::Number(number) => number.as_f64()?,
        yaml_serde::Value::String(text) => {
            text.trim().strip_suffix('%')?.trim().parse::<f64>().ok()? / 100.0
        }
        _ => return None,
    };
    (fraction > 0.0 && fraction < 1.0).then_some(fraction)
}

fn shown(value: &yaml_serde::Value) -> String {
    yaml_serde::to_string(value)
        .map(|text| format!("`{}`", text.trim()))
        .unwrap_or_else(|_| "the value".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Stacks, String> {
        parse(Path::new("stacks.yaml"), text).map_err(|error| crate::error_chain(&error))
    }

    #[test]
    fn two_named_stacks_with_their_environments_and_a_tolerance() {
        let stacks = parsed(
            "a: { name: cuda-13.0 }\nb:\n  name: cuda-13.2\n  env: { LD_LIBRARY_PATH: /opt/lib, CUFILE_ENV_PATH_JSON: /etc/b.json }\ntolerance: 8%\n",
        )
        .unwrap();
        assert_eq!(stacks.a.name, "cuda-13.0");
        assert!(stacks.a.env.is_empty());
        assert_eq!(
            stacks.b.env_pairs(),
            [
                (
                    "CUFILE_ENV_PATH_JSON".to_string(),
                    "/etc/b.json".to_string()
                ),
                ("LD_LIBRARY_PATH".to_string(), "/opt/lib".to_string())
            ]
        );
        assert_eq!(stacks.b.cufile_json(), Some(Path::new("/etc/b.json")));
        assert!((stacks.tolerance - 0.08).abs() < 1e-12);
        let default = parsed("a: {name: x}\nb: {name: y}\n").unwrap();
        assert_eq!(default.tolerance, DEFAULT_TOLERANCE);
    }

    #[test]
    fn a_bad_file_names_the_key_what_was_expected_and_the_fix() {
        let cases = [
            ("a: {name: x}\n", "stacks.yaml:1:1: missing field `b`"),
            (
                "a: {name: x}\nb: {name: x}\n",
                "stacks.yaml: b.name: both stacks are called `x`",
            ),
            (
                "a: {name: 'x y'}\nb: {name: z}\n",
                "stacks.yaml: a.name: `x y` is not a stack name",
            ),
            (
                "a: {name: x}\nb: {name: y, env: {'A=B': c}}\n",
                "stacks.yaml: b.env: `A=B` is not an environment variable name",
            ),
            (
                "a: {name: x}\nb: {name: y}\ntolerance: 150%\n",
                "stacks.yaml: tolerance: `150%` is not a tolerance",
            ),
            (
                "a: {name: x, evn: {}}\nb: {name: y}\n",
                "unknown field `evn`",
            ),
        ];
        for (text, wanted) in cases {
            let error = parsed(text).unwrap_err();
            assert!(error.contains(wanted), "{text:?}: {error}");
            assert!(
                error.contains("fix:") || error.contains("expected:"),
                "{error}"
            );
        }
    }
}
