#!/usr/bin/env bash
# Runs every benchmark under test/bench/ against the project's own services
# (a bench port block and data dir of its own) and prints each figure beside
# a baseline measured in the same run. `npm run bench -- name` runs one file.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -d node_modules ] || npm install --no-audit --no-fund
npx tsc -p .

export LOCKAUDIT_DATA_DIR="${LOCKAUDIT_BENCH_DATA_DIR:-$PWD/.lockaudit-bench}"
export LOCKAUDIT_LOCAL_PORT_BASE="${LOCKAUDIT_BENCH_PORT_BASE:-43000}"
export LOCKAUDIT_LOG_LEVEL="${LOCKAUDIT_LOG_LEVEL:-warn}"
unset LOCKAUDIT_CONFIG LOCKAUDIT_ETCD LOCKAUDIT_CLICKHOUSE_URL LOCKAUDIT_S3_ENDPOINT LOCKAUDIT_REDIS_URL LOCKAUDIT_PORT

node bin/lockaudit.js services down >/dev/null 2>&1 || true
rm -rf "$LOCKAUDIT_DATA_DIR"
node bin/lockaudit.js services up
trap 'node bin/lockaudit.js services down || true' EXIT

mapfile -t files < <(find test/bench -name "*${1:-}*.bench.ts" | sort)
for f in "${files[@]}"; do
  echo "### $f"
  node --import tsx "$f"
done
