//! What a writing trial (`op: write` or `roundtrip`) needs of its scenario: a file of its own,
//! a plan that covers it once, one GPU, a writer for each reader, and one buffer of the whole pass
//! (which a load needs too).

use super::model::{GpuSet, Op, Pattern, Reader};
use super::size::ByteSize;
use super::window_mode::WindowMode;
use super::{FileSet, ScenarioError, Validator};

impl Validator<'_> {
    /// What a writing trial needs: a file of its own to write (so generated data, never a file
    /// of the user's), a plan that covers it once (no random offsets), and one GPU. Every reader
    /// has a writer.
    pub(super) fn writes(
        &self,
        op: Op,
        files: &FileSet,
        pattern: &Pattern,
        gpu_set: Option<&GpuSet>,
        context: &str,
        here: &dyn Fn(&str) -> (usize, usize),
    ) -> Result<(), ScenarioError> {
        let op = op.name();
        if let FileSet::User { path } = files {
            return Err(self.error(
                here("op"),
                format!(
                    "{context}: `op: {op}` writes a file, but `files` names a file of yours (`{}`); the gate never writes over it",
                    path.display()
                ),
                "use generated files (`files: { size: 1GiB }`): a writing trial writes the generator's bytes to a file of its own in the data dir (`gds-gate-written-s<seed>-<size>.bin`) and verifies them there",
            ));
        }
        if matches!(pattern, Pattern::Random(_)) {
            return Err(self.error(
                here("pattern"),
                format!("{context}: `op: {op}` needs a plan that covers the file once, but `pattern` is `random`"),
                "use `pattern: whole` or `pattern: { chunks: SIZE }` for writing trials",
            ));
        }
        if let Some(set) = gpu_set {
            return Err(self.error(
                here("gpus"),
                format!("{context}: `op: {op}` with `gpus: {set}` is not supported: one worker writes a trial's files"),
                "write with one GPU (`gpu: N`), or read with several in a scenario of its own",
            ));
        }
        Ok(())
    }

    /// Every reader of a writing trial must have a writer: the batch reader only reads (KvikIO
    /// writes with `pwrite`, or `raw_write_async` under `kvikio_api: async`).
    pub(super) fn writers(
        &self,
        op: Op,
        readers: &[Reader],
        context: &str,
        here: &dyn Fn(&str) -> (usize, usize),
    ) -> Result<(), ScenarioError> {
        if let Some(reader) = readers.iter().find(|reader| !reader.writes()) {
            return Err(self.error(
                here("op"),
                format!("{context}: `op: {}` needs a writer, but the `{}` reader only reads", op.name(), reader.name()),
                "write with `cufile` (cuFileWrite), `cufile-async` (cuFileWriteAsync), `kvikio`, `torch` (save_storage), `h2d` or `posix`, and read with `cufile-batch` in a scenario of its own",
            ));
        }
        Ok(())
    }

    /// Writers hold the files they write whole (the generator's bytes made once, written by
    /// every pass), and a load reads its files whole into one buffer, so neither streams through
    /// a window: a window smaller than the pass is refused rather than ignored. `auto` is the
    /// whole buffer for such a trial.
    pub(super) fn whole_window(
        &self,
        op: Op,
        files: &FileSet,
        windows: &[WindowMode],
        context: &str,
        at: (usize, usize),
    ) -> Result<(), ScenarioError> {
        let FileSet::Generated { size, count, .. } = files else {
            return Ok(());
        };
        let pass = size.saturating_mul(u64::from(*count));
        let streamed = windows
            .iter()
            .find(|window| matches!(window, WindowMode::Size(bytes) if *bytes < pass));
        if let Some(window) = streamed {
            let op = op.name();
            return Err(self.error(
                    at,
                    format!(
                        "{context}: `op: {op}` holds the whole pass in one buffer ({}), but `window: {window}` is smaller: such trials do not stream through a window",
                        ByteSize(pass)
                    ),
                    &format!("use `window: whole` (or leave `window` out) for `op: {op}`, and stream the reads in a scenario of their own"),
                ));
        }
        Ok(())
    }
}
