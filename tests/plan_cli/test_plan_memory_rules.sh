#!/usr/bin/env bash
# The memory rules each framework's profile selects, checked on plan --json
# against sums written out here from the model's shape (docs/cost-model.md,
# "Memory"): Megatron's unfused loss, the first stage's embedding buffers,
# the padded vocabulary and TP-replicated norms in the weights, DeepSpeed's
# 16-bit ZeRO partitions and its largest-module ZeRO-3 buffer.
set -u
PLAN="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { local out="$1"; shift; "$PLAN" "$@" --no-milp --json > "$tmp/$out" 2> "$tmp/err" \
  || fail "plan $*: $(cat "$tmp/err")"; }

# Llama 3 8B, Megatron, TP2 PP1 DP4, micro-batch 2, 4 K, ZeRO-0, no recompute
run m8.json --model llama3-8b --gpus 8 --tp 2 --pp 1 --dp 4 --micro-batch 2 --seq 4096 \
  --zero 0 --recompute full --sp on --framework megatron --hw b200
# GPT-3 175B, Megatron, TP8 PP16 (no SP), micro-batch 4
run g175.json --model gpt3-175b --gpus 1024 --tp 8 --pp 16 --dp 8 --micro-batch 4 \
  --sp off --zero 1 --recompute none --schedule 1f1b --framework megatron --hw b200
# Llama 3 8B under DeepSpeed ZeRO-2 and ZeRO-3 on 8 GPUs
run d2.json --model llama3-8b --gpus 8 --tp 1 --pp 1 --dp 8 --micro-batch 1 --zero 2 \
  --recompute full --framework deepspeed
run d3.json --model llama3-8b --gpus 8 --tp 1 --pp 1 --dp 8 --micro-batch 1 --zero 3 \
  --recompute full --framework deepspeed
python3 - "$tmp" "${PARALLAX_SOURCE_ROOT:-.}/models" <<'PY' || exit 1
import json, sys
tmp, models = sys.argv[1], sys.argv[2]
def plan(f): return json.load(open(f"{tmp}/{f}"))["plans"][0]
def model(n): return json.load(open(f"{models}/{n}.json"))
def close(got, want, what, rel=1e-6):
    assert abs(got - want) <= rel * want + 8, f"{what}: {got} != {want}"
    print(f"ok: {what}: {got}")

# Megatron pads the vocabulary to a multiple of 128 x tp (128 256 -> 128 256 at TP2,
# 129 024 at TP8) and keeps the norms whole on every TP rank
m = model("llama3-8b"); h, L, f, V = m["hidden"], m["n_layers"], m["ffn"], m["vocab"]
kvh = h // m["n_heads"] * m["n_kv_heads"]
t = 2; Vp = -(-V // (128 * t)) * 128 * t
mat = h * (h + 2 * kvh) + h * h + 3 * h * f           # q,k,v,o and the gated MLP
norms = 2 * h
params = L * (mat / t + norms) + 2 * Vp * h / t + h  # untied head, final norm
p = plan("m8.json")
close(p["breakdown"]["params_per_gpu"], params, "llama3-8b TP2 parameters on a GPU")
close(p["memory"]["weights_bytes"], 2 * params, "bf16 weights")
# the unfused loss: the head's bf16 logits and their fp32 copy (the softmax), one micro-batch
tok = 2 * 4096
close(p["breakdown"]["buf_logits_bytes"], 6 * tok * Vp / t, "logits bf16 + fp32")
assert p["breakdown"]["buf_loss_bytes"] == 0, p["breakdown"]["buf_loss_bytes"]
# the embedding keeps the token ids only (its output is layer 1's input)
close(p["breakdown"]["buf_embedding_bytes"], 8 * tok, "embedding ids")

# GPT-3: ids and the dropout mask (1 byte, whole sequence without SP), per micro-batch in flight
g = model("gpt3-175b"); p = plan("g175.json")
infl = p["breakdown"]["inflight_microbatches"]
assert infl == 16, infl  # 1F1B: stage 0 holds pp micro-batches
tok = 4 * 2048
close(p["breakdown"]["buf_embedding_bytes"], 16 * (8 * tok + tok * g["hidden"]), "GPT-3 stage-0 embedding buffers")

# DeepSpeed ZeRO-2: 2 + (2 + 4 + 12) / 8 bytes a parameter; ZeRO-3: (2 + 2 + 4 + 4 + 8) / 8 and
# the largest module (the 128 256 x 4096 embedding) gathered with its gradient, 4 bytes each
P = L * (mat + norms) + 2 * V * h + h
d2 = plan("d2.json")["memory"]
close(d2["weights_bytes"] + d2["grads_bytes"] + d2["optimizer_bytes"], 2 * P + 18 * P / 8, "DeepSpeed ZeRO-2 states")
d3 = plan("d3.json")
m3 = d3["memory"]
close(m3["weights_bytes"] + m3["grads_bytes"] + m3["optimizer_bytes"], 20 * P / 8, "DeepSpeed ZeRO-3 states")
close(d3["breakdown"]["buf_p2p_bytes"], 4 * V * h, "DeepSpeed ZeRO-3 gathered largest module")
PY
echo "memory rules: ok"
