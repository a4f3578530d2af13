//! A suite file that does not deserialise, read again part by part so that one `validate` shows
//! every error it holds rather than the first.
//!
//! serde stops at a document's first error, and yaml_serde knows positions only while it reads
//! the text. So each part is read from the whole text again, with the rest skipped
//! ([`IgnoredAny`]): the top-level keys, `defaults`, and the scenarios from the one after the last
//! that failed. Each pass stops at one error, with the position and the path (`scenarios[2].…`)
//! the whole file's parse gives it.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::model::{ScenarioFields, SuiteFile};

/// Errors one look at a file shows at most: each took a parse of the whole file, and a file of a
/// thousand broken scenarios is fixed a few at a time anyway.
pub const MAX_ERRORS: usize = 20;

/// What the parts of a suite file gave.
pub(super) struct Parts {
    /// The top-level keys, with `defaults` and each scenario skipped, when they deserialise.
    pub top: Option<SuiteFile<IgnoredAny, IgnoredAny>>,
    /// `defaults` (empty when the file has none), when it deserialises.
    pub defaults: Option<ScenarioFields>,
    /// The scenarios that deserialise, with their index, up to the last one the passes reached.
    pub scenarios: Vec<(usize, ScenarioFields)>,
    /// The first error of each top-level key, of `defaults` and of each scenario that has one,
    /// at most [`MAX_ERRORS`] of them.
    pub errors: Vec<yaml_serde::Error>,
    /// The next error, past [`MAX_ERRORS`]: not shown, but said to be there.
    pub beyond: Option<yaml_serde::Error>,
}

/// Reads `text` (a single YAML document that parses: the caller checked) part by part.
pub(super) fn read(text: &str) -> Parts {
    let mut parts = Parts {
        top: None,
        defaults: None,
        scenarios: Vec::new(),
        errors: Vec::new(),
        beyond: None,
    };
    // The top-level keys from the one after the last that failed; the first pass alone can say
    // that one is missing (the later ones skip some).
    let mut from = 0;
    loop {
        let at = Cell::new(None);
        let pass = SuiteFile::<IgnoredAny, IgnoredAny>::deserialize(Entries {
            inner: yaml_serde::Deserializer::from_str(text),
            from,
            at: &at,
        });
        match (pass, at.get()) {
            (Ok(top), _) => {
                parts.top = (from == 0).then_some(top);
                break;
            }
            (Err(error), Some(entry)) => {
                if !parts.keep(error) {
                    return parts;
                }
                from = entry + 1;
            }
            (Err(error), None) => {
                if from == 0 && !parts.keep(error) {
                    return parts;
                }
                break;
            }
        }
    }
    match Part::Defaults.read(text) {
        Ok(found) => parts.defaults = Some(found.defaults.unwrap_or_default()),
        Err(error) => {
            if !parts.keep(error) {
                return parts;
            }
        }
    }
    // The scenarios from the one after the last that failed.
    let mut from = 0;
    loop {
        let state = RefCell::new(Found::default());
        let pass = Top {
            part: Part::Scenarios { from },
            found: &state,
        }
        .deserialize(yaml_serde::Deserializer::from_str(text));
        let found = state.into_inner();
        parts.scenarios.extend(found.scenarios);
        let Err(error) = pass else { break };
        if !parts.keep(error) {
            break;
        }
        // An error outside any one scenario (`scenarios` is not a list) ends the passes.
        let Some(index) = found.at else { break };
        from = index + 1;
    }
    parts
}

impl Parts {
    /// Keeps `error` while fewer than [`MAX_ERRORS`] are kept; false when it is the one beyond,
    /// and the passes stop.
    fn keep(&mut self, error: yaml_serde::Error) -> bool {
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(error);
            true
        } else {
            self.beyond = Some(error);
            false
        }
    }
}

/// The part of the file a pass deserialises; every other value is skipped.
#[derive(Clone, Copy)]
enum Part {
    Defaults,
    /// The scenarios from index `from` on.
    Scenarios {
        from: usize,
    },
}

impl Part {
    fn read(self, text: &str) -> Result<Found, yaml_serde::Error> {
        let found = RefCell::new(Found::default());
        Top {
            part: self,
            found: &found,
        }
        .deserialize(yaml_serde::Deserializer::from_str(text))?;
        Ok(found.into_inner())
    }
}

/// What a pass deserialised, kept outside serde's result so that the scenarios read before an
/// error, and the index of the one that failed, survive it.
#[derive(Default)]
struct Found {
    defaults: Option<ScenarioFields>,
    scenarios: Vec<(usize, ScenarioFields)>,
    /// The scenario being read; still set when it fails.
    at: Option<usize>,
}

/// The document's top-level mapping: the first key named by `part` is read, the rest skipped.
struct Top<'a> {
    part: Part,
    found: &'a RefCell<Found>,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a suite: a mapping with `scenarios`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut done = false;
        while let Some(key) = map.next_key::<yaml_serde::Value>()? {
            match (self.part, key.as_str()) {
                // A repeated key is the top-level pass's error; read the first one only.
                (Part::Defaults, Some("defaults")) if !done => {
                    let defaults = map.next_value::<ScenarioFields>()?;
                    self.found.borrow_mut().defaults = Some(defaults);
                    done = true;
                }
                (Part::Scenarios { from }, Some("scenarios")) if !done => {
                    map.next_value_seed(Scenarios {
                        from,
                        found: self.found,
                    })?;
                    done = true;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The `scenarios` list: those before `from` skipped, the others read until one fails.
struct Scenarios<'a> {
    from: usize,
    found: &'a RefCell<Found>,
}

impl<'de> DeserializeSeed<'de> for Scenarios<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Scenarios<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        for index in 0.. {
            if index < self.from {
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    break;
                }
                continue;
            }
            self.found.borrow_mut().at = Some(index);
            let Some(fields) = seq.next_element::<ScenarioFields>()? else {
                break;
            };
            let mut found = self.found.borrow_mut();
            found.scenarios.push((index, fields));
            found.at = None;
        }
        self.found.borrow_mut().at = None;
        Ok(())
    }
}

/// A document's top-level mapping with its first `from` entries skipped, for the derived
/// [`SuiteFile`] to check the others; `at` holds the entry being read, still set when it fails.
struct Entries<'de, 'a> {
    inner: yaml_serde::Deserializer<'de>,
    from: usize,
    at: &'a Cell<Option<usize>>,
}

impl<'de> de::Deserializer<'de> for Entries<'de, '_> {
    type Error = yaml_serde::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_map(Skipping {
            visitor,
            from: self.from,
            at: self.at,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// The visitor of [`Entries`]: hands the derived visitor the mapping without its first entries.
struct Skipping<'a, V> {
    visitor: V,
    from: usize,
    at: &'a Cell<Option<usize>>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Skipping<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(SkippedMap {
            map,
            next: 0,
            from: self.from,
            at: self.at,
        })
    }
}

struct SkippedMap<'a, A> {
    map: A,
    /// Index of the next entry.
    next: usize,
    from: usize,
    at: &'a Cell<Option<usize>>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for SkippedMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        while self.next < self.from {
            if self.map.next_key::<IgnoredAny>()?.is_none() {
                return Ok(None);
            }
            self.map.next_value::<IgnoredAny>()?;
            self.next += 1;
        }
        self.at.set(Some(self.next));
        let key = self.map.next_key_seed(seed)?;
        if key.is_none() {
            self.at.set(None);
        }
        Ok(key)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        let value = self.map.next_value_seed(seed)?;
        self.next += 1;
        self.at.set(None);
        Ok(value)
    }
}
