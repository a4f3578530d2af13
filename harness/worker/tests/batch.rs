//! The `cufile-batch` reader on a GPU: generated files read in batches, several in flight,
//! verified in GPU memory. Needs an NVIDIA GPU, libcufile with the batch API and a data dir that
//! cuFile registers; ignored elsewhere.

use gds_model::integrity::expected_checksum;
use gds_model::scenario::{BufferKind, FileSet, Integrity, Pattern};
use gds_worker::gpu::Gpu;
use gds_worker::libcufile::Cufile;
use gds_worker::reader::PlanReader;
use gds_worker::reader::batch::BatchReader;
use gds_worker::writer::PlanWriter;
use gds_worker::writer::posix::PosixWriter;

#[test]
#[ignore = "needs an NVIDIA GPU and libcufile with the batch API"]
fn batches_in_flight_read_the_generators_bytes_into_the_gpu() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let files = FileSet::Generated {
        size: 3_000_011,
        seed: 17,
        count: 2,
    };
    // Written by the posix writer: the reader under test only reads.
    let plan = gds_model::write::write_plan(dir.path(), &files, &Pattern::Whole).unwrap();
    let mut writer = PosixWriter::open(&plan).unwrap();
    writer.prepare(&plan).unwrap();
    writer.write(&plan, 1, 1 << 20).unwrap();
    writer.sync(&plan).unwrap();

    let mut gpu = Gpu::open(0).unwrap();
    let cufile = Cufile::load().unwrap();
    cufile.open_driver().unwrap();
    // Six tasks of up to 1 MiB in batches of 4: a full batch and a short one, two in flight.
    let mut reader =
        BatchReader::open(&mut gpu, &cufile, &plan, BufferKind::Unregistered, 2, 4).unwrap();
    reader.prepare().unwrap();
    let pass = reader.read(&plan, 1, 1 << 20).unwrap();
    assert_eq!(pass.calls, 2, "one call per batch");
    let result = reader
        .verify(&plan, Integrity::Exact, expected_checksum(&plan))
        .unwrap();
    assert!(result.passed(), "{result:?}");
}
