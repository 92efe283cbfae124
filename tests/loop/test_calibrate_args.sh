#!/usr/bin/env bash
# test_calibrate_args.sh — calibrate's argument checks that fire before any
# measuring (so this takes milliseconds): an empty --name, -o naming a
# directory, --base on the CPU path are errors naming the flag; --threads
# beyond the online cores is a warning on stderr, not an error.
set -u
build=${PARALLAX_BUILD_ROOT:?}
cal=$build/calibrate
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cal" --cpu --quick --name "" -o "$tmp/p.json" 2>"$tmp/e1"; rc=$?
[ "$rc" = 2 ] || fail "--name \"\": exit $rc, want 2"
grep -q -- '--name' "$tmp/e1" || fail "--name \"\" not named: $(cat "$tmp/e1")"

mkdir "$tmp/dir"
for o in "$tmp/dir" "$tmp/dir/"; do
  "$cal" --cpu --quick -o "$o" 2>"$tmp/e2"; rc=$?
  [ "$rc" = 1 ] || fail "-o $o (a directory): exit $rc, want 1"
  grep -q 'is a directory' "$tmp/e2" || fail "-o $o: $(cat "$tmp/e2")"
  # refused before measuring: no progress line was printed
  ! grep -q '^\[calibrate ' "$tmp/e2" || fail "-o $o: measured before refusing"
done

"$cal" --cpu --quick --base h100-sxm -o "$tmp/p.json" 2>"$tmp/e3"; rc=$?
[ "$rc" = 2 ] || fail "--base on the CPU path: exit $rc, want 2"
grep -q -- '--base h100-sxm: only with --gpu' "$tmp/e3" || fail "--base: $(cat "$tmp/e3")"

# Too many threads: warned, then the run goes on (here it stops at the
# directory check, so nothing is measured).
cores=$(getconf _NPROCESSORS_ONLN)
many=$((cores + 1))
"$cal" --cpu --threads "$many" -o "$tmp/dir" 2>"$tmp/e4"; rc=$?
[ "$rc" = 1 ] || fail "--threads $many: exit $rc, want the -o error's 1 (a warning is not an error)"
grep -q "warning: --threads $many but only $cores core" "$tmp/e4" || fail "no --threads warning: $(cat "$tmp/e4")"
grep -q 'is a directory' "$tmp/e4" || fail "--threads warning stopped the run: $(cat "$tmp/e4")"
"$cal" --cpu --threads "$cores" -o "$tmp/dir" 2>"$tmp/e5"
! grep -q 'warning: --threads' "$tmp/e5" || fail "--threads $cores (= cores) warned: $(cat "$tmp/e5")"
echo "test_calibrate_args: ok"
