//! What a reading trial asks of the storage, whatever reader carries it: the file, how it is cut
//! into requests and how many are in flight. Two trials of one run with the same shape read the
//! same bytes the same way, so their throughputs compare the readers alone (a GPU reader against
//! the `posix` reader, for one).

use super::expand::{FileSet, TrialSpec};
use super::model::{Cache, CompatMode, KvikioApi, Op, Pattern, Reader};
use super::window_mode::{ALIGN, WindowMode};

/// The requests a reading trial makes: its files, their cut into requests (`pattern`, and the
/// tasks of `task_size` a whole or chunked read is split into), the page cache, the window, and
/// the requests in flight at once.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadShape<'a> {
    pub files: &'a FileSet,
    pub pattern: &'a Pattern,
    pub task_size: u64,
    pub cache: Cache,
    pub window: WindowMode,
    /// Threads for the readers that read with threads (`posix`, `h2d`, `cufile`, KvikIO's
    /// `pread`); `batch_size` × `queue_depth` for `cufile-batch`; streams for `cufile-async`,
    /// whose reads are ordered within a stream.
    pub in_flight: u32,
}

impl TrialSpec {
    /// The trial's [`ReadShape`]; `None` where its requests cannot be lined up with another
    /// reader's: a writing trial (the posix writer writes into the page cache, the GPU writers
    /// straight to the disk), a trial over several GPUs or ranks at once, PyTorch (one `load_storage`
    /// call per segment, no task split), KvikIO's async reads (whether they run on cuFile's
    /// stream API or one at a time is KvikIO's decision as it runs, not the spec's), and reads
    /// the direct path cannot take whole ([`TrialSpec::reads_whole_blocks`]).
    pub fn read_shape(&self) -> Option<ReadShape<'_>> {
        if self.op != Op::Read
            || self.gpus.is_some()
            || !self.ranks.is_empty()
            || !self.reads_whole_blocks()
        {
            return None;
        }
        let in_flight = match self.reader {
            Reader::Posix | Reader::H2d | Reader::Cufile => self.nthreads,
            Reader::Kvikio if self.kvikio_api == KvikioApi::Pread => self.nthreads,
            Reader::CufileBatch => self.batch_size.saturating_mul(self.queue_depth),
            Reader::CufileAsync => self.queue_depth,
            Reader::Kvikio | Reader::Torch => return None,
        };
        Some(ReadShape {
            files: &self.files,
            pattern: &self.pattern,
            task_size: self.task_size,
            cache: self.cache,
            window: self.window,
            in_flight,
        })
    }

    /// Whether every request starts and ends on a 4 KiB block of the file, as `O_DIRECT` and so
    /// a direct path need: a generated file's size, the chunks, the random reads' size and
    /// alignment, and the tasks are multiples of it (a user's file is taken as it comes). cuFile
    /// and KvikIO read any other range through bounce buffers by design (the `odd-offsets`
    /// trial), where being slower than POSIX says nothing about the direct path.
    pub fn reads_whole_blocks(&self) -> bool {
        let whole = |bytes: u64| bytes.is_multiple_of(ALIGN);
        let file = match &self.files {
            FileSet::Generated { size, .. } => whole(*size),
            FileSet::User { .. } => true,
        };
        let requests = match &self.pattern {
            Pattern::Whole => true,
            Pattern::Chunks(size) => whole(size.bytes()),
            Pattern::Random(random) => whole(random.size.bytes()) && whole(random.align.bytes()),
        };
        file && requests && whole(self.task_size)
    }

    /// Whether the reader tries to put the bytes straight into GPU memory: through cuFile,
    /// natively or from KvikIO or PyTorch. KvikIO with `compat_mode: ON` never calls cuFile, and
    /// `h2d` reads into host memory by design; neither does.
    pub fn tries_direct_path(&self) -> bool {
        self.reader.uses_cufile()
            && !(self.reader == Reader::Kvikio && self.compat_mode == Some(CompatMode::ON))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{expand, parse};
    use super::*;

    const SUITE: &str = "suite: s
defaults: { files: { size: 64MiB, seed: 1 } }
scenarios:
  - name: cold
    reader: [posix, h2d, cufile, kvikio, cufile-batch, cufile-async, torch]
    nthreads: [1, 8]
    batch_size: [1, 8]
    queue_depth: [1, 8]
    compat_mode: [ON, AUTO]
  - name: chunked
    reader: [posix, cufile]
    nthreads: 8
    pattern: { chunks: 16MiB }
  - name: other-file
    files: { size: 64MiB, seed: 2 }
    reader: posix
    nthreads: 8
  - name: write
    reader: [posix, cufile]
    op: write
    nthreads: 8
  - name: odd
    files: { size: 16781315, seed: 13 }
    reader: [posix, cufile]
    pattern: { chunks: 1060919 }
  - name: odd-tail
    files: { size: 16781315, seed: 13 }
    reader: posix
  - name: odd-random
    reader: posix
    pattern: { random: { size: 1MiB, count: 4, align: 512 } }
";

    fn trials() -> Vec<TrialSpec> {
        expand(&parse(std::path::Path::new("s.yaml"), SUITE).unwrap())
    }

    fn named<'a>(trials: &'a [TrialSpec], name: &str) -> &'a TrialSpec {
        trials
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no {name} in {:?}", names(trials)))
    }

    fn names(trials: &[TrialSpec]) -> Vec<&str> {
        trials.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn readers_of_the_same_file_threads_and_pattern_share_a_shape() {
        let trials = trials();
        let shape = |name: &str| named(&trials, name).read_shape();
        let posix_1 = shape("s::cold[reader=posix,nthreads=1]").unwrap();
        let posix_8 = shape("s::cold[reader=posix,nthreads=8]").unwrap();
        assert_ne!(posix_1, posix_8);
        assert_eq!(shape("s::cold[reader=cufile,nthreads=8]").unwrap(), posix_8);
        assert_eq!(
            shape("s::cold[reader=kvikio,compat=AUTO,nthreads=1]").unwrap(),
            posix_1
        );
        // Eight I/Os in flight as eight entries of one batch, or one entry in each of eight.
        assert_eq!(
            shape("s::cold[reader=cufile-batch,depth=8,batch=1]").unwrap(),
            posix_8
        );
        assert_eq!(
            shape("s::cold[reader=cufile-batch,depth=1,batch=8]").unwrap(),
            posix_8
        );
        assert_eq!(
            shape("s::cold[reader=cufile-async,depth=1]").unwrap(),
            posix_1
        );
        // Another cut, another file, or a write: not the same reads.
        let chunked = shape("s::chunked[reader=cufile]").unwrap();
        assert_ne!(chunked, posix_8);
        assert_eq!(shape("s::chunked[reader=posix]").unwrap(), chunked);
        assert_ne!(shape("s::other-file").unwrap(), posix_8);
        assert_eq!(shape("s::write[reader=posix]"), None);
        assert_eq!(shape("s::write[reader=cufile]"), None);
        assert_eq!(shape("s::cold[reader=torch]"), None);
        // Reads off 4 KiB blocks: a chunk, a file's tail, a random read's alignment.
        assert!(named(&trials, "s::cold[reader=posix,nthreads=1]").reads_whole_blocks());
        for odd in [
            "s::odd[reader=posix]",
            "s::odd[reader=cufile]",
            "s::odd-tail",
            "s::odd-random",
        ] {
            assert!(!named(&trials, odd).reads_whole_blocks(), "{odd}");
            assert_eq!(shape(odd), None, "{odd}");
        }
    }

    #[test]
    fn only_readers_that_call_cufile_try_the_direct_path() {
        let trials = trials();
        let tries = |name: &str| named(&trials, name).tries_direct_path();
        assert!(tries("s::cold[reader=cufile,nthreads=1]"));
        assert!(tries("s::cold[reader=kvikio,compat=AUTO,nthreads=1]"));
        assert!(tries("s::cold[reader=cufile-async,depth=8]"));
        assert!(tries("s::cold[reader=torch]"));
        assert!(!tries("s::cold[reader=kvikio,compat=ON,nthreads=1]"));
        assert!(!tries("s::cold[reader=h2d,nthreads=1]"));
        assert!(!tries("s::cold[reader=posix,nthreads=1]"));
    }
}
