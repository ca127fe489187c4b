# shellcheck shell=bash
# once_deselected ARGS...: sets the array ONCE_ARGS to pytest's ARGS for scripts/test's
# second pass (PostgreSQL+Redis): tests marked `once` ran in the first pass, so each
# -m expression (`-m X` or `-mX`) becomes `-m "(X) and not once"`, and without one
# `-m "not once"` is added. (tests/scripts/test_once.py)
once_deselected() {
    local arg has_m=0 next_m=0
    ONCE_ARGS=()
    for arg in "$@"; do
        if [ "$next_m" = 1 ]; then ONCE_ARGS+=("($arg) and not once"); next_m=0; continue; fi
        case $arg in
            -m) ONCE_ARGS+=("-m"); next_m=1; has_m=1 ;;
            -m*) ONCE_ARGS+=("-m" "(${arg#-m}) and not once"); has_m=1 ;;
            *) ONCE_ARGS+=("$arg") ;;
        esac
    done
    [ "$has_m" = 1 ] || ONCE_ARGS+=("-m" "not once")
}
