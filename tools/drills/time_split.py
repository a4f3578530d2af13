#!/usr/bin/env python3
"""Where each trial's wall time went beyond the split report.json gives (`time.by_trial`): what
the gate counts as its own, taken apart by what the report also holds.

- `wind-down`: the worker's time after its last pass until its answer was complete (its wall
  time, `worker.seconds`, less its start-up, preparation, I/O, verification and exit): cuFile's
  statistics, the `gds_stats` sample, the last page cache drop, the libraries' handles, buffers
  and contexts released.
- `exit`: the worker's time after its answer was complete (`worker.after_answer_seconds`): the
  answer written and the process's exit, where the kernel tears down its CUDA context and pinned
  memory. Absent from reports of gates before it was recorded (shown as 0).
- `after`: the gate's time after the worker ended (the trial's wall time less the worker's and
  the runner waits): judging, and dropping the page cache the trial's reads left.

The three make up the gate's part: the worker's start-up is counted from the moment the gate
stamped its spec, just before starting it.

With confirmation runs the worker's time is the first run's only; such trials are marked.

    python3 tools/drills/time_split.py target/gds-gate/report.json
"""

import argparse
import json
import sys


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
    columns = ("wall", "startup", "preparation", "io", "verification", "gate", "wind-down", "exit", "after")
    print("%-62s" % "trial" + "".join("%13s" % c for c in columns))
    totals = dict.fromkeys(columns, 0.0)
    for record in report["trials"]:
        split = by_trial.get(record["name"])
        run = record.get("worker") or {}
        worker = run.get("seconds")
        if split is None or worker is None:
            continue
        inside = split["startup"] + split["preparation"] + split["io"] + split["verification"]
        row = dict(split)
        row["exit"] = run.get("after_answer_seconds") or 0.0
        row["wind-down"] = max(worker - inside - row["exit"], 0.0)
        row["after"] = max(split["wall"] - worker - split["runner_wait"], 0.0)
        for column in columns:
            totals[column] += row[column]
        mark = " (confirmed)" if record.get("confirmations") else ""
        print("%-62s" % (record["name"][:62 - len(mark)] + mark) + "".join("%13.3f" % row[c] for c in columns))
    print("%-62s" % "all timed trials" + "".join("%13.3f" % totals[c] for c in columns))
    wall = report["time"]["wall"]
    outside = report["time"]["outside_trials"]
    print("run wall %.1f s; outside the trials %.2f s; gate %.1f%%, with preparation %.1f%%" % (
        wall, outside, 100 * (totals["gate"] + outside) / wall,
        100 * (totals["gate"] + outside + totals["preparation"]) / wall))


if __name__ == "__main__":
    main()
