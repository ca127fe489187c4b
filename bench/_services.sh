# Sourced by the bench scripts: a scratch PostgreSQL (default durability: fsync on,
# as a production server) and a scratch Redis on free loopback ports, removed on
# exit; the venv (scripts/_venv.sh). After `services`, PGENV holds DATABASE_URL and
# REDIS_URL for `env "${PGENV[@]}" ...`; $S is the scratch directory. PG_OPTIONS:
# more server settings (`-c name=value ...`). PIN: an array put before the commands
# that start PostgreSQL and Redis (bench/burst.sh: `taskset -c 0`).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$ROOT/scripts/_venv.sh"
ensure_venv ""
if [ "$(id -u)" = 0 ]; then TMPBASE=/tmp; else TMPBASE=${TMPDIR:-/tmp}; fi
S=$(mktemp -d "$TMPBASE/cronradar-bench.XXXXXX"); chmod 755 "$S"
PG_USER="" PG_DATA="" PIDS=() PGENV=()
[ -n "${PIN+set}" ] || PIN=()
run_as_pg() { if [ -n "$PG_USER" ]; then runuser -u "$PG_USER" -- "$@"; else "$@"; fi; }
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
services_cleanup() {
    for p in "${PIDS[@]}"; do kill -- -"$p" 2>/dev/null || kill "$p" 2>/dev/null; done
    [ -n "$PG_DATA" ] && run_as_pg pg_ctl -D "$PG_DATA" -m fast -w stop >/dev/null 2>&1
    [ -f "$S/redis.pid" ] && kill "$(cat "$S/redis.pid")" 2>/dev/null
    rm -rf "$S"
}
services() { # PostgreSQL + Redis; sets PGENV
    if [ "$(id -u)" = 0 ]; then
        PG_USER=cronradar-ci
        id "$PG_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_USER"
        chown "$PG_USER" "$S"
    fi
    local pgp rp
    PG_DATA=$S/pg pgp=$(free_port) rp=$(free_port)
    run_as_pg initdb -D "$PG_DATA" -U cronradar -A trust -E UTF8 --no-locale >/dev/null || return 1
    run_as_pg "${PIN[@]}" pg_ctl -D "$PG_DATA" -l "$S/pg.log" -w -o "-p $pgp -c listen_addresses=127.0.0.1 -c unix_socket_directories=$S -c max_connections=200 ${PG_OPTIONS:-}" start >/dev/null || return 1
    createdb -h 127.0.0.1 -p "$pgp" -U cronradar cronradar || return 1
    "${PIN[@]}" redis-server --port "$rp" --bind 127.0.0.1 --save '' --daemonize yes --pidfile "$S/redis.pid" --logfile "$S/redis.log" || return 1
    PGENV=(DATABASE_URL="postgres://cronradar@127.0.0.1:$pgp/cronradar" REDIS_URL="redis://127.0.0.1:$rp/0")
}
on_scratch_pg() { # on_scratch_pg SCRIPT [ARGS]: migrate a scratch PostgreSQL, run SCRIPT with BENCH_DATABASE_URL
    trap services_cleanup EXIT
    services || exit 1
    env "${PGENV[@]}" "$PY" "$ROOT/manage.py" migrate -v0 || exit 1
    BENCH_SCRATCH=$S BENCH_DATABASE_URL=${PGENV[0]#DATABASE_URL=} "$PY" "$@"
}
