"""Tests of the KvikIO worker's logic that needs no GPU (run by `cargo test`, see
harness/gate/tests/kvikio_worker.rs): its reads and writes through the Rust pass loop of the
gds_pass extension, with KvikIO, cupy and the GPU's kernels stood in for, over the trials and
generated files that test writes (`GDS_PASS_FIXTURES`): windows and `kvikio_api: async`, loads,
a wrong byte, async writes and round trips."""

import contextlib
import json
import os
import sys
import time
import types
import unittest
from unittest import mock

import gds_pass
import kvikio_worker as worker
import passes

FIXTURES = os.environ.get("GDS_PASS_FIXTURES", "")


def fixture(name):
    """The spec of the fixture trial `name`, as the gate writes it."""
    with open(os.path.join(FIXTURES, name + ".json")) as f:
        return json.load(f)


def on_disk(spec):
    """The bytes of each of the spec's files."""
    contents = []
    for f in spec["plan"]["files"]:
        with open(f["path"], "rb") as disk:
            contents.append(disk.read())
    return contents


class HostVerifier:
    """The GPU's kernels stood in for by their CPU reference in gds_pass (test fixture), over a
    FakeBuffer."""

    def __init__(self, buffer=None):
        self.buffer = buffer

    def over(self, buffer):
        return HostVerifier(buffer)

    def fill(self, buffer, offset, length, seed):
        buffer[offset:offset + length].write(0, gds_pass.reference_bytes(seed, 0, length))

    def exact_range(self, seed, file_offset, buffer_offset, length):
        data = bytes(self.buffer.bytes[buffer_offset:buffer_offset + length])
        return gds_pass.reference_exact(seed, file_offset, data)

    def checksum_range(self, file_offset, buffer_offset, length):
        return gds_pass.reference_checksum(file_offset, bytes(self.buffer.bytes[buffer_offset:buffer_offset + length]))


class Device:
    def synchronize(self):
        pass


class Counts:
    """KvikIO's SummaryMonitor stand-in (test fixture): it counts nothing."""
    num_reads = total_duration_ns = 0

    def get(self):
        return self

    def since(self, before):
        return self


class CuFile:
    """kvikio.CuFile stand-in over fixture bytes (test fixture): `pread` and `raw_read_async` copy
    at once; each call is recorded with where its bytes landed in the whole buffer."""

    def __init__(self, data, log=None):
        self.data, self.calls, self.device_offsets = data, [], []
        self.log = log if log is not None else []

    def pread(self, view, length, offset, task_size):
        view.write(0, self.data[offset:offset + length])
        return Done(length)

    def raw_read_async(self, part, stream, length, offset, device_offset):
        self.calls.append((stream.ptr if hasattr(stream, "ptr") else stream, offset, part.start + device_offset, length))
        self.device_offsets.append(device_offset)
        part.write(device_offset, self.data[offset:offset + length])
        return Done(length)

    def close(self):
        self.log.append("close")


def without_kvikio_figures(spec, kvikio, cupy, monitor, measured_start, total, cached, m):
    """worker.finish stand-in (test fixture): KvikIO's own figures need the real KvikIO."""
    m["kvikio"] = {}


def read_trial(spec, io, buffer, m=None):
    """read_passes of `spec` through `io` into `buffer`, the kernels on the CPU: (failure, m)."""
    m = m if m is not None else {"setup": []}
    window = gds_pass.window(json.dumps(spec), 1 << 40)
    with mock.patch.object(passes, "device_used", lambda cupy: 0):
        fail = passes.read_passes(spec, io, None, Device(), buffer, HostVerifier(buffer), window, m,
                                  {"device_peak": None})
    return fail, m


class Sections(unittest.TestCase):
    def test_a_window_cuts_the_pass_into_sections_and_whole_is_one(self):
        windows = json.dumps(fixture("windows"))
        self.assertEqual(gds_pass.window(windows, 1 << 40), 64 << 10)
        cut = [sum(s["len"] for s in section) for section in gds_pass.sections(windows, 64 << 10)]
        self.assertEqual((len(cut), sum(cut), max(cut)), (3, 150000, 65536))
        whole = json.dumps(fixture("read"))
        self.assertIsNone(gds_pass.window(whole, 1 << 40))
        self.assertEqual(len(gds_pass.sections(whole, None)), 1)
        with self.assertRaisesRegex(ValueError, "a window of 100 bytes is below 4096"):
            gds_pass.sections(windows, 100)

    def test_tasks_cut_segments_as_kvikio_does(self):
        tasks = gds_pass.tasks([{"file": 1, "offset": 100, "len": 10000, "buffer_offset": 7}], 4096)
        self.assertEqual(tasks, [(1, 100, 7, 4096), (1, 4196, 4103, 4096), (1, 8292, 8199, 1808)])


class RegisteredBufferTest(unittest.TestCase):
    def test_a_registered_trial_registers_its_buffer_with_kvikio_and_deregisters_it(self):
        calls, phases = [], []
        kvikio = mock.Mock()
        kvikio.memory_register.side_effect = lambda buf: calls.append(("register", buf))
        kvikio.memory_deregister.side_effect = lambda buf: calls.append(("deregister", buf))
        buffer = object()
        deregister = worker.registered_buffer(kvikio, {"buffer": "registered"}, buffer, phases.append)
        self.assertEqual(calls, [("register", buffer)])
        self.assertEqual(phases, ["kvikio.memory_register (cuFileBufRegister)"])
        deregister()
        self.assertEqual(calls, [("register", buffer), ("deregister", buffer)])

    def test_an_unregistered_trial_registers_nothing(self):
        kvikio = mock.Mock()
        for trial in ({"buffer": "unregistered"}, {}):
            worker.registered_buffer(kvikio, trial, object(), lambda name: None)()
        kvikio.memory_register.assert_not_called()
        kvikio.memory_deregister.assert_not_called()


class FakeBuffer:
    """A device buffer stand-in (test fixture): bytes whose slices are views, as cupy's are."""

    def __init__(self, size):
        self.bytes = bytearray(size)

    def __getitem__(self, key):
        return FakeView(self, key)

    def fill(self, value):
        self.bytes[:] = bytes([value]) * len(self.bytes)


class FakeView:
    """A slice of a FakeBuffer (test fixture): filled and written in place, never past its end."""

    def __init__(self, buffer, key):
        self.buffer = buffer
        self.start, self.stop, _ = key.indices(len(buffer.bytes))

    def fill(self, value):
        self.buffer.bytes[self.start:self.stop] = bytes([value]) * (self.stop - self.start)

    def write(self, at, data):
        assert self.start + at + len(data) <= self.stop, "a write past the end of its view"
        self.buffer.bytes[self.start + at:self.start + at + len(data)] = data

    def read(self, at, length):
        assert self.start + at + length <= self.stop, "a read past the end of its view"
        return bytes(self.buffer.bytes[self.start + at:self.start + at + length])


class FakeStream:
    def __init__(self, ptr):
        self.ptr = ptr

    def synchronize(self):
        pass


class Done:
    """IOFuture and IOFutureStream stand-in (test fixture): the bytes the call moved, after
    `sleep` seconds for `get`."""

    def __init__(self, n, sleep=0.0):
        self.n, self.sleep = n, sleep

    def check_bytes_done(self):
        return self.n

    def get(self):
        time.sleep(self.sleep)
        return self.n


class DiskFile:
    """kvikio.CuFile stand-in over a real file (test fixture): the stream-ordered calls move the
    bytes at once with pwrite/pread and record (call, stream, file offset, device offset);
    `short` makes every write stop one byte early; `silent` makes every write claim its bytes and
    write none. pread/pwrite are not there: an async trial that called them fails."""

    def __init__(self, path, flags, log, short=False, silent=False):
        mode = os.O_RDWR | os.O_CREAT | (os.O_TRUNC if flags == "w" else 0)
        self.fd, self.log, self.short, self.silent = os.open(path, mode, 0o644), log, short, silent

    def raw_write_async(self, part, stream, length, offset, device_offset):
        self.log.append(("write", stream, offset, device_offset))
        if self.silent:
            return Done(length)
        data = part.read(device_offset, length)[:length - 1 if self.short else length]
        return Done(os.pwrite(self.fd, data, offset))

    def raw_read_async(self, part, stream, length, offset, device_offset):
        self.log.append(("read", stream, offset, device_offset))
        data = os.pread(self.fd, length, offset)
        part.write(device_offset, data)
        return Done(len(data))

    def is_compat_mode_preferred(self):
        return False

    def close(self):
        os.close(self.fd)


class FakeCupy:
    """cupy stand-in (test fixture): host bytes for device buffers, streams that only have a ptr."""

    uint8 = "uint8"

    def __init__(self):
        self.cuda = self
        self.count = 0

    def empty(self, size, dtype):
        return FakeBuffer(size)

    def Stream(self, non_blocking):
        self.count += 1
        return FakeStream(self.count)


class Reads(unittest.TestCase):
    def test_async_reads_go_window_by_window_into_the_window_buffer(self):
        spec = fixture("windows")
        files = [CuFile(data) for data in on_disk(spec)]
        buffer = FakeBuffer(64 << 10)
        io = worker.KvikioIo(None, Counts(), files, buffer, 16 << 10, [FakeStream(1), FakeStream(2), FakeStream(3)])
        fail, m = read_trial(spec, io, buffer)
        self.assertIsNone(fail, m)
        self.assertEqual(m["integrity"]["bad_words"], 0)
        self.assertEqual(m["integrity"]["checksum"], m["integrity"]["expected_checksum"])
        self.assertEqual(m["window"], 64 << 10)
        calls = files[0].calls + files[1].calls
        # Every task lands inside the window buffer, one raw_read_async per 16 KiB task of a window.
        self.assertTrue(all(at + length <= 64 << 10 for _, _, at, length in calls))
        tasks = sum(len(gds_pass.tasks(section, 16 << 10)) for section in gds_pass.sections(json.dumps(spec), 64 << 10))
        self.assertEqual(len(calls), tasks * 3)
        self.assertEqual([c["read_calls"] for c in m["costs"]], [tasks, tasks])
        self.assertEqual(files[0].calls[0][0], 1)
        # Each call names its own part of the buffer at device offset 0 (libcufile 1.15 failed
        # calls past the first one's extent at a shared base of an unregistered buffer).
        self.assertEqual(set(files[0].device_offsets + files[1].device_offsets), {0})

    def test_a_cold_trial_drops_its_files_and_a_wrong_byte_is_named_and_rechecked(self):
        spec = fixture("read")
        data = on_disk(spec)
        files = [CuFile(d) for d in data]
        buffer = FakeBuffer(150000)
        fail, m = read_trial(spec, worker.KvikioIo(None, Counts(), files, buffer, 1 << 20, []), buffer)
        self.assertIsNone(fail, m)
        self.assertLessEqual(m["resident_after_drop"], 0.05)
        self.assertEqual((len(m["warmup_seconds"]), len(m["seconds"])), (1, 2))
        files[1].data = data[1][:777] + bytes([data[1][777] ^ 1]) + data[1][778:]
        fail, m = read_trial(spec, worker.KvikioIo(None, Counts(), files, buffer, 1 << 20, []), buffer)
        self.assertIn("first wrong byte at offset 777 of `%s`" % spec["plan"]["files"][1]["path"], fail["reason"])
        self.assertIn("the file on the disk is right there", fail["next"])

    def test_an_exception_in_the_library_is_raised_to_the_worker_with_the_figures_before_it(self):
        spec = fixture("read")
        data = on_disk(spec)
        reads = []

        class Broken(CuFile):
            def pread(self, view, length, offset, task_size):
                reads.append(length)
                if len(reads) > len(data):  # the second pass
                    raise RuntimeError("cuFile error: nvidia-fs driver is not loaded")
                return super().pread(view, length, offset, task_size)

        buffer = FakeBuffer(150000)
        io = worker.KvikioIo(None, Counts(), [Broken(d) for d in data], buffer, 1 << 20, [])
        m = {"setup": []}
        with self.assertRaisesRegex(RuntimeError, "nvidia-fs driver is not loaded"):
            read_trial(spec, io, buffer, m)
        self.assertEqual(len(m["warmup_seconds"]) + len(m["seconds"]), 1, m)
        self.assertIsNotNone(m["startup_seconds"])

    def test_an_exception_outside_a_read_ends_the_passes_at_the_next_one(self):
        """The GPU memory query (after pass 1's read) and KvikIO's counters at the first measured
        pass (before pass 2's read) raise outside a read: the loop stops at the next pass."""
        spec = fixture("read")
        data = on_disk(spec)
        window = gds_pass.window(json.dumps(spec), 1 << 40)

        def broken(*args):
            raise RuntimeError("cudaErrorLaunchFailure")

        for target, name, passes_run in [(passes, "device_used", 1), (worker.KvikioIo, "measured_from", 2)]:
            buffer = FakeBuffer(150000)
            io = worker.KvikioIo(None, Counts(), [CuFile(d) for d in data], buffer, 1 << 20, [])
            m = {"setup": []}
            with mock.patch.object(passes, "device_used", lambda cupy: 0), \
                    mock.patch.object(target, name, broken), \
                    self.assertRaisesRegex(RuntimeError, "cudaErrorLaunchFailure"):
                passes.read_passes(spec, io, None, Device(), buffer, HostVerifier(buffer), window, m,
                                   {"device_peak": None})
            self.assertEqual(len(m["warmup_seconds"]) + len(m["seconds"]), passes_run, (name, m))

    def test_a_pass_times_the_library_call_alone(self):
        """The watchdog's arming and the library's counters are outside a pass's time."""
        spec = fixture("read")
        data = on_disk(spec)

        class SlowCounts(Counts):
            def get(self):
                time.sleep(0.05)
                return self

        @contextlib.contextmanager
        def slow_watch(nbytes, what):
            time.sleep(0.05)
            yield

        buffer = FakeBuffer(150000)
        io = worker.KvikioIo(None, SlowCounts(), [CuFile(d) for d in data], buffer, 1 << 20, [])
        m = {"setup": []}
        with mock.patch.object(passes, "watched", slow_watch):
            fail, m = read_trial(spec, io, buffer, m)
        self.assertIsNone(fail)
        times = m["warmup_seconds"] + m["seconds"]
        self.assertTrue(times and max(times) < 0.04, times)

    def test_kvikios_own_counts_give_the_mean_latency_of_the_measured_passes(self):
        spec = fixture("read")
        data = on_disk(spec)

        class Snapshot:
            def __init__(self, reads, ns):
                self.num_reads, self.total_duration_ns = reads, ns

            def since(self, before):
                return Snapshot(self.num_reads - before.num_reads, self.total_duration_ns - before.total_duration_ns)

        class Monitor:
            now = Snapshot(0, 0)

            def get(self):
                return Snapshot(self.now.num_reads, self.now.total_duration_ns)

        monitor = Monitor()

        class Counted(CuFile):
            def pread(self, view, length, offset, task_size):
                monitor.now = Snapshot(monitor.now.num_reads + 1, monitor.now.total_duration_ns + 2_000_000)
                return super().pread(view, length, offset, task_size)

        buffer = FakeBuffer(150000)
        io = worker.KvikioIo(None, monitor, [Counted(d) for d in data], buffer, 1 << 20, [])
        fail, m = read_trial(spec, io, buffer)
        self.assertIsNone(fail)
        reads = len(m["seconds"]) * len(spec["plan"]["segments"])
        latency = m["latency"]
        self.assertEqual((latency["calls"], latency["mean_us"], latency["p50_us"]), (reads, 2000.0, None))

    def test_each_load_reopens_and_records_its_steps_and_first_byte(self):
        spec = fixture("load")
        data = on_disk(spec)
        log = []

        class File(CuFile):
            def __init__(self, path, flags):
                super().__init__(data[int(path[-1])], log)
                log.append(("open", int(path[-1])))

            def pread(self, view, length, offset, task_size):
                view.write(0, self.data[offset:offset + length])
                return Done(length, sleep=0.002)

        kvikio = mock.Mock()
        kvikio.CuFile = File
        kvikio.memory_register.side_effect = lambda buf: log.append(("register",))
        kvikio.memory_deregister.side_effect = lambda buf: log.append(("deregister",))
        buffer = FakeBuffer(150000)
        io = worker.KvikioIo(kvikio, Counts(), [], buffer, 1 << 20, [], registered=True)
        fail, m = read_trial(spec, io, buffer)
        self.assertIsNone(fail, m)
        pass_log = [("deregister",), ("open", 0), ("open", 1), ("register",)]
        self.assertEqual([entry for entry in log if entry != "close"], pass_log * 3)
        load = m["load"]
        self.assertEqual([len(load[k]) for k in ("open_seconds", "register_seconds", "first_byte_seconds")],
                         [2, 2, 2])
        for seconds, opened, registered, first in zip(m["seconds"], load["open_seconds"], load["register_seconds"],
                                                      load["first_byte_seconds"]):
            # The first byte is the first pread's end (2 ms), the load both (4 ms), opening included.
            self.assertTrue(opened + registered < first < seconds, (opened, registered, first, seconds))
            self.assertGreaterEqual(first, 0.002)
            self.assertGreaterEqual(seconds, 0.004)


class WholeWorker(unittest.TestCase):
    """worker.run, the KvikIO worker's whole trial as the gate starts it, over the fixture files
    with KvikIO and cupy stood in for (test fixtures, put in sys.modules) and the kernels on the
    CPU reference: every call between the worker and the Rust loop, and the result it answers."""

    def run_worker(self, name):
        spec = fixture(name)
        data = on_disk(spec)
        kvikio = mock.Mock(spec=["CuFile", "SummaryMonitor", "memory_register", "memory_deregister",
                                 "__version__"])
        kvikio.CuFile = lambda path, flags: CuFile(data[int(path[-1])])
        kvikio.SummaryMonitor = Counts
        cupy = GpuCupy()
        with mock.patch.dict(sys.modules, {"kvikio": kvikio, "cupy": cupy}), \
                mock.patch.object(worker, "Verifier", lambda cupy, device, buffer, source: HostVerifier(buffer)), \
                mock.patch.object(worker, "finish", without_kvikio_figures):
            return worker.run(spec, os.path.dirname(os.path.abspath(__file__)))


    def test_a_windowed_async_read_answers_a_verified_measurement(self):
        result = self.run_worker("windows")
        m = result["measurement"]
        self.assertIsNone(result["failure"], result)
        self.assertEqual(result["protocol"], worker.PROTOCOL)
        self.assertEqual((m["path"], m["window"], len(m["seconds"])), ("kvikio", 64 << 10, 2))
        self.assertEqual(m["integrity"]["checksum"], m["integrity"]["expected_checksum"])
        self.assertEqual(m["memory"]["device_bytes"], 7)
        # The worker's own start-up phases, then the loop's.
        phases = [phase for phase, _ in m["setup"]]
        self.assertEqual(phases[-3:], ["gpu context and buffer", "kvikio.CuFile open", "destination cleared"])
        self.assertIn("async_path", m["kvikio"])

    def test_a_cold_read_drops_and_a_load_reopens(self):
        for name in ("read", "load"):
            result = self.run_worker(name)
            self.assertIsNone(result["failure"], (name, result))
        self.assertEqual(len(result["measurement"]["load"]["open_seconds"]), 2)


class GpuCupy(FakeCupy):
    """cupy stand-in with the device calls the worker makes (test fixture): one GPU of 80 GB,
    7 bytes of it in use."""

    def __init__(self):
        super().__init__()
        self.runtime = self

    def Device(self, ordinal):
        return types.SimpleNamespace(use=lambda: None, synchronize=lambda: None)

    def getDeviceProperties(self, ordinal):
        return {"name": b"Fake GPU"}

    def memGetInfo(self):
        return 80_000_000_000 - 7, 80_000_000_000


class AsyncWrites(unittest.TestCase):
    def run_trial(self, op, short=False, silent=False, stale=False):
        """A writing trial of the fixture's two files through measure_writes with the stand-ins
        above; the files stay on disk for the caller to read. `stale`: they hold the right bytes
        before it starts, as a previous run leaves them."""
        spec = fixture(op)
        files = spec["plan"]["files"]
        for f in files:  # absent, as on a runner's first run, or left by a previous run
            if os.path.exists(f["path"]):
                os.remove(f["path"])
            if stale:
                with open(f["path"], "wb") as disk:
                    disk.write(gds_pass.reference_bytes(f["seed"], 0, f["size"]))
        log = []

        class Kvikio:
            @staticmethod
            def CuFile(path, flags):
                return DiskFile(path, flags, log, short, silent)

        class Monitor:
            def get(self):
                return None

        total = sum(f["size"] for f in files)
        m = {"bytes_per_repetition": total, "seconds": [], "gbps": [], "warmup_seconds": [], "costs": [],
             "verify_seconds": 0.0, "setup": []}
        buffer = FakeBuffer(total)
        stack = {"kvikio": Kvikio, "cupy": FakeCupy()}

        with mock.patch.object(worker, "finish", without_kvikio_figures), \
                mock.patch.dict(os.environ, {"CUFILE_ENV_PATH_JSON": os.path.join(FIXTURES, "cufile.json")}):
            fail = worker.measure_writes(spec, stack, Device(), buffer, HostVerifier(), Monitor(), m,
                                         lambda name: None, {"version": 1150}, {"device_peak": None})
        return fail, m, files, log

    def test_async_writes_put_every_task_on_disk_through_raw_write_async(self):
        fail, m, files, log = self.run_trial("write")
        self.assertIsNone(fail)
        self.assertEqual(m["integrity"]["bad_words"], 0)
        for f in files:
            with open(f["path"], "rb") as disk:
                self.assertEqual(disk.read(), gds_pass.reference_bytes(f["seed"], 0, f["size"]))
        writes = [entry for entry in log if entry[0] == "write"]
        # 25 + 13 tasks of 4 KiB per pass, 3 passes; the streams in turn, each at device offset 0.
        self.assertEqual(len(writes), 38 * 3)
        self.assertEqual([stream for _, stream, _, _ in writes[:5]], [1, 2, 3, 1, 2])
        self.assertEqual({device_offset for _, _, _, device_offset in writes}, {0})
        self.assertEqual(len(m["seconds"]), 2)
        self.assertEqual([c["read_calls"] for c in m["costs"]], [38, 38])
        self.assertEqual(m["kvikio"]["async_path"].split(",")[0], "cuFile's stream API (cuFileWriteAsync)")
        self.assertEqual(len(m["write"]["verify_read_seconds"]), 2)

    def test_a_roundtrip_reads_back_with_raw_read_async_and_verifies(self):
        fail, m, files, log = self.run_trial("roundtrip")
        self.assertIsNone(fail)
        self.assertEqual(m["integrity"]["bad_words"], 0)
        self.assertEqual(len([entry for entry in log if entry[0] == "read"]), 38 * 3)
        self.assertEqual(len(m["write"]["read_back_gbps"]), 2)
        self.assertTrue(m["kvikio"]["async_path"].startswith(
            "cuFile's stream API (cuFileWriteAsync, cuFileReadAsync), inferred from KvikIO's rules"))

    def test_a_short_async_write_fails_the_trial_naming_the_call(self):
        with self.assertRaisesRegex(RuntimeError, "raw_write_async moved 4095 of 4096 bytes at offset 0"):
            self.run_trial("roundtrip", short=True)

    def test_a_write_that_writes_nothing_fails_over_the_right_bytes_of_an_earlier_run(self):
        fail, m, files, log = self.run_trial("write", silent=True, stale=True)
        self.assertIn("written through the path under test", fail["reason"])
        with open(files[0]["path"], "rb") as disk:
            left = disk.read()
        # Zeroed in place where the file system can, truncated where it cannot.
        self.assertTrue(left in (b"", bytes(files[0]["size"])), left[:16])

    def test_pread_trials_have_no_streams(self):
        cupy = FakeCupy()
        self.assertEqual(worker.async_streams(cupy, {"queue_depth": 4}), [])
        self.assertEqual([s.ptr for s in worker.async_streams(cupy, {"kvikio_api": "async", "queue_depth": 2})],
                         [1, 2])


if __name__ == "__main__":
    unittest.main()
