#!/usr/bin/env bash
# The bless-from-history drill: does a baseline blessed from the history of ordinary runs hold?
#   1. Accumulate: N runs of a suite with no baseline, spread so that the first and the last start
#      at least SPAN seconds apart, each appending its line to the drill's own history, as CI runs
#      on a runner would.
#   2. `bless --from-history --history-runs N --min-span SPAN`: the baseline from those runs.
#   3. Clean runs against it: none may be slower (exit 0, no trial judged `regression`).
# No root and no block device needed: nothing is throttled. Every run's load average is recorded
# (WORK/load.tsv), since other work on the host moves throughput.
#
# From the repository root (builds the gate when --gate is not given):
#   tools/drills/from_history.sh --work /var/tmp/from-history
#   tools/drills/from_history.sh --gate target/release/gds-gate --history-runs 10 --span 600 --clean 10
# Exit: 0 when the drill holds, 1 when it does not, 2 on bad usage.
# Logs stay in WORK/<phase>-<n>.log, reports in WORK/<phase>-<n>/, the history in
# WORK/history.jsonl (never the repository's .gds-gate/history.jsonl).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# summarize and run_gate: one row per gate run in WORK/table.tsv, as the throughput drill keeps it;
# gate_binary and work_folder.
# shellcheck source=throughput.sh
source "$here/throughput.sh"

usage() {
  cat <<'EOF'
Usage: from_history.sh [OPTIONS] [-- GATE_ARGS...]
  --gate PATH          gds-gate binary (default: cargo build --release -p gds-gate-bin)
  --suite FILE         suite to run (default: scenarios/smoke.yaml)
  --runner NAME        runner profile of the drill's baseline and history (default: drill)
  --work DIR           baselines, reports, logs and the history (default: a fresh mktemp -d)
  --data-dir DIR       the gate's --data-dir (default: WORK/data)
  --history-runs N     runs accumulated, and taken by the bless (default: 10, the gate's own)
  --span S             least seconds from the start of the first accumulated run to the start of
                       the last, and the bless's --min-span (default: 600, the gate's own)
  --clean N            clean runs after the bless, none may be slower (default: 10)
  --clean-interval S   least seconds between the starts of the clean runs (default: 0)
  -- GATE_ARGS...      passed to every gate run and to the bless (e.g. a trial filter: -- posix)
EOF
}

die() { echo "from-history drill: $*" >&2; exit 2; }

# spaced_runs PHASE COUNT INTERVAL: COUNT gate runs starting at least INTERVAL seconds apart, each
# logged as run_gate does, with the host's load average noted beside it.
spaced_runs() {
  local phase=$1 count=$2 interval=$3 started=0 wait i
  for ((i = 1; i <= count; i++)); do
    wait=$((started + interval - SECONDS))
    ((i == 1 || wait <= 0)) || sleep "$wait"
    started=$SECONDS
    printf '%s\t%s\t%s\n' "$phase" "$i" "$(cut -d' ' -f1-3 /proc/loadavg)" >> "$WORK/load.tsv"
    run_gate "$phase" "$i" "$GATE" "${common[@]}" --out "$WORK/$phase-$i" "${EXTRA[@]}"
  done
}

main() {
  GATE="" SUITE="" RUNNER=drill WORK="" DATA="" RUNS=10 SPAN=600 CLEAN=10 CLEAN_INTERVAL=0
  EXTRA=()
  while (($#)); do
    case $1 in
      -h|--help) usage; exit 0 ;;
      --) shift; EXTRA=("$@"); break ;;
      --gate|--suite|--runner|--work|--data-dir|--history-runs|--span|--clean|--clean-interval)
        (($# >= 2)) || die "$1 needs a value (see --help)"
        case $1 in
          --gate) GATE=$2 ;; --suite) SUITE=$2 ;; --runner) RUNNER=$2 ;; --work) WORK=$2 ;;
          --data-dir) DATA=$2 ;; --history-runs) RUNS=$2 ;; --span) SPAN=$2 ;;
          --clean) CLEAN=$2 ;; --clean-interval) CLEAN_INTERVAL=$2 ;;
        esac
        shift 2 ;;
      *) die "unknown argument '$1' (gate arguments go after --; see --help)" ;;
    esac
  done
  local repo; repo=$(cd "$here/../.." && pwd)
  for n in RUNS SPAN CLEAN CLEAN_INTERVAL; do
    [[ ${!n} =~ ^[0-9]+$ ]] || die "--$(tr 'A-Z_' 'a-z-' <<< "$n") must be a whole number, got '${!n}'"
  done
  ((RUNS >= 2)) || die "--history-runs must be at least 2 (a span needs two runs)"
  command -v python3 > /dev/null || die "python3 is needed to read report.json"
  SUITE=$(realpath -e "${SUITE:-$repo/scenarios/smoke.yaml}") || die "suite file not found"
  GATE=$(gate_binary "$repo" "$GATE") || exit 2
  WORK=$(work_folder "$repo" "$WORK" gds-from-history) || exit 2
  DATA=$(realpath -m "${DATA:-$WORK/data}")
  mkdir -p "$WORK" "$DATA"
  [[ -e $WORK/table.tsv ]] && die "$WORK already holds a drill (table.tsv); pick a fresh --work"
  : > "$WORK/table.tsv"
  : > "$WORK/load.tsv"
  trap 'exit 130' INT TERM
  cd "$repo"
  # Every run, the bless included, reads and writes the drill's own history.
  export GDS_GATE_HISTORY=$WORK/history.jsonl
  unset CI
  local common=(--suite "$SUITE" --runner "$RUNNER" --baselines "$WORK/baselines" --data-dir "$DATA")
  echo "== gate $GATE, suite $SUITE, runner $RUNNER, work $WORK, extra: ${EXTRA[*]:-none}"
  local rc=0
  "$GATE" gen --suite "$SUITE" --data-dir "$DATA" > "$WORK/gen.log" 2>&1 || rc=$?
  ((rc == 0)) || { tail -n 20 "$WORK/gen.log" >&2; echo "from-history drill: gen exited $rc" >&2; exit 1; }
  sync

  # A second more than the even share of the span per interval: the history records each run's
  # start to the second.
  local interval=$(((SPAN + RUNS - 2) / (RUNS - 1) + 1))
  echo "== 1. accumulate: $RUNS runs with no baseline, starting at least $interval s apart"
  spaced_runs accumulate "$RUNS" "$interval"

  echo "== 2. bless --from-history --history-runs $RUNS --min-span ${SPAN}s"
  "$GATE" bless --from-history --history-runs "$RUNS" --min-span "${SPAN}s" "${common[@]}" \
    --out "$WORK/bless" "${EXTRA[@]}" > "$WORK/bless.log" 2>&1 || rc=$?
  sed 's/^/   /' "$WORK/bless.log"
  ((rc == 0)) || { echo "from-history drill: bless exited $rc (log: $WORK/bless.log)" >&2; exit 1; }

  echo "== 3. clean runs: $CLEAN, starting at least $CLEAN_INTERVAL s apart"
  spaced_runs clean "$CLEAN" "$CLEAN_INTERVAL"

  echo "== 4. results"
  {
    printf 'phase\trun\texit\tslower\tconfirmed-away\tfailed\tjudged\tratios (run/baseline >confirmations, ! = slower)\ttotals\tload 1/5/15 min\n'
    paste "$WORK/table.tsv" <(cut -f3 "$WORK/load.tsv")
  } | awk -F'\t' '{ printf "%-10s %-4s %-5s %-7s %-15s %-7s %-7s %-15s %s   %s\n", $1, $2, $3, $4, $5, $6, $7, $10, $8, $9 }'
  local slower verdicts bad_accumulate bad_clean
  bad_accumulate=$(awk -F'\t' '$1 == "accumulate" && $3 != 0' "$WORK/table.tsv" | wc -l)
  slower=$(awk -F'\t' '$1 == "clean" && $4 > 0' "$WORK/table.tsv" | wc -l)
  verdicts=$(awk -F'\t' '$1 == "clean" { n += $4 } END { print n + 0 }' "$WORK/table.tsv")
  bad_clean=$(awk -F'\t' '$1 == "clean" && ($3 != 0 || $4 != 0 || $6 != 0)' "$WORK/table.tsv" | wc -l)
  echo "accumulate: $bad_accumulate of $RUNS runs did not pass (0 expected: a bless takes only passing runs)"
  echo "clean: $slower of $CLEAN runs had a slower verdict ($verdicts trial(s) in all; 0 expected);" \
    "$bad_clean of $CLEAN not clean (exit != 0: slower, costlier or failed)"
  echo "logs, reports and the history: $WORK"
  ((bad_clean == 0)) && { echo "DRILL PASSED"; exit 0; }
  echo "DRILL FAILED"; exit 1
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi
