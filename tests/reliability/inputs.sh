#!/usr/bin/env bash
# Hostile inputs to the planner: every file of corpus/ (models, Hugging Face
# configs, hardware profiles, plans; see make_corpus.py) is refused with
# its own clear error (the file and the field, the value and the allowed
# range: the .expect regex) and a non-zero exit that is not a crash; the
# command-line sizes are bounded the same way; outputs are atomic and a
# failed write is loud.
#   inputs.sh BUILD_DIR
set -u
build=$1
here=$(cd "$(dirname "$0")" && pwd)
plan="$build/plan"
readback="$build/tests/cli/plan_readback"
work=$(mktemp -d "${TMPDIR:-/tmp}/px-inputs.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
n=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

# refused WHAT REGEX CMD...: exit 1 or 2 (never 0, never a signal), stderr
# matching REGEX.
refused() {
  local what=$1 re=$2; shift 2
  n=$((n + 1))
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 126 ]; then
    fail "$what: exit $rc (want a refusal, not success or a crash)"; head -c 600 "$work/err"; return
  fi
  grep -Eq -e "$re" "$work/err" ||
    { fail "$what: stderr lacks /$re/: $(head -c 400 "$work/err")"; return; }
}

for f in "$here"/corpus/*/*.json; do
  kind=$(basename "$(dirname "$f")")
  name="$kind/$(basename "$f" .json)"
  re=$(cat "${f%.json}.expect")
  case $kind in
    model|hf) refused "$name" "$re" "$plan" --model "$f" --gpus 8 ;;
    profile) refused "$name" "$re" "$plan" --model tiny-llama --hw "$f" --gpus 8 ;;
    plan) refused "$name" "$re" "$readback" "$f" ;;
  esac
  # the message names the file it is about
  grep -q "$(basename "$f")" "$work/err" || fail "$name: the message does not name the file"
done
echo "corpus: $n malformed inputs checked"

# command-line sizes
refused "--tokens-per-step 1e30" 'tokens-per-step "1e30": out of range \(allowed: 1\.\.1125899906842624' \
  "$plan" --model llama3-8b --gpus 8 --tokens-per-step 1e30
refused "--global-batch x --seq overflow" 'more than 1125899906842624 \(2\^50\) tokens a step' \
  "$plan" --model llama3-8b --gpus 8 --global-batch 1099511627776 --seq 1099511627776
# fail fast: a count that cannot factor is refused with the nearest counts
# that do, in well under 5 s of CPU (it took 20 s when every count between
# was tried; ulimit -t ends a slower run with SIGXCPU, a failure here)
refused "--gpus 16777216 (fast)" '--gpus 16777216: no tp·cp·pp·dp factorisation .* the nearest GPU count that factors: 8388608' \
  bash -c 'ulimit -t 5; exec "$0" --model llama3-8b --gpus 16777216' "$plan"
n=$((n + 1))
(ulimit -t 5; exec "$plan" --model llama3-8b --sweep-gpus 1..16777216) >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 0 ] && grep -Eq "^ *16777216 .*no plan: --gpus 16777216" "$work/out" ||
  fail "--sweep-gpus 1..16777216: exit $rc within 5 s of CPU: $(tail -c 300 "$work/err")"

# messages name what is wrong: the option, the file given
refused "--shard-group that cannot factor" '--gpus 8 with --shard-group 16 \(dp·cp a multiple of it\): no tp·cp·pp·dp factorisation .* nearest GPU count that factors: 16' \
  "$plan" --model llama3-8b --gpus 8 --framework megatron --shard-group 16
cp "$here/../../frameworks/parallax.json" "$work/my-framework.json"
refused "framework by path cited by path" "capability hybrid_shard of $work/my-framework.json" \
  "$plan" --model llama3-8b --gpus 64 --framework "$work/my-framework.json" --shard-group 8
refused "maxtext --pp 61 --vpp 4" '--pp 61 --vpp 4: pp x vpp = 244 exceeds the 61 layers' \
  "$plan" --model deepseek-v3 --gpus 1024 --framework maxtext --pp 61 --vpp 4
"$plan" --model llama3-8b --gpus 64 --framework maxtext --pp 8 >/dev/null 2>"$work/err" ||
  fail "maxtext --pp 8 (GPipe): refused: $(cat "$work/err")"
refused "--ep 4 --etp 8 --tp 2" '--ep 4 --etp 8: .*capability etp' \
  "$plan" --model mixtral-8x7b --gpus 64 --framework deepspeed --ep 4 --etp 8 --tp 2

# the command-line overrides of a profile field take the field's bounds
for opt in --gpu-mtbf-hours --price-per-gpu-hour; do
  refused "$opt 1e20" "$opt 1e\+20: out of range \(allowed: [0-9.e+-]+\.\.[0-9.e+]+, the bounds of the profile field" \
    "$plan" --model tiny-llama --gpus 8 "$opt" 1e20
  refused "$opt 0x10" "$opt \"0x10\": expected a positive decimal number" \
    "$plan" --model tiny-llama --gpus 8 "$opt" 0x10
done
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
  "$plan" --model tiny-llama --gpus 1 -o "$work/p1.json" >/dev/null 2>&1
  refused "execute --lr 1e309" '--lr "1e309": is not a finite number' \
    mpirun -np 1 "$build/execute" --plan "$work/p1.json" --lr 1e309
  refused "execute --init-std 1e39" '--init-std "1e39": is not a finite number' \
    mpirun -np 1 "$build/execute" --plan "$work/p1.json" --init-std 1e39
  refused "execute --adam-eps 0" '--adam-eps "0": must be > 0' \
    mpirun -np 1 "$build/execute" --plan "$work/p1.json" --adam-eps 0
  refused "execute --trace /dev/full" '--trace /dev/full: is not a regular file' \
    mpirun -np 1 "$build/execute" --plan "$work/p1.json" --trace /dev/full
  refused "execute --report /dev/stdout" '--report /dev/stdout: is a symbolic link' \
    mpirun -np 1 "$build/execute" --plan "$work/p1.json" --report /dev/stdout
  refused "execute --timeout 0.001 on one rank" 'did not complete within 0\.001 s .*this job has one rank, so the operation itself takes longer than --timeout' \
    mpirun -np 1 "$build/execute" --plan "$work/p1.json" --timeout 0.001
  # compare --breakdown: a report's seconds are bounded (no 300-digit
  # numbers), its measured step is at least 1 ns (no infinite percentages)
  mpirun -np 1 "$build/execute" --plan "$work/p1.json" --steps 1 --report "$work/r.json" \
    >/dev/null 2>&1 || fail "execute --report r.json"
  python3 - "$work/r.json" "$work" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
def put(name, edit):
    d = json.loads(json.dumps(r)); edit(d); json.dump(d, open(f"{sys.argv[2]}/{name}.json", "w"))
put("r_huge", lambda d: d["predicted_class_s"].update(gemm=1e300))
put("r_tiny", lambda d: d["measured_class_s"].update(step=[1e-300]))
put("r_step", lambda d: d["measured"].update(step_time_s=1e-300))
PY
  refused "compare --breakdown huge class" 'r_huge.json: predicted_class_s.gemm: expected seconds in 0\.\.1e\+06' \
    "$build/compare" --breakdown "$work/r_huge.json"
  refused "compare --breakdown tiny step" 'r_tiny.json: measured_class_s.step: a mean of 1e-300 s; expected at least 1e-09 s' \
    "$build/compare" --breakdown "$work/r_tiny.json"
  refused "compare tiny measured step" 'r_step.json: measured.step_time_s: 1e-300 is out of range' \
    "$build/compare" "$work/r_step.json"
  "$build/compare" --breakdown "$work/r.json" >"$work/bd.out" 2>&1 || fail "compare --breakdown r.json"
  ! grep -Eqi '(^|[^a-z])(nan|inf)' "$work/bd.out" || fail "compare --breakdown printed nan/inf: $(cat "$work/bd.out")"
  refused "execute --timeout 0" '--timeout "0": is not a number of seconds' \
    mpirun -np 1 "$build/execute" --plan "$work/p1.json" --timeout 0
fi

# outputs: every writer replaces only a regular file or creates a new path,
# refused by option and path before any work; the device and the link stay.
"$plan" --model tiny-llama --gpus 2 -o "$work/p2.json" >/dev/null 2>&1 || fail "plan -o p2.json"
ln -s "$work/p2.json" "$work/link.json"
compare="$build/compare" export_="$build/export"
for target in /dev/full /dev/null "$work/link.json"; do
  why='is not a regular file'
  [ "$target" = "$work/link.json" ] && why='is a symbolic link'
  refused "plan -o $target" "plan: error: -o $target: $why" \
    "$plan" --model tiny-llama --gpus 2 -o "$target"
  refused "plan --html $target" "plan: error: --html $target: $why" \
    "$plan" --model tiny-llama --gpus 2 --html "$target"
  refused "export -o $target" "export: error: -o $target: $why" \
    "$export_" --plan "$work/p2.json" --to slurm -o "$target"
  refused "compare --html $target" "compare: error: --html $target: $why|--html $target: $why" \
    "$compare" --html "$target" "$work/p2.json"
done
[ -c /dev/full ] && [ -c /dev/null ] || fail "a device was replaced by a file"
[ -L "$work/link.json" ] || fail "the symbolic link was replaced"
refused "plan --html ''" "--html '': an output path is empty" \
  "$plan" --model tiny-llama --gpus 2 --html ''
refused "plan --write-top ''" "--write-top '': an output directory is empty" \
  "$plan" --model tiny-llama --gpus 2 --write-top ''
refused "plan -o missing dir" "-o $work/no/p.json: the directory $work/no does not exist" \
  "$plan" --model tiny-llama --gpus 2 -o "$work/no/p.json"
refused "plan --html DIR" "--html $work: is a directory" \
  "$plan" --model tiny-llama --gpus 2 --html "$work"
# ... and a write that fails half-way (a file-size limit: EFBIG) leaves the
# previous plan whole, with no temporary file beside it.
"$plan" --model tiny-llama --gpus 2 -o "$work/good.json" >/dev/null 2>&1 || fail "plan -o good.json"
cp "$work/good.json" "$work/before.json"
(trap '' XFSZ; ulimit -f 1; exec "$plan" --model tiny-llama --gpus 4 -o "$work/good.json") \
  >/dev/null 2>"$work/err"
rc=$?
if [ $rc -eq 0 ] || ! grep -q "write failed: File too large.*previous file.*unchanged" "$work/err"; then
  fail "plan -o with a failing write: exit $rc: $(cat "$work/err")"
elif [ "$(grep -o "File too large" "$work/err" | wc -l)" -ne 1 ]; then
  fail "plan -o with a failing write gives its reason more than once: $(cat "$work/err")"
elif ! cmp -s "$work/good.json" "$work/before.json"; then
  fail "plan -o with a failing write destroyed the previous plan"
elif ls "$work"/good.json.tmp.* >/dev/null 2>&1; then
  fail "plan -o with a failing write left a temporary file"
else
  echo "ok   a failed plan write (exit $rc) leaves the previous plan unchanged"
fi

# Standard output that cannot be written (a full device) is an error with the
# system's reason and exit 1, for every command and format, never a silent 0.
"$plan" --model tiny-llama --gpus 2 -o "$work/p3.json" >/dev/null 2>&1 || fail "plan -o p3.json"
full_stdout() { "$@" >/dev/full; }
for form in "" --json --csv; do
  # shellcheck disable=SC2086
  refused "plan $form > /dev/full" "plan: error: .*No space left on device" \
    full_stdout "$plan" --model 70b --gpus 1024 $form
done
refused "validate > /dev/full" "validate: error: standard output: write failed: No space left on device" \
  full_stdout "$build/validate"
refused "export > /dev/full" "export: error: standard output: write failed: No space left on device" \
  full_stdout "$build/export" --plan "$work/p3.json" --to megatron
if [ -f "$work/r.json" ]; then
  refused "compare > /dev/full" "compare: error: standard output: write failed: No space left on device" \
    full_stdout "$build/compare" "$work/r.json"
fi

[ $failed -eq 0 ] || { echo "$failed input check(s) failed"; exit 1; }
echo "all input checks passed"
