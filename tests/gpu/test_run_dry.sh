#!/usr/bin/env bash
# tests/gpu/test_run_dry.sh BUILD_DIR — proves tests/gpu/run.sh is ready for
# a machine with a GPU, on a machine without one:
#   1. `run.sh --dry-run` on this build dir (reused as is: configuring a
#      second one would take minutes) exits 0 and its table has every row
#      the GPU run will have, none FAIL, the GPU ones "skipped (no GPU)";
#   2. the same on a copy of the build dir where one binary is missing and
#      `execute --help` lacks --backend exits 1 and names both: the check
#      can fail;
#   3. tests/gpu/deps.sh env points every search path into a bundle.
# Exit 77 when the build has no CUDA backend (run.sh says so itself).
set -u
BUILD=${1:?usage: test_run_dry.sh BUILD_DIR}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
RUN="$SRC/tests/gpu/run.sh"
fails=0
check() { # description command...
  if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}

out=$(PX_GPU_BUILD="$BUILD" PX_GPU_REUSE_BUILD=1 "$RUN" --dry-run 2>&1)
rc=$?
echo "$out"
[ "$rc" = 77 ] && exit 77
check "dry run exits 0 (got $rc)" test "$rc" = 0
summary="$BUILD/gpu-run/summary.txt"
check "summary.txt written" test -s "$summary"
for r in "preflight" "build" "binaries and options" "kernels vs CPU twins" "step tiny-llama " \
         "step tiny-gpt " "step tiny-qwen3 " "step tiny-llama-tp2" "step tiny-llama-pp2" "step tiny-gpt-dp2" \
         "step tiny-llama fp32" "calibrate (GPU)" "llama-1b bf16, calibrated" \
         "attention fwd+bwd (bench)" "llama-1b fp32"; do
  check "row '$r' in the table" grep -q "^$r" "$summary"
done
no_fail_row() { ! grep -q ' FAIL ' "$summary"; }
check "no FAIL row" no_fail_row
check "GPU rows say skipped (no GPU)" test "$(grep -c 'skipped (no GPU)' "$summary")" -ge 10
check "the CPU halves ran (losses printed)" grep -q "cpu losses [0-9]" "$summary"
check "the table is the last thing printed" test "$(tail -1 <<<"$out")" = "$(tail -1 "$summary")"

# A broken build dir: attention_bench gone, execute without --backend.
fake=$(mktemp -d "${TMPDIR:-/tmp}/px-run-dry.XXXXXX")
trap 'rm -rf "$fake"' EXIT
touch "$fake/build.ninja"
mkdir -p "$fake/tests/gpu" "$fake/bench"
for b in plan calibrate compare tests/gpu/test_gpu_kernels tests/gpu/test_nccl tests/gpu/test_backend_nccl; do
  ln -s "$BUILD/$b" "$fake/$b"
done
cat >"$fake/execute" <<EOF
#!/bin/sh
if [ "\$1" = --help ]; then "$BUILD/execute" --help 2>&1 | grep -v -- --backend; exit 0; fi
exec "$BUILD/execute" "\$@"
EOF
chmod +x "$fake/execute"
bad=$(PX_GPU_BUILD="$fake" PX_GPU_REUSE_BUILD=1 "$RUN" --dry-run 2>&1)
brc=$?
echo "--- broken build dir:"
grep -E "binaries|FAIL" <<<"$bad"
check "broken build dir: exit 1 (got $brc)" test "$brc" = 1
check "broken build dir: the missing binary is named" grep -q "bench/attention_bench(missing)" <<<"$bad"
check "broken build dir: the missing option is named" grep -q "execute:--backend" <<<"$bad"

# The dependency bundle's environment (tests/gpu/deps.sh env): every search
# path into the bundle, Open MPI relocated there.
denv=$("$SRC/tests/gpu/deps.sh" env "$fake")
for v in PATH LD_LIBRARY_PATH LIBRARY_PATH CPATH PKG_CONFIG_PATH OPAL_PREFIX; do
  check "deps.sh env sets $v into the bundle" grep -q "^export $v=\"$fake/usr" <<<"$denv"
done

[ "$fails" = 0 ] && echo "# run.sh --dry-run: ready" && exit 0
echo "# $fails check(s) failed"
exit 1
