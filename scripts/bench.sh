#!/usr/bin/env bash
# Runs every benchmark under test/bench/ against the project's own services
# (a bench port block and data dir of its own) and prints each figure beside
# a baseline measured in the same run. `npm run bench -- name` runs the files
# whose name contains `name`. The run's figures, each with its baseline and
# ratio, and the machine (cores, memory, Node.js, load average at start) go to
# bench-results/<start time>.json (BENCH_RESULTS_DIR to put them
# elsewhere), and one table of them is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ownServices.sh
own_services "${LOCKAUDIT_BENCH_DATA_DIR:-$PWD/.lockaudit-bench}" "${LOCKAUDIT_BENCH_PORT_BASE:-26000}"

mapfile -t files < <(find test/bench -name "*${1:-}*.bench.ts" | sort)
[ "${#files[@]}" -gt 0 ] || { echo "bench: no benchmark matches '${1:-}'" >&2; exit 2; }

# Not LOCKAUDIT_*: the config rejects unknown LOCKAUDIT_ variables. In the data dir: cleared every run
# (and no trap of our own, which would replace the one that stops the services).
run_dir="$LOCKAUDIT_DATA_DIR/bench-run"
mkdir -p "$run_dir"
export BENCH_FIGURES_FILE="$run_dir/figures.jsonl"
# The machine before any bench loads it.
node --import tsx test/bench/results.cli.ts start "$run_dir/machine.json"
outcomes=()
status=0
for f in "${files[@]}"; do
  echo "### $f"
  if node --import tsx "$f"; then outcomes+=("$f=ok"); else outcomes+=("$f=failed"); status=1; fi
done
node --import tsx test/bench/results.cli.ts finish "$run_dir/machine.json" "$BENCH_FIGURES_FILE" "${BENCH_RESULTS_DIR:-bench-results}" "${outcomes[@]}"
exit "$status"
