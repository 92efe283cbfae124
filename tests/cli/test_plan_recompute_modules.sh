#!/usr/bin/env bash
# plan --recompute-modules: what Megatron-Core's selective recompute reruns.
# On one fixed layout each module frees exactly its activations (the
# formulas of docs/cost-model.md, "Selective recompute by module") and adds
# its rerun; the default list is the plain selective plan; the DeepSeek-V3
# recipe plans its list; the requests the rules refuse are errors naming
# them; the plan file and the exports carry the list, the executor refuses
# it.
set -u
PLAN="$1"
EXPORT="$2"
EXECUTE="$3"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect_error.sh"
# mixtral-8x7b: h 4096, experts of 14336, top 2, s 4096; one micro-batch of
# one sequence, TP 1: every token of the sequence on this GPU
layout=(--model mixtral-8x7b --gpus 64 --hw h100-sxm --framework megatron --no-milp
        --tp 1 --pp 2 --ep 8 --dp 32 --micro-batch 1 --zero 1)

run() { # name, extra arguments
  local name="$1"; shift
  "$PLAN" "${layout[@]}" "$@" --json > "$tmp/$name.json" || fail "plan $name: $*"
}
run selective --recompute selective
run core_attn --recompute-modules core_attn
run moe_act --recompute-modules moe_act
run layernorm --recompute-modules layernorm
run both --recompute-modules moe_act,layernorm
run moe --recompute-modules moe
run full --recompute full
python3 - "$tmp" <<'PY' || fail "the modules' activations and reruns"
import json, os, sys
d = sys.argv[1]
p = {n: json.load(open(os.path.join(d, n + ".json")))["plans"][0]
     for n in ("selective", "core_attn", "moe_act", "layernorm", "both", "moe", "full")}
layer = lambda n: p[n]["breakdown"]["layer_activation_bytes"]
rc = lambda n: p[n]["time"]["recompute_s"]
# the default list is the plain selective plan, and is not written out
assert p["core_attn"] == p["selective"], "core_attn differs from --recompute selective"
assert "recompute_modules" not in p["selective"]["parallel"]
assert p["both"]["parallel"]["recompute_modules"] == ["moe_act", "layernorm"], p["both"]["parallel"]
e, s, h, k, f = 2, 4096, 4096, 2, 14336
copies = s * k                        # routed copies on this GPU
act_out = e * copies * f              # the SwiGLU output the down projection reads
norm_out = e * s * h                  # the pre-MLP norm's output, the router's input
lse = 4 * s * 32                      # the attention kernel's fp32 log-sum-exp a head: kept
                                      # where the list leaves core_attn out
for name, freed in (("moe_act", act_out - lse), ("layernorm", norm_out - lse),
                    ("both", act_out + norm_out - lse)):
    got = layer("selective") - layer(name)
    assert abs(got - freed) <= 1, (name, got, freed)
# moe keeps the layer's input only: less than every output-discarding set
assert layer("moe") < layer("both"), (layer("moe"), layer("both"))
# the reruns: the discarded outputs cost element-wise passes, moe reruns the
# experts and the forward's all-to-alls; full recompute reruns the layer
for name in ("moe_act", "layernorm"):
    assert rc(name) > 0 and rc("both") > rc(name), (name, rc(name), rc("both"))
assert rc("both") < rc("moe") < rc("full"), (rc("both"), rc("moe"), rc("full"))
assert p["moe"]["step_time_s"] < p["full"]["step_time_s"]
PY
echo "ok: each module frees its activations and adds its rerun"

# MLA, shared experts and dense layers: DeepSeek-V3 on its H100 recipe's layout (on H200s,
# where the default list fits too)
ds=(--model deepseek-v3 --gpus 1024 --hw h200 --framework megatron --no-milp --tp 2
    --pp 8 --vpp 4 --ep 64 --dp 64 --micro-batch 1 --zero 1 --global-batch 8192)
"$PLAN" "${ds[@]}" --recompute selective --json > "$tmp/ds0.json" || fail "deepseek-v3 selective"
"$PLAN" "${ds[@]}" --recompute-modules mla_up_proj,mlp,shared_experts --json \
  > "$tmp/ds1.json" || fail "deepseek-v3 mla_up_proj,mlp,shared_experts"
python3 - "$tmp/ds0.json" "$tmp/ds1.json" <<'PY' || fail "MLA, dense and shared modules"
import json, sys
a, b = (json.load(open(f))["plans"][0] for f in sys.argv[1:3])
assert b["breakdown"]["act_attention_bytes"] < a["breakdown"]["act_attention_bytes"]
assert b["breakdown"]["act_mlp_bytes"] < a["breakdown"]["act_mlp_bytes"]
assert b["time"]["recompute_s"] > a["time"]["recompute_s"]
PY
echo "ok: mla_up_proj, mlp and shared_experts free attention and MLP activations"

# the recipe that runs them (Megatron-Bridge's DeepSeek-V3 on 1024 H100)
"$PLAN" --recipe deepseek-v3-h100 --json > "$tmp/recipe.json" || fail "--recipe deepseek-v3-h100"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["plan"]["parallel"]
assert p["recompute_modules"] == ["mla_up_proj", "mlp"] and p["recompute"] == "selective", p
assert (p["tp"], p["pp"], p["vpp"], p["ep"], p["dp"]) == (2, 8, 4, 64, 64), p' \
  "$tmp/recipe.json" || fail "the recipe's plan"
echo "ok: the deepseek-v3-h100 recipe plans its modules"

# the rules
expect_error "unknown module" 'unknown module "attn"; allowed' \
  "${layout[@]}" --recompute-modules moe_act,attn
expect_error "repeated module" 'repeated module "moe"' "${layout[@]}" --recompute-modules moe,moe
expect_error "with full recompute" '--recompute-modules with --recompute full' \
  "${layout[@]}" --recompute full --recompute-modules moe_act
expect_error "moe_act without experts" 'moe_act needs experts, which llama3-8b has none of' \
  --model llama3-8b --gpus 8 --framework megatron --recompute-modules moe_act
expect_error "mla_up_proj without MLA" 'mla_up_proj needs multi-latent attention' \
  "${layout[@]}" --recompute-modules mla_up_proj
expect_error "mlp without a dense layer" 'mlp needs a dense MLP layer' \
  "${layout[@]}" --recompute-modules mlp
expect_error "shared_experts without them" 'shared_experts needs shared experts' \
  "${layout[@]}" --recompute-modules shared_experts
expect_error "moe_act under delayed fp8" 'refuses moe_act and layernorm recompute under delayed' \
  "${layout[@]}" --precision fp8 --recompute-modules moe_act
expect_error "a release before the modules" \
  'capability recompute_modules of .*its current release can' \
  "${layout[@]}" --framework-release nemo-24.07 --recompute-modules moe_act
expect_error "quantised before Megatron-Core 0.15" 'capability recompute_modules_quantized' \
  --model mixtral-8x7b --gpus 64 --hw b200 --framework megatron --precision mxfp8 \
  --framework-release nemo-25.09 --recompute-modules layernorm
expect_error "a framework without the modules" \
  'framework torchtitan cannot run selective recompute of moe_act.*--framework megatron' \
  --model mixtral-8x7b --gpus 64 --framework torchtitan --recompute-modules moe_act

# the plan file, the exports, the executor
"$PLAN" "${layout[@]}" --recompute-modules moe_act,layernorm -o "$tmp/p.json" > /dev/null \
  || fail "plan -o"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["parallel"]
assert p["recompute_modules"] == ["moe_act", "layernorm"] and p["recompute"] == "selective", p' \
  "$tmp/p.json" || fail "the plan file's recompute_modules"
"$EXPORT" --plan "$tmp/p.json" --to megatron -o "$tmp/m.sh" || fail "export megatron"
grep -qx -- '--recompute-modules moe_act layernorm' "$tmp/m.sh" \
  || fail "megatron export: $(grep recompute "$tmp/m.sh")"
"$EXPORT" --plan "$tmp/p.json" --to nemo -o "$tmp/n.yaml" || fail "export nemo"
grep -q 'recompute_modules: \[moe_act,layernorm\]' "$tmp/n.yaml" \
  || fail "nemo export: $(grep recompute "$tmp/n.yaml")"
"$EXECUTE" --check --plan "$tmp/p.json" > "$tmp/out" 2>&1 && fail "execute --check: exit 0"
grep -q 'recompute_modules = \[moe_act,layernorm\]: cpu-executor' "$tmp/out" \
  || fail "execute --check: $(cat "$tmp/out")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
d["parallel"]["recompute_modules"] = ["moe_act", "bogus"]; json.dump(d, open(sys.argv[2], "w"))' \
  "$tmp/p.json" "$tmp/bad.json"
"$EXPORT" --plan "$tmp/bad.json" --to megatron > "$tmp/out" 2>&1 && fail "a bad module: exit 0"
grep -q 'bad.json.*parallel.recompute_modules\[1\]: not a module name' "$tmp/out" \
  || fail "a bad module: $(cat "$tmp/out")"
echo "ok: the plan file, the exports and the executor's refusal"
