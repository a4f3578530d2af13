//! GitHub Actions workflow commands (`::error file=…,line=…::…`) for failed trials and for the
//! baseline comparison's failures and slowdowns, so that they show up on the pull request next to
//! the scenario that defines the trial.
//!
//! Escaping follows `@actions/core` (`packages/core/src/command.ts`): in the message `%`, CR and LF
//! are percent-encoded; in a property value `:` and `,` are as well, since they delimit properties.
//! GitHub shows at most 10 error annotations per step (50 per job); the rest are still in the log.

use std::path::{Component, Path, PathBuf};

use super::Report;
use gds_baseline::Judgement;

/// In report order: one `::error` per trial whose outcome fails the run (its own failure, or
/// its failure against the baseline), one `::notice` per trial limited by its runner, one
/// `::warning` per trial warning, one `::notice` per trial significantly faster than its
/// baseline; then one `::error` per baseline trial no suite
/// defines any more, at the baseline file. Scenario paths are relative to the checkout
/// (`$GITHUB_WORKSPACE`, else the current directory). Print them to stdout when
/// `GITHUB_ACTIONS=true`.
pub fn github_annotations(report: &Report) -> Vec<String> {
    let workspace = std::env::var_os("GITHUB_WORKSPACE")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok());
    github_annotations_in(report, workspace.as_deref())
}

/// [`github_annotations`] with the checkout given: absolute scenario paths under `workspace` are
/// made relative to it, since GitHub links an annotation only by a path relative to the repository.
pub fn github_annotations_in(report: &Report, workspace: Option<&Path>) -> Vec<String> {
    let mut lines = Vec::new();
    for trial in &report.trials {
        let file = workspace_relative(&trial.spec.source_file, workspace);
        let line = trial.spec.source_line;
        if let Some(words) = report.failure_of(trial) {
            lines.push(command("error", &file, line, &trial.name, &words.message));
        }
        if let Some(limited) = trial.limited_line() {
            lines.push(command("notice", &file, line, &trial.name, &limited));
        }
        for warning in &trial.warnings {
            lines.push(command("warning", &file, line, &trial.name, warning));
        }
        let faster = report
            .baseline
            .as_ref()
            .and_then(|c| c.get(&trial.name))
            .filter(|judged| matches!(judged.judgement, Judgement::Faster { .. }))
            .and_then(|judged| report.words(judged));
        if let Some(words) = faster {
            lines.push(command("notice", &file, line, &trial.name, &words.headline));
        }
    }
    if let Some(comparison) = &report.baseline {
        let baseline_file = workspace_relative(&comparison.baseline_path, workspace);
        for judged in report.missing_without_record() {
            let message = report.words(judged).map(|w| w.message).unwrap_or_default();
            lines.push(command("error", &baseline_file, 0, &judged.trial, &message));
        }
    }
    lines
}

fn command(kind: &str, file: &str, line: usize, title: &str, message: &str) -> String {
    let mut properties = vec![format!("file={}", escape_property(file))];
    // Line 0 means the position is unknown; GitHub would reject it, so leave it out.
    if line > 0 {
        properties.push(format!("line={line}"));
    }
    properties.push(format!("title={}", escape_property(title)));
    format!(
        "::{kind} {}::{}",
        properties.join(","),
        escape_data(message)
    )
}

/// The message part of a workflow command: control characters escaped as on the libtest lines
/// (the runner prints the message into the log, where an escape sequence would act), then `%`,
/// CR and LF percent-encoded, which the runner decodes.
pub fn escape_data(text: &str) -> String {
    gds_runner::escape::controls(text, &['\t', '\r', '\n'])
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value of a workflow command (`file=`, `title=`, ...).
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

fn workspace_relative(path: &Path, workspace: Option<&Path>) -> String {
    let relative = match workspace {
        Some(root) if path.is_absolute() => path.strip_prefix(root).unwrap_or(path),
        _ => path,
    };
    // `./scenarios/x.yaml` and `scenarios/x.yaml` are the same file to GitHub only without `./`.
    let cleaned: PathBuf = relative
        .components()
        .filter(|component| *component != Component::CurDir)
        .collect();
    cleaned.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_escapes_percent_and_line_breaks_only() {
        assert_eq!(
            escape_data("50% slower\r\nnext: a, b: c"),
            "50%25 slower%0D%0Anext: a, b: c"
        );
    }

    #[test]
    fn property_escapes_delimiters_too() {
        assert_eq!(
            escape_property("smoke::cold-read[reader=posix,nthreads=4] 5%\n"),
            "smoke%3A%3Acold-read[reader=posix%2Cnthreads=4] 5%25%0A"
        );
    }

    #[test]
    fn control_characters_are_escaped_in_messages_and_properties() {
        assert_eq!(
            escape_data("\u{1b}[31mred\u{1b}]0;t\u{7}\u{85}\r\n"),
            "\\u{1b}[31mred\\u{1b}]0;t\\u{7}\\u{85}%0D%0A"
        );
        assert_eq!(escape_property("a\u{1}:\u{9b}"), "a\\u{1}%3A\\u{9b}");
    }

    #[test]
    fn percent_is_escaped_first_so_escapes_are_not_doubled() {
        assert_eq!(escape_property("%3A:"), "%253A%3A");
    }

    #[test]
    fn paths_are_made_relative_to_the_workspace() {
        let root = Path::new("/runner/_work/repo/repo");
        assert_eq!(
            workspace_relative(
                Path::new("/runner/_work/repo/repo/scenarios/a.yaml"),
                Some(root)
            ),
            "scenarios/a.yaml"
        );
        assert_eq!(
            workspace_relative(Path::new("./scenarios/a.yaml"), Some(root)),
            "scenarios/a.yaml"
        );
        assert_eq!(
            workspace_relative(Path::new("/elsewhere/a.yaml"), Some(root)),
            "/elsewhere/a.yaml"
        );
    }

    #[test]
    fn command_leaves_out_an_unknown_line() {
        assert_eq!(
            command("error", "s.yaml", 0, "t", "m"),
            "::error file=s.yaml,title=t::m"
        );
        assert_eq!(
            command("error", "s.yaml", 7, "t", "m"),
            "::error file=s.yaml,line=7,title=t::m"
        );
    }
}
