#!/usr/bin/env python3
"""Checks the gate's latency percentiles and IOPS against an independent measurement of the same
reads: each round runs the gate on the chosen trials and replays every trial's reads with
replay_latency.py (pread, the trial's offsets and threads), the replay after the gate in odd
rounds and before it in even ones, so the disk's drift and its cache hit both sides alike. Prints,
per figure, the median of each side's per-pass figures over all rounds and their ratio (gate /
replay), and the ratio of each round's medians: a disk whose speed wanders between rounds (a
virtual disk does, by tens of percent) moves both sides of a round together, so the per-round
ratios and their spread say how well the two agree.

The replay reads as the reader under test does on the host: the posix reader into one
destination of the whole pass (`--whole`); the cufile reader in cuFile's compat mode with
O_DIRECT into a reused buffer (`--direct`), the POSIX reads that mode makes, without its copy to
the GPU. Trials of other readers (KvikIO keeps no per-call distribution) are listed and skipped.

    python3 harness/drills/latency_agreement.py --gate target/release/gds-gate \\
        --suite scenarios/default.yaml --filter random-1MiB --rounds 3 --work target/latency
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replay_latency  # noqa: E402

REPLAY_MODE = {"posix": {"direct": False, "whole": True}, "cufile": {"direct": True, "whole": False}}
FIGURES = ["iops", "mean_us", "p50_us", "p99_us"]


def gate_round(args, out):
    command = [args.gate, "--suite", args.suite, args.filter, "--out", out]
    finished = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if finished.returncode not in (0, 3):
        sys.exit("the gate failed (exit %d): %s\n%s" % (finished.returncode, " ".join(command),
                                                        finished.stderr[-2000:]))
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)["trials"]


def gate_figures(trial):
    """Per-pass IOPS and latency of a trial, as the gate reported them."""
    rows = []
    for cost in (trial.get("measurement") or {}).get("costs", []):
        latency = cost.get("latency") or {}
        rows.append({"iops": cost["iops"], **{k: latency.get(k) for k in FIGURES[1:]}})
    return rows


def replay_figures(spec_path, mode, passes):
    with open(spec_path) as f:
        spec = json.load(f)
    plan, trial = spec["plan"], spec["trial"]
    work = list(replay_latency.tasks(plan, trial["task_size"]))
    rows = []
    for _ in range(passes):
        seconds, ns = replay_latency.one_pass(plan, work, trial["nthreads"], mode["direct"], mode["whole"])
        rows.append({
            "iops": len(ns) / seconds,
            "mean_us": sum(ns) / len(ns) / 1e3,
            "p50_us": replay_latency.percentile(ns, 0.5) / 1e3,
            "p99_us": replay_latency.percentile(ns, 0.99) / 1e3,
        })
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gate", required=True, help="the gds-gate binary")
    parser.add_argument("--suite", required=True)
    parser.add_argument("--filter", required=True, help="the trials to check, as the gate filters them")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=3, help="replay passes per trial and round")
    parser.add_argument("--work", required=True, help="a folder for each round's reports")
    args = parser.parse_args()

    gate, replay = {}, {}
    # The trials' specs and replay modes, learnt from the first round.
    specs = {}

    # Per trial, one list of per-pass rows for each round.
    def replay_all(number):
        for name, (spec, mode) in specs.items():
            replay.setdefault(name, {})[number] = replay_figures(spec, mode, args.passes)

    for number in range(1, args.rounds + 1):
        # Every other round replays first: whichever side reads second may find the storage's
        # own cache warmer (a virtual disk's host), and alternating spreads that over both.
        replay_first = number % 2 == 0
        if replay_first:
            replay_all(number)
        out = os.path.join(args.work, "round-%d" % number)
        for trial in gate_round(args, out):
            reader = trial["spec"]["reader"]
            name = trial["name"]
            if reader not in REPLAY_MODE or not trial.get("worker"):
                if number == 1:
                    print("skipped %s: %s" % (name, "no replay for reader %s" % reader
                                              if reader not in REPLAY_MODE else trial.get("reason", "did not run")))
                continue
            gate.setdefault(name, {})[number] = gate_figures(trial)
            specs.setdefault(name, (os.path.join(trial["worker"]["dir"], "spec.json"), REPLAY_MODE[reader]))
        if not replay_first:
            replay_all(number)
        print("round %d of %d done" % (number, args.rounds), file=sys.stderr)

    print("| trial | figure | gate (median of passes) | replay (median of passes) | gate / replay "
          "| per round: median (min–max) |")
    print("|---|---|---:|---:|---:|---|")
    for name in sorted(gate):
        rounds = sorted(set(gate[name]) & set(replay.get(name, {})))
        for figure in FIGURES:
            # Each round's figures of both sides: the gate's are missing with recording off.
            per_round = [[[row[figure] for row in side[name][number] if row.get(figure) is not None]
                          for side in (gate, replay)] for number in rounds]
            per_round = [(ours, theirs) for ours, theirs in per_round if ours and theirs]
            if not per_round:
                continue
            a, b = (statistics.median([v for pair in per_round for v in pair[side]]) for side in (0, 1))
            ratios = sorted(statistics.median(ours) / statistics.median(theirs) for ours, theirs in per_round)
            print("| %s | %s | %.1f | %.1f | %.3f | %.3f (%.3f–%.3f) |"
                  % (name, figure, a, b, a / b, statistics.median(ratios), ratios[0], ratios[-1]))


if __name__ == "__main__":
    main()
