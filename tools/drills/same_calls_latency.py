#!/usr/bin/env python3
"""Times the very preads the gate times with a second clock, and compares the two per pass:
the check of the gate's latency percentiles that no drift can blur. A replay of the reads would
come seconds later, and a virtual disk's speed moves by more than 5% in that time; here both
clocks see the same calls at the same time, so what differs is the gate's recording: its clock,
its per-thread histograms (1/64 octave) and the percentiles it takes from them.

It builds pread_clock.c (beside this file) with `cc`, runs the gate with it preloaded
(LD_PRELOAD: every process of the run writes its command line and its preads' start, end, offset
and length) and without confirmation runs (`--confirm 0`: one worker per trial). Per trial it
takes the process started with the trial's spec.json, its preads of the trial's tasks (offsets and
lengths from that spec), splits them into the warm-up and measured passes (each must hold every
task once, or the trial is not compared) and prints, pass by pass, the gate's figures, the second
clock's of the same calls, and their ratio. Trials over several GPUs, windowed trials (the gate
times only their read sections) and writing trials are listed and skipped.

For the posix reader each task is one pread, so the two time the same call. For other readers
the preads are a part of each call the gate times: libcufile 1.15 in compat mode reads each
cuFileRead's task with one pread into its bounce buffer, so the ratio is the call over its read
(what cuFileRead adds around it, the copy to the GPU among it); KvikIO's POSIX path reads a task
with one pread, and the gate's figure is KvikIO's own mean per operation, its Python call included.
So for cuFile's readers it also prints the gate's mean call latency over the measured passes
beside cuFile's own mean of the same calls: its statistics' read latency sum over its per-GPU
read count, which the worker takes as the measured passes begin and end.

    python3 tools/drills/same_calls_latency.py --gate target/release/gds-gate \\
        --suite scenarios/default.yaml --filter 'random-1MiB' --work target/same-calls
"""

import argparse
import collections
import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD = struct.Struct("<QQQQqq")  # pread_clock.c's struct record
CAPACITY = 1 << 20  # and its capacity

# Each latency figure the gate reports, and the quantile it is (the mean has none).
LATENCY_FIGURES = [("mean_us", None), ("p50_us", 0.5), ("p90_us", 0.9), ("p99_us", 0.99),
                   ("p999_us", 0.999), ("max_us", 1.0)]


def latency_figures(sorted_us):
    """The gate's latency figures of calls taking `sorted_us` µs, in order."""
    return {name: sum(sorted_us) / len(sorted_us) if q is None else percentile(sorted_us, q)
            for name, q in LATENCY_FIGURES}


def percentile(sorted_values, q):
    rank = max(1, min(len(sorted_values), int(-(-q * len(sorted_values) // 1))))
    return sorted_values[rank - 1]


def tasks(plan, task_size):
    """The plan's segments cut into tasks of at most task_size bytes, in plan order, each with
    its place in a destination of the whole pass."""
    place = 0
    for segment in plan["segments"]:
        done = 0
        while done < segment["len"]:
            length = min(task_size, segment["len"] - done)
            yield segment["file"], segment["offset"] + done, length, place
            done += length
            place += length


def run_gate(gate, suite, filter_, out, env, extra=()):
    """The trials of one gate run, from its report.json; stops the drill if the gate failed for
    another reason than a trial's verdict (exit 3)."""
    command = [gate, "--suite", suite, filter_, "--out", out, *extra]
    finished = subprocess.run(command, env=dict(os.environ, **env), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    if finished.returncode not in (0, 3):
        sys.exit("the gate failed (exit %d): %s\n%s" % (finished.returncode, " ".join(command),
                                                        finished.stderr[-2000:]))
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)["trials"]


def cufile_own(trial):
    """The gate's mean call latency over a trial's measured passes beside cuFile's own mean of
    the same calls (its statistics over those passes), and the call counts; None without them."""
    m = trial.get("measurement") or {}
    stats = (m.get("cufile") or {}).get("measured_stats") or {}
    costs = [c for c in m.get("costs", []) if c.get("latency")]
    calls = sum(c["latency"]["calls"] for c in costs)
    # cuFile's count of read calls: its per-GPU reads. Its read_ops.ok counts every compat-mode
    # cuFileRead twice (libcufile 1.15.1: 10240 for 5120 calls, with read_bytes and the latency
    # sum those of 5120), so it is shown beside, not divided by.
    reads = sum(gpu.get("n_total_reads", 0) for gpu in stats.get("gpus", []))
    if not calls or not reads or not stats.get("read_latency_sum_us"):
        return None
    gate_mean = sum(c["latency"]["mean_us"] * c["latency"]["calls"] for c in costs) / calls
    return gate_mean, stats["read_latency_sum_us"] / reads, calls, reads, stats.get("read_ops_ok", 0)


def build(work):
    library = os.path.join(work, "pread_clock.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", library,
                    os.path.join(HERE, "pread_clock.c"), "-ldl"], check=True)
    return library


def read_clock(path):
    """A process's count of calls and its kept records: (start_ns, end_ns, offset, count,
    result, fd)."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:  # killed while it set up
            return 0, []
        (calls,) = struct.unpack("<Q", head)
        data = f.read(min(calls, CAPACITY) * RECORD.size)
    return calls, list(RECORD.iter_unpack(data[:len(data) - len(data) % RECORD.size]))


def read_processes(clocks):
    """Each timed process of the run: its arguments, its count of calls and its records."""
    processes = []
    for name in os.listdir(clocks):
        if not name.endswith(".cmdline"):
            continue
        pid = name[:-len(".cmdline")]
        with open(os.path.join(clocks, name), "rb") as f:
            argv = [arg.decode(errors="replace") for arg in f.read().split(b"\0") if arg]
        processes.append((argv, *read_clock(os.path.join(clocks, pid + ".bin"))))
    return processes


def why_skipped(trial):
    """None when the trial's calls can be compared, else why not."""
    m = trial.get("measurement") or {}
    if not any(c.get("latency") for c in m.get("costs", [])):
        return trial.get("reason") or "no latency in the report"
    if trial["spec"].get("op", "read") != "read":
        return "it writes"
    if len(m.get("per_gpu") or []) > 1:
        return "several workers"
    if m.get("window"):
        return "windowed: the gate times only the read sections of its passes"
    return None


def same_calls(trial, processes):
    """Per measured pass, the second clock's figures of the trial's calls; None and why not."""
    shards = trial["measurement"].get("per_gpu") or []
    worker = (shards[0] if shards else trial)["worker"]  # one GPU's trial: its worker's folder
    spec_path = os.path.join(worker["dir"], "spec.json")
    started = [p for p in processes if spec_path in p[0]]
    if len(started) != 1:
        return None, "%d timed processes were started with %s" % (len(started), spec_path)
    _, count, records = started[0]
    if count > len(records):
        return None, "its worker made %d preads, more than the %d the clock keeps" % (count, len(records))
    with open(spec_path) as f:
        spec = json.load(f)
    settings = spec["trial"]
    wanted = collections.Counter((offset, length) for _, offset, length, _
                                 in tasks(spec["plan"], settings["task_size"]))
    per_pass = sum(wanted.values())
    total = settings["warmup"] + settings["repetitions"]
    calls = sorted((r for r in records if (r[2], r[3]) in wanted and r[4] == r[3]), key=lambda r: r[0])
    if len(calls) != total * per_pass:
        return None, ("%d whole-task preads for %d passes of %d tasks: a short read or a retry "
                      "leaves the passes apart unknown" % (len(calls), total, per_pass))
    passes = []
    for start in range(settings["warmup"] * per_pass, len(calls), per_pass):
        chunk = calls[start:start + per_pass]
        if collections.Counter((r[2], r[3]) for r in chunk) != wanted:
            return None, "a pass's preads are not its tasks once each"
        span = (max(r[1] for r in chunk) - min(r[0] for r in chunk)) / 1e9
        passes.append({"iops": len(chunk) / span if span > 0 else None,
                       **latency_figures(sorted((r[1] - r[0]) / 1e3 for r in chunk))})
    return passes, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gate", required=True, help="the gds-gate binary")
    parser.add_argument("--suite", required=True)
    parser.add_argument("--filter", required=True, help="the trials to check, as the gate filters them")
    parser.add_argument("--work", required=True,
                        help="a folder for the build, the clocks, the reports and the run's history")
    args = parser.parse_args()

    clocks = os.path.join(args.work, "clocks")
    os.makedirs(clocks, exist_ok=True)
    for old in os.listdir(clocks):
        os.remove(os.path.join(clocks, old))
    env = {"LD_PRELOAD": build(args.work), "PREAD_CLOCK_DIR": clocks}
    # Runs under the shim are not the runner's normal: their history stays in the work folder,
    # out of the repository's, which a bless may take.
    trials = run_gate(args.gate, args.suite, args.filter, os.path.join(args.work, "reports"), env,
                      ["--confirm", "0", "--history", os.path.join(args.work, "history.jsonl")])
    processes = read_processes(clocks)

    names = ["iops"] + [name for name, _ in LATENCY_FIGURES]
    print("| trial (reader) | pass | figure | gate | second clock | gate / clock |")
    print("|---|---:|---|---:|---:|---:|")
    ratios = {}
    cufile_means = []
    for trial in trials:
        label = "%s (%s)" % (trial["name"], trial["spec"]["reader"])
        same = cufile_own(trial)
        if same:
            cufile_means.append((label, *same))
        why = why_skipped(trial)
        clock = None
        if why is None:
            clock, why = same_calls(trial, processes)
        if clock is None:
            print("| %s | | not compared: %s | | | |" % (label, why))
            continue
        for number, (gate, own) in enumerate(zip(trial["measurement"]["costs"], clock), 1):
            for name in names:
                mine = gate["iops"] if name == "iops" else (gate.get("latency") or {}).get(name)
                if mine is None or not own[name]:
                    continue
                ratios.setdefault(label, {}).setdefault(name, []).append(mine / own[name])
                print("| %s | %d | %s | %.1f | %.1f | %.4f |" % (label, number, name, mine, own[name], mine / own[name]))
    print()
    print("| trial (reader) | figure | gate / clock over the passes: min–max |")
    print("|---|---|---|")
    for label, by_name in ratios.items():
        for name, values in by_name.items():
            print("| %s | %s | %.4f–%.4f |" % (label, name, min(values), max(values)))
    if cufile_means:
        print()
        print("| trial (reader) | gate's mean call (µs) | cuFile's own mean (µs) | gate / cuFile "
              "| calls: gate / cuFile's GPU reads / its read_ops.ok |")
        print("|---|---:|---:|---:|---|")
        for label, gate_mean, cufile_mean, calls, reads, ops in cufile_means:
            print("| %s | %.1f | %.1f | %.4f | %d / %d / %d |"
                  % (label, gate_mean, cufile_mean, gate_mean / cufile_mean, calls, reads, ops))


if __name__ == "__main__":
    main()
