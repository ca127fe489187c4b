#!/usr/bin/env bash
# An empty evaluator tick with 1,000,000 monitors on PostgreSQL:
# `bench/tick_pg.sh [N ...]` (default 1000000). Starts a scratch PostgreSQL
# (bench/_services.sh) and runs bench/evaluator_tick.py against it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
. bench/_services.sh
on_scratch_pg bench/evaluator_tick.py "${@:-1000000}"
