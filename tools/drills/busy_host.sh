#!/usr/bin/env bash
# The busy-host drill: does the gate tell a busy runner from a slower trial?
#   1. Bless a suite on a host as quiet as it can be (the bless records the runner's control and
#      how busy the host was).
#   2. Run the suite N times, each with a second gate running the same suite beside it (its own
#      data dir, reports and history, no baseline) for the whole run.
#   3. Count, over the runs: trials judged slower, those of them whose words say the host was
#      busy, and messages that call a slowdown "this trial's own" (a blame). The drill holds when
#      no message blames a trial and every slower verdict says the host was busy.
# Other jobs on the host disturb the drill as they would a CI runner: `uptime` is logged before the
# bless and before every run (WORK/uptime.log), so that the figures can be read with it.
#
# From the repository root (builds the gate when --gate is not given):
#   tools/drills/busy_host.sh --runs 5 --work /var/tmp/busy-drill
#   tools/drills/busy_host.sh --gate target/release/gds-gate --bless-runs 3 --bless-interval 30 --runs 5
# Exit: 0 when the drill holds, 1 when it does not, 2 on bad usage.
# The runs' history goes to WORK/history.jsonl (the neighbour's to WORK/neighbour-history.jsonl),
# never to the repository's .gds-gate/history.jsonl, which a bless may take.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# gate_binary and work_folder; sourced, throughput.sh runs nothing (this drill's own usage, die,
# say and summarize below replace its).
# shellcheck source=throughput.sh
source "$here/throughput.sh"

usage() {
  cat <<'EOF'
Usage: busy_host.sh [OPTIONS] [-- GATE_ARGS...]
  --gate PATH            gds-gate binary (default: cargo build --release -p gds-gate-bin)
  --suite FILE           suite to bless and run (default: scenarios/smoke.yaml)
  --runner NAME          runner profile of the drill's own baseline (default: busy-drill)
  --work DIR             baselines, reports, logs and histories (default: a fresh mktemp -d)
  --baselines DIR        reuse the runner's baseline in DIR instead of blessing again
  --bless-runs N         runs recorded by bless (default: 6, the gate's own)
  --bless-interval S     least seconds between the starts of the blessed runs (default: 60)
  --runs N               runs with a second gate beside them (default: 5)
  -- GATE_ARGS...        passed to every gate run of the drill (not to the neighbour)
EOF
}

die() { echo "busy-host drill: $*" >&2; exit 2; }
say() { echo "== $*"; }

# One row for the table from a run's report.json and junit.xml: slower verdicts, those of them
# whose words say the host was busy, blames, confirmation runs, waits (tab-separated).
summarize() {
  python3 - "$1" <<'EOF'
import json, sys, xml.etree.ElementTree as ET
out = sys.argv[1]
try:
    report = json.load(open(out + "/report.json"))
    junit = ET.parse(out + "/junit.xml")
except (OSError, ValueError, ET.ParseError) as error:
    print("-\t-\t-\t-\t-\tno report (%s)" % error.__class__.__name__); sys.exit()
judged = {t["trial"]: t["judgement"]["kind"] for t in (report.get("baseline") or {}).get("trials") or []}
slower = [name for name, kind in judged.items() if kind == "regression"]
# The words every sink prints: the failure messages of junit.xml.
words = {}
for case in junit.iter("testcase"):
    for failure in list(case.iter("failure")):
        words[case.get("name")] = (failure.get("message") or "") + "\n" + (failure.text or "")
def named(trial):
    return next((text for name, text in words.items() if name == trial or trial.endswith("::" + name)), "")
busy = [t for t in slower if "the host was busy" in named(t)]
blames = [name for name, text in words.items() if "this trial's own" in text]
checks = [c for r in report.get("trials") or [] for c in r.get("runner_checks") or []]
waited = sum(c.get("waited_s", 0) for c in checks)
detail = " ".join("%s=%s" % (t.split("::", 1)[-1], "busy" if t in busy else "NOT-BUSY") for t in slower)
print("\t".join(map(str, [len(slower), len(busy), len(blames), len(checks), "%.0f" % waited, detail])))
EOF
}

NEIGHBOUR_PID=""
stop_neighbour() {
  [[ -n $NEIGHBOUR_PID ]] || return 0
  kill "$NEIGHBOUR_PID" 2>/dev/null || true
  wait "$NEIGHBOUR_PID" 2>/dev/null || true
  NEIGHBOUR_PID=""
}

# The second gate: the suite again and again, in a loop of its own, until stopped.
start_neighbour() {
  local n=$1
  (
    child=""
    trap 'kill "$child" 2>/dev/null; wait "$child" 2>/dev/null; exit 0' TERM
    while :; do
      "$GATE" --suite "$SUITE" --runner neighbour --baselines "$WORK/neighbour-baselines" \
        --data-dir "$WORK/neighbour-data" --history "$WORK/neighbour-history.jsonl" \
        --out "$WORK/neighbour-$n" >> "$WORK/neighbour-$n.log" 2>&1 &
      child=$!
      wait "$child" || true
    done
  ) &
  NEIGHBOUR_PID=$!
}

main() {
  GATE="" SUITE="" RUNNER=busy-drill WORK="" BASELINES="" BLESS_RUNS=6 BLESS_INTERVAL=60 RUNS=5
  EXTRA=()
  while (($#)); do
    case $1 in
      -h|--help) usage; exit 0 ;;
      --) shift; EXTRA=("$@"); break ;;
      --gate|--suite|--runner|--work|--baselines|--bless-runs|--bless-interval|--runs)
        (($# >= 2)) || die "$1 needs a value (see --help)"
        case $1 in
          --gate) GATE=$2 ;; --suite) SUITE=$2 ;; --runner) RUNNER=$2 ;; --work) WORK=$2 ;;
          --baselines) BASELINES=$2 ;; --bless-runs) BLESS_RUNS=$2 ;;
          --bless-interval) BLESS_INTERVAL=$2 ;; --runs) RUNS=$2 ;;
        esac
        shift 2 ;;
      *) die "unknown argument '$1' (gate arguments go after --; see --help)" ;;
    esac
  done
  local repo; repo=$(cd "$here/../.." && pwd)
  for n in BLESS_RUNS BLESS_INTERVAL RUNS; do
    [[ ${!n} =~ ^[0-9]+$ ]] || die "--$(tr 'A-Z_' 'a-z-' <<< "$n") must be a whole number, got '${!n}'"
  done
  ((BLESS_RUNS >= 1 && RUNS >= 1)) || die "--bless-runs and --runs must be at least 1"
  command -v python3 > /dev/null || die "python3 is needed to read the reports"
  SUITE=$(realpath -e "${SUITE:-$repo/scenarios/smoke.yaml}") || die "suite file not found"
  GATE=$(gate_binary "$repo" "$GATE") || exit 2
  WORK=$(work_folder "$repo" "$WORK" gds-busy-drill) || exit 2
  mkdir -p "$WORK/data" "$WORK/neighbour-data" "$WORK/neighbour-baselines"
  [[ -e $WORK/table.tsv ]] && die "$WORK already holds a drill (table.tsv); pick a fresh --work"
  : > "$WORK/table.tsv"
  if [[ -n $BASELINES ]]; then
    [[ -f $BASELINES/$RUNNER.yaml ]] || die "--baselines: no $BASELINES/$RUNNER.yaml to reuse"
    BASELINES=$(realpath -e "$BASELINES")
  fi
  trap stop_neighbour EXIT
  trap 'exit 130' INT TERM
  cd "$repo"
  local common=(--suite "$SUITE" --runner "$RUNNER" --baselines "${BASELINES:-$WORK/baselines}"
    --data-dir "$WORK/data" --history "$WORK/history.jsonl")
  say "gate $GATE, suite $SUITE, runner $RUNNER, work $WORK, extra: ${EXTRA[*]:-none}"

  local rc=0
  for data in "$WORK/data" "$WORK/neighbour-data"; do
    "$GATE" gen --suite "$SUITE" --data-dir "$data" >> "$WORK/gen.log" 2>&1 || rc=$?
    ((rc == 0)) || { tail -n 20 "$WORK/gen.log" >&2; die "gen exited $rc"; }
  done
  sync
  if [[ -n $BASELINES ]]; then
    say "1. bless: reusing $BASELINES/$RUNNER.yaml"
  else
    say "1. bless: $BLESS_RUNS runs, at least $BLESS_INTERVAL s apart, nothing of the drill's beside them"
    echo "bless start: $(uptime)" >> "$WORK/uptime.log"
    env -u CI "$GATE" bless --runs "$BLESS_RUNS" --interval "$BLESS_INTERVAL" "${common[@]}" \
      --out "$WORK/bless" "${EXTRA[@]}" > "$WORK/bless.log" 2>&1 || rc=$?
    echo "bless end: $(uptime)" >> "$WORK/uptime.log"
    ((rc == 0)) || { tail -n 30 "$WORK/bless.log" >&2; echo "busy-host drill: bless exited $rc" >&2; exit 1; }
    echo "   baseline: $WORK/baselines/$RUNNER.yaml"
  fi

  say "2. runs with a second gate beside them: $RUNS"
  local row slower busy blames
  for ((i = 1; i <= RUNS; i++)); do
    start_neighbour "$i"
    sleep 5   # the neighbour is past its start-up and reading when the run begins
    echo "run $i start: $(uptime)" >> "$WORK/uptime.log"
    rc=0
    "$GATE" "${common[@]}" --out "$WORK/run-$i" "${EXTRA[@]}" > "$WORK/run-$i.log" 2>&1 || rc=$?
    echo "run $i end: $(uptime)" >> "$WORK/uptime.log"
    stop_neighbour
    row=$(summarize "$WORK/run-$i")
    printf '%s\t%s\t%s\n' "$i" "$rc" "$row" >> "$WORK/table.tsv"
    IFS=$'\t' read -r slower busy blames _ <<< "$row"
    echo "   run $i: exit $rc, slower $slower (host busy said in $busy), blames $blames  ($WORK/run-$i.log)"
  done

  say "3. results"
  {
    printf 'run\texit\tslower\tsays-busy\tblames\tchecks\twaited-s\tslower trials\n'
    cat "$WORK/table.tsv"
  } | awk -F'\t' '{ printf "%-4s %-5s %-7s %-10s %-7s %-7s %-9s %s\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
  cat "$WORK/uptime.log"
  awk -F'\t' '$3 == "-" { missing++ } { slower += $3; busy += $4; blames += $5 } END {
      printf "runs %d (without a report: %d); slower verdicts %d, of which say the host was busy %d; blames %d\n",
        NR, missing, slower, busy, blames
      exit !(missing == 0 && blames == 0 && busy == slower) }' "$WORK/table.tsv" &&
    { echo "DRILL PASSED"; exit 0; }
  echo "DRILL FAILED"; exit 1
}

main "$@"
