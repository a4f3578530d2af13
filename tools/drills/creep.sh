#!/usr/bin/env bash
# The creep drill: proves the gate's change points over the history on a real disk, both ways.
#   1. No false alarms: after a bless, N clean runs (default 30) never flag a creep: exit 0, no
#      level shift listed in summary.md.
#   2. Detection: the disk's read rate capped at 95%, then 90%, then 85% of its rate, 10 runs each
#      (cgroup v2 `io.max` rbps or v1 `blkio.throttle.read_bps_device`): by the end the gate has
#      judged the trial `creep` (a confirmed level shift below the baseline by more than the
#      tolerance) at least once, and the last run exits 3.
# "The disk" is the data dir's disk capped at --disk-rate for the whole drill (bless and clean runs
# too): on a shared CPU host other work moves an uncapped trial's rate by more than a 5% step (the
# posix reader copies through the page cache, so CPU contention slows it), and a cap above what the
# trial reads at does not bind. The drill measures the trial's uncapped rate first and refuses a
# --disk-rate above half of it.
#
# CPU host, from the repository root, as root (builds the gate when --gate is not given):
#   tools/drills/creep.sh --work /var/tmp/creep-drill
# Exit: 0 when the drill holds, 1 when it does not, 2 on bad usage or a host where it cannot run.
# Every gate invocation's output stays in WORK/<phase>-<n>.log and its reports in WORK/<phase>-<n>/;
# the runs' history is WORK/history.jsonl (the uncapped runs': WORK/uncapped-history.jsonl), never
# the repository's .gds-gate/history.jsonl.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The disk mechanics (block_device, cg_create, cg_cap, cg_run, cg_remove, dd_rate_median) and
# gate_binary, work_folder; sourced, throughput.sh runs nothing.
source "$here/throughput.sh"

usage() {
  cat <<'EOF'
Usage: creep.sh [OPTIONS] [-- GATE_ARGS...]
  --gate PATH          gds-gate binary (default: cargo build --release -p gds-gate-bin)
  --suite FILE         suite to run (default: tools/drills/creep.yaml, one cold 512 MiB posix read)
  --runner NAME        runner profile for the drill's own baseline (default: creep-drill)
  --work DIR           baselines, reports, logs and history (default: a fresh mktemp -d)
  --data-dir DIR       the gate's --data-dir, on a block device (default: WORK/data)
  --disk-rate BYTES    the disk's read rate for the drill: its cap in bytes/s (default: 300000000)
  --bless-runs N       runs recorded by bless (default: 6, the gate's own)
  --bless-interval S   least seconds between the starts of the blessed runs (default: 10)
  --clean N            clean runs, none may flag anything (default: 30)
  --per-step N         runs at each of 95%, 90% and 85% of the disk's rate (default: 10)
  -- GATE_ARGS...      passed to every gate invocation
EOF
}

die() { echo "creep drill: $*" >&2; exit 2; }
say() { echo "== $*"; }

# One row for the table (tab-separated): the trial's judgement, its run median and ratio to the
# baseline's level, and the level shifts summary.md lists (`31:−5.1%:yes` = first run at the new
# level, its change, confirmed), from the reports in DIR.
summarize() {
  python3 - "$1" <<'EOF'
import json, re, sys, os
out = sys.argv[1]
try:
    report = json.load(open(os.path.join(out, "report.json")))
except (OSError, ValueError) as error:
    print("no-report\t-\t-\t-"); sys.exit()
judged = ((report.get("baseline") or {}).get("trials") or [{}])[0]
judgement = judged.get("judgement") or {}
ratio = (judgement.get("throughput") or {}).get("ratio")
measurement = ((report.get("trials") or [{}])[0]).get("measurement") or {}
median = measurement.get("median_gbps")
shifts = []
try:
    summary = open(os.path.join(out, "summary.md")).read()
    section = summary.split("#### Level shifts over the history", 1)[1]
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) >= 6 and re.match(r"^\d+ of \d+$", cells[1]):
            confirmed = "yes" if cells[5].startswith("yes") else "no"
            shifts.append("%s:%s:%s" % (cells[1].split()[0], cells[4], confirmed))
except (OSError, IndexError):
    pass
fmt = lambda x: "-" if x is None else "%.4f" % x
print("\t".join([judgement.get("kind", "-"), fmt(median), fmt(ratio), " ".join(shifts) or "-"]))
EOF
}

# run_gate PHASE N CAP CMD...: runs the gate, logs to WORK/PHASE-N.log, appends a row to the table.
run_gate() {
  local phase=$1 n=$2 cap=$3; shift 3
  local rc=0 row
  "$@" --out "$WORK/$phase-$n" > "$WORK/$phase-$n.log" 2>&1 || rc=$?
  row=$(summarize "$WORK/$phase-$n")
  printf '%s\t%s\t%s\t%s\t%s\n' "$phase" "$n" "$cap" "$rc" "$row" >> "$WORK/table.tsv"
  echo "   $phase $n: cap $cap MB/s, exit $rc, $(tr '\t' ' ' <<< "$row")"
}

main() {
  GATE="" SUITE="" RUNNER=creep-drill WORK="" DATA="" RATE=300000000 BLESS_RUNS=6 BLESS_INTERVAL=10
  CLEAN=30 PER_STEP=10 EXTRA=()
  while (($#)); do
    case $1 in
      -h|--help) usage; exit 0 ;;
      --) shift; EXTRA=("$@"); break ;;
      --gate|--suite|--runner|--work|--data-dir|--disk-rate|--bless-runs|--bless-interval|--clean|--per-step)
        (($# >= 2)) || die "$1 needs a value (see --help)"
        case $1 in
          --gate) GATE=$2 ;; --suite) SUITE=$2 ;; --runner) RUNNER=$2 ;; --work) WORK=$2 ;;
          --data-dir) DATA=$2 ;; --disk-rate) RATE=$2 ;; --bless-runs) BLESS_RUNS=$2 ;;
          --bless-interval) BLESS_INTERVAL=$2 ;; --clean) CLEAN=$2 ;; --per-step) PER_STEP=$2 ;;
        esac
        shift 2 ;;
      *) die "unknown argument '$1' (gate arguments go after --; see --help)" ;;
    esac
  done
  local repo; repo=$(cd "$here/../.." && pwd)
  for n in RATE BLESS_RUNS BLESS_INTERVAL CLEAN PER_STEP; do
    [[ ${!n} =~ ^[0-9]+$ ]] || die "--$(tr 'A-Z_' 'a-z-' <<< "$n") must be a whole number, got '${!n}'"
  done
  ((BLESS_RUNS >= 1 && RATE >= 1000000)) || die "--bless-runs must be at least 1 and --disk-rate at least 1000000"
  ((EUID == 0)) || die "the drill caps the disk with a cgroup: run it as root"
  command -v python3 > /dev/null || die "python3 is needed to read report.json"
  SUITE=$(realpath -e "${SUITE:-$here/creep.yaml}") || die "suite file not found"
  GATE=$(gate_binary "$repo" "$GATE") || exit 2
  WORK=$(work_folder "$repo" "$WORK" gds-creep) || exit 2
  DATA=$(realpath -m "${DATA:-$WORK/data}")
  mkdir -p "$WORK" "$DATA"
  [[ -e $WORK/table.tsv ]] && die "$WORK already holds a drill (table.tsv); pick a fresh --work"
  : > "$WORK/table.tsv"
  local dev; dev=$(block_device "$DATA") || exit 2
  trap cg_remove EXIT
  trap 'exit 130' INT TERM
  cd "$repo"
  # A slow phase is meant to last: a confirmation run need not wait for the runner to come back.
  local common=(--suite "$SUITE" --runner "$RUNNER" --baselines "$WORK/baselines" --data-dir "$DATA"
    --runner-wait 0 --confirm-delay 2 "${EXTRA[@]}")
  local history=(--history "$WORK/history.jsonl")
  say "gate $GATE, suite $SUITE, runner $RUNNER, work $WORK, data $DATA (device $dev)"
  "$GATE" gen --suite "$SUITE" --data-dir "$DATA" > "$WORK/gen.log" 2>&1 ||
    { tail -n 20 "$WORK/gen.log" >&2; die "gen failed (log: $WORK/gen.log)"; }
  sync

  say "0. the trial uncapped (its own history), and dd iflag=direct, for the record"
  local i file uncapped
  for i in 1 2 3; do
    run_gate uncapped "$i" none "$GATE" "${common[@]}" --history "$WORK/uncapped-history.jsonl"
  done
  uncapped=$(awk -F'\t' '$1 == "uncapped" && $6 != "-" { print $6 }' "$WORK/table.tsv" | sort -n | sed -n 2p)
  file=$(largest_file "$DATA")
  echo "   trial uncapped: median run $uncapped GB/s; dd iflag=direct of $file:" \
    "$(($(dd_rate_median "$file") / 1000000)) MB/s; disk rate for the drill: $((RATE / 1000000)) MB/s"
  # The uncapped runs had no baseline: their median is the measurement's own.
  awk -v u="${uncapped:-0}" -v r="$RATE" 'BEGIN { exit !(u * 1e9 >= 2 * r) }' ||
    die "--disk-rate $RATE is above half the trial's uncapped rate ($uncapped GB/s): the cap may not bind; pick a lower one"

  cg_create "$dev" "$RATE" || die "cannot create the throttling cgroup"
  say "1. bless at the disk's rate: $BLESS_RUNS runs, at least $BLESS_INTERVAL s apart"
  (unset CI; cg_run "$GATE" bless --runs "$BLESS_RUNS" --interval "$BLESS_INTERVAL" "${common[@]}" \
    "${history[@]}" --out "$WORK/bless" > "$WORK/bless.log" 2>&1) ||
    { tail -n 30 "$WORK/bless.log" >&2; echo "creep drill: bless failed (log: $WORK/bless.log)" >&2; exit 1; }
  echo "   baseline: $WORK/baselines/$RUNNER.yaml"

  say "2. clean runs: $CLEAN at the disk's rate"
  for ((i = 1; i <= CLEAN; i++)); do
    run_gate clean "$i" $((RATE / 1000000)) cg_run "$GATE" "${common[@]}" "${history[@]}"
  done

  say "3. the creep: $PER_STEP runs at each of 95%, 90% and 85% of the disk's rate"
  local percent cap
  for percent in 95 90 85; do
    cap=$((RATE * percent / 100))
    cg_cap "$cap"
    for ((i = 1; i <= PER_STEP; i++)); do
      run_gate "at-$percent" "$i" $((cap / 1000000)) cg_run "$GATE" "${common[@]}" "${history[@]}"
    done
  done

  cg_remove

  say "4. results"
  {
    printf 'phase\trun\tcap MB/s\texit\tjudgement\tmedian GB/s\tratio\tlevel shifts (first run:change:confirmed)\n'
    cat "$WORK/table.tsv"
  } | awk -F'\t' '{ printf "%-9s %-4s %-9s %-5s %-11s %-12s %-7s %s\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
  local bad_clean last_rc first_creep
  bad_clean=$(awk -F'\t' '$1 == "clean" && ($4 != 0 || $8 != "-")' "$WORK/table.tsv" | wc -l)
  last_rc=$(awk -F'\t' '$1 == "at-85" { rc = $4 } END { print rc }' "$WORK/table.tsv")
  first_creep=$(awk -F'\t' '$5 == "creep" { print $1 " " $2; exit }' "$WORK/table.tsv")
  echo "clean: $bad_clean of $CLEAN runs exited non-zero or listed a level shift (0 expected)"
  echo "first run judged creep: ${first_creep:-none} (one expected by the end)"
  echo "last run at 85%: exit $last_rc (3 expected)"
  echo "logs and reports: $WORK"
  if ((bad_clean == 0)) && [[ $last_rc == 3 && -n $first_creep ]]; then
    echo "DRILL PASSED"; exit 0
  fi
  echo "DRILL FAILED"; exit 1
}

main "$@"
