#!/usr/bin/env bash
# The soak on the production shape: `bench/soak.sh [MINUTES] [RATE]` (default 30 and 100).
# Starts a scratch PostgreSQL and Redis (bench/_services.sh), the web server as
# docs/production.md runs it (granian, 2 workers of 2 threads, JSON access log,
# multi-process metrics; the monitors' organisation on a plan with rate limits), a
# Celery worker on both queues and beat, with retention as bench/soak.py's embedded
# shape has it (each monitor keeps 100 pings, runs go after 5 minutes, a prune
# step every 30 s), then bench/soak.py against them: every minute the rows
# stored, the latency and RSS/PSS of each process tree. Results: bench/README.md.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
. bench/_services.sh
trap services_cleanup EXIT
services || exit 1
mkdir -p "$S/metrics"
PGENV+=(CRONRADAR_LOG_FORMAT=json CRONRADAR_ACCESS_LOG=true PROMETHEUS_MULTIPROC_DIR="$S/metrics"
        CRONRADAR_RUN_RETENTION_DAYS="$("$PY" -c 'print(5 / 1440)')" CRONRADAR_PRUNE_INTERVAL=30)
env "${PGENV[@]}" "$PY" bench/ping_http_db.py setup "$S/codes.txt" 100 || exit 1
WP=$(free_port)
setsid env "${PGENV[@]}" "$VENV/bin/granian" --interface wsgi --host 127.0.0.1 --port "$WP" \
    --workers 2 --blocking-threads 2 --respawn-failed-workers cronradar.wsgi:application \
    >"$S/granian.log" 2>&1 &
PIDS+=($!) WEB=$!
setsid env "${PGENV[@]}" "$PY" -m celery -A cronradar worker --loglevel=WARNING \
    --without-gossip --without-mingle -Q celery,deliveries >"$S/worker.log" 2>&1 &
PIDS+=($!) WORKER=$!
setsid env "${PGENV[@]}" "$PY" -m celery -A cronradar beat --loglevel=WARNING \
    --schedule "$S/celerybeat-schedule" >"$S/beat.log" 2>&1 &
PIDS+=($!) BEAT=$!
echo "load average before: $(cat /proc/loadavg)"
env "${PGENV[@]}" SOAK_URL="http://127.0.0.1:$WP" SOAK_CODES="$S/codes.txt" \
    SOAK_TREES="web=$WEB worker=$WORKER beat=$BEAT postgres=$PG_DATA/postmaster.pid redis=$S/redis.pid" \
    "$PY" bench/soak.py "$@"
status=$?
grep -c '"levelname": "ERROR"\|Traceback' "$S/granian.log" "$S/worker.log" "$S/beat.log" \
    | sed 's/^/errors logged: /'
exit $status
