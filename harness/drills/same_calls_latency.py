#!/usr/bin/env python3
"""Times the very preads the gate times with a second clock, and compares the two per pass:
the check of the gate's latency percentiles that no drift can blur. A replay reads seconds
later, and a virtual disk's speed moves by more than 5% in that time; here both clocks see the
same calls at the same time, so what differs is the gate's recording: its clock, its per-thread
histograms (1/64 octave) and the percentiles it takes from them.

It builds pread_clock.c (beside this file) with `cc`, runs the gate with it preloaded
(LD_PRELOAD: every process of the run writes its preads' start, end, offset and length), then,
per trial, takes the preads of the worker whose offsets and lengths are the trial's tasks (from
its spec.json), keeps the last `repetitions` passes' worth (the warm-up passes come first) and
prints, pass by pass, the gate's figures, the second clock's of the same calls, and their ratio.

For the posix reader each task is one pread, so the two time the same call. For other readers
the preads are a part of each call the gate times: libcufile 1.15 in compat mode reads each
cuFileRead's task with one pread into its bounce buffer, so the ratio is the call over its read
(what the copy to the GPU adds); KvikIO's POSIX path reads a task with one pread, and the gate's
figure is KvikIO's own mean per operation, its Python call included.

    python3 harness/drills/same_calls_latency.py --gate target/release/gds-gate \\
        --suite scenarios/default.yaml --filter 'random-1MiB' --work target/same-calls
"""

import argparse
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_latency import percentile, tasks  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD = struct.Struct("<QQQQqq")  # pread_clock.c's struct record
FIGURES = [("mean_us", None), ("p50_us", 0.50), ("p90_us", 0.90), ("p99_us", 0.99),
           ("p999_us", 0.999), ("max_us", 1.0)]


def build(work):
    library = os.path.join(work, "pread_clock.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", library,
                    os.path.join(HERE, "pread_clock.c"), "-ldl"], check=True)
    return library


def read_clock(path):
    """The records of one process: (start_ns, end_ns, offset, count, result, fd)."""
    with open(path, "rb") as f:
        data = f.read()
    (count,) = struct.unpack_from("<Q", data)
    kept = min(count, (len(data) - 8) // RECORD.size)
    return [RECORD.unpack_from(data, 8 + i * RECORD.size) for i in range(kept)]


def figures(latencies_us, seconds):
    ordered = sorted(latencies_us)
    row = {"iops": len(ordered) / seconds if seconds > 0 else None}
    for name, q in FIGURES:
        row[name] = sum(ordered) / len(ordered) if q is None else percentile(ordered, q)
    return row


def same_calls(trial, processes):
    """Per measured pass, the second clock's figures of the trial's calls; None and why not.
    `processes` are the run's clocks in the order the processes started; the trial's worker is
    the first whose preads cover its measured calls, and is taken out (the gate runs one trial
    at a time, and the posix and cufile trials of a scenario read the same offsets)."""
    with open(os.path.join(trial["worker"]["dir"], "spec.json")) as f:
        spec = json.load(f)
    plan, settings = spec["plan"], spec["trial"]
    wanted = {(offset, length) for _, offset, length, _ in tasks(plan, settings["task_size"])}
    per_pass = sum(1 for _ in tasks(plan, settings["task_size"]))
    measured = settings["repetitions"] * per_pass
    for index, records in enumerate(processes):
        calls = [r for r in records if (r[2], r[3]) in wanted and r[4] == r[3]]
        if len(calls) >= measured:
            del processes[index]
            break
    else:
        return None, "no process made its %d measured calls as preads of whole tasks" % measured
    calls = sorted(calls, key=lambda r: r[0])[-measured:]
    passes = []
    for start in range(0, measured, per_pass):
        chunk = calls[start:start + per_pass]
        span = (max(r[1] for r in chunk) - min(r[0] for r in chunk)) / 1e9
        passes.append(figures([(r[1] - r[0]) / 1e3 for r in chunk], span))
    return passes, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gate", required=True, help="the gds-gate binary")
    parser.add_argument("--suite", required=True)
    parser.add_argument("--filter", required=True, help="the trials to check, as the gate filters them")
    parser.add_argument("--work", required=True, help="a folder for the build, the clocks and the reports")
    args = parser.parse_args()

    os.makedirs(args.work, exist_ok=True)
    clocks = os.path.join(args.work, "clocks")
    os.makedirs(clocks, exist_ok=True)
    for old in os.listdir(clocks):
        os.remove(os.path.join(clocks, old))
    env = dict(os.environ, LD_PRELOAD=build(args.work), PREAD_CLOCK_DIR=clocks)
    out = os.path.join(args.work, "reports")
    command = [args.gate, "--suite", args.suite, args.filter, "--out", out]
    finished = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if finished.returncode not in (0, 3):
        sys.exit("the gate failed (exit %d): %s\n%s" % (finished.returncode, " ".join(command),
                                                        finished.stderr[-2000:]))
    processes = [read_clock(os.path.join(clocks, name)) for name in os.listdir(clocks)]
    processes = sorted((p for p in processes if p), key=lambda records: min(r[0] for r in records))
    with open(os.path.join(out, "report.json")) as f:
        trials = json.load(f)["trials"]

    names = ["iops"] + [name for name, _ in FIGURES]
    print("| trial (reader) | pass | figure | gate | second clock | gate / clock |")
    print("|---|---:|---|---:|---:|---:|")
    ratios = {}
    for trial in trials:
        label = "%s (%s)" % (trial["name"], trial["spec"]["reader"])
        costs = [c for c in (trial.get("measurement") or {}).get("costs", []) if c.get("latency")]
        if not costs:
            print("| %s | | not compared: %s | | | |" % (label, trial.get("reason") or "no latency in the report"))
            continue
        clock, why = same_calls(trial, processes)
        if clock is None:
            print("| %s | | not compared: %s | | | |" % (label, why))
            continue
        for number, (gate, own) in enumerate(zip(costs, clock), 1):
            for name in names:
                mine = gate["iops"] if name == "iops" else gate["latency"].get(name)
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


if __name__ == "__main__":
    main()
