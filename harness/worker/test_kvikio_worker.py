"""Tests of the KvikIO worker's logic that needs no GPU (run by `cargo test`, see
harness/gate/tests/kvikio_worker.rs): which windows a trial streams through and how the windows'
sums compose into the pass's result, and `kvikio_api: async` reads window by window."""

import os
import tempfile
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


class FakeBuffer:
    """A device buffer stand-in (test fixture): bytes whose slices are views, as cupy's are."""

    def __init__(self, size):
        self.bytes = bytearray(size)

    def __getitem__(self, key):
        return FakeView(self, key)


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


class Progress(unittest.TestCase):
    def test_a_pass_replaces_the_progress_file_with_one_line_of_four_fields(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "progress")
            with mock.patch.dict(os.environ, {passes.PROGRESS_ENV: path}):
                passes.report_progress(1, 6, 2.0, 5_000_000_000)
                passes.report_progress(2, 6, 0.5, 1 << 20)
            with open(path) as f:
                self.assertEqual(f.read(), "2 6 0.5 0.002097152\n")
            self.assertEqual(os.listdir(folder), ["progress"])  # the aside file was renamed

    def test_no_variable_no_file_and_a_failed_write_is_ignored(self):
        with tempfile.TemporaryDirectory() as folder:
            with mock.patch.dict(os.environ, {}, clear=True):
                passes.report_progress(1, 2, 1.0, 10)
            with mock.patch.dict(os.environ, {passes.PROGRESS_ENV: os.path.join(folder, "gone", "progress")}):
                passes.report_progress(1, 2, 1.0, 10)
            self.assertEqual(os.listdir(folder), [])


if __name__ == "__main__":
    unittest.main()
