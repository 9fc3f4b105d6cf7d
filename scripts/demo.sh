#!/usr/bin/env bash
# Quick start: install, start the local services, migrate, run the platform
# (store, tailer, worker and API as supervised processes) with the API on
# LOCKAUDIT_PORT (default 8080) and feed it a demo workload.
# Ctrl-C stops the platform; `npx lockaudit services down` stops the services.
# On a terminal the log is human-readable; `start --log-format json` keeps JSON lines.
# Once ready it prints where to go (console URL, token file, commands): docs/monitoring.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/prerequisites.sh
install_prerequisites
npm run build --silent
node bin/lockaudit.js services up
node bin/lockaudit.js migrate
# The end-to-end canary (docs/operations.md#the-canary) runs in the demo unless set otherwise.
export LOCKAUDIT_CANARY_INTERVAL_SECONDS="${LOCKAUDIT_CANARY_INTERVAL_SECONDS:-10}"
exec node bin/lockaudit.js start --demo
