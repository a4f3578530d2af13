//! The drills' ctypes declarations of cuFile (`tools/drills/cufile_abi.py`) against this crate's
//! `cufile_abi`, as the compiler lays it out: same structs, sizes, field offsets and constants. The
//! Python side is read by running it, so neither side is parsed and neither can drift unseen; and
//! no other drill may declare a struct of its own.

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use gds_model::cufile_abi::batch::{self, IoEvent, IoParams};
use gds_model::cufile_abi::call::{self, Descr, DescrHandle, Status};
use serde_json::{Value, json};

fn drills() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/drills")
}

/// cuFile's structs by their cufile.h names, as this crate declares them.
fn rust_layout() -> Value {
    let structs = [
        (
            "CUfileError_t",
            size_of::<Status>(),
            vec![
                ("err", offset_of!(Status, err)),
                ("cu_err", offset_of!(Status, cu_err)),
            ],
        ),
        (
            "CUfileDescr_t",
            size_of::<Descr>(),
            vec![
                ("kind", offset_of!(Descr, kind)),
                ("handle", offset_of!(Descr, handle)),
                ("fs_ops", offset_of!(Descr, fs_ops)),
            ],
        ),
        (
            "CUfileDescr_t.handle",
            size_of::<DescrHandle>(),
            // A union's members all start at 0.
            vec![("fd", 0), ("handle", 0)],
        ),
        (
            "CUfileIOParams_t",
            size_of::<IoParams>(),
            vec![
                ("mode", offset_of!(IoParams, mode)),
                ("dev_ptr_base", offset_of!(IoParams, dev_ptr_base)),
                ("file_offset", offset_of!(IoParams, file_offset)),
                ("dev_ptr_offset", offset_of!(IoParams, dev_ptr_offset)),
                ("size", offset_of!(IoParams, size)),
                ("fh", offset_of!(IoParams, fh)),
                ("opcode", offset_of!(IoParams, opcode)),
                ("cookie", offset_of!(IoParams, cookie)),
            ],
        ),
        (
            "CUfileIOEvents_t",
            size_of::<IoEvent>(),
            vec![
                ("cookie", offset_of!(IoEvent, cookie)),
                ("status", offset_of!(IoEvent, status)),
                ("ret", offset_of!(IoEvent, ret)),
            ],
        ),
    ];
    let structs: BTreeMap<_, _> = structs
        .into_iter()
        .map(|(name, size, fields)| {
            let fields: BTreeMap<_, _> = fields.into_iter().collect();
            (name, json!({ "size": size, "fields": fields }))
        })
        .collect();
    json!({
        "structs": structs,
        "constants": {
            "HANDLE_TYPE_OPAQUE_FD": call::HANDLE_TYPE_OPAQUE_FD,
            "MODE_BATCH": batch::MODE_BATCH,
            "OP_READ": batch::OP_READ,
            "STATUS_COMPLETE": batch::STATUS_COMPLETE,
        },
    })
}

#[test]
fn the_drills_declare_cufiles_structs_as_the_model_does() {
    let script = drills().join("cufile_abi.py");
    let output = Command::new("python3")
        .arg(&script)
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run python3 ({error}): the drills' cuFile layout `{}` is checked by running it; install python3",
                script.display()
            )
        });
    assert!(
        output.status.success(),
        "`python3 {}` failed: {}",
        script.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let python: Value = serde_json::from_slice(&output.stdout).expect("the layout is JSON");
    assert_eq!(
        python,
        rust_layout(),
        "tools/drills/cufile_abi.py (left) disagrees with gds_model::cufile_abi (right): change both"
    );
}

#[test]
fn no_other_drill_declares_a_struct_of_its_own() {
    let mut offenders = Vec::new();
    for entry in std::fs::read_dir(drills()).expect("tools/drills is readable") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|ext| ext != "py") || path.ends_with("cufile_abi.py") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a drill is UTF-8 text");
        if ["ctypes.Structure", "ctypes.Union", "_fields_"]
            .iter()
            .any(|needle| text.contains(needle))
        {
            offenders.push(entry_name(&path));
        }
    }
    assert!(
        offenders.is_empty(),
        "these drills declare ctypes structs; declare them in tools/drills/cufile_abi.py (checked against gds_model::cufile_abi) and import them: {offenders:?}"
    );
}

fn entry_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}
