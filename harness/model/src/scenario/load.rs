//! What a load (`op: load`) needs of its scenario: a reader that opens and registers its files
//! again every pass, a plan that covers the files once, one GPU, and one buffer of the whole
//! pass ([`Validator::whole_window`]).

use super::model::{GpuSet, KvikioApi, Op, Pattern, Reader};
use super::{ScenarioError, Validator};

impl Validator<'_> {
    pub(super) fn loads(
        &self,
        readers: &[Reader],
        kvikio_apis: &[KvikioApi],
        pattern: &Pattern,
        gpu_set: Option<&GpuSet>,
        context: &str,
        here: &dyn Fn(&str) -> (usize, usize),
    ) -> Result<(), ScenarioError> {
        if let Some(reader) = readers.iter().find(|reader| !reader.loads()) {
            return Err(self.error(
                here("op"),
                format!(
                    "{context}: `op: load` opens and registers the files every pass, which the `{}` reader does not do",
                    reader.name()
                ),
                "load with `posix`, `h2d`, `cufile`, `kvikio` or `torch`, and run the other readers in a scenario of their own",
            ));
        }
        if readers.contains(&Reader::Kvikio) && kvikio_apis.contains(&KvikioApi::Async) {
            return Err(self.error(
                here("kvikio_api"),
                format!("{context}: `op: load` reads with KvikIO's `pread`, not `kvikio_api: async`"),
                "leave `kvikio_api` out of a load, and run the stream-ordered reads in a scenario of their own",
            ));
        }
        if matches!(pattern, Pattern::Random(_)) {
            return Err(self.error(
                here("pattern"),
                format!("{context}: `op: load` reads the files whole, but `pattern` is `random`"),
                "use `pattern: whole` or `pattern: { chunks: SIZE }` for a load",
            ));
        }
        if let Some(set) = gpu_set {
            return Err(self.error(
                here("gpus"),
                format!(
                    "{context}: `op: {}` with `gpus: {set}` is not supported: one worker loads a trial's files",
                    Op::Load.name()
                ),
                "load into one GPU (`gpu: N`)",
            ));
        }
        Ok(())
    }
}
