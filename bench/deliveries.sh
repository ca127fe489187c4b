#!/usr/bin/env bash
# The delivery engine's cost per notification: `bench/deliveries.sh [N ...]` (backlog sizes). Starts a
# scratch PostgreSQL (bench/_services.sh) and runs bench/deliveries.py against it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
. bench/_services.sh
on_scratch_pg bench/deliveries.py "$@"
