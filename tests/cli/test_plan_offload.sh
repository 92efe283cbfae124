#!/usr/bin/env bash
# plan --offload auto|none|LIST, --offload-fraction and --offload-layers:
# parse errors name the allowed values (exit 2); a framework that does not
# offload (the default, parallax:
# this project's executor), a share where the framework offloads all of it
# (deepspeed), and a profile without the host (tpu-v5p) are refused by name
# (exit 1).  Llama 3 70B on 8 H100s fits only with the optimizer on the
# host: the default (auto) finds that plan and says why, --offload none
# refuses; the plan file records the offload, reads back and rewrites byte
# for byte; a plan that fits without offload writes no offload key.
# Activations: each framework's form (Megatron a count of leading layers,
# DeepSpeed full recompute's checkpoints, llm-foundry every layer), refused
# by name where the framework has none; llm-foundry's blocking copies are
# their bytes over the host link twice a micro-batch, read from the plan.
# Parameters: torchtitan and DeepSpeed over ZeRO-3, none of the three
# shards left on the device, refused by Megatron by name.
set -u
PLAN="$1"
READBACK="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

want() { # exit status, stderr pattern, then the plan arguments
    local rc="$1" pat="$2"; shift 2
    "$PLAN" "$@" > "$tmp/out" 2> "$tmp/err"
    local got=$?
    [ $got -eq "$rc" ] || fail "$*: exit $got, want $rc: $(cat "$tmp/err")"
    grep -q -- "$pat" "$tmp/err" || fail "$*: $(cat "$tmp/err")"
}
want 2 'allowed values are auto, none, or a comma-separated list of optimizer or params, and activations' \
  --model 70b --gpus 8 --offload cpu
want 2 "'optimizer' named twice" --model 70b --gpus 8 --offload optimizer,optimizer
want 2 'needs --offload activations' --model 70b --gpus 8 --offload-layers 4
want 1 'framework parallax cannot run parameter offload (capability offload_params' \
  --model 70b --gpus 8 --offload params
want 2 "'params' named twice" --model 70b --gpus 8 --offload optimizer,params
want 2 'needs --offload optimizer' --model 70b --gpus 8 --offload-fraction 0.5
want 2 'a share in (0, 1]' --model 70b --gpus 8 --offload optimizer --offload-fraction 1.5
want 1 'framework parallax cannot run optimizer offload' --model 70b --gpus 8 --offload optimizer
grep -q 'megatron' "$tmp/err" || fail "the refusal names no framework that offloads: $(cat "$tmp/err")"
want 1 'cannot run optimizer offload of a fraction (capability offload_fraction' --model 70b --gpus 8 --framework deepspeed \
  --offload optimizer --offload-fraction 0.5
want 1 'does not describe the host' --model llama3-8b --gpus 8 --hw tpu-v5p --framework megatron \
  --offload optimizer
"$PLAN" --help | grep -q -- '--offload auto|none|LIST' || fail "--help lists no --offload"

FW="--framework megatron --partition uniform"
want 1 'no configuration of llama3-70b on 8 GPUs fits' --model 70b --gpus 8 $FW --offload none
"$PLAN" --model 70b --gpus 8 $FW -o "$tmp/p.json" > "$tmp/table" 2> "$tmp/err" \
  || fail "70b on 8 GPUs with auto offload: $(cat "$tmp/err")"
grep -q '^# offload: optimizer state on the host (fraction 1.00; nothing fits on the GPUs alone)' \
  "$tmp/table" || fail "no offload line: $(grep '^#' "$tmp/table")"
"$READBACK" "$tmp/p.json" "$tmp/p2.json" > /dev/null || fail "offload plan does not read back"
cmp -s "$tmp/p.json" "$tmp/p2.json" || fail "offload plan rewritten differs"
python3 - "$tmp/p.json" <<'PY' || fail "offload plan file"
import json, sys
p = json.load(open(sys.argv[1]))
o = p["parallel"]["offload"]
assert o == {"kind": "optimizer", "fraction": 1.0}, o
mem, t, hw = p["prediction"]["memory"], p["prediction"]["time"], p["hw"]
assert 0 < mem["host_bytes"] <= hw["host_mem_bytes"], mem
assert mem["optimizer_bytes"] == 0, mem
assert 0 < t["offload_s"] <= t["optimizer_s"] < t["step_s"], t
PY
# a share: Megatron keeps the rest on the device
"$PLAN" --model 70b --gpus 16 $FW --offload optimizer --offload-fraction 0.5 --json \
  > "$tmp/half.json" 2> "$tmp/err" || fail "fraction 0.5: $(cat "$tmp/err")"
python3 - "$tmp/half.json" <<'PY' || fail "fraction 0.5 plan"
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["plans"]:
    assert p["parallel"]["offload"] == {"kind": "optimizer", "fraction": 0.5}, p["parallel"]
    assert p["memory"]["optimizer_bytes"] > 0 and p["memory"]["host_bytes"] > 0, p["memory"]
assert "offload_auto" not in d
PY
"$PLAN" --model llama3-8b --gpus 8 $FW -o "$tmp/none.json" > /dev/null 2>&1 || fail "8b plan"
! grep -q '"offload"\|host_bytes\|offload_s' "$tmp/none.json" || fail "a plan without offload writes it"
# activation offload, as each framework runs it
S8="--model llama3-8b --gpus 8 --seq 8192 --tp 1 --dp 8 --micro-batch 2 --partition uniform"
want 1 'framework torchtitan cannot run activation offload (capability offload_activations' \
  $S8 --framework torchtitan --offload activations
grep -q 'llm-foundry, megatron' "$tmp/err" || fail "the refusal names no framework: $(cat "$tmp/err")"
want 1 'allowed: pp 1, recompute none' $S8 --framework megatron --offload activations --recompute full
want 1 'allowed: recompute full' $S8 --framework deepspeed --offload activations --recompute none
want 1 'expected 1 .. 31' $S8 --framework megatron --offload activations --offload-layers 32
"$PLAN" $S8 --framework megatron --recompute none --offload activations -o "$tmp/a.json" \
  > "$tmp/table" 2> "$tmp/err" || fail "megatron activation offload: $(cat "$tmp/err")"
grep -q '^# offload: activations of the first [0-9]* layers\? on the host' "$tmp/table" \
  || fail "no activation offload line: $(grep '^#' "$tmp/table")"
"$READBACK" "$tmp/a.json" "$tmp/a2.json" > /dev/null || fail "activation offload plan does not read back"
cmp -s "$tmp/a.json" "$tmp/a2.json" || fail "activation offload plan rewritten differs"
# both offload plan files by docs/plan.schema.json, where jsonschema is installed
if python3 -c 'import jsonschema' 2>/dev/null && [ -n "${PARALLAX_SOURCE_ROOT:-}" ]; then
    python3 - "$PARALLAX_SOURCE_ROOT/docs/plan.schema.json" "$tmp/p.json" "$tmp/a.json" <<'PY' \
        || fail "an offload plan does not validate"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
for f in sys.argv[2:]:
    jsonschema.validate(json.load(open(f)), schema)
PY
fi
n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["parallel"]["offload"]["activation_layers"])' "$tmp/a.json")
[ "$n" -ge 1 ] && [ "$n" -le 31 ] || fail "offloaded layers: $n"
want 1 'fits' $S8 --framework megatron --recompute none --offload activations \
  --offload-layers $((n - 1))
"$PLAN" $S8 --framework llm-foundry --recompute none --offload activations --json \
  > "$tmp/f.json" 2> "$tmp/err" || fail "llm-foundry activation offload: $(cat "$tmp/err")"
python3 - "$tmp/f.json" <<'PY' || fail "llm-foundry activation offload plan"
import json, sys
d = json.load(open(sys.argv[1]))
link = d["plan"]["hw"]["host_link_bw"]
for p in d["plans"]:
    o, mem, t = p["parallel"]["offload"], p["memory"], p["time"]
    assert o == {"kind": "none", "fraction": 1.0, "activations": True, "activation_layers": 0}, o
    assert mem["activations_bytes"] == 0 and mem["host_bytes"] == mem["host_activation_bytes"] > 0, mem
    copies = p["num_microbatches"] * 2 * mem["host_activation_bytes"] / link
    assert abs(t["act_offload_s"] - copies) <= 1e-9 * copies, (t, copies)
PY
# parameter offload
want 1 'framework megatron cannot run parameter offload (capability offload_params' \
  --model llama3-8b --gpus 8 --framework megatron --offload params
grep -q 'deepspeed, torchtitan' "$tmp/err" || fail "the refusal names no framework: $(cat "$tmp/err")"
want 1 'allowed: ZeRO 3' --model llama3-8b --gpus 8 --framework torchtitan --offload params --zero 2
"$PLAN" --model llama3-8b --gpus 8 --framework torchtitan --offload params --json \
  > "$tmp/t.json" 2> "$tmp/err" || fail "torchtitan parameter offload: $(cat "$tmp/err")"
python3 - "$tmp/t.json" <<'PY' || fail "torchtitan parameter offload plan"
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["plans"]:
    o, mem = p["parallel"]["offload"], p["memory"]
    assert o == {"kind": "params", "fraction": 1.0}, o
    assert p["parallel"]["zero"] == 3, p["parallel"]
    assert mem["weights_bytes"] == mem["grads_bytes"] == mem["optimizer_bytes"] == 0, mem
    assert mem["host_bytes"] > 0, mem
PY
echo "plan --offload: ok"
