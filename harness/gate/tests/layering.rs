//! The layering, kept: no top-level module of a crate imports a module that imports it back,
//! directly or through others. Each crate's `src/` is read as text: `crate::NAME`, the names of
//! `use crate::{...}` and `super::` paths that climb out of a top-level module are its imports.
//! Comments and test code (files and folders named `tests`, `fixtures.rs`, `test_support`, and a
//! file's `#[cfg(test)] mod tests { ... }`) are left out: the rule is about the shipped code.

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

/// The shipped code of a file: no comments, no `#[cfg(test)] mod ... { }` at its end.
fn shipped_code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut code = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        if line.starts_with("#[cfg(test)]") {
            let next = lines.get(i + 1).map_or("", |l| l.trim());
            if next.contains("mod ") && next.ends_with('{') {
                break;
            }
        }
        let without_comment = match lines[i].find("//") {
            Some(at) => &lines[i][..at],
            None => lines[i],
        };
        code.push_str(without_comment);
        code.push('\n');
        i += 1;
    }
    code
}

fn identifier_at(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// Names at the top level of a `{ ... }` group.
fn group_names(group: &str) -> Vec<String> {
    let (mut depth, mut current, mut names) = (0, String::new(), Vec::new());
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => names.push(std::mem::take(&mut current)),
            _ if depth == 0 => current.push(c),
            _ => {}
        }
    }
    names.push(current);
    names
        .iter()
        .map(|name| identifier_at(name.trim()).to_string())
        .filter(|name| !name.is_empty())
        .collect()
}

/// The top-level modules `code` (in module `path`) refers to.
fn imports(code: &str, path: &[String]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        let preceded_by_word = rest[..at]
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
        if !preceded_by_word {
            if let Some(group) = after.strip_prefix('{') {
                let end = matching_brace(group);
                found.extend(group_names(&group[..end]));
            } else {
                found.insert(identifier_at(after).to_string());
            }
        }
        rest = after;
    }
    // `super::super::x` from `a/b.rs` ([a, b]) climbs to the crate root and names `x`.
    let mut rest = code;
    while let Some(at) = rest.find("super::") {
        let mut after = &rest[at..];
        let mut climbs = 0;
        while let Some(next) = after.strip_prefix("super::") {
            climbs += 1;
            after = next;
        }
        if climbs >= path.len() {
            if let Some(group) = after.strip_prefix('{') {
                let end = matching_brace(group);
                found.extend(group_names(&group[..end]));
            } else {
                found.insert(identifier_at(after).to_string());
            }
        }
        rest = &rest[at + "super::".len() * climbs..];
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

/// For each top-level module, the modules it imports and a file that does each.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

fn graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let tops: BTreeSet<String> = files
        .iter()
        .filter_map(|file| {
            module_path(file.strip_prefix(src).unwrap())
                .first()
                .cloned()
        })
        .collect();
    let mut graph = Graph::new();
    for file in &files {
        let relative = file.strip_prefix(src).unwrap();
        if is_test_code(relative) {
            continue;
        }
        let path = module_path(relative);
        let Some(top) = path.first() else { continue };
        let code = shipped_code(&std::fs::read_to_string(file).unwrap());
        for target in imports(&code, &path) {
            if target != *top && tops.contains(&target) {
                graph
                    .entry(top.clone())
                    .or_default()
                    .entry(target)
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
        "import cycles between top-level modules (move the name that closes each loop down a layer):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_scanner_sees_each_kind_of_import() {
    let code = shipped_code(
        "use crate::a::X;\nuse crate::{b, c::{D, E}};\n// use crate::commented;\nfn f() { super::super::g::h(); crate::i::j(); }\n#[cfg(test)]\nmod tests {\n    use crate::k;\n}\n",
    );
    let found = imports(&code, &["top".to_string(), "sub".to_string()]);
    let found: Vec<&str> = found.iter().map(String::as_str).collect();
    assert_eq!(found, ["a", "b", "c", "g", "i"]);
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
