#!/usr/bin/env bash
# plan --tp-comm-overlap: the forward's sequence-parallel TP collectives in
# chunks under their GEMMs (Transformer Engine's userbuffers, torchtitan's
# async TP).  On one fixed layout only the exposed TP time moves, by exactly
# what the step loses, and it keeps at least the profile's share of the
# collectives it hides; it hides the backward's too (--overlap off changes
# nothing); it needs sequence parallelism and a framework that runs it; the
# plan file, the exports and the executor's refusal carry it.
set -u
PLAN="$1"
EXPORT="$2"
EXECUTE="$3"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect_error.sh"
layout=(--model llama3-70b --gpus 64 --tp 8 --pp 1 --dp 8 --micro-batch 1 --recompute full
        --no-milp --top 1)

for fw in megatron torchtitan; do
  for o in off on; do
    "$PLAN" "${layout[@]}" --framework "$fw" --zero 3 --tp-comm-overlap $o --json > "$tmp/$fw-$o.json" \
      2> "$tmp/err" || fail "$fw --tp-comm-overlap $o: $(cat "$tmp/err")"
  done
done
"$PLAN" "${layout[@]}" --framework megatron --zero 3 --tp-comm-overlap on --overlap off --json \
  > "$tmp/megatron-on-nobwd.json" 2> "$tmp/err" || fail "--overlap off: $(cat "$tmp/err")"
python3 - "$tmp" <<'PY' || exit 1
import json, sys
t = sys.argv[1]
def plan(name):
    return json.load(open(f"{t}/{name}.json"))["plans"][0]
for fw in ("megatron", "torchtitan"):
    off, on = plan(f"{fw}-off"), plan(f"{fw}-on")
    to, tn = off["time"], on["time"]
    assert on["parallel"].get("tp_comm_overlap") is True and "tp_comm_overlap" not in off["parallel"], fw
    assert on["parallel"]["sp"] and on["parallel"]["tp"] == 8, on["parallel"]
    # only the exposed TP time moves, and the step by exactly as much
    assert tn["compute_s"] == to["compute_s"], (fw, tn, to)
    assert 0 < tn["tp_comm_s"] < to["tp_comm_s"], (fw, tn, to)
    gain = to["tp_comm_s"] - tn["tp_comm_s"]
    assert abs((to["step_s"] - tn["step_s"]) - gain) < 1e-9 * to["step_s"], (fw, tn, to)
    # the same collectives before any overlap; what it hides still costs the
    # profile's comm_overlap_cost (0.15) of its time
    total = on["breakdown"]["comm"]["tp"]["total_s"]
    assert total == off["breakdown"]["comm"]["tp"]["total_s"], fw
    # without it Megatron hides the backward's all-reduce (tp_overlap); torchtitan
    # without async TP hides nothing
    assert (to["tp_comm_s"] < total) if fw == "megatron" else (to["tp_comm_s"] == total), (fw, to, total)
    assert tn["tp_comm_s"] >= 0.15 * total * (1 - 1e-9), (fw, tn["tp_comm_s"], total)
# the chunked collectives hide the backward's too: --overlap off moves nothing of TP
a, b = plan("megatron-on"), plan("megatron-on-nobwd")
assert a["time"]["tp_comm_s"] == b["time"]["tp_comm_s"], (a["time"], b["time"])
PY

# the search with it plans TP with sequence parallelism
"$PLAN" --model llama3-70b --gpus 64 --framework megatron --tp-comm-overlap on --top 3 --json \
  > "$tmp/free.json" 2> "$tmp/err" || fail "free search: $(cat "$tmp/err")"
python3 -c 'import json,sys; ps=json.load(open(sys.argv[1]))["plans"]; sys.exit(not all(p["parallel"]["sp"] for p in ps if p["parallel"]["tp"] > 1))' \
  "$tmp/free.json" || fail "free search: a TP plan without SP"

# its rules: sequence parallelism, a framework and a release that run it
expect_error "--sp off" "--sp on" "${layout[@]}" --framework megatron --sp off --tp-comm-overlap on
# (DeepSpeed runs no sequence parallelism either, which the overlap needs)
expect_error "deepspeed" "capability (sp|tp_comm_overlap) .*--framework .*megatron.* can" \
  "${layout[@]}" --framework deepspeed --tp-comm-overlap on
expect_error "megatron 2022" "capability tp_comm_overlap .*its current release can" \
  "${layout[@]}" --framework megatron --framework-release 2022 --tp-comm-overlap on
expect_error "bad value" "on|off|on, off" "${layout[@]}" --framework megatron --tp-comm-overlap yes

# the plan file, the exports and the executor
for o in off on; do
  "$PLAN" "${layout[@]}" --framework megatron --tp-comm-overlap $o -o "$tmp/$o.plan.json" > /dev/null \
    2> "$tmp/err" || fail "-o $o: $(cat "$tmp/err")"
  "$EXPORT" --plan "$tmp/$o.plan.json" --to megatron -o "$tmp/$o.sh" > /dev/null || fail "export megatron $o"
  "$EXPORT" --plan "$tmp/$o.plan.json" --to nemo -o "$tmp/$o.yaml" > /dev/null || fail "export nemo $o"
done
grep -q '"tp_comm_overlap": true' "$tmp/on.plan.json" || fail "plan file: no tp_comm_overlap"
grep -q -- '--tp-comm-overlap' "$tmp/on.sh" || fail "megatron export: no --tp-comm-overlap"
grep -q -- '--tp-comm-overlap' "$tmp/off.sh" && fail "megatron export: --tp-comm-overlap without the plan's"
grep -q 'tp_comm_overlap: true' "$tmp/on.yaml" || fail "nemo export: tp_comm_overlap not true"
grep -q 'tp_comm_overlap: false' "$tmp/off.yaml" || fail "nemo export: tp_comm_overlap not false"
"$PLAN" "${layout[@]}" --framework torchtitan --zero 3 --tp-comm-overlap on -o "$tmp/tt.plan.json" \
  > /dev/null 2> "$tmp/err" || fail "torchtitan -o: $(cat "$tmp/err")"
"$EXPORT" --plan "$tmp/tt.plan.json" --to torchtitan -o "$tmp/tt.toml" > /dev/null || fail "export torchtitan"
grep -q 'enable_async_tensor_parallel = true' "$tmp/tt.toml" || fail "torchtitan export: no async TP"
grep -q '^\[compile\]' "$tmp/tt.toml" || fail "torchtitan export: async TP without compile"
# the Slurm script launches this project's engine, whose collectives block
"$EXPORT" --plan "$tmp/on.plan.json" --to slurm -o "$tmp/on.slurm" > "$tmp/out" 2>&1 \
  && fail "export slurm: exit 0"
grep -q "TP collectives under their GEMMs" "$tmp/out" || fail "export slurm: $(cat "$tmp/out")"
"$EXECUTE" --check --plan "$tmp/on.plan.json" > "$tmp/out" 2>&1 && fail "execute --check: exit 0"
grep -q "tp_comm_overlap" "$tmp/out" || fail "execute --check: $(cat "$tmp/out")"
"$EXECUTE" --check --plan "$tmp/off.plan.json" > "$tmp/out" 2>&1
grep -q "tp_comm_overlap" "$tmp/out" && fail "execute --check without the overlap: $(cat "$tmp/out")"
echo ok
