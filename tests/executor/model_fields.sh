#!/usr/bin/env bash
# The model fields that change what the step computes reach the executor
# through the plan file: a preset with Llama 3's RoPE theta, another norm
# epsilon or other latent-norm epsilon trains another function (first
# losses differ from the defaults'), the plan written carries the value,
# renormalised top-k gates (norm_topk_prob) too, and split runs (CP 2 x TP
# 2, EP 2 x DP 2) give the one-rank losses with them; so do Llama 3's RoPE
# scaling, interleaved RoPE pairs, the attention output bias and tied
# embeddings (under PP 2 x TP 2); rope_scaling yarn, attention_sinks,
# mlp_act gelu and relu2, rope_fraction, sandwich_norms and a hybrid
# Mamba-2 layer_pattern are refused naming the field.
#   model_fields.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-fields.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=${PARALLAX_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
mkplan="$build/tests/executor/px_mkplan"
cmp="$build/tests/executor/px_cmp"
exe="$build/execute"
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

# variant BASE NAME 'KEY: VALUE, ...': BASE's preset with the keys added
variant() {
  sed -e '$d' "$src/models/$1.json" | sed -e '$s/$/,/' >"$work/$2.json"
  printf '  %s\n}\n' "$3" >>"$work/$2.json"
  sed -i -e "s/\"name\": \"$1\"/\"name\": \"$2\"/" "$work/$2.json"
}
run() { # NAME NP PLAN
  timeout 120 mpirun --oversubscribe -np "$2" "$exe" --plan "$3" --steps 2 --warmup 0 \
    --report "$work/$1.r.json" >"$work/$1.out" 2>&1 || { fail "$1 run"; cat "$work/$1.out"; }
}
plan1() { # NAME MODEL [mkplan args] (default: 2 micro-batches)
  local name=$1 model=$2
  shift 2
  [ $# -gt 0 ] || set -- --n-micro 2
  "$mkplan" --model "$model" "$@" -o "$work/$name.plan.json" 2>"$work/$name.mk" ||
    { fail "px_mkplan $name"; cat "$work/$name.mk"; }
}
# One rank on the same data repeats its losses bit for bit: a change of
# 1e-6 relative (~10 fp32 ulps of a loss near 5.5) is the field at work.
differs() { # A B WHAT
  if out=$("$cmp" differ "$work/$1.r.json" "$work/$2.r.json" 1e-6); then echo "ok   $3: $out"
  else fail "$3: the losses do not change: $out"; fi
}

variant tiny-llama theta '"rope_theta": 500000.0'
variant tiny-llama eps '"norm_eps": 1e-06'
variant tiny-mla latent '"latent_norm_eps": 0.001'
variant tiny-moe renorm '"norm_topk_prob": true'
# Llama 3.1's scaling anchored at 64 positions: tiny-llama's head_dim 16 has
# wavelengths from 6 to 19000 positions, so every band is used
variant tiny-llama llama3 '"rope_scaling": "llama3", "rope_factor": 8.0, "rope_low_freq_factor": 1.0, "rope_high_freq_factor": 4.0, "rope_original_max_positions": 64'
variant tiny-llama yarn '"rope_scaling": "yarn", "rope_factor": 4.0, "rope_original_max_positions": 64'
variant tiny-llama inter '"rope_interleave": true'
variant tiny-mla mla_inter '"rope_interleave": true'
variant tiny-llama obias '"o_bias": true'
variant tiny-llama sinks '"attention_sinks": true'
variant tiny-llama geglu '"mlp_act": "gelu"'
variant tiny-llama sandwich '"sandwich_norms": true'
variant tiny-llama relu2 '"mlp_act": "relu2"'
variant tiny-llama hybrid '"layer_pattern": "M*", "mamba": {"heads": 4, "head_dim": 16, "state": 8}'
variant tiny-llama partial '"rope_fraction": 0.5'
variant tiny-llama tied '"tied_embeddings": true'
# DeepSeek-V3's router on tiny-moe's 4 experts: sigmoid, 2 groups of 2
# keeping 1, renormalised, times 2.5
variant tiny-moe dsv3 '"norm_topk_prob": true, "scoring_func": "sigmoid", "n_group": 2, "topk_group": 1, "routed_scaling_factor": 2.5'
plan1 base tiny-llama
plan1 theta "$work/theta.json"
plan1 eps "$work/eps.json"
plan1 mla tiny-mla
plan1 latent "$work/latent.json"
plan1 moe tiny-moe
plan1 renorm "$work/renorm.json"
plan1 theta_split "$work/theta.json" --n-micro 2 --cp 2 --tp 2
plan1 renorm_split "$work/renorm.json" --n-micro 1 --ep 2 --dp 2 # the same 2 sequences
plan1 llama3 "$work/llama3.json"
plan1 llama3_split "$work/llama3.json" --n-micro 2 --cp 2 --tp 2
plan1 yarn "$work/yarn.json"
plan1 sinks "$work/sinks.json"
plan1 geglu "$work/geglu.json"
plan1 sandwich "$work/sandwich.json"
plan1 relu2 "$work/relu2.json"
plan1 hybrid "$work/hybrid.json"
plan1 partial "$work/partial.json"
plan1 tied "$work/tied.json"
plan1 tied_split "$work/tied.json" --n-micro 2 --pp 2 --tp 2
plan1 inter "$work/inter.json"
plan1 mla_inter "$work/mla_inter.json"
plan1 mla_inter_split "$work/mla_inter.json" --n-micro 2 --cp 2 --tp 2
plan1 obias "$work/obias.json"
plan1 obias_split "$work/obias.json" --n-micro 2 --tp 2 --sp
plan1 dsv3 "$work/dsv3.json"
plan1 dsv3_split "$work/dsv3.json" --n-micro 1 --ep 2 --dp 2
grep -q '"rope_theta": 500000' "$work/theta.plan.json" && echo "ok   the plan carries rope_theta" ||
  fail "the plan file lacks rope_theta 500000"
grep -q '"latent_norm_eps": 0.001' "$work/latent.plan.json" &&
  echo "ok   the plan carries latent_norm_eps" || fail "the plan file lacks latent_norm_eps"
for n in base theta eps mla latent moe renorm dsv3 llama3 inter mla_inter obias tied; do
  run "$n" 1 "$work/$n.plan.json"
done
run llama3_split 4 "$work/llama3_split.plan.json"
run mla_inter_split 4 "$work/mla_inter_split.plan.json"
run obias_split 2 "$work/obias_split.plan.json"
run tied_split 4 "$work/tied_split.plan.json"
run dsv3_split 2 "$work/dsv3_split.plan.json"
run theta_split 4 "$work/theta_split.plan.json"
run renorm_split 2 "$work/renorm_split.plan.json"
differs base theta "rope_theta 500000 vs 10000"
differs base eps "norm_eps 1e-6 vs 1e-5"
differs mla latent "latent_norm_eps 1e-3 vs 1e-6"
differs moe renorm "norm_topk_prob true vs false"
differs renorm dsv3 "sigmoid, grouped, scaled router vs softmax"
differs base llama3 "rope_scaling llama3 vs none"
differs base inter "rope_interleave vs rotate-half"
differs mla mla_inter "MLA rope_interleave vs rotate-half"
# the output bias starts at zero: the first loss is the same, later ones not
if out=$("$cmp" differ_any "$work/base.r.json" "$work/obias.r.json"); then echo "ok   o_bias trains: $out"
else fail "o_bias changes nothing: $out"; fi
differs base tied "tied_embeddings vs untied"
refused() { # NAME FIELD-TEXT
  if "$exe" --check --plan "$work/$1.plan.json" >"$work/$1.out" 2>&1; then
    fail "execute accepts $2"
  elif grep -q "$2" "$work/$1.out"; then
    echo "ok   refused: $(head -1 "$work/$1.out")"
  else fail "$1 refused without naming $2: $(cat "$work/$1.out")"; fi
}
# the checkpoint's plan fingerprint covers the fields: tiny-llama saved with
# another rope_theta (same name, same layout) does not load
sed -e 's/"seq_len": 32/"seq_len": 32, "rope_theta": 500000.0/' "$src/models/tiny-llama.json" \
  >"$work/tiny-llama.json"
plan1 same_name "$work/tiny-llama.json"
timeout 120 mpirun --oversubscribe -np 1 "$exe" --plan "$work/same_name.plan.json" --steps 1 \
  --warmup 0 --save "$work/ckpt" --save-interval 1 >"$work/save.out" 2>&1 || fail "save run"
if timeout 120 mpirun --oversubscribe -np 1 "$exe" --plan "$work/base.plan.json" --steps 2 \
    --warmup 0 --load "$work/ckpt" >"$work/load.out" 2>&1; then
  fail "a checkpoint of rope_theta 500000 loads into rope_theta 10000"
elif grep -q "plan_fingerprint" "$work/load.out"; then
  echo "ok   checkpoint of another rope_theta refused: $(grep -o 'mismatched.*' "$work/load.out" | head -1 | cut -c1-100)"
else fail "another rope_theta refused without naming the plan fingerprint: $(cat "$work/load.out")"; fi
refused yarn "rope_scaling = yarn"
refused sinks "attention_sinks = true"
refused geglu "mlp_act = gelu"
refused sandwich "sandwich_norms = true"
refused relu2 "mlp_act = relu2.*allowed: silu"
refused hybrid "layer_pattern = \"M\*\": a hybrid Mamba-2 layer pattern.*execute refuses it"
refused partial "rope_fraction = 0.5"
grep -q '"n_group": 2' "$work/dsv3.plan.json" && grep -q '"scoring_func": "sigmoid"' "$work/dsv3.plan.json" &&
  echo "ok   the plan carries the router fields" || fail "the plan file lacks the router fields"
if out=$("$cmp" losses "$work/theta.r.json" "$work/theta_split.r.json" 1e-5 2>&1); then
  echo "ok   rope_theta 500000 under CP 2 x TP 2: $out"
else fail "CP 2 x TP 2 changes the rope_theta 500000 losses: $out"; fi
if out=$("$cmp" losses "$work/renorm.r.json" "$work/renorm_split.r.json" 1e-5 2>&1); then
  echo "ok   norm_topk_prob under EP 2 x DP 2: $out"
else fail "EP 2 x DP 2 changes the norm_topk_prob losses: $out"; fi
if out=$("$cmp" losses "$work/dsv3.r.json" "$work/dsv3_split.r.json" 1e-5 2>&1); then
  echo "ok   DeepSeek-V3's router under EP 2 x DP 2: $out"
else fail "EP 2 x DP 2 changes the DeepSeek-V3 router's losses: $out"; fi
for pair in llama3:llama3_split mla_inter:mla_inter_split obias:obias_split tied:tied_split; do
  if out=$("$cmp" losses "$work/${pair%%:*}.r.json" "$work/${pair#*:}.r.json" 1e-5 2>&1); then
    echo "ok   ${pair#*:} vs one rank: $out"
  else fail "${pair#*:} changes the losses: $out"; fi
done
echo "$failed failed"
[ "$failed" -eq 0 ]
