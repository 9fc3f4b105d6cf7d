#!/usr/bin/env bash
# The full test suite: builds, starts the project's own services on a test
# port block with a throw-away data dir, runs every test, stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -d node_modules ] || npm install --no-audit --no-fund
npx tsc -p .

export LOCKAUDIT_DATA_DIR="${LOCKAUDIT_TEST_DATA_DIR:-$PWD/.lockaudit-test}"
export LOCKAUDIT_LOCAL_PORT_BASE="${LOCKAUDIT_TEST_PORT_BASE:-33000}"
export LOCKAUDIT_LOG_LEVEL="${LOCKAUDIT_LOG_LEVEL:-warn}"
unset LOCKAUDIT_CONFIG LOCKAUDIT_ETCD LOCKAUDIT_CLICKHOUSE_URL LOCKAUDIT_S3_ENDPOINT LOCKAUDIT_REDIS_URL LOCKAUDIT_PORT

node bin/lockaudit.js services down >/dev/null 2>&1 || true
rm -rf "$LOCKAUDIT_DATA_DIR"
node bin/lockaudit.js services up
trap 'node bin/lockaudit.js services down || true' EXIT

if [ "$#" -gt 0 ]; then files=("$@"); else mapfile -t files < <(find test/unit test/integration -name '*.test.ts' | sort); fi
node --import tsx --test --test-reporter=spec --test-timeout=600000 "${files[@]}"
