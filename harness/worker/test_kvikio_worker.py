"""Tests of the KvikIO worker's logic that needs no GPU (run by `cargo test`, see
harness/gate/tests/kvikio_worker.rs): which windows a trial streams through and how the windows'
sums compose into the pass's result, `kvikio_api: async` reads window by window, and async
writes and round trips through real files with KvikIO and cupy stood in for."""

import os
import tempfile
import threading
import time
import unittest
from unittest import mock

import kvikio_worker as worker
import passes


class Streaming(unittest.TestCase):
    def test_auto_streams_only_a_pass_larger_than_half_the_gpu(self):
        spec = {"trial": {"window": "auto"}, "windows": [{"len": 5}, {"len": 3}]}
        self.assertEqual(worker.streaming_windows(spec, 8, 100), [])
        self.assertEqual(len(worker.streaming_windows(spec, 80, 100)), 2)

    def test_a_size_streams_unless_one_window_holds_the_pass(self):
        spec = {"trial": {"window": 1 << 20}, "windows": [{"len": 5}, {"len": 3}]}
        self.assertEqual(len(worker.streaming_windows(spec, 8, 100)), 2)
        spec["windows"] = [{"len": 8}]
        self.assertEqual(worker.streaming_windows(spec, 8, 100), [])
        self.assertEqual(worker.streaming_windows({"trial": {"window": "whole"}}, 8, 100), [])

    def test_a_writing_trial_never_streams(self):
        for op in ("write", "roundtrip"):
            spec = {"trial": {"window": "auto", "op": op}, "windows": [{"len": 5}, {"len": 3}]}
            self.assertEqual(worker.streaming_windows(spec, 80, 100), [], op)
        spec = {"trial": {"window": 1 << 20, "op": "read"}, "windows": [{"len": 5}, {"len": 3}]}
        self.assertEqual(len(worker.streaming_windows(spec, 80, 100)), 2)

    def test_windows_compose_with_the_length_terms_and_keep_the_first_bad_byte(self):
        bad = {"file": "f", "file_offset": 130, "buffer_offset": 30}
        parts = [(0, (5, 0, None, 0.1)), (100, (7, 1, bad, 0.2)), (200, (0, 2, dict(bad, buffer_offset=1), 0.0))]
        result = passes.compose(parts, "exact", "0x1", 13)
        self.assertEqual(result["checksum"], passes.hex16(13))
        self.assertEqual(result["expected_checksum"], passes.hex16(13))
        self.assertEqual(result["bad_words"], 3)
        self.assertEqual(result["first_bad"], {"file": "f", "file_offset": 130, "buffer_offset": 130})
        self.assertAlmostEqual(result["seconds"], 0.3)
        self.assertIsNone(passes.compose(parts, "none", "0x1", 13)["checksum"])

    def test_a_whole_buffer_is_finished_with_the_length_terms_the_gate_sent(self):
        class Summed(worker.Verifier):
            # The GPU's range sums stood in for: the regions' lengths, one bad word.
            def __init__(self):
                pass

            def sums(self, plan, regions, method):
                return sum(r["len"] for r in regions), 1, None, 0.5

        spec = {"plan": {}, "regions": [{"len": 3}, {"len": 4}], "length_terms": "0x10",
                "expected_checksum": 0x17}
        result = Summed().check(spec, "exact")
        self.assertEqual(result["checksum"], passes.hex16(0x17))
        self.assertEqual(result["expected_checksum"], passes.hex16(0x17))
        self.assertEqual((result["bad_words"], result["seconds"]), (1, 0.5))
        self.assertIsNone(Summed().check(spec, "none")["checksum"])


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


class FakeFile:
    """kvikio.CuFile stand-in (test fixture): raw_read_async copies at once and records the call,
    with where the bytes landed in the whole buffer and the device offset it was given."""

    def __init__(self, data):
        self.data, self.calls, self.device_offsets = data, [], []

    def raw_read_async(self, part, stream, length, offset, device_offset):
        self.calls.append((stream, offset, part.start + device_offset, length))
        self.device_offsets.append(device_offset)
        part.write(device_offset, self.data[offset:offset + length])

        class Future:
            def check_bytes_done(self):
                return length
        return Future()


class FakeStream:
    def __init__(self, ptr):
        self.ptr = ptr

    def synchronize(self):
        pass


class AsyncWindows(unittest.TestCase):
    def test_async_reads_go_window_by_window_into_the_window_buffer(self):
        data = bytes(i * 7 % 251 for i in range(10000))
        cuts = [(0, 4096), (4096, 4096), (8192, 1808)]
        windows = [{"start": start, "len": length, "regions": start,
                    "segments": [{"file": 0, "offset": start, "len": length, "buffer_offset": 0}]}
                   for start, length in cuts]
        spec = {"trial": {"expect": {"integrity": "exact"}, "task_size": 1024}, "plan": None,
                "length_terms": "0x0", "expected_checksum": sum(data)}
        seen = []

        class Verifier:
            # Sums the window's bytes where they landed: the fixture's stand-in for the GPU sums.
            def sums(self, plan, start, method):
                length = dict(cuts)[start]
                seen.append(bytes(buffer.bytes[:length]))
                return sum(buffer.bytes[:length]), 0, None, 0.0

        class Device:
            def synchronize(self):
                pass

        buffer, handle = FakeBuffer(4096), FakeFile(data)
        streams = [FakeStream(1), FakeStream(2), FakeStream(3)]
        io = worker.KvikioIo(None, None, [handle], buffer, 1024, streams)
        read, _, cpu, result = passes.streamed_pass(spec, windows, io.read, buffer, Device(), Verifier(), False)
        self.assertEqual(read, len(data))
        self.assertIsNone(cpu)
        self.assertEqual(b"".join(seen), data)
        self.assertEqual(result["checksum"], result["expected_checksum"])
        # Every task lands inside the window buffer, one raw_read_async per task, the streams in turn.
        self.assertTrue(all(at + length <= 4096 for _, _, at, length in handle.calls))
        self.assertEqual(len(handle.calls), 4 + 4 + 2)
        self.assertEqual([stream for stream, _, _, _ in handle.calls[:4]], [1, 2, 3, 1])
        # Each call names its own part of the buffer at device offset 0 (libcufile 1.15 failed
        # calls past the first one's extent at a shared base of an unregistered buffer).
        self.assertEqual(set(handle.device_offsets), {0})


class Done:
    """IOFutureStream stand-in (test fixture): the bytes the call moved."""

    def __init__(self, n):
        self.n = n

    def check_bytes_done(self):
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


def generated(size, seed):
    """The bytes the fake fill kernel makes for a file of `seed` (a fixture, not the generator)."""
    return bytes((i * 31 + seed) % 256 for i in range(size))


class FakeVerifier:
    """Verifier stand-in (test fixture): fills with `generated` and compares the read-back buffer
    with it exactly, reporting like the GPU verification."""

    def __init__(self, files):
        self.files, self.buffer = files, None

    def fill(self, buffer, offset, length, seed):
        buffer[offset:offset + length].write(0, generated(length, seed))

    def over(self, buffer):
        other = FakeVerifier(self.files)
        other.buffer = buffer
        return other

    def check(self, spec, method):
        expected = spec["expected_checksum"]
        want = b"".join(generated(f["size"], f["seed"]) for f in self.files)
        bad = sum(1 for a, b in zip(bytes(self.buffer.bytes), want) if a != b)
        checksum = passes.hex16(expected if bad == 0 else expected ^ 1)
        return {"method": method, "checksum": checksum, "expected_checksum": passes.hex16(expected),
                "bad_words": bad, "first_bad": None, "seconds": 0.0}


class Loads(unittest.TestCase):
    """`op: load` through KvikioIo and read_passes, with KvikIO stood in for: every pass closes the
    files and deregisters the buffer, opens and registers them again inside the pass's time, and
    records the steps and the first byte."""

    def test_each_pass_reopens_and_records_its_steps_and_first_byte(self):
        data = [generated(6000, 1), generated(4000, 2)]
        log = []

        class Future:
            def __init__(self, n):
                self.n = n

            def get(self):
                time.sleep(0.002)
                return self.n

        class File:
            def __init__(self, path, flags):
                self.index = int(path[-1])
                log.append(("open", self.index))

            def pread(self, view, length, offset, task_size):
                view.write(0, data[self.index][offset:offset + length])
                return Future(length)

            def close(self):
                log.append(("close", self.index))

        kvikio = mock.Mock()
        kvikio.CuFile = File
        kvikio.memory_register.side_effect = lambda buf: log.append(("register",))
        kvikio.memory_deregister.side_effect = lambda buf: log.append(("deregister",))
        files = [{"path": "/data/f0", "size": 6000, "seed": 1}, {"path": "/data/f1", "size": 4000, "seed": 2}]
        segments = [{"file": 0, "offset": 0, "len": 6000, "buffer_offset": 0},
                    {"file": 1, "offset": 0, "len": 4000, "buffer_offset": 6000}]
        trial = {"op": "load", "cache": "warm", "task_size": 4096, "warmup": 1, "repetitions": 2,
                 "expect": {"integrity": "exact"}}
        spec = {"trial": trial, "plan": {"files": files, "segments": segments}, "regions": [],
                "expected_checksum": 42, "spawned_at_unix_ns": 0}
        buffer = FakeBuffer(10000)
        verifier = FakeVerifier(files)
        verifier.buffer = buffer
        io = worker.KvikioIo(kvikio, mock.Mock(), [], buffer, 4096, [], registered=True)
        m = {"bytes_per_repetition": 10000, "seconds": [], "gbps": [], "warmup_seconds": [], "costs": [],
             "verify_seconds": 0.0, "setup": []}

        class Device:
            def synchronize(self):
                pass

        with mock.patch.dict(os.environ, {"GDS_GATE_RECORD_COST": "0"}), \
                mock.patch.object(passes, "device_used", lambda cupy: 0):
            fail = passes.read_passes(spec, io, None, Device(), buffer, verifier, [], m, {"device_peak": None})
        self.assertIsNone(fail, m)
        self.assertEqual(m["integrity"]["bad_words"], 0)
        pass_log = [("deregister",), ("open", 0), ("open", 1), ("register",)]
        self.assertEqual(log, (pass_log + [("close", 0), ("close", 1)]) * 2 + pass_log)
        load = m["load"]
        self.assertEqual([len(load[k]) for k in ("open_seconds", "register_seconds", "first_byte_seconds")],
                         [2, 2, 2])
        for seconds, opened, registered, first in zip(m["seconds"], load["open_seconds"], load["register_seconds"],
                                                      load["first_byte_seconds"]):
            # The first byte is the first pread's end (2 ms), the load both (4 ms), opening included.
            self.assertTrue(opened + registered < first < seconds, (opened, registered, first, seconds))
            self.assertGreaterEqual(first, 0.002)
            self.assertGreaterEqual(seconds, 0.004)


class AsyncWrites(unittest.TestCase):
    def run_trial(self, op, short=False, silent=False, stale=False):
        """A writing trial of two files through measure_writes with the stand-ins above; the files
        stay on disk for the caller to read. `stale`: they hold the right bytes before it starts,
        as a previous run leaves them."""
        temporary = tempfile.TemporaryDirectory()
        self.addCleanup(temporary.cleanup)
        folder = temporary.name
        sizes = [10000, 5000]
        files = [{"path": os.path.join(folder, "f%d" % i), "size": size, "seed": i + 1}
                 for i, size in enumerate(sizes)]
        segments = [{"file": 0, "offset": 0, "len": 10000, "buffer_offset": 0},
                    {"file": 1, "offset": 0, "len": 5000, "buffer_offset": 10000}]
        for f in files if stale else []:
            with open(f["path"], "wb") as disk:
                disk.write(generated(f["size"], f["seed"]))
        trial = {"op": op, "kvikio_api": "async", "queue_depth": 3, "task_size": 4096, "warmup": 1,
                 "repetitions": 2, "expect": {"integrity": "exact"}}
        plan = {"files": files, "segments": segments}
        spec = {"trial": trial, "plan": plan, "regions": [], "expected_checksum": 42, "spawned_at_unix_ns": 0}
        log = []

        class Kvikio:
            @staticmethod
            def CuFile(path, flags):
                return DiskFile(path, flags, log, short, silent)

        class Monitor:
            def get(self):
                return None

        class Device:
            def synchronize(self):
                pass

        m = {"bytes_per_repetition": 15000, "seconds": [], "gbps": [], "warmup_seconds": [], "costs": [],
             "verify_seconds": 0.0}
        buffer = FakeBuffer(15000)
        stack = {"kvikio": Kvikio, "cupy": FakeCupy()}

        def finish(spec, kvikio, cupy, monitor, measured_start, record, total, cached, m, reads=True):
            m["kvikio"] = {}  # KvikIO's own figures need the real KvikIO

        def read_direct(path, size, check, base, cupy):
            # The independent read without O_DIRECT, which the test's temporary folder may refuse.
            with open(path, "rb") as disk:
                check[base:base + size].write(0, disk.read())

        with mock.patch.object(worker, "finish", finish), \
                mock.patch.object(passes, "read_direct", read_direct), \
                mock.patch.dict(os.environ, {"CUFILE_ENV_PATH_JSON": os.path.join(folder, "cufile.json")}):
            fail = worker.measure_writes(spec, stack, Device(), buffer, FakeVerifier(files), Monitor(), m,
                                         lambda name: None, {"version": 1150})
        return fail, m, files, log

    def test_async_writes_put_every_task_on_disk_through_raw_write_async(self):
        fail, m, files, log = self.run_trial("write")
        self.assertIsNone(fail)
        self.assertEqual(m["integrity"]["bad_words"], 0)
        for f in files:
            with open(f["path"], "rb") as disk:
                self.assertEqual(disk.read(), generated(f["size"], f["seed"]))
        writes = [entry for entry in log if entry[0] == "write"]
        # 3 + 2 tasks of 4 KiB per pass, 3 passes; the streams in turn, each at device offset 0.
        self.assertEqual(len(writes), 5 * 3)
        self.assertEqual([stream for _, stream, _, _ in writes[:5]], [1, 2, 3, 1, 2])
        self.assertEqual({device_offset for _, _, _, device_offset in writes}, {0})
        self.assertEqual(len(m["seconds"]), 2)
        self.assertEqual([c["read_calls"] for c in m["costs"]], [5, 5])
        self.assertEqual(m["kvikio"]["async_path"].split(",")[0], "cuFile's stream API (cuFileWriteAsync)")
        self.assertEqual(len(m["write"]["verify_read_seconds"]), 2)

    def test_a_roundtrip_reads_back_with_raw_read_async_and_verifies(self):
        fail, m, files, log = self.run_trial("roundtrip")
        self.assertIsNone(fail)
        self.assertEqual(m["integrity"]["bad_words"], 0)
        self.assertEqual(len([entry for entry in log if entry[0] == "read"]), 5 * 3)
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


class PageCache(unittest.TestCase):
    """passes.drop_page_cache on a real file, beside this test: /tmp may be tmpfs, which keeps
    its pages."""

    def read_through_the_cache(self, size):
        f = tempfile.NamedTemporaryFile(dir=os.path.dirname(os.path.abspath(__file__)))
        f.write(os.urandom(size))
        f.flush()
        os.fsync(f.fileno())
        with open(f.name, "rb") as again:
            again.read()
        fd = os.open(f.name, os.O_RDONLY)
        try:
            self.assertGreater(passes.resident_fraction(fd, size), 0.9)
        finally:
            os.close(fd)
        return f

    def test_a_read_file_is_resident_and_dropped_after(self):
        with self.read_through_the_cache(1 << 20) as f:
            self.assertEqual(passes.drop_page_cache(f.name), 0.0)

    def test_ranges_that_do_not_divide_the_file_leave_nothing_cached(self):
        with self.read_through_the_cache(13 << 20) as f, \
                mock.patch.object(passes, "DROP_RANGE", 4 << 20), \
                mock.patch.object(passes.os, "sched_getaffinity", return_value=set(range(8))), \
                mock.patch.object(passes.os, "posix_fadvise", wraps=os.posix_fadvise) as advised:
            self.assertEqual(passes.drop_page_cache(f.name), 0.0)
        self.assertEqual(sorted(c.args[1:3] for c in advised.call_args_list),
                         [(0, 0), (0, 6 << 20), (6 << 20, 6 << 20), (12 << 20, 0)])

    def test_an_empty_file_has_nothing_resident(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertEqual(passes.drop_page_cache(f.name), 0.0)


class Drops(unittest.TestCase):
    """passes.Drop with a fake io (for the thread logic only)."""

    class SlowIo:
        def __init__(self, resident):
            self.resident, self.dropped = resident, []

        def drop(self, path):
            time.sleep(0.05)
            if isinstance(self.resident, Exception):
                raise self.resident
            self.dropped.append(path)
            return self.resident

    def test_a_drop_runs_beside_the_caller_and_finish_returns_the_worst_fraction(self):
        io = self.SlowIo(0.01)
        started = time.perf_counter()
        drop = passes.Drop(io, ["a", "b"])
        self.assertLess(time.perf_counter() - started, 0.05)  # the caller goes on at once
        self.assertEqual(drop.finish(), 0.01)
        self.assertEqual(io.dropped, ["a", "b"])
        self.assertIsNone(passes.Drop(io, []).finish())  # a warm trial drops nothing

    def test_a_failed_drop_raises_on_the_callers_thread_and_the_wind_down_waits(self):
        with self.assertRaises(OSError):
            passes.Drop(self.SlowIo(OSError("cannot drop")), ["a"]).finish()
        io = self.SlowIo(0.0)
        passes.WIND_DOWN.append(passes.Drop(io, ["a"]))
        passes.finish_wind_down()
        self.assertEqual((io.dropped, passes.WIND_DOWN), (["a"], []))


class Release(unittest.TestCase):
    def test_a_held_worker_waits_for_the_release_and_says_how_long(self):
        with tempfile.TemporaryDirectory() as folder:
            m = {"setup": []}
            threading.Timer(0.2, lambda: open(os.path.join(folder, "released"), "w").close()).start()
            passes.hold_for_release({"hold_for_release": folder}, m)
            [(phase, seconds)] = m["setup"]
            self.assertEqual(phase, "held for the previous worker's exit")
            # The timer starts before the hold does: the hold is a little under 0.2 s at times.
            self.assertGreaterEqual(seconds, 0.15)
        m = {"setup": []}
        passes.hold_for_release({"hold_for_release": None}, m)
        self.assertEqual(m["setup"], [])


class Recheck(unittest.TestCase):
    """A pass's first wrong byte looked up on the disk again (passes.recheck), with the fixture
    bytes of `generated` standing in for the generator and a plain read for O_DIRECT."""

    class Exact:
        """The exact-compare kernel's stand-in: bad bytes and the first one's offset in the range."""

        def __init__(self, seed):
            self.seed = seed

        exact = "exact_compare"

        def over(self, buffer):
            self.buffer = buffer
            return self

        def run(self, kernel, offset, length, extra, init):
            seed, first_word = extra
            start = first_word * 8
            want = generated(start + length, seed)[start:]
            got = bytes(self.buffer.bytes[offset:offset + length])
            bad = [i for i in range(length) if got[i] != want[i]]
            return [len(bad), bad[0] if bad else init[1]]

    def setUp(self):
        temporary = tempfile.TemporaryDirectory()
        self.addCleanup(temporary.cleanup)
        self.path = os.path.join(temporary.name, "data")
        self.size = (1 << 20) + 5000  # the second region is short
        with open(self.path, "wb") as f:
            f.write(generated(self.size, 3))
        self.plan = {"files": [{"path": self.path, "size": self.size, "seed": 3}]}

        def read_direct(path, size, check, base, cupy, start=0):
            with open(path, "rb") as disk:
                disk.seek(start)
                check[base:base + size].write(0, disk.read(size))

        patch = mock.patch.object(passes, "read_direct", read_direct)
        patch.start()
        self.addCleanup(patch.stop)

    def recheck(self, offset):
        bad = {"file": self.path, "file_offset": offset, "buffer_offset": offset}
        return passes.recheck(self.plan, bad, self.Exact(3), FakeCupy())

    def test_a_file_right_on_the_disk_puts_the_fault_on_the_way_and_a_damaged_one_on_the_file(self):
        self.assertEqual(self.recheck((1 << 20) + 17), ("right", None))
        self.assertIn("went wrong on their way", passes.next_step(("right", None)))
        with open(self.path, "r+b") as f:
            f.seek((1 << 20) + 4000)
            f.write(b"\xff\xff")
        self.assertEqual(self.recheck((1 << 20) + 17), ("wrong", (1 << 20) + 4000))
        self.assertIn("first wrong at offset 1052576): the data file is damaged",
                      passes.next_step(("wrong", (1 << 20) + 4000)))

    def test_a_users_own_file_or_no_wrong_byte_is_not_rechecked_and_the_failure_says_so(self):
        self.plan["files"][0]["seed"] = None
        kind, why = self.recheck(5)
        self.assertEqual(kind, "unchecked")
        self.assertIn("not a generated file", why)
        self.assertEqual(passes.recheck(self.plan, None, None, None)[0], "unchecked")
        self.assertIn("the disk was not re-checked: not a generated file", passes.next_step((kind, why)))


if __name__ == "__main__":
    unittest.main()
