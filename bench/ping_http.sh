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
#   gunicorn   the same on gunicorn with 4 sync workers (as hc and limit)
#   embedded   `manage.py serve` (waitress + SQLite in a scratch data dir)
#   busy       the production shape, every request to ONE monitor
#   pairs      the production shape, ONE monitor, paired start/success pings with a
#              run id (consecutive requests, so a start and its success often race):
#              afterwards every run id must be one closed run (bench/ping_http_db.py check)
#   hc         Healthchecks' ping path on gunicorn -w 4 (../shared/bench/hc_anchor.sh;
#              run its `setup` once first with HC_MIRROR set, see ../shared/bench/README.md)
#   hc_granian Healthchecks' WSGI app on granian with CronRadar's production workers and
#              threads (--workers 2 --blocking-threads 2): the anchor like for like. The
#              first run installs granian (the version of this tree's .venv) into the
#              anchor's venv
#   limit      the lookup_insert handler of ../shared/bench/ping_limit_app.py (one
#              transaction: update the check, insert the ping) on gunicorn -w 4, on the
#              anchor's PostgreSQL, in a database `lim` made as ping_limit.sh makes it
#   limit_granian  the same handler on granian, 4 workers of 1 thread (the handler
#              keeps one connection a process): the limit on CronRadar's web server
#
# TARGETS="cronradar busy hc_granian limit_granian" picks (default: all; the anchor's
# four are skipped with a note when it is not set up). Each server is started once
# and gets 3 s of the same load first, not counted (a warm-up).
#
# Prints, per target and round: pings/s, p99; for CronRadar's targets the rows stored
# against the 2xx responses wrk saw ("lost" must be 0; in-flight requests wrk cut off
# at the end may be stored without being counted); then, from /proc
# (bench/_proctree.py), the CPU per 2xx response of each process tree (web: the web
# server and its workers; postgres: the postmaster and its backends; redis) and its
# RSS and PSS idle (before the run) -> peak (sampled during it), per process in the
# first round. After each round the ratios, each naming its anchor:
#   target 1 (issue 24): cronradar / limit_granian >= 0.8x, busy / limit_granian
#   >= 0.6x, p99 <= 50 ms, 0 lost; like for like: cronradar / hc_granian,
#   gunicorn / hc, gunicorn / limit; and min-max over the rounds at the end.
# Results: bench/README.md.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
SECS=${1:-10} ROUNDS=${2:-3}
TARGETS=${TARGETS:-cronradar gunicorn embedded busy pairs hc hc_granian limit limit_granian}
SHARED=${SHARED_BENCH:-$(pwd)/../shared/bench}
ANCHOR_DIR=${ANCHOR_DIR:-${TMPDIR:-/tmp}/anchor}
APORT=5433  # the anchor's PostgreSQL (hc_anchor.sh)
. bench/_services.sh
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 1; }
HC_STARTED=0
cleanup() {
    services_cleanup
    [ $HC_STARTED = 1 ] && HC_MIRROR=x "$SHARED/hc_anchor.sh" stop
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
want() { case " $TARGETS " in *" $1 "*) return 0 ;; esac; return 1; }
declare -A RATE=() P99=() LOST=() SEEN=() TREES=()
ROUND=0
# load LABEL URL CODES: wrk under bench/_proctree.py (the trees of TREES[LABEL]);
# sets r (req/s), p99 (ms), acked (requests - non-2xx); prints the target's line
load() {
    local label=$1 url=$2 codes=$3
    # shellcheck disable=SC2086  # TREES holds NAME=PID words
    "$PY" bench/_proctree.py run --json "$S/tree.json" ${TREES[$label]} -- \
        wrk -t2 -c16 -d"${SECS}s" -s "$codes.lua" --latency "$url" >"$S/wrk.out" 2>&1
    read -r r p99 acked < <(awk '
        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0;
                         if (v ~ /s$/) return v * 1000; return v }
        /Requests\/sec/ {r=$2} / 99%/ {p=ms($2)} /requests in/ {n=$1} /Non-2xx/ {bad=$5}
        END {printf "%s %.1f %d\n", r, p, n - bad}' "$S/wrk.out")
    RATE[$label]=$r P99[$label]=$p99
}
show_trees() { # per: CPU divided by it
    "$PY" bench/_proctree.py show "$S/tree.json" --per "$1" $([ "$ROUND" = 1 ] && echo --procs)
}
measure() { # CronRadar: label url codes db-env...  (counts the rows stored)
    local label=$1 url=$2 codes=$3; shift 3
    local before after stored lost
    before=$(env "$@" "$PY" bench/ping_http_db.py count | cut -d' ' -f1)
    load "$label" "$url" "$codes"
    after=$(env "$@" "$PY" bench/ping_http_db.py count | cut -d' ' -f1)
    stored=$((after - before)) lost=$(( acked > stored ? acked - stored : 0 ))
    LOST[$label]=$lost
    printf '%-13s %9s pings/s  p99 %6.1f ms  acknowledged %6d stored %6d lost %d\n' \
        "$label" "$r" "$p99" "$acked" "$stored" "$lost"
    show_trees "$acked"
}
measure_anchor() { # label url codes
    load "$@"
    printf '%-13s %9s pings/s  p99 %6.1f ms  acknowledged %6d\n' "$1" "$r" "$p99" "$acked"
    show_trees "$acked"
}
# ratio A B [NOTE [TARGET]]: "A / B = x.xx×", kept for the summary
ratio() {
    [ -n "${RATE[$1]:-}" ] && [ -n "${RATE[$2]:-}" ] || return 0
    local x key="$1 / $2"
    x=$(awk -v a="${RATE[$1]}" -v b="${RATE[$2]}" 'BEGIN {printf "%.2f", a / b}')
    SEEN[$key]="${SEEN[$key]:-} $x"
    local met=""
    [ -n "${4:-}" ] && met=$(awk -v x="$x" -v t="$4" 'BEGIN {print (x >= t) ? "met" : "not met"}')
    printf '  %-30s = %5s×%s\n' "$key" "$x" "${3:+  ($3${met:+: $met})}"
}

# --- services ------------------------------------------------------------------------
if want cronradar || want gunicorn || want busy || want pairs; then
    services || exit 1
    # 100 monitors for the round-robin load, one for "busy", one for "pairs"
    env "${PGENV[@]}" "$PY" bench/ping_http_db.py setup "$S/all.txt" 102
    head -n100 "$S/all.txt" >"$S/codes.txt" && lua "$S/codes.txt"
    sed -n 101p "$S/all.txt" >"$S/one.txt" && lua "$S/one.txt"
    sed -n 102p "$S/all.txt" >"$S/pair.txt" && pairs_lua "$S/pair.txt" && cp "$S/pair.txt.pairs.lua" "$S/pair.txt.lua"
    DBTREES="postgres=$PG_DATA/postmaster.pid redis=$S/redis.pid"
    # the documented production configuration (issue 24): JSON logs with the access
    # line of every request, request ids, multi-process metrics, and the bench
    # organisation on a plan whose rate limits are counted (set high enough that
    # nothing is refused: each ping still takes the Redis counter step)
    mkdir -p "$S/metrics"
    PGENV+=(CRONRADAR_LOG_FORMAT=json CRONRADAR_ACCESS_LOG=true PROMETHEUS_MULTIPROC_DIR="$S/metrics")
    WP=$(free_port) GP=$(free_port)
    setsid env "${PGENV[@]}" "$VENV/bin/granian" --interface wsgi --host 127.0.0.1 \
        --port "$WP" --workers 2 --blocking-threads 2 --respawn-failed-workers \
        cronradar.wsgi:application >"$S/granian.log" 2>&1 &
    PIDS+=($!)
    TREES[cronradar]="web=$! $DBTREES" TREES[busy]="web=$! $DBTREES" TREES[pairs]="web=$! $DBTREES"
    wait_http "http://127.0.0.1:$WP/ping/x" || { cat "$S/granian.log"; exit 1; }
    if want gunicorn; then
        setsid env "${PGENV[@]}" "$VENV/bin/gunicorn" cronradar.wsgi:application -w 4 \
            -b "127.0.0.1:$GP" --access-logfile /dev/null >"$S/gunicorn.log" 2>&1 &
        PIDS+=($!)
        TREES[gunicorn]="web=$! $DBTREES"
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
    TREES[embedded]="web=$!"
    wait_http "http://127.0.0.1:$EP/ping/x" || { cat "$S/serve.log"; exit 1; }
fi
HC=0
if { want hc || want hc_granian || want limit || want limit_granian; }; then
    if [ -f "$ANCHOR_DIR/hc_codes.txt" ]; then
        HC=1
        lua "$ANCHOR_DIR/hc_codes.txt"
        # its PostgreSQL (port 5433, left running) and Healthchecks on gunicorn (stopped on exit)
        HC_MIRROR=x "$SHARED/hc_anchor.sh" start && HC_STARTED=1
        ATREE="postgres=$ANCHOR_DIR/pg/data/postmaster.pid"
        TREES[hc]="web=$(cat "$ANCHOR_DIR/hc_gunicorn.pid") $ATREE"
    else
        echo "note: hc, hc_granian, limit and limit_granian skipped: run ../shared/bench/hc_anchor.sh setup first"
    fi
fi
if [ $HC = 1 ] && want hc_granian; then
    if [ ! -x "$ANCHOR_DIR/hcvenv/bin/granian" ]; then  # once: CronRadar's granian version
        "$ANCHOR_DIR/hcvenv/bin/pip" install -q "granian==$("$VENV/bin/granian" --version | awk '{print $2}')" \
            2>&1 | grep -v '^WARNING: Location' >&2
    fi
    HGP=$(free_port)
    # the environment hc_anchor.sh gives Healthchecks
    (cd "$ANCHOR_DIR/hc" && exec setsid env DB=postgres DB_HOST=127.0.0.1 DB_PORT=$APORT DB_NAME=hc \
        DEBUG=False SECRET_KEY=x ALLOWED_HOSTS='*' DB_CONN_MAX_AGE=60 \
        "$ANCHOR_DIR/hcvenv/bin/granian" --interface wsgi --host 127.0.0.1 --port "$HGP" \
        --workers 2 --blocking-threads 2 --respawn-failed-workers hc.wsgi:application \
        >"$S/hc_granian.log" 2>&1) &
    PIDS+=($!)
    TREES[hc_granian]="web=$! $ATREE"
    wait_http "http://127.0.0.1:$HGP/ping/x" || { cat "$S/hc_granian.log"; exit 1; }
fi
if [ $HC = 1 ] && want hc; then :; elif [ $HC_STARTED = 1 ]; then  # its PostgreSQL only
    HC_MIRROR=x "$SHARED/hc_anchor.sh" stop; HC_STARTED=0
fi
if [ $HC = 1 ] && { want limit || want limit_granian; }; then
    # the database of ../shared/bench/ping_limit.sh, made as it makes it
    psql -h 127.0.0.1 -p $APORT -U postgres -c "drop database if exists lim" -c "create database lim" >/dev/null
    psql -h 127.0.0.1 -p $APORT -U postgres lim -q -c "create table ping(id bigserial primary key, code text, body text, at timestamptz default now());
      create table chk(id serial primary key, code text unique, n_pings int default 0, last_ping timestamptz);
      insert into chk(code) select unnest(string_to_array('$(paste -sd, "$ANCHOR_DIR/hc_codes.txt")', ','));"
    LENV=(LIMIT_DSN="postgresql://postgres@127.0.0.1:$APORT/lim")
    if want limit; then
        LGP=$(free_port)
        (cd "$SHARED" && exec setsid env "${LENV[@]}" "$VENV/bin/gunicorn" ping_limit_app:lookup_insert \
            -w 4 -b "127.0.0.1:$LGP" --access-logfile /dev/null >"$S/limit.log" 2>&1) &
        PIDS+=($!)
        TREES[limit]="web=$! $ATREE"
        wait_http "http://127.0.0.1:$LGP/ping/x" || { cat "$S/limit.log"; exit 1; }
    fi
    if want limit_granian; then
        LRP=$(free_port)
        setsid env "${LENV[@]}" "$VENV/bin/granian" --interface wsgi --host 127.0.0.1 --port "$LRP" \
            --workers 4 --blocking-threads 1 --working-dir "$SHARED" ping_limit_app:lookup_insert \
            >"$S/limit_granian.log" 2>&1 &
        PIDS+=($!)
        TREES[limit_granian]="web=$! $ATREE"
        wait_http "http://127.0.0.1:$LRP/ping/x" || { cat "$S/limit_granian.log"; exit 1; }
    fi
fi

# warm-up, not counted: 3 s of the same load on each server (new processes, cold caches)
warm() { wrk -t2 -c16 -d3s -s "$2.lua" "$1" >/dev/null 2>&1; }
{ want cronradar || want busy || want pairs; } && [ -n "${WP:-}" ] && warm "http://127.0.0.1:$WP" "$S/codes.txt"
want gunicorn && warm "http://127.0.0.1:$GP" "$S/codes.txt"
want embedded && warm "http://127.0.0.1:$EP" "$S/ecodes.txt"
if [ $HC = 1 ]; then
    want hc && warm "http://127.0.0.1:8801" "$ANCHOR_DIR/hc_codes.txt"
    want hc_granian && warm "http://127.0.0.1:$HGP" "$ANCHOR_DIR/hc_codes.txt"
    want limit && warm "http://127.0.0.1:$LGP" "$ANCHOR_DIR/hc_codes.txt"
    want limit_granian && warm "http://127.0.0.1:$LRP" "$ANCHOR_DIR/hc_codes.txt"
fi
echo "$(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), wrk -t2 -c16 -d${SECS}s"
echo "(CPU per 2xx response of each process tree; RSS and PSS: idle -> peak during the run)"
for round in $(seq "$ROUNDS"); do
    ROUND=$round
    RATE=()
    P99=()
    LOST=()
    echo "--- round $round (load $(cut -d' ' -f1-3 /proc/loadavg))"
    if [ $HC = 1 ]; then
        want hc && measure_anchor hc "http://127.0.0.1:8801" "$ANCHOR_DIR/hc_codes.txt"
        want hc_granian && measure_anchor hc_granian "http://127.0.0.1:$HGP" "$ANCHOR_DIR/hc_codes.txt"
        want limit && measure_anchor limit "http://127.0.0.1:$LGP" "$ANCHOR_DIR/hc_codes.txt"
        want limit_granian && measure_anchor limit_granian "http://127.0.0.1:$LRP" "$ANCHOR_DIR/hc_codes.txt"
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
    echo " ratios, round $round:"
    ratio cronradar limit_granian "target 1: >= 0.8x" 0.8
    ratio busy limit_granian "target 1: >= 0.6x" 0.6
    ratio pairs limit_granian
    if [ -n "${RATE[cronradar]:-}" ]; then
        printf '  %-30s   %s ms  (target 1: <= 50 ms: %s), lost %s (target 1: 0: %s)\n' "cronradar p99" \
            "${P99[cronradar]}" "$(awk -v p="${P99[cronradar]}" 'BEGIN {print (p <= 50) ? "met" : "not met"}')" \
            "${LOST[cronradar]}" "$([ "${LOST[cronradar]}" = 0 ] && echo met || echo "not met")"
    fi
    ratio cronradar hc_granian "like for like: granian 2x2"
    ratio gunicorn hc "like for like: gunicorn -w 4"
    ratio gunicorn limit "like for like: gunicorn -w 4"
    ratio cronradar hc "granian against gunicorn"
    ratio cronradar limit "granian against gunicorn"
    ratio hc_granian hc "the anchor's web servers"
    ratio limit_granian limit "the limit's web servers"
done
if [ ${#SEEN[@]} -gt 0 ]; then
    echo "--- ratios over $ROUNDS rounds (min-max)"
    for key in "${!SEEN[@]}"; do
        echo "$key" "${SEEN[$key]}"
    done | sort | awk '{k=$1" "$2" "$3; lo=$4; hi=$4; for (i=5; i<=NF; i++) {if ($i<lo) lo=$i; if ($i>hi) hi=$i}
                      printf "  %-30s = %s-%s×\n", k, lo, hi}'
fi
