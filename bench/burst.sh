#!/usr/bin/env bash
# The hour-start burst on the production shape: `[CORES=N] bench/burst.sh [MONITORS] [WORKERS]`.
# CORES=N pins every process of the service (PostgreSQL, Redis, the workers, beat)
# to CPUs 0..N-1 with taskset (issue 24's one-core burst: CORES=1); the receiver,
# which stands for the receivers on the internet, runs on the other CPUs.
# Starts a scratch PostgreSQL and Redis (bench/_services.sh), then bench/burst.py
# (see its docstring). Results: bench/README.md.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
if [ -n "${CORES:-}" ]; then PIN=(taskset -c "0-$((CORES - 1))"); else PIN=(); fi
PG_OPTIONS="-c track_commit_timestamp=on"  # burst.py reads when each incident committed
. bench/_services.sh
trap services_cleanup EXIT
services || exit 1
echo "load average before: $(cat /proc/loadavg)"
"${PIN[@]}" env "${PGENV[@]}" BENCH_SCRATCH="$S" "$PY" bench/burst.py "$@"
