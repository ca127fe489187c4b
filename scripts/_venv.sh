# Sourced by scripts/serve, scripts/test and scripts/demo: make sure .venv exists
# and has what the lock file pins installed, then cronradar and the SDK
# (sdk/python: the `cronradar` command) beside it with --no-deps. The extras given
# ("" or "[test]") choose the lock: "[test]" requirements.lock (what CI tests: the
# test and observability extras), "" requirements-prod.lock (what the image runs:
# the observability extra). scripts/lock makes both. Sets VENV and PY. Reinstalls
# only when pyproject.toml, a lock file or the Python changed.
ensure_venv() {
    local extras=$1 lock=requirements-prod.lock
    [ "$extras" = "[test]" ] && lock=requirements.lock
    VENV="$ROOT/.venv"
    if [ ! -x "$VENV/bin/python" ]; then
        printf '==> Creating .venv with %s\n' "${PYTHON:-python3}"
        "${PYTHON:-python3}" -m venv "$VENV" || {
            echo "ERROR: '${PYTHON:-python3} -m venv' failed (Debian: apt-get install python3-venv)" >&2
            exit 1
        }
    fi
    local stamp="$VENV/.cronradar-installed"
    local want
    want="$(cat "$ROOT/pyproject.toml" "$ROOT/requirements.lock" "$ROOT/requirements-prod.lock" \
            "$ROOT/sdk/python/pyproject.toml" | sha256sum | cut -d' ' -f1) $("$VENV/bin/python" -V 2>&1)"
    # An install with [test] also satisfies a plain one.
    if [ -f "$stamp" ] && { [ "$(cat "$stamp")" = "$want $extras" ] \
            || { [ -z "$extras" ] && [ "$(cat "$stamp")" = "$want [test]" ]; }; }; then
        :
    else
        printf '==> Installing %s, then cronradar%s, into .venv\n' "$lock" "$extras"
        # --require-hashes: every package at the exact version and with a hash the lock
        # has; --no-deps: the project and the SDK add nothing the lock does not pin
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check --require-hashes \
                -r "$ROOT/$lock" || {
            echo "ERROR: pip install --require-hashes -r $lock failed" >&2
            exit 1
        }
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e "$ROOT" \
                -e "$ROOT/sdk/python" || {
            echo "ERROR: pip install --no-deps -e . -e sdk/python failed" >&2
            exit 1
        }
        echo "$want $extras" >"$stamp"
    fi
    PY="$VENV/bin/python"
}
