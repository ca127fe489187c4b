#!/usr/bin/env bash
# The hour-start burst on the production shape: `bench/burst.sh [MONITORS] [WORKERS]`.
# Starts a scratch PostgreSQL and Redis (bench/_services.sh), then bench/burst.py
# (see its docstring). Results: bench/README.md.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
PG_OPTIONS="-c track_commit_timestamp=on"  # burst.py reads when each incident committed
. bench/_services.sh
trap services_cleanup EXIT
services || exit 1
env "${PGENV[@]}" BENCH_SCRATCH="$S" "$PY" bench/burst.py "$@"
