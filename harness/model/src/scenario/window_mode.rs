//! The `window` scenario key: whole buffer, `auto`, or a window size, and how a worker resolves
//! it into a window once it knows its destination's memory (the windows themselves are cut by
//! [`crate::window`]).

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use super::size::ByteSize;

/// Window cuts fall on file offsets that are multiples of this (or on region boundaries): every
/// window then starts on a word (the checksum and the exact compare need 8) and on a page, which
/// O_DIRECT and cuFile want.
pub const ALIGN: u64 = 4096;
/// The smallest window a scenario may ask for.
pub const MIN_WINDOW: u64 = 64 << 10;
/// The window `auto` picks, unless the memory is so small that an eighth of it is less.
pub const AUTO_WINDOW: u64 = 1 << 30;
/// `auto` streams when a pass needs more than this fraction (1/N) of the destination's memory.
pub const AUTO_FRACTION: u64 = 2;

/// The `window` key: one buffer of the whole pass, a window of a given size, or `auto`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WindowMode {
    /// One destination of the whole plan: a checkpoint loaded in one piece.
    Whole,
    /// A window when the pass needs more than 1/[`AUTO_FRACTION`] of the destination's memory.
    #[default]
    Auto,
    /// A window of this many bytes (a multiple of [`ALIGN`], at least [`MIN_WINDOW`]).
    Size(u64),
}

impl WindowMode {
    /// The window a pass of `plan_bytes` reads through, given the memory of the destination (GPU
    /// memory for GPU readers, available host memory for `posix`); `None`: the whole buffer.
    /// A window as large as the plan is the whole buffer: nothing would rotate.
    pub fn resolve(self, plan_bytes: u64, memory: Option<u64>) -> Option<u64> {
        let window = match self {
            WindowMode::Whole => return None,
            WindowMode::Size(bytes) => bytes,
            WindowMode::Auto => {
                let memory = memory?;
                if plan_bytes <= memory / AUTO_FRACTION {
                    return None;
                }
                let eighth = (memory / 8) / ALIGN * ALIGN;
                AUTO_WINDOW.min(eighth).max(MIN_WINDOW)
            }
        };
        (window < plan_bytes).then_some(window)
    }

    /// Checks a size given in a scenario; the error names what to write instead.
    pub fn check_size(bytes: u64) -> Result<(), BadWindow> {
        if bytes < MIN_WINDOW || !bytes.is_multiple_of(ALIGN) {
            return Err(BadWindow { bytes });
        }
        Ok(())
    }
}

/// A `window` size a worker cannot cut windows of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "window `{}` must be a multiple of 4KiB and at least {}, e.g. `window: 1GiB`",
    ByteSize(*bytes),
    ByteSize(MIN_WINDOW)
)]
pub struct BadWindow {
    pub bytes: u64,
}

impl fmt::Display for WindowMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WindowMode::Whole => f.write_str("whole"),
            WindowMode::Auto => f.write_str("auto"),
            WindowMode::Size(bytes) => write!(f, "{}", ByteSize(*bytes)),
        }
    }
}

/// `"whole"`, `"auto"`, or the window in bytes (what the workers, Rust and Python, read).
impl Serialize for WindowMode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            WindowMode::Size(bytes) => serializer.serialize_u64(*bytes),
            other => serializer.serialize_str(&other.to_string()),
        }
    }
}

impl schemars::JsonSchema for WindowMode {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WindowMode".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`whole`, `auto`, or the window in bytes.",
            "anyOf": [
                { "enum": ["whole", "auto"] },
                { "type": "integer", "minimum": 0 }
            ]
        })
    }
}

impl<'de> Deserialize<'de> for WindowMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bytes(u64),
            Text(String),
        }
        let size = |bytes: u64| {
            WindowMode::check_size(bytes)
                .map(|()| WindowMode::Size(bytes))
                .map_err(de::Error::custom)
        };
        match Raw::deserialize(deserializer)? {
            Raw::Bytes(bytes) => size(bytes),
            Raw::Text(text) => match text.trim() {
                "whole" => Ok(WindowMode::Whole),
                "auto" => Ok(WindowMode::Auto),
                other => size(
                    ByteSize::parse(other)
                        .map_err(|problem| {
                            de::Error::custom(format!(
                                "expected `whole`, `auto` or a size such as `1GiB`: {problem}"
                            ))
                        })?
                        .0,
                ),
            },
        }
    }
}
