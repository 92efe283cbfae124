#!/bin/sh
# calibrate --from-runs / --from-log: the fitted profiles are written and
# plan reads them; bad runs, bad logs and missing options are refused with a
# message naming the file and the field, and a non-zero exit.
set -u
B="${PARALLAX_BUILD_ROOT:?}"
S="${PARALLAX_SOURCE_ROOT:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
python3 - "$S/tests/validate/data/published-runs.json" "$tmp" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
ids = ["dgxc-v25.04-llama3-8b-bf16-h100-8gpu", "dgxc-v25.04-llama3-70b-bf16-h100-64gpu",
       "dgxc-v25.04-llama31-405b-bf16-h100-32gpu-8L"]
runs = [r for r in rows if r["id"] in ids]
json.dump(runs, open(sys.argv[2] + "/runs.json", "w"))
del runs[1]["parallel"]["tp"]
json.dump(runs, open(sys.argv[2] + "/bad.json", "w"))
PY
out=$("$B/calibrate" --from-runs "$tmp/runs.json" --hw h100-sxm --framework megatron -o "$tmp/fit") \
  || { echo "calibrate --from-runs exited $?"; fail=1; }
printf '%s\n' "$out" | grep -q '^gemm_eff_scale ' || { echo "no gemm_eff_scale line: $out"; fail=1; }
printf '%s\n' "$out" | grep -q '^leave-one-out: mean |error|' || { echo "no leave-one-out line"; fail=1; }
for f in fit.hw.json fit.framework.json; do
  [ -s "$tmp/$f" ] || { echo "$f not written"; fail=1; }
done
grep -q '"fitted"' "$tmp/fit.hw.json" || { echo "fit.hw.json: no fitted provenance"; fail=1; }
"$B/plan" --model 70b --gpus 64 --hw "$tmp/fit.hw.json" --framework "$tmp/fit.framework.json" \
  --json >/dev/null || { echo "plan does not take the fitted profiles"; fail=1; }
"$B/calibrate" --from-runs "$tmp/runs.json" --hw h100-sxm --framework megatron -o "$tmp/j" --json |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["sse_fitted"] <= d["sse_base"], d' \
  || { echo "--json: no fit table"; fail=1; }
# a run without its TP size
err=$("$B/calibrate" --from-runs "$tmp/bad.json" --hw h100-sxm --framework megatron -o "$tmp/b" 2>&1)
rc=$?
[ "$rc" -ne 0 ] || { echo "a run without tp: exit 0"; fail=1; }
printf '%s\n' "$err" | grep -q 'bad.json' && printf '%s\n' "$err" | grep -q 'tp' \
  || { echo "a run without tp: file or field not named: $err"; fail=1; }
[ ! -e "$tmp/b.hw.json" ] || { echo "a failed fit wrote a profile"; fail=1; }
# options
"$B/calibrate" --from-runs "$tmp/runs.json" -o "$tmp/c" >/dev/null 2>&1
[ $? -eq 2 ] || { echo "--from-runs without --hw/--framework: want exit 2"; fail=1; }
"$B/calibrate" --from-runs "$tmp/runs.json" --hw h100-sxm --framework megatron -o "$tmp/c" --quick \
  >/dev/null 2>&1
[ $? -eq 2 ] || { echo "--from-runs with --quick: want exit 2"; fail=1; }
# a Megatron-LM log (arguments block and iteration lines, as Megatron prints them)
{
  echo "------------------------ arguments ------------------------"
  for kv in "global_batch_size 16" "hidden_size 2048" "micro_batch_size 1" \
            "num_attention_heads 16" "num_layers 24" "padded_vocab_size 50304" \
            "pipeline_model_parallel_size 1" "seq_length 2048" "tensor_model_parallel_size 2" \
            "world_size 8"; do
    set -- $kv
    printf '  %s %s %s\n' "$1" "$(printf '%*s' $((48 - ${#1})) '' | tr ' ' .)" "$2"
  done
  echo "-------------------- end of arguments ---------------------"
} > "$tmp/noiter.log"
cp "$tmp/noiter.log" "$tmp/m.log"
for ms in 900.0 512.5 510.0 511.0; do
  echo " [2026-01-01 00:00:00] iteration       10/     100 | consumed samples:          160 | elapsed time per iteration (ms): $ms | learning rate: 1.000000E-04 | global batch size:    16 | lm loss: 9.000000E+00 |" >> "$tmp/m.log"
done
"$B/calibrate" --from-log "$tmp/m.log" --gpu-type A100 --json | python3 -c '
import json, sys
rows = json.load(sys.stdin)
r = rows[0]
assert r["parallel"]["tp"] == 2 and r["parallel"]["dp"] == 4, r["parallel"]
assert abs(r["measured"]["step_time_s"] - 0.511) < 1e-12, r["measured"]
assert r["hardware"]["gpu"] == "A100"
' || { echo "--from-log --json: wrong row"; fail=1; }
err=$("$B/calibrate" --from-log "$tmp/noiter.log" --gpu-type A100 --json 2>&1 >/dev/null)
rc=$?
[ "$rc" -eq 1 ] || { echo "a log without iterations: exit $rc, want 1"; fail=1; }
printf '%s\n' "$err" | grep -q 'noiter.log' && printf '%s\n' "$err" | grep -q 'iteration lines' \
  || { echo "a log without iterations: $err"; fail=1; }
# two logs fitted directly (the second run of the same stack on more GPUs)
sed 's/world_size \.*  *8/world_size ........................................ 16/' "$tmp/m.log" > "$tmp/m16.log"
"$B/calibrate" --from-log "$tmp/m.log" --from-log "$tmp/m16.log" --hw a100-80g \
  --framework megatron -o "$tmp/logfit" >/dev/null || { echo "fit on two logs failed"; fail=1; }
[ -s "$tmp/logfit.hw.json" ] || { echo "fit on logs: no profile"; fail=1; }
exit $fail
