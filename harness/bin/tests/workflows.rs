//! The GitHub workflows: their hardening checked on the parsed YAML, and the gate commands they
//! run, run here as far as a host without a GPU can.
//!
//! How a workflow's command maps to what runs here: a step runs `cargo xtask gds-gate ARGS` from
//! the repository root, and xtask builds the gate and execs `gds-gate ARGS` there. These tests take
//! `ARGS` from the workflow's text, substitute the step's `$VARIABLES` (with `${{ matrix.* }}` and
//! `${{ inputs.* }}` resolved to the first matrix value or input option), and run them through the
//! gate Cargo built for the tests (`CARGO_BIN_EXE_gds-gate`) from the repository root, with
//! GDS_GATE_OUT and GDS_GATE_DATA_DIR pointing into a scratch directory. A GPU run is proved by
//! adding `--list` to it: every flag parses and the trials expand, and nothing needs a GPU.

pub mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_serde::Value;

const GATE: &str = env!("CARGO_BIN_EXE_gds-gate");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Workflow {
    file: &'static str,
    text: String,
    yaml: Value,
}

fn workflow(file: &'static str) -> Workflow {
    let path = repo().join(".github/workflows").join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    let yaml = yaml_serde::from_str(&text)
        .unwrap_or_else(|error| panic!("{} is not valid YAML: {error}", path.display()));
    Workflow { file, text, yaml }
}

const WORKFLOWS: [&str; 3] = ["ci.yml", "gds-gate.yml", "refresh-baselines.yml"];

fn all() -> Vec<Workflow> {
    WORKFLOWS.iter().map(|file| workflow(file)).collect()
}

impl Workflow {
    fn jobs(&self) -> Vec<(String, &Value)> {
        self.yaml["jobs"]
            .as_mapping()
            .unwrap_or_else(|| panic!("{}: no jobs", self.file))
            .iter()
            .map(|(id, job)| (id.as_str().unwrap().to_string(), job))
            .collect()
    }

    fn job(&self, id: &str) -> &Value {
        let job = &self.yaml["jobs"][id];
        assert!(!job.is_null(), "{}: no job `{id}`", self.file);
        job
    }

    /// `(job id, step)` for every step of every job.
    fn steps(&self) -> Vec<(String, &Value)> {
        self.jobs()
            .into_iter()
            .flat_map(|(id, job)| {
                job["steps"]
                    .as_sequence()
                    .into_iter()
                    .flatten()
                    .map(move |step| (id.clone(), step))
            })
            .collect()
    }

    fn steps_using(&self, action: &str) -> Vec<(String, &Value)> {
        self.steps()
            .into_iter()
            .filter(|(_, step)| {
                step["uses"]
                    .as_str()
                    .is_some_and(|uses| uses.starts_with(&format!("{action}@")))
            })
            .collect()
    }

    /// The value of an expression the tests can resolve: the first matrix value of the job, the
    /// first option (or the default) of a dispatch input. Other expressions are kept as they are
    /// (and a command that uses one fails in [`shell_words`]).
    fn resolve(&self, job: &Value, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${{") {
            let Some(end) = rest[start..].find("}}").map(|end| start + end + 2) else {
                break;
            };
            out.push_str(&rest[..start]);
            let expression = rest[start + 3..end - 2].trim();
            let value = if let Some(key) = expression.strip_prefix("matrix.") {
                job["strategy"]["matrix"][key][0]
                    .as_str()
                    .map(str::to_string)
            } else if let Some(key) = expression.strip_prefix("inputs.") {
                let input = &self.yaml["on"]["workflow_dispatch"]["inputs"][key];
                input["options"][0]
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| yaml_text(&input["default"]))
            } else {
                None
            };
            out.push_str(value.as_deref().unwrap_or(&rest[start..end]));
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
    }

    /// Every `cargo xtask gds-gate ...` line of a `run:` script, with its step's environment.
    fn gate_commands(&self) -> Vec<GateCommand> {
        let mut commands = Vec::new();
        for (job_id, job) in self.jobs() {
            for step in job["steps"].as_sequence().into_iter().flatten() {
                let Some(script) = step["run"].as_str() else {
                    continue;
                };
                let mut env = BTreeMap::new();
                for scope in [&self.yaml["env"], &job["env"], &step["env"]] {
                    for (key, value) in scope.as_mapping().into_iter().flatten() {
                        let value = yaml_text(value).unwrap_or_default();
                        env.insert(key.as_str().unwrap().to_string(), self.resolve(job, &value));
                    }
                }
                for line in script.lines() {
                    let Some(rest) = line.trim().strip_prefix("cargo xtask gds-gate") else {
                        continue;
                    };
                    // What follows a pipe is where the output goes (`| tee log`), not the gate.
                    let command = rest.split(" | ").next().unwrap_or(rest);
                    commands.push(GateCommand {
                        job: job_id.clone(),
                        args: shell_words(command, &env),
                        env: env.clone(),
                    });
                }
            }
        }
        commands
    }
}

fn yaml_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

#[derive(Debug)]
struct GateCommand {
    job: String,
    /// The gate's arguments (what follows `cargo xtask gds-gate`).
    args: Vec<String>,
    env: BTreeMap<String, String>,
}

/// Bash-style words: quotes, `$VAR` / `${VAR}` from `env`, and `"${array[@]}"` as no words (the
/// optional flags a step collects, none when the inputs are left at their defaults).
fn shell_words(text: &str, env: &BTreeMap<String, String>) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, ' ' | '\t') => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None | Some('"'), '$') => {
                let mut name = String::new();
                if chars.peek() == Some(&'{') {
                    chars.next();
                    for c in chars.by_ref() {
                        if c == '}' {
                            break;
                        }
                        name.push(c);
                    }
                } else {
                    while let Some(&c) = chars.peek() {
                        if !(c.is_ascii_alphanumeric() || c == '_') {
                            break;
                        }
                        name.push(c);
                        chars.next();
                    }
                }
                if name.ends_with("[@]") {
                    // An empty array in double quotes is no word at all.
                    if word.is_empty() && quote == Some('"') && chars.peek() == Some(&'"') {
                        chars.next();
                        quote = None;
                        in_word = false;
                    }
                    continue;
                }
                let value = env.get(&name).unwrap_or_else(|| {
                    panic!("`${name}` in `{text}` is not set by the workflow or the step")
                });
                assert!(
                    !value.contains("${{"),
                    "`${name}` in `{text}` is `{value}`, which the tests cannot resolve"
                );
                word.push_str(value);
                in_word = true;
            }
            (_, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// A scratch area on the build disk for the gate's data and reports.
struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new() -> Scratch {
        Scratch(tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap())
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
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

/// Runs the gate as xtask would (from the repository root), with the step's environment, the
/// reports and data in `scratch`, and none of this machine's own GDS_GATE_* or CI settings.
fn run_gate(command: &GateCommand, extra: &[&str], scratch: &Scratch) -> Run {
    let mut gate = Command::new(GATE);
    gate.args(&command.args)
        .args(extra)
        .current_dir(repo())
        .stdin(std::process::Stdio::null());
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("GDS_GATE_") || key.starts_with("GITHUB_") || key == "CI" {
            gate.env_remove(key);
        }
    }
    gate.envs(&command.env)
        .env("GDS_GATE_OUT", scratch.path("out"))
        .env("GDS_GATE_DATA_DIR", scratch.path("data"))
        .env("GDS_GATE_BASELINES", scratch.path("baselines"))
        .env("GDS_GATE_HISTORY", scratch.path("history.jsonl"))
        // The runner's control at test size (256 MiB by default): the command is the workflow's.
        .env("GDS_GATE_CONTROL_SIZE", "1MiB");
    let output = gate.output().unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn the_command(workflow: &Workflow, job: &str) -> GateCommand {
    the_subcommand(workflow, job, None)
}

/// The one gate command of `job` whose subcommand is `subcommand` (any, with `None`).
fn the_subcommand(workflow: &Workflow, job: &str, subcommand: Option<&str>) -> GateCommand {
    let mut commands: Vec<GateCommand> = workflow
        .gate_commands()
        .into_iter()
        .filter(|command| command.job == job)
        .filter(|command| {
            subcommand.is_none_or(|s| command.args.first().map(String::as_str) == Some(s))
        })
        .collect();
    assert_eq!(
        commands.len(),
        1,
        "{}: job `{job}` should run the gate once: {commands:?}",
        workflow.file
    );
    commands.remove(0)
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_sequence()
        .into_iter()
        .flatten()
        .filter_map(|item| item.as_str().map(str::to_string))
        .collect()
}

// ---- hardening -------------------------------------------------------------------------------

#[test]
fn every_action_is_pinned_to_a_full_commit_sha_with_its_version_beside_it() {
    let mut pins: BTreeMap<String, (String, String)> = BTreeMap::new();
    for workflow in all() {
        for (job, step) in workflow.steps() {
            let Some(uses) = step["uses"].as_str() else {
                continue;
            };
            let (action, sha) = uses
                .split_once('@')
                .unwrap_or_else(|| panic!("{}/{job}: `{uses}` is not pinned", workflow.file));
            assert!(
                sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
                "{}/{job}: `{uses}` must be pinned to a full commit SHA",
                workflow.file
            );
            let line = workflow
                .text
                .lines()
                .find(|line| line.contains(uses))
                .unwrap();
            let version = line
                .split_once("# v")
                .map(|(_, version)| version.trim().to_string())
                .unwrap_or_else(|| {
                    panic!(
                        "{}: `{uses}` needs its version as a `# vX.Y.Z` comment",
                        workflow.file
                    )
                });
            let previous = pins.insert(action.to_string(), (sha.to_string(), version.clone()));
            if let Some((previous_sha, previous_version)) = previous {
                assert_eq!(
                    (previous_sha.as_str(), previous_version.as_str()),
                    (sha, version.as_str()),
                    "{action} is pinned to two versions; use one everywhere"
                );
            }
        }
    }
    assert!(pins.contains_key("actions/checkout"), "{pins:?}");
}

#[test]
fn workflows_read_only_and_write_permissions_only_on_the_pull_request_job() {
    for workflow in all() {
        let top = workflow.yaml["permissions"]
            .as_mapping()
            .unwrap_or_else(|| {
                panic!(
                    "{}: set `permissions: contents: read` at the top",
                    workflow.file
                )
            });
        assert_eq!(top.len(), 1, "{}: {top:?}", workflow.file);
        assert_eq!(workflow.yaml["permissions"]["contents"], "read");
        for (id, job) in workflow.jobs() {
            if workflow.file == "refresh-baselines.yml" && id == "pull-request" {
                let granted = job["permissions"].as_mapping().unwrap();
                assert_eq!(granted.len(), 3, "{granted:?}");
                assert_eq!(job["permissions"]["contents"], "write");
                assert_eq!(job["permissions"]["pull-requests"], "write");
                // To dispatch ci.yml on the pull request's branch, so that its checks run.
                assert_eq!(job["permissions"]["actions"], "write");
                // The token that can push never reaches a self-hosted GPU runner.
                assert_eq!(job["runs-on"], "ubuntu-24.04");
            } else {
                assert!(
                    job["permissions"].is_null(),
                    "{}/{id} must not widen permissions",
                    workflow.file
                );
            }
        }
    }
}

#[test]
fn checkouts_keep_no_credentials() {
    for workflow in all() {
        let checkouts = workflow.steps_using("actions/checkout");
        assert!(!checkouts.is_empty(), "{}", workflow.file);
        for (job, step) in checkouts {
            assert_eq!(
                step["with"]["persist-credentials"], false,
                "{}/{job}: checkout with `persist-credentials: false`",
                workflow.file
            );
        }
    }
}

#[test]
fn artifacts_are_uploaded_after_failures_under_names_unique_per_matrix_cell() {
    for workflow in all() {
        let mut names = Vec::new();
        for (job_id, step) in workflow.steps_using("actions/upload-artifact") {
            let job = workflow.job(&job_id);
            assert_eq!(
                step["if"], "${{ !cancelled() }}",
                "{}/{job_id}: upload with `if: ${{{{ !cancelled() }}}}`",
                workflow.file
            );
            let name = step["with"]["name"].as_str().unwrap().to_string();
            for (key, _) in job["strategy"]["matrix"].as_mapping().into_iter().flatten() {
                let key = key.as_str().unwrap();
                assert!(
                    name.contains(&format!("${{{{ matrix.{key} }}}}")),
                    "{}/{job_id}: artifact `{name}` must name the matrix cell (matrix.{key})",
                    workflow.file
                );
            }
            assert!(
                !names.contains(&name),
                "{}: two artifacts named `{name}`",
                workflow.file
            );
            names.push(name);
        }
    }
}

// ---- what each workflow is for -----------------------------------------------------------------

#[test]
fn ci_runs_the_checks_then_the_smoke_gate_and_publishes_junit() {
    let ci = workflow("ci.yml");
    let runs: Vec<String> = ci
        .steps()
        .iter()
        .filter_map(|(_, step)| step["run"].as_str().map(str::to_string))
        .collect();
    assert!(runs.iter().any(|run| run == ".ci/run"), "{runs:?}");
    let smoke = the_command(&ci, "checks");
    assert_eq!(smoke.args, ["--suite", "scenarios/smoke.yaml"]);
    let junit = ci.steps_using("mikepenz/action-junit-report");
    assert_eq!(junit.len(), 1);
    assert_eq!(
        junit[0].1["with"]["report_paths"],
        "target/gds-gate/junit.xml"
    );
    assert!(!ci.steps_using("Swatinem/rust-cache").is_empty());
    // The bless pull request's checks are started by dispatching this workflow.
    assert!(
        ci.yaml["on"]
            .as_mapping()
            .unwrap()
            .keys()
            .any(|key| key.as_str() == Some("workflow_dispatch"))
    );
}

/// CI keeps itself current and honest: dependabot moves the action pins and the crates, the
/// toolchain is pinned, and the declared oldest Rust is built by a job of its own.
#[test]
fn ci_keeps_its_pins_current_and_checks_the_declared_rust_version() {
    let dependabot: Value = yaml_serde::from_str(
        &std::fs::read_to_string(repo().join(".github/dependabot.yml")).unwrap(),
    )
    .unwrap();
    let ecosystems: Vec<String> = dependabot["updates"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|update| update["package-ecosystem"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ecosystems, ["github-actions", "cargo"]);
    let toolchain = std::fs::read_to_string(repo().join("rust-toolchain.toml")).unwrap();
    let channel = toolchain
        .lines()
        .find_map(|line| line.strip_prefix("channel = "))
        .unwrap();
    assert!(
        channel.trim_matches('"').split('.').count() == 3,
        "pin an exact release, not {channel}"
    );
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("rust-version = \"1.88\""),
        "libloading 0.9 needs 1.88"
    );
    let ci = workflow("ci.yml");
    let msrv = ci.job("msrv")["steps"].as_sequence().unwrap().clone();
    let script = msrv.iter().find_map(|step| step["run"].as_str()).unwrap();
    assert!(
        script.contains("cargo +\"$msrv\" check --workspace --all-targets --locked"),
        "{script}"
    );
    let refresh = workflow("refresh-baselines.yml");
    let dispatch = refresh
        .steps()
        .into_iter()
        .filter_map(|(_, step)| step["run"].as_str().map(str::to_string))
        .find(|run| run.contains("gh workflow run ci.yml"));
    assert!(dispatch.is_some_and(|run| run.contains("--ref \"$BRANCH\"")));
}

#[test]
fn the_gpu_gate_runs_on_labelled_gpu_runners_nightly_and_for_labelled_pull_requests() {
    let gate = workflow("gds-gate.yml");
    let on = &gate.yaml["on"];
    assert!(on["schedule"][0]["cron"].is_string());
    assert!(!on["pull_request"].is_null());
    let job = gate.job("gate");
    assert_eq!(
        strings(&job["runs-on"]),
        ["self-hosted", "gpu", "gds", "${{ matrix.runner }}"]
    );
    assert_eq!(job["env"]["GDS_GATE_RUNNER"], "${{ matrix.runner }}");
    let condition = job["if"].as_str().unwrap();
    for part in [
        "'run-gds-gate'",
        "github.event.pull_request.head.repo.full_name == github.repository",
    ] {
        assert!(condition.contains(part), "{condition}");
    }
    let uploads = gate.steps_using("actions/upload-artifact");
    let paths = uploads[0].1["with"]["path"].as_str().unwrap();
    for wanted in [
        "target/gds-gate/report.json",
        "target/gds-gate/junit.xml",
        "target/gds-gate/summary.md",
        "target/gds-gate/plots/*.svg",
        // The evidence a failure points at (result.json, stderr.log, cufile.log): the next run
        // deletes the trial folders.
        "target/gds-gate/trials/**/*.log",
        "target/gds-gate/trials/**/*.json",
    ] {
        assert!(paths.lines().any(|line| line.trim() == wanted), "{paths}");
    }
    // The history (the gate's default place, a hidden folder) in an artifact of its own, whose
    // name the fleet report's `gds-gate-*` does not take for a runner's reports.
    let history = &uploads[1].1["with"];
    assert_eq!(history["path"], gds_gate::baseline::history::DEFAULT);
    assert_eq!(history["include-hidden-files"], true);
    assert!(
        !history["name"].as_str().unwrap().starts_with("gds-gate-"),
        "{history:?}"
    );
}

/// The self-hosted jobs keep target/ and the run history between runs: their clean step spares
/// both, and the history's folder is ignored by git (so `git clean -x` is what could delete it).
#[test]
fn self_hosted_jobs_keep_the_run_history_between_runs() {
    for file in ["gds-gate.yml", "refresh-baselines.yml"] {
        let workflow = workflow(file);
        let cleans: Vec<String> = workflow
            .steps()
            .into_iter()
            .filter_map(|(_, step)| step["run"].as_str().map(str::to_string))
            .filter(|run| run.starts_with("git clean"))
            .collect();
        assert_eq!(cleans.len(), 1, "{file}: {cleans:?}");
        for kept in ["--exclude=/target/", "--exclude=/.gds-gate/"] {
            assert!(cleans[0].contains(kept), "{file}: {}", cleans[0]);
        }
    }
    let ignored = std::fs::read_to_string(repo().join(".gitignore")).unwrap();
    assert!(
        ignored.lines().any(|line| line == "/.gds-gate/"),
        "{ignored}"
    );
}

#[test]
fn every_runner_profile_is_in_the_matrix_the_bless_choice_and_actionlint_labels() {
    let matrix = strings(&workflow("gds-gate.yml").job("gate")["strategy"]["matrix"]["runner"]);
    let refresh = workflow("refresh-baselines.yml");
    let choice = strings(&refresh.yaml["on"]["workflow_dispatch"]["inputs"]["runner"]["options"]);
    assert!(!matrix.is_empty());
    assert_eq!(
        matrix, choice,
        "gds-gate.yml's matrix and refresh-baselines.yml's runner options must list the same runners"
    );
    let config: Value = yaml_serde::from_str(
        &std::fs::read_to_string(repo().join(".github/actionlint.yaml")).unwrap(),
    )
    .unwrap();
    let labels = strings(&config["self-hosted-runner"]["labels"]);
    for label in ["gpu", "gds"]
        .iter()
        .copied()
        .chain(matrix.iter().map(String::as_str))
    {
        assert!(
            labels.iter().any(|known| known == label),
            "add `{label}` to .github/actionlint.yaml's self-hosted-runner labels"
        );
    }
}

#[test]
fn refresh_baselines_is_dispatched_by_hand_and_only_opens_a_pull_request() {
    let refresh = workflow("refresh-baselines.yml");
    let on = refresh.yaml["on"].as_mapping().unwrap();
    assert_eq!(on.len(), 1, "only workflow_dispatch: {on:?}");
    assert_eq!(
        refresh.yaml["on"]["workflow_dispatch"]["inputs"]["runner"]["type"],
        "choice"
    );
    let bless = refresh.job("bless");
    assert_eq!(
        strings(&bless["runs-on"]),
        ["self-hosted", "gpu", "gds", "${{ inputs.runner }}"]
    );
    // The recommended flow by default: the baseline from the runner's accumulated gate runs.
    let inputs = &refresh.yaml["on"]["workflow_dispatch"]["inputs"];
    assert_eq!(inputs["from-history"]["default"], true);
    assert_eq!(bless["env"]["FROM_HISTORY"], "${{ inputs.from-history }}");
    let script = refresh
        .steps()
        .into_iter()
        .filter_map(|(_, step)| step["run"].as_str().map(str::to_string))
        .find(|run| run.contains("gds-gate bless"))
        .unwrap();
    assert!(
        script.contains(r#"if [[ "$FROM_HISTORY" == true ]]; then flags+=(--from-history); fi"#),
        "{script}"
    );
    for (job, step) in refresh.steps() {
        let script = step["run"].as_str().unwrap_or("");
        assert!(
            !script.contains("git push") && !script.contains("gh pr merge"),
            "{job}: only the pull request action pushes, and only its own branch"
        );
    }
    let create = refresh.steps_using("peter-evans/create-pull-request");
    assert_eq!(create.len(), 1);
    let with = &create[0].1["with"];
    let branch = with["branch"].as_str().unwrap();
    assert!(branch.starts_with("gds-gate/bless-"), "{branch}");
    assert!(with["base"].is_null(), "the base is the dispatched branch");
    assert_eq!(
        with["add-paths"],
        "baselines/${{ inputs.runner }}.yaml\nbaselines/limitations/${{ inputs.runner }}.yaml\n"
    );
}

#[test]
fn limitations_are_recorded_on_request_with_ci_overridden_and_reach_the_pull_request() {
    let refresh = workflow("refresh-baselines.yml");
    let inputs = &refresh.yaml["on"]["workflow_dispatch"]["inputs"];
    assert_eq!(inputs["record-limitations"]["default"], false);
    let command = the_subcommand(&refresh, "bless", Some("limitation"));
    assert_eq!(
        command.args,
        [
            "limitation",
            "record",
            "--require-gpu",
            "--runner",
            "h200-nvme"
        ]
    );
    assert_eq!(command.env.get("CI").map(String::as_str), Some("false"));
    let upload = refresh.steps_using("actions/upload-artifact");
    let paths = upload[0].1["with"]["path"].as_str().unwrap();
    assert!(
        paths.contains("baselines/limitations/${{ inputs.runner }}.yaml"),
        "{paths}"
    );
    let mut in_ci = command;
    in_ci.env.insert("CI".into(), "true".into());
    let scratch = Scratch::new();
    let run = run_gate(&in_ci, &[], &scratch);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("refusing to record"), "{run:?}");
}

// ---- the commands, run ------------------------------------------------------------------------

#[test]
fn shell_words_expand_like_bash() {
    let env = BTreeMap::from([
        ("R".to_string(), "h200 nvme".to_string()),
        ("S".to_string(), "x".to_string()),
    ]);
    assert_eq!(
        shell_words(
            r#"bless --runner "$R" "${flags[@]}" --x='a b' ${S}/$S"#,
            &env
        ),
        ["bless", "--runner", "h200 nvme", "--x=a b", "x/x"]
    );
}

#[test]
fn ci_smoke_gate_command_passes_on_a_host_without_a_gpu() {
    let ci = workflow("ci.yml");
    let smoke = the_command(&ci, "checks");
    let scratch = Scratch::new();
    let run = run_gate(&smoke, &[], &scratch);
    assert_eq!(run.code, 0, "{run:?}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scratch.path("out/report.json")).unwrap())
            .unwrap();
    assert!(report["totals"]["passed"].as_u64().unwrap() > 0, "{run:?}");
    assert!(scratch.path("out/junit.xml").exists());
}

#[test]
fn gpu_gate_command_parses_and_lists_its_trials() {
    let gate = workflow("gds-gate.yml");
    let command = the_command(&gate, "gate");
    assert_eq!(command.args, ["--require-gpu", "--runner", "h200-nvme"]);
    let scratch = Scratch::new();
    let run = run_gate(&command, &["--list"], &scratch);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("default::"), "{run:?}");
    assert!(
        !scratch.path("data").exists(),
        "--list must not generate data"
    );
}

#[test]
fn bless_command_parses_and_runs_only_with_ci_overridden() {
    let refresh = workflow("refresh-baselines.yml");
    let command = the_subcommand(&refresh, "bless", Some("bless"));
    assert_eq!(
        command.args,
        ["bless", "--require-gpu", "--runner", "h200-nvme"]
    );
    assert_eq!(
        command.env.get("CI").map(String::as_str),
        Some("false"),
        "bless refuses while CI is set; the bless step must override it"
    );
    let scratch = Scratch::new();
    let run = run_gate(&command, &["--list"], &scratch);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("default::"), "{run:?}");

    // Without the override (as in any other CI step) it refuses, having parsed every flag.
    let mut in_ci = command;
    in_ci.env.insert("CI".into(), "true".into());
    let run = run_gate(&in_ci, &[], &scratch);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("refusing to write baselines in CI"),
        "{run:?}"
    );
}

#[test]
fn fleet_merge_command_merges_the_runners_reports() {
    let gate = workflow("gds-gate.yml");
    let mut command = the_command(&gate, "report");
    let scratch = Scratch::new();
    let suite = scratch.path("suite.yaml");
    std::fs::write(
        &suite,
        "suite: tiny\nscenarios:\n  - name: read\n    files: { size: 1MiB, seed: 3 }\n    repetitions: 1\n",
    )
    .unwrap();
    // Two runners' artifacts, as download-artifact lays them out under fleet/.
    let fleet = scratch.path("fleet");
    for runner in ["a", "b"] {
        let out = fleet.join(format!("gds-gate-{runner}"));
        let status = Command::new(GATE)
            .args(["--suite", suite.to_str().unwrap(), "--runner", runner])
            .arg("--out")
            .arg(&out)
            .arg("--data-dir")
            .arg(scratch.path("data"))
            .arg("--baselines")
            .arg(scratch.path("baselines"))
            .current_dir(repo())
            .env("GDS_GATE_HISTORY", scratch.path("history.jsonl"))
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .unwrap();
        assert!(status.status.success(), "{status:?}");
    }
    // `fleet/*` is the shell's glob; `--out` is made absolute into the scratch.
    let at = command
        .args
        .iter()
        .position(|arg| arg == "fleet/*")
        .expect("the merge reads fleet/*");
    command.args.splice(
        at..=at,
        ["gds-gate-a", "gds-gate-b"].map(|dir| fleet.join(dir).display().to_string()),
    );
    let out_at = command.args.iter().position(|arg| arg == "--out").unwrap() + 1;
    command.args[out_at] = scratch.path("merged").display().to_string();
    let run = run_gate(&command, &[], &scratch);
    assert_eq!(run.code, 0, "{run:?}");
    let merged = std::fs::read_to_string(scratch.path("merged/merged-summary.md")).unwrap();
    assert!(
        merged.contains("a/tiny::read") && merged.contains("b/tiny::read"),
        "{merged}"
    );
}

/// Every report this test wrote matches the published schema.
impl Drop for Scratch {
    fn drop(&mut self) {
        support::validate_reports(self.0.path());
    }
}
