//! The layering, kept: no module of a crate imports a sibling module that imports it back,
//! directly or through others, at any depth (`baseline::compare` and `baseline::message` as much
//! as `report` and `commands`). Each crate's `src/` is read as text, whole files: the paths after
//! `crate::`, `super::` and `self::` (use-trees expanded) are its imports. Comments and test code
//! (files and folders named `tests`, `fixtures.rs`, `test_support`, and every `#[cfg(test)] mod`)
//! are left out: the rule is about the shipped code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every crate's `src/` folder in the workspace.
fn crate_sources() -> Vec<PathBuf> {
    let mut dirs = vec![repo().join("xtask/src")];
    for entry in std::fs::read_dir(repo().join("harness")).unwrap().flatten() {
        let src = entry.path().join("src");
        if src.is_dir() {
            dirs.push(src);
        }
    }
    dirs.sort();
    dirs
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

fn is_test_code(relative: &Path) -> bool {
    relative.components().any(|part| {
        let part = part.as_os_str().to_string_lossy();
        let stem = part.trim_end_matches(".rs");
        matches!(stem, "tests" | "fixtures" | "test_support")
    })
}

/// The module path of a file: `a/b.rs` and `a/b/mod.rs` are `[a, b]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    match last.trim_end_matches(".rs") {
        "mod" | "lib" | "main" => {}
        stem => parts.push(stem.to_string()),
    }
    parts
}

/// The shipped code of a file: no comments, and no `#[cfg(test)] mod ... { }`, wherever in the
/// file it is (code after a test module is shipped too).
fn shipped_code(text: &str) -> String {
    let mut code = String::new();
    for line in text.lines() {
        let without_comment = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        code.push_str(without_comment);
        code.push('\n');
    }
    let mut shipped = String::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        shipped.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let item = after.trim_start();
        let body = item.find(['{', ';']).map(|end| (end, item.as_bytes()[end]));
        match body {
            Some((open, b'{'))
                if item.starts_with("mod ") || item.starts_with("pub(crate) mod ") =>
            {
                let close = matching_brace(&item[open + 1..]);
                rest = item.get(open + 1 + close + 1..).unwrap_or("");
            }
            // `#[cfg(test)] mod fixtures;` and the like: a file of its own, left out by name.
            Some((end, b';'))
                if item.starts_with("mod ") || item.starts_with("pub(crate) mod ") =>
            {
                rest = &item[end + 1..];
            }
            _ => rest = after,
        }
    }
    shipped.push_str(rest);
    shipped
}

fn identifier_at(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The paths a use-tree names: `a::{b, c::{D, E}}` is `a::b`, `a::c::D` and `a::c::E`.
fn tree_paths(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    let mut prefix = Vec::new();
    let mut rest = tree;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let end = matching_brace(group);
            let mut paths = Vec::new();
            for part in split_top_level(&group[..end]) {
                for mut path in tree_paths(&part) {
                    let mut full = prefix.clone();
                    full.append(&mut path);
                    paths.push(full);
                }
            }
            return paths;
        }
        let name = identifier_at(rest);
        if name.is_empty() {
            return if prefix.is_empty() {
                Vec::new()
            } else {
                vec![prefix]
            };
        }
        prefix.push(name.to_string());
        match rest[name.len()..].trim_start().strip_prefix("::") {
            Some(next) => rest = next.trim_start(),
            None => return vec![prefix],
        }
    }
}

fn split_top_level(group: &str) -> Vec<String> {
    let (mut depth, mut current, mut parts) = (0, String::new(), Vec::new());
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts
}

/// The absolute paths `code`, in module `path`, refers to through `crate::`, `super::` and
/// `self::` (items included: the caller keeps the part that names a module).
fn imports(code: &str, path: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for (keyword, base) in [
        ("crate::", Vec::new()),
        ("self::", path.to_vec()),
        ("super::", path.to_vec()),
    ] {
        let mut rest = code;
        while let Some(at) = rest.find(keyword) {
            let preceded_by_word = rest[..at]
                .chars()
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == ':');
            let mut after = &rest[at + keyword.len()..];
            rest = after;
            if preceded_by_word {
                continue;
            }
            let mut base = base.clone();
            if keyword == "super::" {
                base.pop();
                while let Some(next) = after.strip_prefix("super::") {
                    base.pop();
                    after = next;
                }
                rest = after;
            }
            for tail in tree_paths(after) {
                let mut full = base.clone();
                full.extend(tail);
                found.push(full);
            }
        }
    }
    found
}

fn matching_brace(group: &str) -> usize {
    let mut depth = 1;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    group.len()
}

/// For each module, the sibling modules (children of the same parent) it imports, with a file
/// that does each: `baseline::compare → baseline::message`. A module stands for the files
/// under it, so `a::b::c` importing `a::d::e` is the edge `a::b → a::d`.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

fn graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files
        .iter()
        .map(|file| module_path(file.strip_prefix(src).unwrap()))
        .collect();
    let mut graph = Graph::new();
    for file in &files {
        let relative = file.strip_prefix(src).unwrap();
        if is_test_code(relative) {
            continue;
        }
        let path = module_path(relative);
        let code = shipped_code(&std::fs::read_to_string(file).unwrap());
        for target in imports(&code, &path) {
            // The module the path names: its longest prefix that is a module of this crate.
            let Some(target) = (1..=target.len())
                .rev()
                .map(|n| target[..n].to_vec())
                .find(|prefix| modules.contains(prefix))
            else {
                continue;
            };
            let split = path.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if split < path.len() && split < target.len() {
                graph
                    .entry(path[..=split].join("::"))
                    .or_default()
                    .entry(target[..=split].join("::"))
                    .or_insert_with(|| relative.display().to_string());
            }
        }
    }
    graph
}

/// A cycle through `start`, if there is one: `[start, b, c, start]`.
fn cycle_through(graph: &Graph, start: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &Graph,
        node: &str,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(node).into_iter().flat_map(|edges| edges.keys()) {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, next, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    walk(graph, start, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let mut problems = Vec::new();
    for src in crate_sources() {
        let graph = graph(&src);
        let mut reported = BTreeSet::new();
        for top in graph.keys() {
            if reported.contains(top) {
                continue;
            }
            if let Some(cycle) = cycle_through(&graph, top) {
                let steps: Vec<String> = cycle
                    .windows(2)
                    .map(|pair| {
                        format!("{} → {} ({})", pair[0], pair[1], graph[&pair[0]][&pair[1]])
                    })
                    .collect();
                reported.extend(cycle.iter().cloned());
                problems.push(format!(
                    "{}: {}\n    {}",
                    src.strip_prefix(repo()).unwrap_or(&src).display(),
                    cycle.join(" → "),
                    steps.join("\n    ")
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "import cycles between modules (move the name that closes each loop down a layer):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_scanner_sees_each_kind_of_import() {
    let code = shipped_code(
        "use crate::a::X;\nuse crate::{b, c::{D, E}};\n// use crate::commented;\nfn f() { super::super::g::h(); crate::i::j(); self::k::L; }\n#[cfg(test)]\nmod tests {\n    use crate::t;\n}\nfn after() { super::m::N; }\n",
    );
    let found: Vec<String> = imports(&code, &["top".to_string(), "sub".to_string()])
        .iter()
        .map(|path| path.join("::"))
        .collect();
    assert_eq!(
        found,
        [
            "a::X",
            "b",
            "c::D",
            "c::E",
            "i::j",
            "top::sub::k::L",
            "g::h",
            "top::m::N"
        ]
    );
}

/// `cudarc` and `libloading` (CUDA and libcufile) are dependencies of exactly one crate of the
/// workspace, so that no other crate can call into the stack under test.
#[test]
fn only_one_crate_links_cuda_and_libcufile() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for library in ["cudarc", "libloading"] {
        let users: Vec<&str> = metadata["packages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|package| {
                package["dependencies"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|dependency| dependency["name"] == library)
            })
            .map(|package| package["name"].as_str().unwrap())
            .collect();
        assert_eq!(users.len(), 1, "`{library}` is a dependency of {users:?}");
    }
}
