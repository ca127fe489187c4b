#!/usr/bin/env bash
# The delivery engine's cost per notification: `bench/deliveries.sh [N]`. Starts a
# scratch PostgreSQL (bench/_services.sh) and runs bench/deliveries.py against it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
. bench/_services.sh
trap services_cleanup EXIT
services || exit 1
url=${PGENV[0]#DATABASE_URL=}
env "${PGENV[@]}" "$PY" manage.py migrate -v0 || exit 1
BENCH_DATABASE_URL=$url "$PY" bench/deliveries.py "$@"
