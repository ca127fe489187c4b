#!/usr/bin/env bash
# Bytes per heartbeat and per run (issue 24, target 2): `bench/storage.sh [N] [RUNS]`
#
# On a scratch PostgreSQL (bench/_services.sh; default durability), migrated once
# and copied to a second database: N heartbeats (default 200,000) on the first,
# RUNS paired start/success pings with a run id (default N/2: as many pings) on the
# second, over 100 monitors, through monitors.pings.ingest (bench/storage.py: what
# it does and prints). Each ends with CHECKPOINT and prints monitors_run and
# monitors_ping split by heap, the rest of the table and each index, and the total,
# e.g. "bytes per heartbeat: 524 (target <= 150)". Results: bench/README.md.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
N=${1:-200000} RUNS=${2:-$(( ${1:-200000} / 2 ))}
. bench/_services.sh
trap services_cleanup EXIT
services || exit 1
env "${PGENV[@]}" "$PY" manage.py migrate -v0 || exit 1
URL=${PGENV[0]#DATABASE_URL=}
psql -q "$URL" -c "create database pairs template cronradar" || exit 1
echo "$(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(git log -1 --format=%h)"
BENCH_DATABASE_URL=$URL "$PY" bench/storage.py heartbeats "$N" || exit 1
BENCH_DATABASE_URL=${URL%/cronradar}/pairs "$PY" bench/storage.py pairs "$RUNS"
