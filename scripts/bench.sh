#!/usr/bin/env bash
# Runs every benchmark under test/bench/ against the project's own services
# (a bench port block and data dir of its own) and prints each figure beside
# a baseline measured in the same run. `npm run bench -- name` runs the files
# whose name contains `name`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ownServices.sh
own_services "${LOCKAUDIT_BENCH_DATA_DIR:-$PWD/.lockaudit-bench}" "${LOCKAUDIT_BENCH_PORT_BASE:-26000}"

mapfile -t files < <(find test/bench -name "*${1:-}*.bench.ts" | sort)
[ "${#files[@]}" -gt 0 ] || { echo "bench: no benchmark matches '${1:-}'" >&2; exit 2; }
for f in "${files[@]}"; do
  echo "### $f"
  node --import tsx "$f"
done
