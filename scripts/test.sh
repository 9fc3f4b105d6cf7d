#!/usr/bin/env bash
# The full test suite: builds, starts the project's own services on a test
# port block with a throw-away data dir, runs every test, stops what it started.
# `bash scripts/test.sh test/unit/config.test.ts` runs some files only.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ownServices.sh
own_services "${LOCKAUDIT_TEST_DATA_DIR:-$PWD/.lockaudit-test}" "${LOCKAUDIT_TEST_PORT_BASE:-24000}"

if [ "$#" -gt 0 ]; then files=("$@"); else mapfile -t files < <(find test/unit test/integration -name '*.test.ts' | sort); fi
node --import tsx --test --test-force-exit --test-reporter=spec --test-timeout=600000 "${files[@]}"
