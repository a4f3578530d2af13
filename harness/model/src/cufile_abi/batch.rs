//! cuFile's batch API as plain data: `CUfileIOParams_t` (one I/O of a batch), `CUfileIOEvents_t`
//! (its completion) with their cufile.h byte layouts, the status flags, and the judgement of one
//! completed entry. Pointers and handles are carried as 64-bit integers: the worker, which calls
//! libcufile, is the only place they are addresses.

use serde::{Deserialize, Serialize};

/// `CUFILE_BATCH`, the only `CUfileBatchMode_t` (cufile.h: `CUFILE_BATCH = 1`).
pub const MODE_BATCH: u32 = 1;
/// `CUfileOpcode_t`.
pub const OP_READ: u32 = 0;
pub const OP_WRITE: u32 = 1;

/// `CUfileStatus_t`: one entry's state, a single flag.
pub const STATUS_WAITING: u32 = 0x01;
pub const STATUS_PENDING: u32 = 0x02;
pub const STATUS_INVALID: u32 = 0x04;
pub const STATUS_CANCELED: u32 = 0x08;
pub const STATUS_COMPLETE: u32 = 0x10;
pub const STATUS_TIMEOUT: u32 = 0x20;
pub const STATUS_FAILED: u32 = 0x40;

/// `CUfileIOParams_t` (64 bytes): `mode` at 0, the union's `batch` member at 8 (`devPtr_base`,
/// `file_offset` at 16, `devPtr_offset` at 24, `size` at 32), `fh` at 40, `opcode` at 48,
/// `cookie` at 56.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoParams {
    pub mode: u32,
    pub dev_ptr_base: u64,
    pub file_offset: i64,
    pub dev_ptr_offset: i64,
    pub size: u64,
    /// The registered `CUfileHandle_t`.
    pub fh: u64,
    pub opcode: u32,
    /// Handed back in the entry's event: the index of the I/O in its batch.
    pub cookie: u64,
}

impl IoParams {
    /// A read of `size` bytes at `file_offset` of the file registered as `fh` into the device
    /// allocation `dev_ptr_base` at `dev_ptr_offset`; `cookie` comes back with its event.
    pub fn read(
        fh: u64,
        dev_ptr_base: u64,
        dev_ptr_offset: u64,
        file_offset: u64,
        size: u64,
        cookie: u64,
    ) -> IoParams {
        IoParams {
            mode: MODE_BATCH,
            dev_ptr_base,
            file_offset: file_offset as i64,
            dev_ptr_offset: dev_ptr_offset as i64,
            size,
            fh,
            opcode: OP_READ,
            cookie,
        }
    }
}

/// `CUfileIOEvents_t` (24 bytes): `cookie` at 0, `status` at 8, `ret` (bytes done, or a negative
/// error, in a `size_t`) at 16.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoEvent {
    pub cookie: u64,
    pub status: u32,
    pub ret: u64,
}

/// `CUFILE_COMPLETE` and the like, by name; several bits or an unknown one are shown in hex.
pub fn status_name(status: u32) -> String {
    match status {
        STATUS_WAITING => "waiting".into(),
        STATUS_PENDING => "pending".into(),
        STATUS_INVALID => "invalid".into(),
        STATUS_CANCELED => "canceled".into(),
        STATUS_COMPLETE => "complete".into(),
        STATUS_TIMEOUT => "timed out".into(),
        STATUS_FAILED => "failed".into(),
        other => format!("status {other:#x}"),
    }
}

/// What is wrong with one finished entry of a batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum EntryProblem {
    #[error("cuFile reported it complete with {done} of {expected} bytes")]
    Short { done: u64, expected: u64 },
    #[error("cuFile reported it {}{}", status_name(*status), error_text(*error))]
    NotComplete { status: u32, error: Option<i64> },
    #[error("cuFileBatchIOGetStatus never returned its event")]
    NoEvent,
    #[error("cuFileBatchIOGetStatus returned its event twice")]
    Twice,
    #[error(
        "cuFileBatchIOGetStatus returned an event with cookie {cookie}, which no entry of the batch had"
    )]
    UnknownCookie { cookie: u64 },
}

fn error_text(error: Option<i64>) -> String {
    match error {
        Some(code) => format!(" with error {code} ({})", super::describe(code as i32)),
        None => String::new(),
    }
}

/// Judges an entry that cuFile returned from `cuFileBatchIOGetStatus`, which asked for
/// `expected` bytes: complete with every byte, or the problem. `ret` is a `size_t` that holds a
/// negative error for a failed entry.
pub fn check_entry(event: &IoEvent, expected: u64) -> Result<(), EntryProblem> {
    let signed = event.ret as i64;
    match event.status {
        STATUS_COMPLETE if event.ret == expected => Ok(()),
        STATUS_COMPLETE if signed >= 0 => Err(EntryProblem::Short {
            done: event.ret,
            expected,
        }),
        status => Err(EntryProblem::NotComplete {
            status,
            error: (signed < 0).then_some(signed),
        }),
    }
}

/// Whether cuFile has finished with an entry (its event is final): complete or not.
pub fn is_final(status: u32) -> bool {
    !matches!(status, STATUS_WAITING | STATUS_PENDING)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn io_params_have_cufile_h_layout() {
        assert_eq!(size_of::<IoParams>(), 64);
        assert_eq!(offset_of!(IoParams, mode), 0);
        assert_eq!(offset_of!(IoParams, dev_ptr_base), 8);
        assert_eq!(offset_of!(IoParams, file_offset), 16);
        assert_eq!(offset_of!(IoParams, dev_ptr_offset), 24);
        assert_eq!(offset_of!(IoParams, size), 32);
        assert_eq!(offset_of!(IoParams, fh), 40);
        assert_eq!(offset_of!(IoParams, opcode), 48);
        assert_eq!(offset_of!(IoParams, cookie), 56);
    }

    #[test]
    fn io_events_have_cufile_h_layout() {
        assert_eq!(size_of::<IoEvent>(), 24);
        assert_eq!(offset_of!(IoEvent, cookie), 0);
        assert_eq!(offset_of!(IoEvent, status), 8);
        assert_eq!(offset_of!(IoEvent, ret), 16);
    }

    #[test]
    fn a_read_entry_is_a_batch_read() {
        let p = IoParams::read(0xf00, 0xd000, 4096, 1 << 30, 4 << 20, 7);
        assert_eq!((p.mode, p.opcode), (MODE_BATCH, OP_READ));
        assert_eq!(
            (p.file_offset, p.dev_ptr_offset, p.size),
            (1 << 30, 4096, 4 << 20)
        );
        assert_eq!((p.fh, p.dev_ptr_base, p.cookie), (0xf00, 0xd000, 7));
    }

    #[test]
    fn entries_pass_only_complete_with_every_byte() {
        let event = |status, ret| IoEvent {
            cookie: 0,
            status,
            ret,
        };
        assert_eq!(check_entry(&event(STATUS_COMPLETE, 4096), 4096), Ok(()));
        assert_eq!(
            check_entry(&event(STATUS_COMPLETE, 512), 4096),
            Err(EntryProblem::Short {
                done: 512,
                expected: 4096
            })
        );
        // A failed entry carries a negative error in its size_t.
        let failed = check_entry(&event(STATUS_FAILED, (-5i64) as u64), 4096).unwrap_err();
        assert_eq!(
            failed,
            EntryProblem::NotComplete {
                status: STATUS_FAILED,
                error: Some(-5)
            }
        );
        assert!(
            failed
                .to_string()
                .starts_with("cuFile reported it failed with error -5")
        );
        let canceled = check_entry(&event(STATUS_CANCELED, 0), 4096).unwrap_err();
        assert_eq!(canceled.to_string(), "cuFile reported it canceled");
        assert_eq!(status_name(0x30), "status 0x30");
        assert!(!is_final(STATUS_PENDING) && !is_final(STATUS_WAITING));
        assert!(is_final(STATUS_COMPLETE) && is_final(STATUS_FAILED) && is_final(STATUS_TIMEOUT));
    }
}
