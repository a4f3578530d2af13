"""The Python worker's `torch` reader and writer: one trial through PyTorch's torch.cuda.gds.GdsFile.

kvikio_worker.py runs it and hands it its own module (`w`): the spec, the GPU buffer, the
verification kernels, cuFile's counters and the result are the KvikIO trial's, and so are the pass
loops, the progress file and the costs (passes.py); only the calls that move the bytes differ.

What PyTorch does (torch/cuda/gds.py, torch/csrc/cuda/GdsFile.cpp): `GdsFile(path, flags)` opens
the file with `os.O_DIRECT` added to `flags` and registers it with `cuFileHandleRegister` at once,
raising if cuFile refuses it: PyTorch has no POSIX path of its own, so any POSIX read is cuFile's
compat mode, which only cuFile's counters show. `load_storage(storage, offset)` reads
`storage.nbytes()` bytes at file offset `offset` into a CUDA storage with one `cuFileRead`, and
`save_storage(storage, offset)` writes them with one `cuFileWrite` (PyTorch's main branch has
moved to `cuFileReadAsync`/`cuFileWriteAsync` on the current stream, then a synchronisation);
`gds_register_buffer(storage)` is `cuFileBufRegister` of the whole storage.

A storage cannot be a slice of another, so each segment of the plan gets a storage of its own:
a torch view, through DLPack, of its part of the cupy buffer that the verification kernels read.
The view is checked to alias that part, so the bytes verified are the bytes PyTorch wrote into.
"""

import json
import os
import sys
import time
import types

import passes

TORCH_INSTALL = ("torch", "pip install torch --index-url https://download.pytorch.org/whl/cu130 "
                          "(a CUDA build of PyTorch 2.5 or newer, which has torch.cuda.gds)")


def import_stack(m, w):
    """torch (a CUDA build whose torch.cuda.gds reaches cuFile) and cupy, or Missing naming what
    lacks and the install command."""
    modules = w.import_modules(m, (TORCH_INSTALL, w.CUPY_INSTALL))
    torch = modules["torch"]
    version = getattr(torch, "__version__", "?")
    if getattr(torch.version, "cuda", None) is None:
        raise w.Missing("torch with CUDA", "torch %s in %s is a CPU-only build" % (version, sys.executable),
                        TORCH_INSTALL[1])
    try:
        import torch.cuda.gds as gds
    except ImportError as error:
        raise w.Missing("torch.cuda.gds", "torch %s has no torch.cuda.gds (%s)" % (version, error),
                        "pip install -U torch --index-url https://download.pytorch.org/whl/cu130")
    if not gds_built(torch._C):
        raise w.Missing("torch built with cuFile",
                        "torch %s was built without cuFile: its torch.cuda.gds raises \"not supported on this "
                        "platform\"" % version, TORCH_INSTALL[1])
    api = gds_api(gds)
    if api is None:
        raise w.Missing("torch.cuda.gds.GdsFile", "torch %s's torch.cuda.gds has no GdsFile" % version,
                        "pip install -U torch --index-url https://download.pytorch.org/whl/cu130")
    modules["gds"] = api
    return modules


def gds_api(gds):
    """GdsFile and the buffer registration of torch.cuda.gds: public since PyTorch 2.6, named
    `_GdsFile`, `_gds_register_buffer`, ... in 2.5. None when it has no GdsFile."""
    names = ("GdsFile", "gds_register_buffer", "gds_deregister_buffer")
    found = [getattr(gds, name, None) or getattr(gds, "_" + name, None) for name in names]
    if found[0] is None:
        return None
    return types.SimpleNamespace(**dict(zip(names, found)))


def gds_built(c_module):
    """Whether torch._C has the cuFile bindings: without them (a build without USE_CUFILE),
    torch/cuda/gds.py installs stand-ins made by its `_dummy_fn` that raise when called."""
    function = getattr(c_module, "_gds_register_handle", None)
    return function is not None and "_dummy_fn" not in getattr(function, "__qualname__", "")


def measure(spec, here, stack, m, raw, state, w):
    torch, cupy, gds = stack["torch"], stack["cupy"], stack["gds"]
    trial, plan = spec["trial"], spec["plan"]
    phase = w.phase_timer(m)
    device, buffer = w.gpu_buffer(spec, cupy, m, raw, state, phase)
    torch.cuda.set_device(trial["gpu"])
    verifier = w.Verifier(cupy, device, buffer, os.path.join(here, "kernels.cu"))
    io = TorchIo(torch, gds, registered=trial.get("buffer") == "registered")
    try:
        if passes.writes(trial):
            fail = passes.write_passes(spec, io, cupy, device, buffer, verifier, m, phase, state)
            state["device_peak"] = max(state["device_peak"] or 0, passes.device_used(cupy)) or None
        else:
            io.open_for_read([f["path"] for f in plan["files"]], buffer)
            phase("GdsFile open (cuFileHandleRegister)")
            for segments in passes.gds_pass.sections(json.dumps(spec), m["window"]):
                io.prepare(buffer, segments)
            phase("storages over the buffer")
            fail = passes.read_passes(spec, io, cupy, device, buffer, verifier, m["window"], m, state)
        passes.hold_for_sample(spec.get("hold_for_sampling"))
    finally:
        io.close()
    m["torch"] = evidence(torch, cupy, sorted(io.used))
    return fail


def evidence(torch, cupy, calls):
    return {"torch_version": str(torch.__version__), "cuda_version": torch.version.cuda,
            "cupy_version": cupy.__version__, "python": "%s (%s)" % (sys.version.split()[0], sys.executable),
            "calls": calls}


# O_RDWR as in PyTorch's own example: cuFile may read what an unaligned write only partly covers.
WRITE_FLAGS = os.O_CREAT | os.O_RDWR


class NoCounters:
    """The pass loops' hooks for a library that counts no operations of its own (PyTorch):
    the calls are the plan's, and the only counters are cuFile's."""

    def measured_from(self):
        pass

    def counters(self):
        return None

    def since(self, before):
        return None


class TorchIo(NoCounters, passes.FirstCall):
    """How the pass loops (passes.read_passes and write_passes) go through PyTorch: one
    `load_storage` (or `save_storage`) per segment, in order, from this thread, each with the
    segment's own storage over the buffer, made before the passes."""
    library = "PyTorch"

    def __init__(self, torch, gds, registered):
        self.torch, self.gds, self.registered = torch, gds, registered
        self.storages = {}
        self.buffers = []
        self.files = []
        self.writing = []
        self.write_calls = 0
        self.used = set()

    def prepare(self, buffer, segments):
        """A storage for each segment's part of `buffer` (windows reuse the buffer's start), and
        with `buffer: registered` each registered with cuFile: a registered buffer is named by its
        base, so each storage is a registration of its own rather than a part of one."""
        for s in segments:
            key = (id(buffer), s["buffer_offset"], s["len"])
            if key not in self.storages:
                self.storages[key] = storage = storage_over(self.torch, buffer, s["buffer_offset"], s["len"])
                if self.registered:
                    self.gds.gds_register_buffer(storage)
                    self.buffers.append(storage)
                    self.used.add("gds_register_buffer")

    def storage(self, buffer, s):
        return self.storages[(id(buffer), s["buffer_offset"], s["len"])]

    def open_for_read(self, paths, buffer):
        self.buffer = buffer
        self.files = [self.gds.GdsFile(path, os.O_RDONLY) for path in paths]

    def calls_in(self, segments):
        """One `load_storage` per segment."""
        return len(segments)

    def read(self, segments):
        """`load_storage` returns nothing: it raises on a failed read (and, in recent PyTorch, on
        a short one). A short read older PyTorch lets through leaves poisoned bytes, which the
        verification reports."""
        return self.load(self.files, self.buffer, segments)

    def load(self, files, buffer, segments):
        self.used.add("load_storage")
        done = 0
        for s in segments:
            files[s["file"]].load_storage(self.storage(buffer, s), s["offset"])
            done += s["len"]
            self.ended()
        return done

    def reopen(self, paths):
        """A load's start: the files closed and the storages deregistered (untimed), then the
        files opened with `GdsFile` (which registers them with cuFile) and the storages
        registered again, each timed: (open seconds, register seconds or None)."""
        self.files = []  # a GdsFile deregisters its handle and closes its file when collected
        registered = list(self.buffers)
        while self.buffers:
            self.gds.gds_deregister_buffer(self.buffers.pop())
        t0 = time.perf_counter()
        self.files = [self.gds.GdsFile(path, os.O_RDONLY) for path in paths]
        opened = time.perf_counter() - t0
        if not registered:
            return opened, None
        t0 = time.perf_counter()
        for storage in registered:
            self.gds.gds_register_buffer(storage)
            self.buffers.append(storage)
        return opened, time.perf_counter() - t0

    def prepare_writes(self, buffer, check, segments, roundtrip):
        self.prepare(buffer, segments)
        if roundtrip:
            self.prepare(check, segments)
        self.write_calls = len(segments)

    def open_for_write(self, paths):
        # GdsFile adds O_DIRECT; the pass loop blanked the files.
        self.writing = [self.gds.GdsFile(path, WRITE_FLAGS) for path in paths]

    def write(self, segments, buffer):
        """`save_storage` raises on a failed write; the bytes written are then the segments'."""
        self.used.add("save_storage")
        done = 0
        for s in segments:
            self.writing[s["file"]].save_storage(self.storage(buffer, s), s["offset"])
            done += s["len"]
        return done

    def close_written(self):
        self.writing = []

    def read_back(self, paths, segments, check):
        return self.load([self.gds.GdsFile(path, os.O_RDONLY) for path in paths], check, segments)

    def close(self):
        """Buffers deregistered before their memory can go; GdsFile deregisters its handle and
        closes its descriptor when it is collected, which dropping the last reference does."""
        self.files, self.writing = [], []
        while self.buffers:
            self.gds.gds_deregister_buffer(self.buffers.pop())


def storage_over(torch, buffer, offset, length):
    """The untyped storage of a torch view of `buffer[offset:offset + length]` (DLPack: no copy),
    checked to start at that part's address and hold exactly its bytes."""
    part = buffer[offset:offset + length]
    storage = torch.from_dlpack(part).untyped_storage()
    if storage.data_ptr() != part.data.ptr or storage.nbytes() != length:
        raise RuntimeError("a torch view of buffer bytes %d..%d is a storage of %d bytes at 0x%x, not the %d bytes "
                           "at 0x%x: PyTorch would not read into the buffer the gate verifies"
                           % (offset, offset + length, storage.nbytes(), storage.data_ptr(), length, part.data.ptr))
    return storage
