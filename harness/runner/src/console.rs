//! What a command tells the user on stderr, besides progress and the error `main` prints, and
//! the results it prints on stdout: one place, so that every line said is escaped once (see
//! [`crate::escape::terminal`]) and worded alike (`note: …`, `warning: …`, `reports: …`).
//!
//! A [`Console`] is made once by `dispatch` and handed down to the command, as cargo-nextest
//! hands its writer down: nothing is printed behind the command's back, and a test hands in a
//! buffer and reads what a user would have read. A command's result (a table, the files it
//! wrote, GitHub's workflow commands) goes to stdout, unescaped, through [`Console::print`] or
//! [`Console::write`].

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use crate::escape::terminal;

/// Where a command's lines go: stderr and stdout (the default), or buffers that a test reads.
/// Clones write to the same place.
#[derive(Clone, Default)]
pub struct Console {
    buffer: Option<Arc<Mutex<Buffers>>>,
}

#[derive(Clone, Copy)]
enum Stream {
    Out,
    Err,
}

/// What a buffered console was given: the lines for stderr, and the results for stdout.
#[derive(Default)]
struct Buffers {
    said: String,
    printed: String,
}

impl fmt::Debug for Console {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.buffer {
            Some(_) => "Console(buffer)",
            None => "Console(terminal)",
        })
    }
}

impl Console {
    /// Lines kept for a test to read with [`Console::said`] instead of printed.
    pub fn buffer() -> Console {
        Console {
            buffer: Some(Arc::default()),
        }
    }

    /// The lines said so far (nothing when they went to stderr).
    pub fn said(&self) -> String {
        self.read(|buffers| buffers.said.clone())
    }

    /// The results printed so far (nothing when they went to stdout).
    pub fn printed(&self) -> String {
        self.read(|buffers| buffers.printed.clone())
    }

    fn read(&self, part: impl Fn(&Buffers) -> String) -> String {
        self.buffer.as_ref().map_or_else(String::new, |buffer| {
            part(&buffer.lock().unwrap_or_else(PoisonError::into_inner))
        })
    }

    /// A command's result on stdout, as `println!` prints it: not escaped (it may be GitHub's
    /// workflow commands), a line end added.
    pub fn print(&self, text: &str) {
        self.write(&format!("{text}\n"));
    }

    /// A command's result on stdout exactly as it is, as `print!` prints it.
    pub fn write(&self, text: &str) {
        self.put(Stream::Out, text);
    }

    /// A line (or a rendered block) as it is, escaped.
    pub fn say(&self, text: &str) {
        let mut text = terminal(text);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        self.put(Stream::Err, &text);
    }

    fn put(&self, stream: Stream, text: &str) {
        let Some(buffer) = &self.buffer else {
            match stream {
                Stream::Out => print!("{text}"),
                Stream::Err => eprint!("{text}"),
            }
            return;
        };
        let mut buffers = buffer.lock().unwrap_or_else(PoisonError::into_inner);
        match stream {
            Stream::Out => buffers.printed.push_str(text),
            Stream::Err => buffers.said.push_str(text),
        }
    }

    /// Worth knowing, nothing to do.
    pub fn note(&self, text: &str) {
        self.say(&format!("note: {text}"));
    }

    /// Something went wrong that does not change the outcome, and what it costs.
    pub fn warning(&self, text: &str) {
        self.say(&format!("warning: {text}"));
    }

    /// The report files written.
    pub fn reports(&self, paths: &[PathBuf]) {
        let names: Vec<String> = paths
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        self.say(&format!("reports: {}", names.join(", ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_keeps_each_line_escaped_and_ended() {
        let console = Console::buffer();
        console.note("a\u{1b}[31m");
        console.clone().say("block\n");
        console.print("::error file=s.yaml::x");
        assert_eq!(console.said(), "note: a\\u{1b}[31m\nblock\n");
        assert_eq!(console.printed(), "::error file=s.yaml::x\n");
    }
}
