# Sourced by .ci/run, test.sh and bench.sh (through ownServices.sh) and demo.sh:
# bring in what the README's commands need on a fresh Debian machine, each
# only if missing — a supported Node.js (scripts/node.sh), redis-server and,
# for the browser tests, Debian's chromium (apt-get, as root or through
# passwordless sudo), and node_modules. etcd and MinIO are built by
# `lockaudit services up|install` (services/install.ts), which needs Go.
# usage: install_prerequisites [--browser]   (from the project root)
source scripts/node.sh

# The console tests drive this browser (test/support/browser.ts); a variable so the script's test can hide it.
: "${PREREQ_CHROMIUM:=/usr/bin/chromium}"

install_prerequisites() {
  use_supported_node
  local missing=()
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  if [ "${1:-}" = --browser ] && [ ! -x "$PREREQ_CHROMIUM" ]; then missing+=(chromium); fi
  if [ "${#missing[@]}" -gt 0 ]; then
    local as_root=()
    if [ "$(id -u)" -ne 0 ]; then
      if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then as_root=(sudo -n); else
        echo "lockaudit: ${missing[*]} missing and this user cannot install Debian packages; run as root, or: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
        return 1
      fi
    fi
    command -v apt-get >/dev/null 2>&1 || { echo "lockaudit: ${missing[*]} missing and apt-get is not here (not Debian?); install them with your package manager" >&2; return 1; }
    echo "lockaudit: installing ${missing[*]} from Debian packages (first time only)…" >&2
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # npm ci refuses this lock file: the registry here serves only the linux-x64 build of chdb's
  # optional platform packages, so the lock cannot list the others. npm install still follows the lock.
  [ -d node_modules ] || npm install --no-audit --no-fund
}
