#!/usr/bin/env bash
# The memory soak (test/soak/memory.ts): 1 000 values of 1 MiB into etcd, the
# platform's peak memory and largest responses reported. Not part of npm test.
# Services on a port block and data dir of its own (SOAK_PORT_BASE, default 22000).
set -euo pipefail
cd "$(dirname "$0")/.."
data_dir="${SOAK_DATA_DIR:-$PWD/.lockaudit-soak}"
port_base="${SOAK_PORT_BASE:-22000}"
unset SOAK_DATA_DIR SOAK_PORT_BASE
source scripts/ownServices.sh
own_services "$data_dir" "$port_base"
node --import tsx test/soak/memory.ts
