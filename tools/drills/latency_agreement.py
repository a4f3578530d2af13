#!/usr/bin/env python3
"""Checks the gate's latency percentiles and IOPS against an independent measurement of the same
reads: each round runs the gate on the chosen trials and replays every trial's reads with
replay_latency.py (the calls of its reader, its offsets and threads), the replay after the gate in odd
rounds and before it in even ones, so the disk's drift and its cache hit both sides alike. Prints,
per figure, the median of each side's per-pass figures over all rounds and their ratio (gate /
replay), and the ratio of each round's medians: a disk whose speed wanders between rounds (a
virtual disk does, by tens of percent) moves both sides of a round together, so the per-round
ratios and their spread say how well the two agree.

The replay makes the calls of the reader under test (replay_latency.py, in a process of its own
for each trial and round): the posix reader's preads into one destination of the whole pass; the
cufile reader's cuFileRead calls through ctypes, on the same libcufile (`--libcufile`, given to the
gate too); KvikIO's pread per segment with the trial's settings (KvikIO keeps only a mean per
operation, which the gate reports, so only IOPS and the mean are compared for KvikIO). Trials of
other readers, registered buffers and stream-ordered calls are listed and skipped.

For trials of cuFile's readers it also prints the gate's mean call latency over the measured
passes beside cuFile's own mean of the same calls (its statistics' read latency sum over its
per-GPU read count, taken as the measured passes begin and end): the same calls at the same
time, so no drift between the two, round by round.

    python3 tools/drills/latency_agreement.py --gate target/release/gds-gate \\
        --suite scenarios/default.yaml --filter random-1MiB --rounds 3 --work target/latency
"""

import argparse
import json
import os
import statistics
import subprocess
import sys


REPLAY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "replay_latency.py")
HOW = {"posix": "pread", "cufile": "cufile", "kvikio": "kvikio"}
FIGURES = ["iops", "mean_us", "p50_us", "p99_us"]


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


def gate_round(args, out):
    env = {"GDS_GATE_LIBCUFILE": args.libcufile} if args.libcufile else {}
    return run_gate(args.gate, args.suite, args.filter, out, env)


def gate_figures(trial):
    """Per-pass IOPS and latency of a trial, as the gate reported them."""
    rows = []
    for cost in (trial.get("measurement") or {}).get("costs", []):
        latency = cost.get("latency") or {}
        rows.append({"iops": cost["iops"], **{k: latency.get(k) for k in FIGURES[1:]}})
    return rows


def cufile_own(trial):
    """The gate's mean call latency over a trial's measured passes beside cuFile's own mean of
    the same calls (its statistics over those passes), and both call counts; None without them.
    Taken from the same calls at the same time, they need no replay and see no drift."""
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


def why_not_replayed(trial):
    """None when the trial's reads can be replayed, else why not."""
    spec = trial["spec"]
    if not trial.get("worker"):
        return trial.get("reason", "it did not run")
    if spec["reader"] not in HOW:
        return "no replay for reader %s" % spec["reader"]
    if spec.get("op", "read") != "read":
        return "it writes"
    if spec.get("buffer", "unregistered") != "unregistered" or spec.get("kvikio_api", "pread") != "pread":
        return "the replay makes plain calls into an unregistered buffer"
    return None


def replay_figures(args, spec_path, how):
    command = [sys.executable, REPLAY, spec_path, "--how", how, "--passes", str(args.passes), "--json"]
    if args.libcufile:
        command += ["--libcufile", args.libcufile]
    finished = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows = [json.loads(line) for line in finished.stdout.splitlines() if line.startswith("{")]
    # A process that printed every pass and then died of a signal crashed in libcufile's teardown
    # at exit (as the gate's workers sometimes do): its figures are complete, so they count.
    if finished.returncode < 0 and len(rows) == args.passes:
        print("the replay ended with signal %d after its %d passes (kept): %s"
              % (-finished.returncode, len(rows), " ".join(command)), file=sys.stderr)
    elif finished.returncode != 0:
        sys.exit("the replay failed (exit %d): %s\n%s" % (finished.returncode, " ".join(command),
                                                          finished.stderr[-2000:]))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gate", required=True, help="the gds-gate binary")
    parser.add_argument("--suite", required=True)
    parser.add_argument("--filter", required=True, help="the trials to check, as the gate filters them")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=3, help="replay passes per trial and round")
    parser.add_argument("--work", required=True, help="a folder for each round's reports")
    parser.add_argument("--libcufile", help="the libcufile the gate's cufile reader and the replay load "
                                            "(default: the loader's libcufile.so.0)")
    args = parser.parse_args()

    gate, replay, own = {}, {}, {}
    # The trials' specs and replay modes, learnt from the first round.
    specs = {}

    # Per trial, one list of per-pass rows for each round.
    def replay_all(number):
        for name, (spec, how) in specs.items():
            replay.setdefault(name, {})[number] = replay_figures(args, spec, how)

    for number in range(1, args.rounds + 1):
        # Every other round replays first: whichever side reads second may find the storage's
        # own cache warmer (a virtual disk's host), and alternating spreads that over both.
        replay_first = number % 2 == 0
        if replay_first:
            replay_all(number)
        out = os.path.join(args.work, "round-%d" % number)
        for trial in gate_round(args, out):
            name = trial["name"]
            same_calls = cufile_own(trial)
            if same_calls:
                own.setdefault(name, []).append(same_calls)
            reason = why_not_replayed(trial)
            if reason:
                if number == 1:
                    print("skipped %s: %s" % (name, reason))
                continue
            gate.setdefault(name, {})[number] = gate_figures(trial)
            specs.setdefault(name, (os.path.join(trial["worker"]["dir"], "spec.json"), HOW[trial["spec"]["reader"]]))
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

    if own:
        print()
        print("| trial | gate's mean call (µs) | cuFile's own mean (µs) | gate / cuFile, per round: median "
              "(min–max) | calls per round: gate / cuFile's GPU reads / its read_ops.ok |")
        print("|---|---:|---:|---|---|")
        for name in sorted(own):
            rounds = own[name]
            ratios = sorted(r[0] / r[1] for r in rounds)
            print("| %s | %.1f | %.1f | %.4f (%.4f–%.4f) | %s |"
                  % (name, statistics.median(r[0] for r in rounds), statistics.median(r[1] for r in rounds),
                     statistics.median(ratios), ratios[0], ratios[-1],
                     " ".join("%d/%d/%d" % r[2:] for r in rounds)))


if __name__ == "__main__":
    main()
