//! What a run ran on, as its command line chose it. Every printed bless command carries it, so
//! that, pasted, it runs on the same suites, data and report as the run that printed it (without
//! them it would run the default suite and match nothing).

use std::fmt::Write;
use std::path::PathBuf;

use super::quote;

/// The selection flags of one command line, each only where it differs from the default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    /// Every `--suite`, in order.
    pub suites: Vec<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub history: Option<PathBuf>,
    pub source: Source,
}

/// Where a bless takes its measurements from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Source {
    /// It runs the suite.
    #[default]
    Run,
    /// `--from REPORT`: one saved run.
    Report(PathBuf),
    /// `--from-history`: the runner's last passing runs.
    History,
}

impl Scope {
    /// Whether a bless of this scope reads measurements already taken instead of running.
    pub fn reads_saved(&self) -> bool {
        self.source != Source::Run
    }

    /// The same scope taking its measurements from `source`.
    pub fn with_source(&self, source: Source) -> Scope {
        Scope {
            source,
            ..self.clone()
        }
    }

    /// The flags as shell words, each with a leading space.
    pub fn args(&self) -> String {
        let path = |path: &PathBuf| quote(&path.display().to_string());
        let mut args = String::new();
        for suite in &self.suites {
            let _ = write!(args, " --suite {}", path(suite));
        }
        for (flag, value) in [
            ("--data-dir", &self.data_dir),
            ("--out", &self.out),
            ("--history", &self.history),
        ] {
            if let Some(value) = value {
                let _ = write!(args, " {flag} {}", path(value));
            }
        }
        match &self.source {
            Source::Run => {}
            Source::Report(report) => {
                let _ = write!(args, " --from {}", path(report));
            }
            Source::History => args.push_str(" --from-history"),
        }
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_differs_from_the_defaults_is_said_and_paths_are_quoted() {
        assert_eq!(Scope::default().args(), "");
        let scope = Scope {
            suites: vec!["a.yaml".into(), "my suites/b.yaml".into()],
            out: Some("ci out".into()),
            source: Source::Report("r.json".into()),
            ..Scope::default()
        };
        assert_eq!(
            scope.args(),
            " --suite a.yaml --suite 'my suites/b.yaml' --out 'ci out' --from r.json"
        );
        assert!(scope.reads_saved());
        let run = scope.with_source(Source::Run);
        assert!(!run.reads_saved());
        assert_eq!(
            run.with_source(Source::History).args(),
            " --suite a.yaml --suite 'my suites/b.yaml' --out 'ci out' --from-history"
        );
    }
}
