"""Tests of the torch reader's logic that needs no GPU and no PyTorch (run by `cargo test`, see
harness/gate/tests/kvikio_worker.rs): what is missing and how to install it, one storage and one
`load_storage` or `save_storage` per segment, buffer registration, and the pass loops both
libraries share. PyTorch, cupy and GdsFile are stand-ins here (test fixtures)."""

import os
import sys
import types
import unittest
from unittest import mock

import gds_pass
import kvikio_worker as worker
import passes
import test_kvikio_worker as k
import torch_reader


def fake_torch(cuda="13.0", gds=True):
    """A `torch` module stand-in (test fixture): a version, a CUDA build or not, and cuFile
    bindings or torch/cuda/gds.py's `_dummy_fn` stand-ins."""
    torch = types.ModuleType("torch")
    torch.__version__ = "2.11.0+cu130"
    torch.version = types.SimpleNamespace(cuda=cuda)

    def _dummy_fn(name):
        def fn(*args, **kwargs):
            raise RuntimeError("torch._C.%s is not supported on this platform" % name)
        return fn
    handle = (lambda fd: 1) if gds else _dummy_fn("_gds_register_handle")
    torch._C = types.SimpleNamespace(_gds_register_handle=handle)
    torch.cuda = types.ModuleType("torch.cuda")
    torch.cuda.gds = types.ModuleType("torch.cuda.gds")
    torch.cuda.gds.GdsFile = FakeGdsFile
    return torch


class Stack(unittest.TestCase):
    def imported(self, torch):
        modules = {"torch": torch, "torch.cuda": torch.cuda, "torch.cuda.gds": torch.cuda.gds,
                   "cupy": types.ModuleType("cupy")}
        with mock.patch.dict(sys.modules, modules):
            return torch_reader.import_stack({"setup": []}, worker)

    def test_a_cuda_build_with_cufile_is_the_stack(self):
        stack = self.imported(fake_torch())
        self.assertEqual(sorted(stack), ["cupy", "gds", "torch"])

    def test_a_cpu_build_is_missing_with_the_install_command(self):
        with self.assertRaises(worker.Missing) as raised:
            self.imported(fake_torch(cuda=None))
        what, reason, install = raised.exception.args
        self.assertEqual(what, "torch with CUDA")
        self.assertIn("CPU-only build", reason)
        self.assertIn("pip install torch --index-url https://download.pytorch.org/whl/cu130", install)

    def test_a_build_without_cufile_is_missing(self):
        with self.assertRaises(worker.Missing) as raised:
            self.imported(fake_torch(gds=False))
        what, reason, _ = raised.exception.args
        self.assertEqual(what, "torch built with cuFile")
        self.assertIn("without cuFile", reason)

    def test_no_torch_names_torch_and_its_install_command(self):
        with mock.patch.dict(sys.modules, {"torch": None, "cupy": types.ModuleType("cupy")}):
            with self.assertRaises(worker.Missing) as raised:
                torch_reader.import_stack({"setup": []}, worker)
        what, reason, install = raised.exception.args
        self.assertEqual(what, "torch")
        self.assertIn("not found by", reason)
        self.assertIn("pip install torch", install)

    def test_the_private_names_of_pytorch_2_5_are_taken_and_no_gdsfile_is_missing(self):
        old = types.SimpleNamespace(_GdsFile=FakeGdsFile, _gds_register_buffer=len, _gds_deregister_buffer=id)
        api = torch_reader.gds_api(old)
        self.assertEqual((api.GdsFile, api.gds_register_buffer, api.gds_deregister_buffer), (FakeGdsFile, len, id))
        self.assertIsNone(torch_reader.gds_api(types.SimpleNamespace()))
        torch = fake_torch()
        del torch.cuda.gds.GdsFile
        with self.assertRaises(worker.Missing) as raised:
            self.imported(torch)
        self.assertEqual(raised.exception.args[0], "torch.cuda.gds.GdsFile")

    def test_gds_built_tells_bindings_from_stand_ins_and_absence(self):
        self.assertTrue(torch_reader.gds_built(fake_torch()._C))
        self.assertFalse(torch_reader.gds_built(fake_torch(gds=False)._C))
        self.assertFalse(torch_reader.gds_built(types.SimpleNamespace()))


class FakeMemory:
    """A cupy slice stand-in (test fixture): its device address."""

    def __init__(self, ptr):
        self.ptr = ptr


class FakeDeviceBuffer:
    """A cupy buffer stand-in (test fixture): slices know their address."""

    def __init__(self, base):
        self.base = base

    def __getitem__(self, key):
        part = types.SimpleNamespace(data=FakeMemory(self.base + key.start), len=key.stop - key.start)
        return part


class FakeStorage:
    def __init__(self, ptr, nbytes):
        self.ptr, self.size = ptr, nbytes

    def data_ptr(self):
        return self.ptr

    def nbytes(self):
        return self.size


class FakeDlpackTorch:
    """torch.from_dlpack stand-in (test fixture): a view at the part's address, or `shift` bytes
    off it, as a copy would be."""

    def __init__(self, shift=0):
        self.shift = shift

    def from_dlpack(self, part):
        storage = FakeStorage(part.data.ptr + self.shift, part.len)
        return types.SimpleNamespace(untyped_storage=lambda: storage)


class FakeGdsFile:
    """GdsFile stand-in (test fixture): records each load_storage and save_storage."""
    opened = []

    def __init__(self, path, flags):
        self.path, self.flags, self.loads, self.saves = path, flags, [], []
        FakeGdsFile.opened.append(self)

    def load_storage(self, storage, offset):
        self.loads.append((storage.data_ptr(), storage.nbytes(), offset))

    def save_storage(self, storage, offset):
        self.saves.append((storage.data_ptr(), storage.nbytes(), offset))


class FakeGds:
    GdsFile = FakeGdsFile

    def __init__(self):
        self.registered, self.deregistered = [], []

    def gds_register_buffer(self, storage):
        self.registered.append(storage.data_ptr())

    def gds_deregister_buffer(self, storage):
        self.deregistered.append(storage.data_ptr())


SEGMENTS = [{"file": 0, "offset": 0, "len": 4096, "buffer_offset": 0},
            {"file": 1, "offset": 8192, "len": 100, "buffer_offset": 4096}]


class Storages(unittest.TestCase):
    def setUp(self):
        FakeGdsFile.opened = []

    def test_each_segment_is_loaded_into_its_own_storage_at_its_file_offset(self):
        gds = FakeGds()
        io = torch_reader.TorchIo(FakeDlpackTorch(), gds, registered=False)
        buffer = FakeDeviceBuffer(0x1000)
        io.open_for_read(["a", "b"], buffer)
        io.prepare(buffer, SEGMENTS)
        self.assertEqual(io.read(SEGMENTS), 4196)
        a, b = FakeGdsFile.opened
        self.assertEqual((a.path, b.path), ("a", "b"))
        self.assertTrue(all(f.flags == os.O_RDONLY for f in FakeGdsFile.opened))  # GdsFile adds O_DIRECT
        self.assertEqual(a.loads, [(0x1000, 4096, 0)])
        self.assertEqual(b.loads, [(0x1000 + 4096, 100, 8192)])
        io.close()
        self.assertEqual((gds.registered, gds.deregistered, io.files, sorted(io.used)), ([], [], [], ["load_storage"]))

    def test_registered_storages_are_each_registered_once_and_deregistered_at_close(self):
        gds = FakeGds()
        io = torch_reader.TorchIo(FakeDlpackTorch(), gds, registered=True)
        buffer = FakeDeviceBuffer(0)
        io.prepare(buffer, [{"file": 0, "offset": 0, "len": 64, "buffer_offset": 0}])
        io.prepare(buffer, [{"file": 0, "offset": 64, "len": 64, "buffer_offset": 0}])  # a later window
        self.assertEqual(gds.registered, [0])
        io.close()
        self.assertEqual(gds.deregistered, [0])
        self.assertEqual(io.used, {"gds_register_buffer"})

    def test_a_load_reopens_the_files_and_registers_the_storages_again_each_pass(self):
        gds = FakeGds()
        io = torch_reader.TorchIo(FakeDlpackTorch(), gds, registered=True)
        buffer = FakeDeviceBuffer(0x1000)
        io.open_for_read(["a", "b"], buffer)
        io.prepare(buffer, SEGMENTS)
        for _ in range(2):
            io.reset()
            opened, registered = io.reopen(["a", "b"])
            self.assertTrue(opened >= 0 and registered >= 0)
            self.assertIsNone(io.first_done)
            io.read(SEGMENTS)
            self.assertIsNotNone(io.first_done)
        self.assertEqual([f.path for f in FakeGdsFile.opened], ["a", "b"] * 3)
        self.assertEqual(gds.registered, [0x1000, 0x1000 + 4096] * 3)
        self.assertEqual(gds.deregistered, [0x1000 + 4096, 0x1000] * 2)
        unregistered = torch_reader.TorchIo(FakeDlpackTorch(), FakeGds(), registered=False)
        unregistered.prepare(buffer, SEGMENTS)
        self.assertIsNone(unregistered.reopen(["a"])[1])

    def test_writes_save_each_segment_from_the_source_and_a_roundtrip_loads_into_the_check_buffer(self):
        io = torch_reader.TorchIo(FakeDlpackTorch(), FakeGds(), registered=False)
        source, check = FakeDeviceBuffer(0x10000), FakeDeviceBuffer(0x90000)
        io.prepare_writes(source, check, SEGMENTS, roundtrip=True)
        self.assertEqual(io.write_calls, 2)
        io.open_for_write(["a", "b"])
        self.assertEqual(io.write(SEGMENTS, source), 4196)
        a, b = FakeGdsFile.opened
        self.assertEqual(a.flags, os.O_CREAT | os.O_RDWR)  # blanked by the pass loop, not truncated
        self.assertEqual((a.saves, b.saves), ([(0x10000, 4096, 0)], [(0x10000 + 4096, 100, 8192)]))
        io.close_written()
        self.assertEqual(io.read_back(["a", "b"], SEGMENTS, check), 4196)
        a, b = FakeGdsFile.opened[2:]
        self.assertEqual((a.loads, b.loads), ([(0x90000, 4096, 0)], [(0x90000 + 4096, 100, 8192)]))
        self.assertEqual(io.used, {"save_storage", "load_storage"})

    def test_a_view_that_is_not_the_buffer_is_refused(self):
        with self.assertRaises(RuntimeError) as raised:
            torch_reader.storage_over(FakeDlpackTorch(shift=8), FakeDeviceBuffer(0), 16, 32)
        self.assertIn("would not read into the buffer the gate verifies", str(raised.exception))


class FakeIo(torch_reader.NoCounters, passes.FirstCall):
    """A reader stand-in for the pass loop (test fixture): copies the files' bytes into the
    buffer, and reads one byte less in pass `short_in`."""
    library = "PyTorch"

    def __init__(self, spec, buffer, short_in=None):
        self.data, self.buffer, self.short_in, self.passes = k.on_disk(spec), buffer, short_in, 0

    def calls_in(self, segments):
        return len(segments)

    def read(self, segments):
        self.passes += 1
        for s in segments:
            self.buffer[s["buffer_offset"]:s["buffer_offset"] + s["len"]].write(
                0, self.data[s["file"]][s["offset"]:s["offset"] + s["len"]])
        return sum(s["len"] for s in segments) - (1 if self.passes == self.short_in else 0)


class Passes(unittest.TestCase):
    def test_warmup_and_measured_passes_with_their_calls_and_the_cache_dropped(self):
        spec = k.fixture("torch")
        buffer = k.FakeBuffer(150000)
        fail, m = k.read_trial(spec, FakeIo(spec, buffer), buffer)
        self.assertIsNone(fail, m)
        self.assertEqual((len(m["warmup_seconds"]), len(m["seconds"]), len(m["costs"])), (1, 2, 2))
        self.assertEqual([c["read_calls"] for c in m["costs"]], [2, 2])
        self.assertLessEqual(m["resident_after_drop"], 0.05)
        self.assertEqual(m["integrity"]["checksum"], m["integrity"]["expected_checksum"])

    def test_a_short_read_fails_naming_the_library_and_the_pass(self):
        spec = k.fixture("torch")
        buffer = k.FakeBuffer(150000)
        fail, m = k.read_trial(spec, FakeIo(spec, buffer, short_in=2), buffer)
        self.assertEqual(fail["reason"], "PyTorch read 149999 bytes of 150000 (pass 2 of 3)")
        self.assertEqual(len(m["warmup_seconds"]), 1)


class FakeWriteIo:
    """A writer stand-in for the write loop (test fixture): writes one byte less in pass
    `short_in`, reads back the generator's bytes; records what it was asked."""
    library = "PyTorch"
    write_calls = 3

    def __init__(self, spec, short_in=None):
        self.spec, self.short_in, self.passes, self.events = spec, short_in, 0, []

    def prepare_writes(self, buffer, check, segments, roundtrip):
        self.events.append(("prepare", roundtrip))

    def open_for_write(self, paths):
        self.events.append(("open", tuple(paths)))

    def measured_from(self):
        pass

    def write(self, segments, buffer):
        self.passes += 1
        return sum(s["len"] for s in segments) - (1 if self.passes == self.short_in else 0)

    def close_written(self):
        self.events.append(("close",))

    def read_back(self, paths, segments, check):
        self.events.append(("read back",))
        files = self.spec["plan"]["files"]
        for s in segments:
            check[s["buffer_offset"]:s["buffer_offset"] + s["len"]].write(
                0, gds_pass.reference_bytes(files[s["file"]]["seed"], s["offset"], s["len"]))
        return sum(s["len"] for s in segments)


class WritePasses(unittest.TestCase):
    def run_passes(self, io):
        spec = io.spec
        m = {"bytes_per_repetition": 150000, "warmup_seconds": [], "seconds": [], "gbps": [], "costs": [],
             "verify_seconds": 0.0, "setup": []}
        with mock.patch.dict(os.environ, {"GDS_GATE_RECORD_COST": "1"}):
            fail = passes.write_passes(spec, io, k.FakeCupy(), k.Device(), k.FakeBuffer(150000), k.HostVerifier(),
                                       m, worker.phase_timer(m), {"device_peak": None})
        return fail, m, [f["path"] for f in spec["plan"]["files"]]

    def test_each_pass_opens_writes_closes_drops_and_reads_back(self):
        io = FakeWriteIo(k.fixture("roundtrip"))
        fail, m, paths = self.run_passes(io)
        self.assertIsNone(fail, m)
        self.assertEqual(io.events[0], ("prepare", True))
        self.assertEqual(io.events[1:4], [("open", tuple(paths)), ("close",), ("read back",)])
        self.assertEqual(len(io.events), 1 + 3 * 3)
        self.assertEqual([c["read_calls"] for c in m["costs"]], [3, 3])
        self.assertEqual(len(m["write"]["read_back_gbps"]), 2)
        self.assertEqual(m["integrity"]["checksum"], m["integrity"]["expected_checksum"])

    def test_a_short_write_fails_naming_the_library_and_the_pass(self):
        fail, _, _ = self.run_passes(FakeWriteIo(k.fixture("roundtrip"), short_in=1))
        self.assertEqual(fail["reason"], "PyTorch wrote 149999 bytes of 150000 (pass 1 of 3)")


if __name__ == "__main__":
    unittest.main()
