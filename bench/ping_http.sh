#!/usr/bin/env bash
# Ping ingest over HTTP, side by side: `bench/ping_http.sh [SECS] [ROUNDS]`
#
# The load of ../shared/bench (wrk -t2 -c16, GET /ping/<uuid> round-robin over
# 100 monitors), against, interleaved, ROUNDS times (default 3, SECS default 10):
#
#   cronradar  the production shape: the documented web server (granian, 2 workers
#              of 2 request threads: docs/production.md) on a PostgreSQL this
#              script starts (default durability: fsync on, like the anchor's) and a
#              Redis
#   gunicorn   the same on gunicorn with 4 sync workers (as the anchor and the
#              limit; the documented web server until 2026-11-30)
#   embedded   `manage.py serve` (waitress + SQLite in a scratch data dir)
#   busy       the production shape, every request to ONE monitor
#   pairs      the production shape, ONE monitor, paired start/success pings with a
#              run id (consecutive requests, so a start and its success often race):
#              afterwards every run id must be one closed run (bench/ping_http_db.py check)
#   hc         Healthchecks' ping path (../shared/bench/hc_anchor.sh; run its
#              `setup` once first with HC_MIRROR set, see ../shared/bench/README.md)
#   limit      ../shared/bench/ping_limit.sh (bare psycopg handlers, on the anchor's
#              PostgreSQL)
#   limit_granian  its lookup_insert handler on granian (4 workers of 1 thread: the
#              handler shares one connection per process), right after `limit`
#              (not in the default TARGETS): the limit on CronRadar's web server
#
# Each server first gets 3 s of the same load, not counted (a warm-up).
# TARGETS="cronradar embedded busy hc limit" picks (default: all; hc and limit
# are skipped with a note when the anchor is not set up). After each CronRadar
# run it counts the rows stored against the 2xx responses wrk saw ("lost" must be
# 0; in-flight requests wrk cut off at the end may be stored without being counted).
# Results: bench/README.md.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
SECS=${1:-10} ROUNDS=${2:-3}
TARGETS=${TARGETS:-cronradar gunicorn embedded busy pairs hc limit}
SHARED=${SHARED_BENCH:-$(pwd)/../shared/bench}
ANCHOR_DIR=${ANCHOR_DIR:-${TMPDIR:-/tmp}/anchor}
. bench/_services.sh
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 1; }
cleanup() {
    services_cleanup
    case " $TARGETS " in *" hc "*) [ -f "$ANCHOR_DIR/hc_gunicorn.pid" ] && \
        HC_MIRROR=x "$SHARED/hc_anchor.sh" stop ;; esac
}
trap cleanup EXIT
wait_http() { for _ in $(seq 150); do curl -s -o /dev/null "$1" && return 0; sleep 0.2; done; echo "no answer from $1" >&2; return 1; }
lua() { # codes file -> lua script
    cat >"$1.lua" <<LUA
local codes = {}
for line in io.lines("$1") do codes[#codes+1] = line end
local i = 0
request = function() i = i + 1; return wrk.format("GET", "/ping/" .. codes[(i % #codes) + 1]) end
LUA
}
pairs_lua() { # codes file (first code) -> lua script of paired pings
    cat >"$1.pairs.lua" <<LUA
local counter = 1
function setup(thread) thread:set("tid", counter); counter = counter + 1 end
local code = io.open("$1"):read("*l")
local i = 0
request = function()
  i = i + 1
  local rid = string.format("%08x-0000-4000-8000-%012x", tid, math.floor((i - 1) / 2))
  if i % 2 == 1 then return wrk.format("GET", "/ping/" .. code .. "/start?rid=" .. rid) end
  return wrk.format("GET", "/ping/" .. code .. "?rid=" .. rid)
end
LUA
}
# wrk, then "req/s p99 acknowledged" on stdout (acknowledged = requests - non-2xx)
load() { # url codes
    wrk -t2 -c16 -d"${SECS}s" -s "$2.lua" --latency "$1" >"$S/wrk.out" 2>&1
    awk '/Requests\/sec/ {r=$2} / 99%/ {p=$2} /requests in/ {n=$1} /Non-2xx/ {bad=$5}
         END {printf "%s %s %d\n", r, p, n - bad}' "$S/wrk.out"
}
measure() { # label url codes db-env...
    local label=$1 url=$2 codes=$3; shift 3
    local before after r p99 acked stored
    before=$(env "$@" "$PY" bench/ping_http_db.py count | cut -d' ' -f1)
    read -r r p99 acked < <(load "$url" "$codes")
    after=$(env "$@" "$PY" bench/ping_http_db.py count | cut -d' ' -f1)
    stored=$((after - before))
    printf '%-10s %9s pings/s  p99 %-8s acknowledged %6d stored %6d lost %d\n' \
        "$label" "$r" "$p99" "$acked" "$stored" $(( acked > stored ? acked - stored : 0 ))
}

# --- services ------------------------------------------------------------------------
want() { case " $TARGETS " in *" $1 "*) return 0 ;; esac; return 1; }
if want cronradar || want gunicorn || want busy || want pairs; then
    services || exit 1
    # 100 monitors for the round-robin load, one for "busy", one for "pairs"
    env "${PGENV[@]}" "$PY" bench/ping_http_db.py setup "$S/all.txt" 102
    head -n100 "$S/all.txt" >"$S/codes.txt" && lua "$S/codes.txt"
    sed -n 101p "$S/all.txt" >"$S/one.txt" && lua "$S/one.txt"
    sed -n 102p "$S/all.txt" >"$S/pair.txt" && pairs_lua "$S/pair.txt" && cp "$S/pair.txt.pairs.lua" "$S/pair.txt.lua"
    WP=$(free_port) GP=$(free_port)
    setsid env "${PGENV[@]}" "$VENV/bin/granian" --interface wsgi --host 127.0.0.1 \
        --port "$WP" --workers 2 --blocking-threads 2 --respawn-failed-workers \
        cronradar.wsgi:application >"$S/granian.log" 2>&1 &
    PIDS+=($!)
    wait_http "http://127.0.0.1:$WP/ping/x" || { cat "$S/granian.log"; exit 1; }
    if want gunicorn; then
        setsid env "${PGENV[@]}" "$VENV/bin/gunicorn" cronradar.wsgi:application -w 4 \
            -b "127.0.0.1:$GP" --access-logfile /dev/null >"$S/gunicorn.log" 2>&1 &
        PIDS+=($!)
        wait_http "http://127.0.0.1:$GP/ping/x" || { cat "$S/gunicorn.log"; exit 1; }
    fi
fi
if want embedded; then
    # no pruning meanwhile (CRONRADAR_PRUNE_INTERVAL=0): it keeps each monitor's newest
    # 100 pings, and the rows counted below must all stay
    EP=$(free_port) EENV=(-u DATABASE_URL -u REDIS_URL CRONRADAR_DATA_DIR="$S/embedded"
                          CRONRADAR_PRUNE_INTERVAL=0)
    env "${EENV[@]}" "$PY" bench/ping_http_db.py setup "$S/ecodes.txt" 100 && lua "$S/ecodes.txt"
    setsid env "${EENV[@]}" "$PY" manage.py serve --port "$EP" >"$S/serve.log" 2>&1 &
    PIDS+=($!)
    wait_http "http://127.0.0.1:$EP/ping/x" || { cat "$S/serve.log"; exit 1; }
fi
HC=0
if { want hc || want limit || want limit_granian; } && [ -f "$ANCHOR_DIR/hc_codes.txt" ]; then
    HC=1
    lua "$ANCHOR_DIR/hc_codes.txt"
    want hc && HC_MIRROR=x "$SHARED/hc_anchor.sh" start
else
    { want hc || want limit; } && echo "note: hc and limit skipped: run ../shared/bench/hc_anchor.sh setup first"
fi

# warm-up, not counted: 3 s of the same load on each server (new processes, cold caches)
warm() { wrk -t2 -c16 -d3s -s "$2.lua" "$1" >/dev/null 2>&1; }
{ want cronradar || want busy || want pairs; } && warm "http://127.0.0.1:$WP" "$S/codes.txt"
want gunicorn && warm "http://127.0.0.1:$GP" "$S/codes.txt"
want embedded && warm "http://127.0.0.1:$EP" "$S/ecodes.txt"
[ $HC = 1 ] && want hc && SECS=3 HC_MIRROR=x "$SHARED/hc_anchor.sh" bench >/dev/null
echo "$(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), wrk -t2 -c16 -d${SECS}s"
for round in $(seq "$ROUNDS"); do
    echo "--- round $round"
    if [ $HC = 1 ] && want hc; then
        printf '%-10s ' hc; SECS=$SECS HC_MIRROR=x "$SHARED/hc_anchor.sh" bench | tr -s ' ' | paste -sd' '
    fi
    if [ $HC = 1 ] && want limit; then
        PY="$PY" "$SHARED/ping_limit.sh" "$ANCHOR_DIR/hc_codes.txt" "$SECS" | grep lookup_insert
    fi
    if [ $HC = 1 ] && want limit_granian; then  # the same handler on CronRadar's web server
        LP=$(free_port)
        setsid env LIMIT_DSN="postgresql://postgres@127.0.0.1:${PGPORT:-5433}/lim" \
            "$VENV/bin/granian" --interface wsgi --host 127.0.0.1 --port "$LP" --workers 4 \
            --blocking-threads 1 --working-dir "$SHARED" ping_limit_app:lookup_insert \
            >"$S/limit_granian.log" 2>&1 &
        lpid=$!
        wait_http "http://127.0.0.1:$LP/ping/x" >/dev/null && warm "http://127.0.0.1:$LP" "$ANCHOR_DIR/hc_codes.txt"
        printf '%-14s ' lookup_insert_granian
        wrk -t2 -c16 -d"${SECS}s" -s "$ANCHOR_DIR/hc_codes.txt.lua" --latency "http://127.0.0.1:$LP" \
            | awk '/Requests\/sec/ {r=$2} / 99%/ {p=$2} END {print r " req/s, p99 " p}'
        kill -- -"$lpid" 2>/dev/null; sleep 1
    fi
    want cronradar && measure cronradar "http://127.0.0.1:$WP" "$S/codes.txt" "${PGENV[@]}"
    want gunicorn && measure gunicorn "http://127.0.0.1:$GP" "$S/codes.txt" "${PGENV[@]}"
    want busy && measure busy "http://127.0.0.1:$WP" "$S/one.txt" "${PGENV[@]}"
    if want pairs; then  # the monitor's pings and runs of earlier rounds are removed first
        env "${PGENV[@]}" "$PY" bench/ping_http_db.py reset "$(cat "$S/pair.txt")"
        measure pairs "http://127.0.0.1:$WP" "$S/pair.txt" "${PGENV[@]}"
        env "${PGENV[@]}" "$PY" bench/ping_http_db.py check "$(cat "$S/pair.txt")"
    fi
    want embedded && measure embedded "http://127.0.0.1:$EP" "$S/ecodes.txt" "${EENV[@]}"
done
