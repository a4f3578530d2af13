#!/usr/bin/env python3
"""cuFile's structs and the libcufile prototypes for the drills' ctypes calls, declared once.

The layouts mirror gds-model's `cufile_abi` (harness/model/src/cufile_abi.rs and cufile_abi/),
the gate's one account of cufile.h: field names are the Rust fields', and
harness/model/tests/drill_cufile_abi.rs runs this file and fails when a size, a field's offset
or a constant differs from the Rust types as the compiler lays them out. A drill that needs
another cuFile struct adds it here and to `STRUCTS`, with its Rust twin in gds-model.

Run alone, it prints the layout it declares as JSON (what that test reads):

    python3 tools/drills/cufile_abi.py

Nothing here loads libcufile until `Cufile(path)` is called, so importing it needs no GPU.
"""

import ctypes
import json


class Status(ctypes.Structure):
    """CUfileError_t: the cuFile status and, for CUDA errors, the driver's."""
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]


class DescrHandle(ctypes.Union):
    """The handle union of CUfileDescr_t: a descriptor, or a pointer-sized handle."""
    _fields_ = [("fd", ctypes.c_int), ("handle", ctypes.c_void_p)]


class Descr(ctypes.Structure):
    """CUfileDescr_t: the handle type, the union naming the file, fs_ops (null)."""
    _fields_ = [("kind", ctypes.c_int), ("handle", DescrHandle), ("fs_ops", ctypes.c_void_p)]


class IoParams(ctypes.Structure):
    """CUfileIOParams_t: one I/O of a batch, the union's batch member flattened."""
    _fields_ = [("mode", ctypes.c_uint32), ("dev_ptr_base", ctypes.c_void_p),
                ("file_offset", ctypes.c_int64), ("dev_ptr_offset", ctypes.c_int64),
                ("size", ctypes.c_size_t), ("fh", ctypes.c_void_p), ("opcode", ctypes.c_uint32),
                ("cookie", ctypes.c_void_p)]


class IoEvent(ctypes.Structure):
    """CUfileIOEvents_t: a batch entry's completion."""
    _fields_ = [("cookie", ctypes.c_void_p), ("status", ctypes.c_uint32), ("ret", ctypes.c_size_t)]


class Timespec(ctypes.Structure):
    """POSIX's struct timespec (cuFileBatchIOGetStatus's timeout): not cuFile's, not compared."""
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


# cufile.h's names for the structs above: the keys the layout test matches on.
STRUCTS = {
    "CUfileError_t": Status,
    "CUfileDescr_t": Descr,
    "CUfileDescr_t.handle": DescrHandle,
    "CUfileIOParams_t": IoParams,
    "CUfileIOEvents_t": IoEvent,
}

HANDLE_TYPE_OPAQUE_FD = 1  # CU_FILE_HANDLE_TYPE_OPAQUE_FD
MODE_BATCH = 1  # CUFILE_BATCH
OP_READ = 0  # CUFILE_READ
STATUS_COMPLETE = 0x10  # CUFILE_COMPLETE

CONSTANTS = {name: globals()[name] for name in ["HANDLE_TYPE_OPAQUE_FD", "MODE_BATCH", "OP_READ", "STATUS_COMPLETE"]}


def layout():
    """Every struct's size and fields' offsets by cufile.h name, and the constants."""
    return {
        "structs": {name: {"size": ctypes.sizeof(struct),
                           "fields": {field: getattr(struct, field).offset for field, _ in struct._fields_}}
                    for name, struct in STRUCTS.items()},
        "constants": CONSTANTS,
    }


class Cufile:
    """libcufile through ctypes, the prototypes of the calls the drills make declared."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        for name in ["cuFileDriverOpen", "cuFileHandleRegister", "cuFileBufRegister", "cuFileBufDeregister",
                     "cuFileStreamRegister", "cuFileStreamDeregister", "cuFileReadAsync",
                     "cuFileBatchIOSetUp", "cuFileBatchIOSubmit", "cuFileBatchIOGetStatus",
                     "cuFileBatchIOCancel", "cuFileGetVersion"]:
            if hasattr(lib, name):  # cuFileGetVersion is not in older libcufile
                getattr(lib, name).restype = Status
        lib.cuFileHandleRegister.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(Descr)]
        lib.cuFileHandleDeregister.restype = None
        lib.cuFileBatchIODestroy.restype = None
        lib.cuFileReadAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_void_p] * 4 + [ctypes.c_void_p]
        lib.cuFileBufRegister.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        lib.cuFileBufDeregister.argtypes = [ctypes.c_void_p]
        lib.cuFileStreamRegister.argtypes = [ctypes.c_void_p, ctypes.c_uint]
        lib.cuFileStreamDeregister.argtypes = [ctypes.c_void_p]
        lib.cuFileBatchIOSetUp.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
        lib.cuFileBatchIOSubmit.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.POINTER(IoParams), ctypes.c_uint]
        lib.cuFileBatchIOGetStatus.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.POINTER(ctypes.c_uint),
                                               ctypes.POINTER(IoEvent), ctypes.POINTER(Timespec)]
        lib.cuFileBatchIOCancel.argtypes = [ctypes.c_void_p]
        lib.cuFileBatchIODestroy.argtypes = [ctypes.c_void_p]
        self.lib = lib

    def open_driver(self):
        self.check("cuFileDriverOpen", self.lib.cuFileDriverOpen())
        return self

    def version(self):
        """cuFileGetVersion (1000 x major + 10 x minor), or 0 where the library lacks it."""
        version = ctypes.c_int()
        if hasattr(self.lib, "cuFileGetVersion"):
            self.lib.cuFileGetVersion(ctypes.byref(version))
        return version.value

    def check(self, call, error):
        if error.err != 0:
            raise RuntimeError("%s failed: err %d, cu_err %d" % (call, error.err, error.cu_err))

    def handle(self, fd):
        """A registered handle of the open (O_DIRECT) descriptor `fd`."""
        descr = Descr(kind=HANDLE_TYPE_OPAQUE_FD, handle=DescrHandle(fd=fd))
        handle = ctypes.c_void_p()
        self.check("cuFileHandleRegister", self.lib.cuFileHandleRegister(ctypes.byref(handle), ctypes.byref(descr)))
        return handle


if __name__ == "__main__":
    print(json.dumps(layout(), indent=2, sort_keys=True))
