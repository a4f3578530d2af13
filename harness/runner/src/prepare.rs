//! Makes the files of the selected trials ready before any trial runs, so that generation never
//! lands inside a trial's time and each file is prepared once however many trials read it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::data::{self, DataError, GeneratedFile};
use gds_model::plan::PlannedFile;
use gds_model::scenario::{FileSet, Op, TrialSpec};

/// One file a trial reads, identified independently of the trials that share it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKey {
    Generated { seed: u64, size: u64 },
    User(PathBuf),
}

impl FileKey {
    /// The files a trial reads, in read order.
    pub fn of(files: &FileSet) -> Vec<FileKey> {
        match files {
            FileSet::Generated { size, seed, count } => (0..u64::from(*count))
                .map(|i| FileKey::Generated {
                    seed: seed.wrapping_add(i),
                    size: *size,
                })
                .collect(),
            FileSet::User { path } => vec![FileKey::User(path.clone())],
        }
    }
}

/// What to do about a `--data-dir` that cannot be a folder.
const DATA_DIR_FIX: &str =
    "point --data-dir (GDS_GATE_DATA_DIR) at a folder for the test data, or move the file away";

/// `--data-dir` is a file, or lies under one.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    #[error("--data-dir `{}` is a file, not a folder; {FIX}", .0.display(), FIX = DATA_DIR_FIX)]
    IsAFile(PathBuf),
    #[error(
        "--data-dir `{}` cannot be made: `{}` is a file, not a folder; {FIX}",
        data_dir.display(),
        file.display(),
        FIX = DATA_DIR_FIX
    )]
    UnderAFile { data_dir: PathBuf, file: PathBuf },
}

/// Checks that `data_dir` is a folder or can become one: the folder itself, or the nearest of its
/// parents that exists, is not a file. A file there would fail every trial's data with the same
/// error, so the run stops as a setup error before any trial (the error, `Err`, names the path
/// and the fix).
pub fn check_data_dir(data_dir: &Path) -> Result<(), DataDirError> {
    let Some(existing) = data_dir
        .ancestors()
        .find(|path| !path.as_os_str().is_empty() && std::fs::metadata(path).is_ok())
    else {
        return Ok(());
    };
    if existing.is_dir() {
        return Ok(());
    }
    Err(if existing == data_dir {
        DataDirError::IsAFile(data_dir.to_path_buf())
    } else {
        DataDirError::UnderAFile {
            data_dir: data_dir.to_path_buf(),
            file: existing.to_path_buf(),
        }
    })
}

/// Why a trial has no data: the error every trial that needs the file fails with (shared, hence
/// the `Arc`).
#[derive(Clone, Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Data(Arc<DataError>),
    #[error(
        "`op: {op}` cannot write a file of yours (internal error: the suite validation refuses it)"
    )]
    WritesUserFile { op: &'static str },
    #[error(
        "{key:?} was not prepared (internal error: the trial was not selected when data was prepared)"
    )]
    NotPrepared { key: FileKey },
}

impl From<DataError> for PrepareError {
    fn from(error: DataError) -> PrepareError {
        PrepareError::Data(Arc::new(error))
    }
}

/// A prepared file, or why it could not be prepared.
pub type Prepared = Result<PlannedFile, PrepareError>;

/// What happened to each file, for the console and the report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PreparedFile {
    pub path: PathBuf,
    pub size: u64,
    pub action: String,
    pub seconds: f64,
}

#[derive(Default)]
pub struct DataSet {
    data_dir: PathBuf,
    /// Why the data dir could not be made for the writing trials, if it could not.
    write_dir: Option<PrepareError>,
    /// Some trial writes (and needs only the data dir).
    writes: bool,
    files: BTreeMap<FileKey, Prepared>,
    pub log: Vec<PreparedFile>,
}

impl DataSet {
    /// Prepares every file the trials read, saying one line per file made on `console` and
    /// showing the progress of a long one in `rate`.
    pub fn prepare<'a>(
        data_dir: &Path,
        trials: impl IntoIterator<Item = &'a TrialSpec>,
        rate: gds_model::units::Rate,
        console: &crate::console::Console,
    ) -> DataSet {
        let mut set = DataSet {
            data_dir: data_dir.to_path_buf(),
            ..DataSet::default()
        };
        // A writing trial writes files of its own: it needs no generated data, only the dir.
        // A trial whose ranks write (`writers:`) reads generated data too.
        let trials: Vec<&TrialSpec> = trials.into_iter().collect();
        set.writes = trials.iter().any(|trial| trial.writes());
        let reading = trials.into_iter().filter(|trial| !trial.op.writes());
        if set.writes {
            set.write_dir = std::fs::create_dir_all(data_dir).err().map(|source| {
                PrepareError::from(DataError::CreateDir {
                    dir: data_dir.to_path_buf(),
                    source,
                })
            });
        }
        for trial in reading {
            for key in FileKey::of(&trial.files) {
                // Interrupted: the trials will not run, so neither is their data prepared.
                if set.files.contains_key(&key) || crate::interrupt::received().is_some() {
                    continue;
                }
                let prepared = prepare_one(data_dir, &key, rate);
                match &prepared {
                    // Reused files are the quiet, usual case: report.json lists them.
                    Ok((file, record)) if record.action != "reused" => {
                        console.say(&format!(
                            "data: {} {} ({})",
                            record.action,
                            file.path.display(),
                            gds_model::units::format_bytes(file.size, 2)
                        ));
                        set.log.push(record.clone());
                    }
                    Ok((_, record)) => set.log.push(record.clone()),
                    Err(error) => console.say(&format!("error: {}", gds_model::error_chain(error))),
                }
                set.files.insert(key, prepared.map(|(file, _)| file));
            }
        }
        set
    }

    /// Where the data is (and the control, and the writing trials' files).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Some trial has what it needs: a file prepared, or the data dir for a writing trial. When
    /// none has, nothing will run, and the run writes nothing more to the data dir.
    pub fn any_ready(&self) -> bool {
        self.files.values().any(Result::is_ok) || (self.writes && self.write_dir.is_none())
    }

    /// The trial's files in read order, or the first reason one is missing. A writing trial's
    /// are the files it writes, in the data dir under their own names
    /// ([`gds_model::write::written_files`]).
    pub fn files_for(&self, trial: &TrialSpec) -> Result<Vec<PlannedFile>, PrepareError> {
        if trial.op.writes() {
            return self.written_for(trial);
        }
        FileKey::of(&trial.files)
            .iter()
            .map(|key| match self.files.get(key) {
                Some(prepared) => prepared.clone(),
                None => Err(PrepareError::NotPrepared { key: key.clone() }),
            })
            .collect()
    }
}

impl DataSet {
    /// The files a writing trial, or a trial's writing ranks, write: the copies of its files.
    pub fn written_for(&self, trial: &TrialSpec) -> Result<Vec<PlannedFile>, PrepareError> {
        if let Some(error) = &self.write_dir {
            return Err(error.clone());
        }
        gds_model::write::written_files(&self.data_dir, &trial.files).ok_or(
            PrepareError::WritesUserFile {
                op: match trial.op {
                    op if op.writes() => op.name(),
                    _ => Op::Roundtrip.name(),
                },
            },
        )
    }
}

fn prepare_one(
    data_dir: &Path,
    key: &FileKey,
    rate: gds_model::units::Rate,
) -> Result<(PlannedFile, PreparedFile), PrepareError> {
    let mut progress = data::stderr_progress(rate);
    match key {
        FileKey::Generated { seed, size } => {
            let prepared = data::ensure_generated(
                data_dir,
                GeneratedFile {
                    seed: *seed,
                    size: *size,
                },
                progress.as_mut(),
            )?;
            let record = PreparedFile {
                path: prepared.path.clone(),
                size: prepared.size,
                action: prepared.action.to_string(),
                seconds: prepared.elapsed.as_secs_f64(),
            };
            Ok((
                PlannedFile {
                    path: prepared.path,
                    size: prepared.size,
                    seed: Some(prepared.seed),
                    checksum: prepared.checksum,
                },
                record,
            ))
        }
        FileKey::User(path) => {
            let user = data::ensure_user_checksum(data_dir, path, progress.as_mut())?;
            let record = PreparedFile {
                path: user.path.clone(),
                size: user.size,
                action: user.action.to_string(),
                seconds: user.elapsed.as_secs_f64(),
            };
            Ok((
                PlannedFile {
                    path: user.path,
                    size: user.size,
                    seed: None,
                    checksum: user.checksum,
                },
                record,
            ))
        }
    }
}
