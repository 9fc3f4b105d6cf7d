# Sourced by test.sh and bench.sh: build, then start the project's services
# fresh on a port block and data dir of the caller's own, and stop them on exit.
# usage: own_services DATA_DIR PORT_BASE
source scripts/prerequisites.sh
own_services() {
  # The console tests and the console benchmark drive chromium.
  install_prerequisites --browser
  # The CLI tests run the compiled dist/, the console tests the built console: build both from the current source.
  npm run --silent build >/dev/null
  export LOCKAUDIT_DATA_DIR="$1"
  export LOCKAUDIT_LOCAL_PORT_BASE="$2"
  export LOCKAUDIT_LOG_LEVEL="${LOCKAUDIT_LOG_LEVEL:-warn}"
  # One proof-of-origin key for every process of the run, as a deployment has: holds written by one
  # test's lock API are then not "foreign" to another test's tailer reading the same etcd.
  export LOCKAUDIT_ORIGIN_SECRET="${LOCKAUDIT_ORIGIN_SECRET:-lockaudit-test-suite-origin-secret-0123456789}"
  # The scripts' own knobs are not lockaudit settings (the config rejects unknown LOCKAUDIT_*),
  # and these settings would point the run at someone else's services.
  unset LOCKAUDIT_TEST_DATA_DIR LOCKAUDIT_TEST_PORT_BASE LOCKAUDIT_BENCH_DATA_DIR LOCKAUDIT_BENCH_PORT_BASE
  unset LOCKAUDIT_CONFIG LOCKAUDIT_ETCD LOCKAUDIT_CLICKHOUSE_URL LOCKAUDIT_S3_ENDPOINT LOCKAUDIT_REDIS_URL LOCKAUDIT_PORT
  node bin/lockaudit.js services down >/dev/null 2>&1 || true
  rm -rf "$LOCKAUDIT_DATA_DIR"
  node bin/lockaudit.js services up
  trap 'node bin/lockaudit.js services down || true' EXIT
}
