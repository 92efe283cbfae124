#!/bin/sh
# The docs test's rules on small documents (cases/): the passing one gives
# 3 ok and 2 skipped; each failing one fails for its reason (a shown line
# not printed, lines out of order, a failing command, a command relying on
# Open MPI's run-as-root variables from the caller's environment).
set -u
PY=$1; RUNNER=$2; CASES=$(dirname "$RUNNER")/cases
S="${PARALLAX_SOURCE_ROOT:?}"; B="${PARALLAX_BUILD_ROOT:?}"
fail=0
out=$("$PY" "$RUNNER" "$S" "$B" "$CASES/pass.md" 2>&1)
echo "$out"
echo "$out" | grep -q '^# docs: 3 ok, 0 failed, 2 skipped' || { echo "FAIL: pass.md"; fail=1; }
for c in fail_output fail_order fail_status fail_root; do
  out=$(OMPI_ALLOW_RUN_AS_ROOT=1 "$PY" "$RUNNER" "$S" "$B" "$CASES/$c.md" 2>&1); rc=$?
  echo "$out"
  if [ $rc -ne 1 ] || ! echo "$out" | grep -q '^# docs: 0 ok, 1 failed'; then
    echo "FAIL: $c.md was not reported failed (exit $rc)"; fail=1
  fi
done
echo "$out" | grep -q '^FAIL' || fail=1
exit $fail
