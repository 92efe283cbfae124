# Sourced by the plan tests: fail, and expect_error "what" "regex on stderr"
# ARGS... which runs "$PLAN" ARGS... and wants a non-zero exit whose stderr
# matches the regex.  The caller sets PLAN and tmp (a scratch directory).
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_error() {
  local what="$1" re="$2"; shift 2
  "$PLAN" "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  [ $rc -ne 0 ] || fail "$what: exit 0"
  grep -qE -e "$re" "$tmp/err" || fail "$what: stderr lacks /$re/: $(cat "$tmp/err")"
  echo "ok: $what (exit $rc): $(head -c 200 "$tmp/err" | head -1)"
}
