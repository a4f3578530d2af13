#!/usr/bin/env python3
"""Where each trial's wall time went beyond the split report.json gives (`time.by_trial`): what
the gate counts as its own, taken apart by what the report also holds.

- `wind-down`: the worker's time after its last pass until its answer was complete (its wall
  time, `worker.seconds`, less its start-up, preparation, I/O, verification and exit): cuFile's
  statistics, the `gds_stats` sample, the libraries' handles, buffers and contexts released.
- `exit`: the report's own `exit`: the worker's time after its answer was complete
  (`worker.after_answer_seconds`), the answer written, the last pass's page cache drop finished
  and the process's exit, where the kernel tears down its CUDA context and pinned memory, less what ran beside the next trial's worker
  starting (`exit_beside_next_seconds`); and the time this worker, started ahead, waited for
  the previous one's exit. Reports of gates before it was recorded have none (shown as 0, and
  counted in `gate`).
- `after`: the gate's time in the trial's window outside its worker (the window less the
  worker's time in it and the runner waits): judging, and dropping the page cache the trial's
  reads left.

A worker started ahead while the trial before it read records what of its start-up and wait ran
in that trial's time as `started beside the previous trial`: the last line gives it per reader,
beside the start-up each reader's trials paid in their own time.

Wind-down and after make up the report's `gate`: the worker's start-up is counted from the moment the gate
stamped its spec, just before starting it.

With confirmation runs the worker's time is the first run's only; such trials are marked.

    python3 tools/drills/time_split.py target/gds-gate/report.json
"""

import argparse
import json
import sys

# The start-up phase of a worker started ahead, waiting for the previous worker's exit.
HELD_PHASE = "held for the previous worker's exit"
# What of a worker started ahead ran before its trial's time began (the previous trial's time).
BESIDE_PHASE = "started beside the previous trial"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", help="a report.json of a gate run")
    args = parser.parse_args()
    try:
        with open(args.report) as f:
            report = json.load(f)
        by_trial = report["time"]["by_trial"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit("time_split: %s has no time split (%s); it needs a report of a gate run that timed its trials" % (args.report, error))
    columns = ("wall", "startup", "preparation", "io", "verification", "exit", "gate", "wind-down", "after")
    print("%-62s" % "trial" + "".join("%13s" % c for c in columns))
    totals = dict.fromkeys(columns, 0.0)
    # Per reader: the start-up in the trials' own time, and what ran beside the trial before.
    startup, hidden = {}, {}
    for record in report["trials"]:
        split = by_trial.get(record["name"])
        worker = (record.get("worker") or {}).get("seconds")
        if split is None or worker is None:
            continue
        inside = split["startup"] + split["preparation"] + split["io"] + split["verification"]
        setup = (record.get("measurement") or {}).get("setup") or []
        held = sum(seconds for phase, seconds in setup if phase == HELD_PHASE)
        beside_previous = sum(seconds for phase, seconds in setup if phase == BESIDE_PHASE)
        own_exit = record["worker"].get("after_answer_seconds") or 0.0
        beside_next = record["worker"].get("exit_beside_next_seconds") or 0.0
        row = dict(split)
        row.setdefault("exit", 0.0)
        row["wind-down"] = max(worker - inside - held - beside_previous - own_exit, 0.0)
        in_window = worker - beside_previous - beside_next
        row["after"] = max(split["wall"] - in_window - split["runner_wait"], 0.0)
        reader = record["spec"]["reader"]
        startup[reader] = startup.get(reader, 0.0) + split["startup"]
        hidden[reader] = hidden.get(reader, 0.0) + beside_previous
        for column in columns:
            totals[column] += row[column]
        mark = " (confirmed)" if record.get("confirmations") else ""
        print("%-62s" % (record["name"][:62 - len(mark)] + mark) + "".join("%13.3f" % row[c] for c in columns))
    print("%-62s" % "all timed trials" + "".join("%13.3f" % totals[c] for c in columns))
    wall = report["time"]["wall"]
    outside = report["time"]["outside_trials"]
    gate = totals["gate"] + outside
    print("run wall %.1f s; outside the trials %.2f s; gate %.1f%%, with preparation %.1f%%, "
          "and with the workers' exits (issue 31's overhead) %.1f%%" % (
              wall, outside, 100 * gate / wall, 100 * (gate + totals["preparation"]) / wall,
              100 * (gate + totals["preparation"] + totals["exit"]) / wall))
    print("start-up %.1f s, %.1f%% of the run; by reader, in the trials' time (and beside the trial before): %s" % (
        totals["startup"], 100 * totals["startup"] / wall,
        ", ".join("%s %.1f s (%.1f s)" % (r, startup[r], hidden[r]) for r in sorted(startup))))


if __name__ == "__main__":
    main()
