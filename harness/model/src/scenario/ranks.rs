//! Ranks (`ranks: 4` or `ranks: [cufile, kvikio]`): one trial whose files are read by several
//! worker processes at once on one GPU, each reading its own files, as the ranks of a
//! tensor-parallel job load their shards. The count form gives every rank the trial's reader;
//! the list form names each rank's reader, so a KvikIO rank can read beside a cuFile rank.
//! `writers: N` makes the last N ranks write copies of their files and read them back
//! (`op: roundtrip`) while the others read: reads beside writes, as a KV-cache offload does.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::model::{GpuSet, Op, Reader};
use super::window_mode::WindowMode;
use super::{FileSet, ScenarioError, Validator};

/// At most this many ranks: more worker processes than a host has cores measure the scheduler.
pub const MAX_RANKS: usize = 64;

/// The `ranks` key as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ranks {
    /// This many ranks, each with the trial's reader.
    Count(u32),
    /// One rank per reader, in this order.
    Readers(Vec<Reader>),
}

impl Ranks {
    fn len(&self) -> usize {
        match self {
            Ranks::Count(count) => *count as usize,
            Ranks::Readers(readers) => readers.len(),
        }
    }

    /// Each rank's reader in a trial of `reader`.
    pub fn readers(&self, reader: Reader) -> Vec<Reader> {
        match self {
            Ranks::Count(count) => vec![reader; *count as usize],
            Ranks::Readers(readers) => readers.clone(),
        }
    }
}

/// A trial's ranks as its name shows them: `4` when they share a reader, else their readers
/// joined with `+` (`cufile+kvikio`).
pub fn shown(readers: &[Reader]) -> String {
    if readers.iter().all(|reader| *reader == readers[0]) {
        readers.len().to_string()
    } else {
        let names: Vec<&str> = readers.iter().map(|reader| reader.name()).collect();
        names.join("+")
    }
}

impl<'de> Deserialize<'de> for Ranks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl<'de> de::Visitor<'de> for Visitor {
            type Value = Ranks;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of ranks such as `4`, or each rank's reader such as `[cufile, kvikio]`")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                u32::try_from(v).map(Ranks::Count).map_err(|_| {
                    E::custom(format!("`ranks: {v}`: expected at most {MAX_RANKS} ranks"))
                })
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Err(E::custom(format!(
                    "`ranks: {v}`: expected a number of ranks of 2 or more"
                )))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut readers = Vec::new();
                while let Some(reader) = seq.next_element::<Reader>()? {
                    readers.push(reader);
                }
                Ok(Ranks::Readers(readers))
            }
        }

        deserializer.deserialize_any(Visitor)
    }
}

impl Serialize for Ranks {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Ranks::Count(count) => count.serialize(serializer),
            Ranks::Readers(readers) => readers.serialize(serializer),
        }
    }
}

/// What a scenario with `ranks` must also be.
pub(super) struct RankContext<'a> {
    /// The scenario's readers: every rank's, or the axis a count of ranks applies to.
    pub readers: &'a [Reader],
    /// `writers:`, 0 without it.
    pub writers: u32,
    pub reader_given: bool,
    pub ops: &'a [Op],
    pub files: &'a FileSet,
    pub gpu_set: Option<&'a GpuSet>,
    pub rounds: u32,
    pub windows: &'a [WindowMode],
}

impl Validator<'_> {
    /// Several readers of the scenario's files at once: whole generated files for each rank, in
    /// one round, on one GPU, reading.
    pub(super) fn ranks(
        &self,
        ranks: &Ranks,
        with: RankContext<'_>,
        context: &str,
        here: &dyn Fn(&str) -> (usize, usize),
    ) -> Result<(), ScenarioError> {
        let at = here("ranks");
        let count = ranks.len();
        if !(2..=MAX_RANKS).contains(&count) {
            return Err(self.error(
                at,
                format!("{context}: `ranks` gives {count} rank(s), expected 2 to {MAX_RANKS}"),
                "give `ranks: N` with N from 2, or list each rank's reader (`ranks: [cufile, kvikio]`); one worker needs no `ranks`",
            ));
        }
        if matches!(ranks, Ranks::Readers(_)) && with.reader_given {
            return Err(self.error(
                here("reader"),
                format!("{context}: `ranks` lists each rank's reader, so `reader` has nothing to say"),
                "remove `reader` from this scenario, or write `ranks: N` to give every rank the scenario's reader",
            ));
        }
        if let Some(set) = with.gpu_set {
            return Err(self.error(
                at,
                format!("{context}: `ranks` and `gpus: {set}` cannot be combined"),
                "`gpus` already runs one worker per GPU, each on its own files; `ranks` runs several on one GPU. Keep one of the two",
            ));
        }
        if let Some(op) = with.ops.iter().find(|op| **op != Op::Read) {
            return Err(self.error(
                here("op"),
                format!(
                    "{context}: `ranks` runs readers, but `op` is `{}`",
                    op.name()
                ),
                "use `op: read` with `ranks`, and write or load in a scenario of its own",
            ));
        }
        if with.rounds > 1 {
            return Err(self.error(
                here("rounds"),
                format!("{context}: `rounds` does not apply to a trial with `ranks`"),
                "remove `rounds`: the ranks read at the same time, in one round",
            ));
        }
        if with.writers > 0 {
            self.rank_writers(ranks, &with, context, here)?;
        }
        match with.files {
            FileSet::Generated { count: files, .. } if (*files as usize) < count => {
                Err(self.error(
                    here("files"),
                    format!("{context}: each of the {count} ranks reads its own file, but `files.count` is {files}"),
                    &format!("set `files: {{ count: {count} }}` or a multiple of it"),
                ))
            }
            FileSet::Generated { .. } => Ok(()),
            FileSet::User { path } => Err(self.error(
                here("files"),
                format!(
                    "{context}: `ranks` needs a file per rank, but `files` names one file of yours, `{}`",
                    path.display()
                ),
                "read generated files with `ranks` (`files: { size: 1GiB, count: N }`), and your file in a scenario without it",
            )),
        }
    }

    /// `writers`: the last ranks write their files' copies and read them back, so at least one
    /// rank is left to read, the writing ranks' readers write, and the pass is one buffer.
    fn rank_writers(
        &self,
        ranks: &Ranks,
        with: &RankContext<'_>,
        context: &str,
        here: &dyn Fn(&str) -> (usize, usize),
    ) -> Result<(), ScenarioError> {
        let (writers, count) = (with.writers as usize, ranks.len());
        if writers >= count {
            return Err(self.error(
                here("writers"),
                format!("{context}: `writers: {writers}` leaves none of the {count} ranks to read"),
                &format!("set `writers` to at most {}", count.saturating_sub(1)),
            ));
        }
        let writing: Vec<Reader> = match ranks {
            Ranks::Count(_) => with.readers.to_vec(),
            Ranks::Readers(list) => list[count - writers..].to_vec(),
        };
        if let Some(reader) = writing.iter().find(|reader| !reader.writes()) {
            return Err(self.error(
                here("writers"),
                format!(
                    "{context}: a writing rank would write with `{}`, which does not write",
                    reader.name()
                ),
                "give the last `writers` ranks a reader that writes (`posix`, `h2d`, `cufile`, `cufile-async`, `kvikio`, `torch`)",
            ));
        }
        self.whole_window(
            Op::Roundtrip,
            with.files,
            with.windows,
            context,
            here("window"),
        )
    }
}
