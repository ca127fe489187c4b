# Sourced by scripts/serve, scripts/test and scripts/demo: make sure .venv exists
# and has cronradar installed with the extras given ("" or "[test]"), and the SDK
# (sdk/python: the `cronradar` command) beside it. Sets VENV and PY. Reinstalls
# only when a pyproject.toml or the Python changed.
ensure_venv() {
    local extras=$1
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
    want="$(cat "$ROOT/pyproject.toml" "$ROOT/sdk/python/pyproject.toml" | sha256sum | cut -d' ' -f1) $("$VENV/bin/python" -V 2>&1)"
    # An install with [test] also satisfies a plain one.
    if [ -f "$stamp" ] && { [ "$(cat "$stamp")" = "$want $extras" ] \
            || { [ -z "$extras" ] && [ "$(cat "$stamp")" = "$want [test]" ]; }; }; then
        :
    else
        printf '==> Installing cronradar%s into .venv\n' "$extras"
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT$extras" \
                -e "$ROOT/sdk/python[yaml]" || {
            echo "ERROR: pip install -e '.$extras' -e 'sdk/python[yaml]' failed" >&2
            exit 1
        }
        echo "$want $extras" >"$stamp"
    fi
    PY="$VENV/bin/python"
}
