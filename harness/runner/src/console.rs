//! What a command tells the user on stderr, besides progress and the error `main` prints: one
//! place, so that every line is escaped once (see [`crate::escape::terminal`]) and worded alike
//! (`note: …`, `warning: …`, `reports: …`).

use std::path::PathBuf;

use crate::escape::terminal;

/// A line (or a rendered block) as it is.
pub fn say(text: &str) {
    let text = terminal(text);
    if text.ends_with('\n') {
        eprint!("{text}");
    } else {
        eprintln!("{text}");
    }
}

/// Worth knowing, nothing to do.
pub fn note(text: &str) {
    say(&format!("note: {text}"));
}

/// Something went wrong that does not change the outcome, and what it costs.
pub fn warning(text: &str) {
    say(&format!("warning: {text}"));
}

/// The report files written.
pub fn reports(paths: &[PathBuf]) {
    let names: Vec<String> = paths
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    say(&format!("reports: {}", names.join(", ")));
}
