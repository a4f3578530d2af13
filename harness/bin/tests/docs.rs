//! Every command README.md and docs/ show is run, and its output compared where the page shows it.
//!
//! A page shows commands in ```` ```console ```` blocks: `$ ` starts a command (a line ending in `\`
//! or a here-document continues it), the lines after it are its output as the page shows it, and
//! `# exits N` at the end of a command is the exit status it must end with (0 otherwise). Output is
//! compared line by line after every number is replaced by `N` and every duration's unit by `T`
//! (timings and GB/s differ from run to run; the words, the order and the structure must not); a line `...` stands for any number of
//! lines. A block marked ```` ```console gpu-only ```` needs a GPU runner: it runs only where
//! `GDS_GATE_DOCS_GPU=1` (the weekly `docs-gpu` workflow on a GPU runner), and one marked
//! ```` ```console slurm-only ```` only where `GDS_GATE_DOCS_SLURM=1` (a Slurm login node of GPU
//! nodes). ```` ```console fixture=NAME ```` first prepares what the page says
//! the example ran against ([`fixture`]). Plain ```` ```sh ```` blocks are refused, so that no
//! command escapes the test; ```` ```yaml ```` blocks that are whole suites are validated.
//!
//! Each page runs in a sandbox of its own that looks like the repository root to the commands:
//! `scenarios/`, `harness/`, `tools/` and `docs/` link to the repository's, `baselines/` and
//! `target/` start empty, `target/release/gds-gate` is the gate Cargo built for the tests, and a
//! `cargo` on `PATH` maps `cargo xtask gds-gate|doctor|bench` and `cargo run … --bin gds-gate --`
//! onto it. `cargo test --workspace`, `.ci/run` and `cargo xtask docs` are what runs this very test,
//! so there they only succeed: the first must be `.ci/run`'s own command, checked here. Blessing
//! does not wait between runs (`GDS_GATE_BLESS_INTERVAL=0`), a confirmation run does not wait for
//! the runner, and the runner's control file is small: the commands are the same, the test is faster.

pub mod support;

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::{Command, Stdio};

use support::{GATE, repo};

/// The pages whose commands are run; `every_page_is_listed` keeps it complete.
const PAGES: [&str; 22] = [
    "README.md",
    "docs/README.md",
    "docs/architecture.md",
    "docs/concepts/bytes.md",
    "docs/concepts/path.md",
    "docs/concepts/throughput.md",
    "docs/costs.md",
    "docs/failures.md",
    "docs/glossary.md",
    "docs/guide/baselines.md",
    "docs/guide/ci.md",
    "docs/guide/first-run.md",
    "docs/guide/fleet.md",
    "docs/guide/runner.md",
    "docs/guide/upgrades.md",
    "docs/reference/baseline-file.md",
    "docs/reference/cli.md",
    "docs/reference/environment.md",
    "docs/reference/exit-codes.md",
    "docs/reference/readers.md",
    "docs/reference/report.md",
    "docs/reference/suite.md",
];

struct Block {
    line: usize,
    info: String,
    body: Vec<String>,
}

/// The fenced blocks of a Markdown page, with the line each starts on.
fn blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (number, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    line: number + 1,
                    info: info.trim().to_string(),
                    body: Vec::new(),
                })
            }
            (Some(_), Some(rest)) if rest.trim().is_empty() => blocks.extend(open.take()),
            (Some(block), _) => block.body.push(line.to_string()),
            (None, None) => {}
        }
    }
    blocks
}

struct Shown {
    line: usize,
    command: String,
    exit: i32,
    output: Vec<String>,
}

/// The commands of a console block, each with the output shown after it.
fn commands(block: &Block) -> Vec<Shown> {
    let mut shown: Vec<Shown> = Vec::new();
    let mut lines = block.body.iter().enumerate();
    while let Some((index, line)) = lines.next() {
        let Some(first) = line.strip_prefix("$ ") else {
            let last = shown.last_mut().unwrap_or_else(|| {
                panic!(
                    "line {}: output before any `$ ` command",
                    block.line + index + 1
                )
            });
            last.output.push(line.clone());
            continue;
        };
        let mut command = first.to_string();
        let heredoc = first
            .split("<<'")
            .nth(1)
            .and_then(|rest| rest.split('\'').next())
            .map(str::to_string);
        while command.ends_with('\\')
            || heredoc
                .as_ref()
                .is_some_and(|end| !command.ends_with(&format!("\n{end}")))
        {
            let Some((_, next)) = lines.next() else { break };
            command.push('\n');
            command.push_str(next);
        }
        let exit = first
            .rsplit_once("# exits ")
            .map_or(0, |(_, code)| code.trim().parse().expect("`# exits N`"));
        shown.push(Shown {
            line: block.line + index + 1,
            command,
            exit,
            output: Vec::new(),
        });
    }
    shown
}

/// A line with every run of digits (and the `.` between them) as `N`.
fn normalise(line: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = line.trim_end().chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || (chars[i] == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
            out.push('N');
            // A duration's unit goes with its number: `428 µs` one run is `3.42 ms` the next.
            let rest: String = chars[i..].iter().collect();
            for unit in [" µs", " ms", " ns", " min", " s"] {
                let Some(tail) = rest.strip_prefix(unit) else {
                    continue;
                };
                if !tail.starts_with(|c: char| c.is_alphanumeric() || c == '/') {
                    out.push_str(" T");
                    i += unit.chars().count();
                    break;
                }
            }
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// The output as a person reads it in a log: the `progress:` lines of a long trial left out (one
/// that cut a trial's line in two is joined again).
fn readable(output: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut join = false;
    for line in output.lines() {
        if line.starts_with("progress: ") {
            join = join || lines.last().is_some_and(|last| last.ends_with("... "));
            continue;
        }
        match (join, lines.last_mut()) {
            (true, Some(last)) => last.push_str(line),
            _ => lines.push(line.to_string()),
        }
        join = false;
    }
    lines
}

/// Whether `actual` matches `expected`, where an expected `...` line stands for any lines.
fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first.trim() == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(line, tail)| normalise(first) == normalise(line) && matches(rest, tail)),
    }
}

/// A page's sandbox: a folder that looks like the repository root to the commands.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let root = dir.path();
        for linked in [
            "scenarios",
            "harness",
            "tools",
            "docs",
            ".github",
            "Cargo.toml",
        ] {
            symlink(
                repo().join(linked).canonicalize().unwrap(),
                root.join(linked),
            )
            .unwrap();
        }
        fs::create_dir_all(root.join("baselines")).unwrap();
        fs::create_dir_all(root.join("target/release")).unwrap();
        symlink(GATE, root.join("target/release/gds-gate")).unwrap();
        // `.ci/run` is what runs this test: here it only succeeds.
        Sandbox::script(&root.join(".ci/run"), "exit 0\n");
        Sandbox::script(
            &root.join("bin/cargo"),
            &format!(
                r#"# cargo as the pages use it, onto the gate built for the tests.
gate={GATE}
case "$1 $2" in
    "xtask gds-gate") shift 2; exec "$gate" "$@" ;;
    "xtask doctor") shift 2; exec "$gate" doctor "$@" ;;
    "xtask bench") shift 2; exec "$gate" bench "$@" ;;
    "xtask docs"|"test --workspace") exit 0 ;;
    "build --release") exit 0 ;;
    "run --release") while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done; shift; exec "$gate" "$@" ;;
esac
echo "cargo $*: not a command the docs test can run" >&2
exit 127
"#
            ),
        );
        Sandbox { dir }
    }

    fn script(path: &Path, body: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `bash -c COMMAND` in the sandbox, stdout and stderr together as a terminal shows them.
    fn run(&self, command: &str) -> (i32, String) {
        let path = format!(
            "{}:{}",
            self.root().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut child = Command::new("timeout");
        child
            .args(["600", "bash", "-c", &format!("exec 2>&1\n{command}")])
            .current_dir(self.root())
            .stdin(Stdio::null())
            .env("PATH", path);
        for (name, _) in std::env::vars_os() {
            let name_text = name.to_string_lossy();
            if name_text.starts_with("GDS_GATE_")
                || name_text.starts_with("GITHUB_")
                || name_text == "CI"
            {
                child.env_remove(&name);
            }
        }
        child
            .env("GDS_GATE_BLESS_INTERVAL", "0")
            .env("GDS_GATE_CONFIRM_DELAY", "0")
            .env("GDS_GATE_RUNNER_WAIT", "0")
            .env("GDS_GATE_CONTROL_SIZE", "16MiB");
        let output = child.output().unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        (output.status.code().unwrap_or(-1), text)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        support::validate_reports(self.dir.path());
    }
}

/// What a page's example ran against, prepared before its block runs.
fn fixture(sandbox: &Sandbox, name: &str) {
    match name {
        // A baseline of smoke::random blessed here, then pinned at 2 GB/s: far above this host.
        "slower-baseline" => {
            let (code, output) = sandbox.run(
                "cargo xtask gds-gate bless --suite scenarios/smoke.yaml --runner ci-vm --runs 3 smoke::random",
            );
            assert_eq!(code, 0, "fixture {name}: bless failed\n{output}");
            support::pin_baseline(&sandbox.root().join("baselines/ci-vm.yaml"), 2.0);
        }
        // Two runners' artifacts as the fleet report job downloads them.
        "fleet" => {
            for runner in ["node-a", "node-b"] {
                let (code, output) = sandbox.run(&format!(
                    "cargo xtask gds-gate --suite scenarios/smoke.yaml --runner {runner} --out fleet/gds-gate-{runner} smoke::random"
                ));
                assert_eq!(code, 0, "fixture {name}: the {runner} run failed\n{output}");
            }
        }
        // A run's report.json downloaded from its artifact into the working directory.
        "artifact" => {
            let (code, output) = sandbox.run(
                "cargo xtask gds-gate --suite scenarios/smoke.yaml --out artifact smoke::random && cp artifact/report.json .",
            );
            assert_eq!(code, 0, "fixture {name}: the run failed\n{output}");
        }
        other => panic!("no fixture `{other}`"),
    }
}

/// Runs every command of `page` (relative to the repository root).
fn run_page(page: &str) {
    let text = fs::read_to_string(repo().join(page)).unwrap();
    let gpu = std::env::var_os("GDS_GATE_DOCS_GPU").is_some_and(|v| v == "1");
    let slurm = std::env::var_os("GDS_GATE_DOCS_SLURM").is_some_and(|v| v == "1");
    let sandbox = Sandbox::new();
    let ci_run = fs::read_to_string(repo().join(".ci/run")).unwrap();
    let mut failures = Vec::new();
    for block in blocks(&text) {
        let mut words = block.info.split_whitespace();
        let language = words.next().unwrap_or("");
        let marks: Vec<&str> = words.collect();
        match language {
            "sh" | "bash" | "shell" | "zsh" => failures.push(format!(
                "{page}:{}: a ```{language} block: show commands in ```console (run by this test) or ```console gpu-only",
                block.line
            )),
            "yaml" if block.body.iter().any(|line| line.starts_with("scenarios:")) => {
                let suite = sandbox.root().join(format!("suite-{}.yaml", block.line));
                fs::write(&suite, block.body.join("\n")).unwrap();
                let (code, output) = sandbox.run(&format!("cargo xtask gds-gate validate {}", suite.display()));
                if code != 0 {
                    failures.push(format!("{page}:{}: the suite does not validate:\n{output}", block.line));
                }
            }
            "console" => {
                let skipped = if marks.contains(&"gpu-only") && !gpu {
                    Some("GPU-only")
                } else if marks.contains(&"slurm-only") && !slurm {
                    Some("Slurm-only")
                } else {
                    None
                };
                if let Some(kind) = skipped {
                    for shown in commands(&block) {
                        eprintln!("{page}:{}: {kind}, not run here: {}", shown.line, shown.command);
                    }
                    continue;
                }
                if let Some(name) = marks.iter().find_map(|mark| mark.strip_prefix("fixture=")) {
                    fixture(&sandbox, name);
                }
                for shown in commands(&block) {
                    let bare = shown.command.split(" #").next().unwrap().trim();
                    if bare.starts_with("cargo test") {
                        assert!(
                            ci_run.lines().any(|line| line.trim().starts_with(bare)),
                            "{page}:{}: `{bare}` is not what .ci/run runs",
                            shown.line
                        );
                    }
                    let (code, output) = sandbox.run(&shown.command);
                    let actual = readable(&output);
                    let output_ok = shown.output.is_empty() || matches(&shown.output, &actual);
                    if code != shown.exit || !output_ok {
                        failures.push(format!(
                            "{page}:{}: `{}` exited {code} (the page says {}){}\n--- its output\n{}",
                            shown.line,
                            shown.command,
                            shown.exit,
                            if output_ok { "" } else { "; its output is not the page's" },
                            actual.join("\n")
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The figures README.md states about disk needs are the doctor's (on this host for the smoke
/// suite; from the H200 runner's saved facts for the default suite).
#[test]
fn readme_disk_figures_are_the_doctors() {
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let doctor = |suite: &str, facts: Option<&str>| {
        let mut command = Command::new(GATE);
        command
            .args(["doctor", "--json", "--suite", suite])
            .current_dir(repo());
        match facts {
            Some(facts) => command.args(["--facts", facts]),
            None => command.args(["--data-dir", env!("CARGO_TARGET_TMPDIR")]),
        };
        let output = String::from_utf8(command.output().unwrap().stdout).unwrap();
        let at = output
            .find("the selected suites read")
            .expect("a free space row");
        let row = &output[at..];
        let total = row
            .split(" in all")
            .next()
            .unwrap()
            .rsplit(", ")
            .next()
            .unwrap()
            .to_string();
        let written = row
            .split("the writing trials keep ")
            .nth(1)
            .map(|rest| rest.split(" of files").next().unwrap().to_string());
        (total, written)
    };
    let (smoke, _) = doctor("scenarios/smoke.yaml", None);
    let stated = format!("`scenarios/smoke.yaml` needs {}", smoke.replace(".00", ""));
    assert!(readme.contains(&stated), "README should say `{stated}`");
    let (default, written) = doctor(
        "scenarios/default.yaml",
        Some("harness/gate/tests/fixtures/doctor/h200.json"),
    );
    let stated = format!(
        "needs {default} of generated files and up to {} more",
        written.unwrap()
    );
    assert!(readme.contains(&stated), "README should say `{stated}`");
}

#[test]
fn every_page_is_listed() {
    let mut found = vec!["README.md".to_string()];
    let mut pending = vec![repo().join("docs")];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path.strip_prefix(repo()).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    let mut listed: Vec<String> = PAGES.iter().map(|p| p.to_string()).collect();
    listed.sort();
    assert_eq!(found, listed, "add new pages to PAGES in this file");
}

macro_rules! pages {
    ($($name:ident: $page:expr),* $(,)?) => {
        $(#[test] fn $name() { run_page($page); })*
    };
}

pages! {
    readme: "README.md",
    docs_index: "docs/README.md",
    architecture: "docs/architecture.md",
    concepts_bytes: "docs/concepts/bytes.md",
    concepts_path: "docs/concepts/path.md",
    concepts_throughput: "docs/concepts/throughput.md",
    costs: "docs/costs.md",
    failures: "docs/failures.md",
    glossary: "docs/glossary.md",
    guide_baselines: "docs/guide/baselines.md",
    guide_ci: "docs/guide/ci.md",
    guide_first_run: "docs/guide/first-run.md",
    guide_fleet: "docs/guide/fleet.md",
    guide_runner: "docs/guide/runner.md",
    reference_baseline_file: "docs/reference/baseline-file.md",
    reference_cli: "docs/reference/cli.md",
    reference_environment: "docs/reference/environment.md",
    reference_exit_codes: "docs/reference/exit-codes.md",
    reference_readers: "docs/reference/readers.md",
    reference_report: "docs/reference/report.md",
    reference_suite: "docs/reference/suite.md",
}

/// README.md stays a first screen: at most 150 lines, none over 200 characters outside code blocks.
#[test]
fn readme_is_short() {
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(
        readme.lines().count() <= 150,
        "README.md has {} lines",
        readme.lines().count()
    );
    let mut in_code = false;
    for (number, line) in readme.lines().enumerate() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code {
            let length = line.chars().count();
            assert!(
                length <= 200,
                "README.md:{}: {length} characters",
                number + 1
            );
        }
    }
}
