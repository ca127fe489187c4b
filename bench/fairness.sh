#!/usr/bin/env bash
# Fair shares between organisations: `bench/fairness.sh ROUNDS [MONITORS] [BASE_TREE]`.
# Starts a scratch PostgreSQL and Redis (bench/_services.sh), then runs
# bench/fairness.py (see its docstring) ROUNDS times for this tree and, with
# BASE_TREE (a worktree of the commit to compare with, e.g. today's main:
# `git worktree add /tmp/base <commit>`), for that one too, interleaved (the order
# swaps each round), each run on a database of its own. SHAPES (default
# "production embedded") picks the shapes. Prints each run's figures and the load,
# then first / median / last of each figure per tree and shape. Results: bench/README.md.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROUNDS=${1:-3} MONITORS=${2:-20000} BASE=${3:-}
PG_OPTIONS="-c track_commit_timestamp=on"  # fairness.py reads when each incident committed
. bench/_services.sh
trap services_cleanup EXIT
services || exit 1
TREES=("$ROOT")
if [ -n "$BASE" ]; then
    BASE=$(cd "$BASE" && pwd) || exit 1
    cp bench/fairness.py "$BASE/bench/fairness.py"  # the same measure of the other code
    TREES=("$BASE" "$ROOT")
fi
PGURL=${PGENV[0]#DATABASE_URL=} REDIS=${PGENV[1]#REDIS_URL=}
PGHOST=${PGURL#*@}; PGPORT=${PGHOST#*:}; PGPORT=${PGPORT%%/*}
db() { "$@" -h 127.0.0.1 -p "$PGPORT" -U cronradar; }
# each tree runs in its own folder (Python puts the working directory first on
# sys.path) and on its own .venv when it has one (an editable install maps the
# packages to its own tree whatever PYTHONPATH says)
tpy() { if [ -x "$1/.venv/bin/python" ]; then echo "$1/.venv/bin/python"; else echo "$PY"; fi; }
for i in "${!TREES[@]}"; do  # each tree's schema, once: a template for its runs
    db createdb "tpl$i" || exit 1
    (cd "${TREES[$i]}" && env DATABASE_URL="${PGURL%/*}/tpl$i" REDIS_URL="$REDIS" \
        PYTHONPATH="${TREES[$i]}" "$(tpy "${TREES[$i]}")" manage.py migrate -v0) || exit 1
done
RESULTS=$S/results.jsonl
for round in $(seq "$ROUNDS"); do
    order=("${!TREES[@]}"); [ $((round % 2)) = 0 ] && order=($(printf '%s\n' "${order[@]}" | sort -r))
    for i in "${order[@]}"; do
        tree=${TREES[$i]}
        for shape in ${SHAPES:-production embedded}; do
            echo "== round $round, $shape, $tree; load $(cut -d' ' -f1-3 /proc/loadavg)"
            if [ "$shape" = production ]; then
                db createdb -T "tpl$i" "run$round$i" || exit 1
                "$PY" -c 'import redis, sys; redis.Redis.from_url(sys.argv[1]).flushdb()' "$REDIS"
                (cd "$tree" && env DATABASE_URL="${PGURL%/*}/run$round$i" REDIS_URL="$REDIS" \
                    BENCH_SCRATCH="$S" PYTHONPATH="$tree" "$(tpy "$tree")" bench/fairness.py \
                    production "$MONITORS") | tee -a "$S/out"
                db dropdb "run$round$i"
            else
                (cd "$tree" && env -u DATABASE_URL -u REDIS_URL PYTHONPATH="$tree" \
                    "$(tpy "$tree")" bench/fairness.py embedded "$MONITORS") | tee -a "$S/out"
            fi
        done
    done
done
grep '^{' "$S/out" >"$RESULTS"
"$PY" - "$RESULTS" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
keys = ("b_incident", "b_webhook", "a_incident_last", "a_webhook_first", "a_webhook_last")
for shape in sorted({r["shape"] for r in runs}):
    for tree in dict.fromkeys(r["tree"] for r in runs):
        mine = [r for r in runs if (r["shape"], r["tree"]) == (shape, tree)]
        if not mine:
            continue
        print(f"{shape}, {tree}, {len(mine)} runs (first / median / last, s after D):")
        for k in keys:
            xs = sorted(r[k] for r in mine if r[k] is not None)
            print(f"  {k:<16} " + (f"{xs[0]:.2f} / {statistics.median(xs):.2f} / {xs[-1]:.2f}"
                                   if xs else "none") + f"  ({len(xs)} of {len(mine)})")
PY
