//! What cuFile's calls return and how a file is handed to them: `CUfileError_t` (every call's
//! status) and `CUfileDescr_t` (a descriptor to register), with their cufile.h byte layouts.
//! Pointers are carried as 64-bit integers, as in [`super::batch`].

/// `CUfileError_t` (8 bytes): cuFile's status `err` at 0 (0 is success, else a
/// [`super::describe`] code) and the CUDA driver's `cu_err` at 4 when the failure was the driver's.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, schemars::JsonSchema)]
pub struct Status {
    pub err: i32,
    pub cu_err: i32,
}

/// `CU_FILE_HANDLE_TYPE_OPAQUE_FD`: the file is named by an open descriptor.
pub const HANDLE_TYPE_OPAQUE_FD: i32 = 1;

/// `CUfileDescr_t` (24 bytes): the handle type at 0, the union naming the file at 8, `fs_ops` at
/// 16 (null: cuFile's own file-system operations).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Descr {
    pub kind: i32,
    pub handle: DescrHandle,
    pub fs_ops: u64,
}

/// The `handle` union of `CUfileDescr_t`: a descriptor, or a Windows handle (pointer-sized).
#[repr(C)]
#[derive(Clone, Copy)]
pub union DescrHandle {
    pub fd: i32,
    pub handle: u64,
}

impl Descr {
    /// The descriptor of an open (`O_DIRECT`) file, for `cuFileHandleRegister`.
    pub fn fd(fd: i32) -> Descr {
        Descr {
            kind: HANDLE_TYPE_OPAQUE_FD,
            handle: DescrHandle { fd },
            fs_ops: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn status_and_descr_have_cufile_h_layout() {
        assert_eq!(size_of::<Status>(), 8);
        assert_eq!(offset_of!(Status, cu_err), 4);
        assert_eq!(size_of::<Descr>(), 24);
        assert_eq!(offset_of!(Descr, handle), 8);
        assert_eq!(offset_of!(Descr, fs_ops), 16);
        assert_eq!(size_of::<DescrHandle>(), 8);
    }
}
