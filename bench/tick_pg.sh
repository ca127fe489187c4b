#!/usr/bin/env bash
# An empty evaluator tick with 1,000,000 monitors on PostgreSQL:
# `bench/tick_pg.sh [N ...]` (default 1000000). Starts a scratch PostgreSQL
# (bench/_services.sh) and runs bench/evaluator_tick.py against it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
. bench/_services.sh
trap services_cleanup EXIT
services || exit 1
url=${PGENV[0]#DATABASE_URL=}
BENCH_DATABASE_URL=$url "$PY" bench/evaluator_tick.py "${@:-1000000}"
