#!/usr/bin/env bash
# test_export.sh — build/export: each target's file is read back with a
# real reader of its format (export_check.py: argparse mirror of the
# Megatron flags, PyYAML, tomllib, json, bash -n) and every degree, batch
# and model dimension checked against the plan; plans a target cannot run
# are refused naming the feature (exit 1); frameworks without an exporter
# are refused by name; bad arguments exit 2.
set -u
build=${PARALLAX_BUILD_ROOT:?}
here=$(cd "$(dirname "$0")" && pwd)
check="$here/export_check.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 -c 'import yaml, tomllib' 2>/dev/null || fail "python3 with tomllib (3.11) and PyYAML (python3-yaml, scripts/setup) needed"

plan() { # name args...: a plan file
  local name=$1; shift
  "$build/plan" "$@" -o "$tmp/$name.json" >"$tmp/$name.txt" 2>&1 \
    || fail "plan $name: $(tail -3 "$tmp/$name.txt")"
}
export_ok() { # plan target
  "$build/export" --plan "$tmp/$1.json" --to "$2" -o "$tmp/$1.$2" 2>"$tmp/err" \
    || fail "export $1 to $2: $(cat "$tmp/err")"
  python3 "$check" "$2" "$tmp/$1.$2" "$tmp/$1.json" || fail "$1 exported to $2"
}
refused() { # plan target feature-text
  "$build/export" --plan "$tmp/$1.json" --to "$2" -o "$tmp/$1.$2" >/dev/null 2>"$tmp/err"
  local rc=$?
  [ "$rc" = 1 ] || fail "export $1 to $2: exit $rc, expected 1 (refused)"
  grep -q "$3" "$tmp/err" || fail "export $1 to $2: the refusal does not name \"$3\": $(cat "$tmp/err")"
  [ ! -e "$tmp/$1.$2" ] || fail "export $1 to $2 left a file behind"
}

# Megatron-style plans: interleaved 1F1B, then an uneven first/last split
plan inter --model 70b --gpus 1024 --schedule interleaved --partition uniform --top 1
for t in megatron nemo slurm; do export_ok inter $t; done
plan uneven --model 70b --gpus 96 --tp 8 --pp 3 --cp 1 --schedule 1f1b --recompute full \
  --partition uniform --top 1
python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["parallel"]; assert len(set(p["layers_per_chunk"]))>1, p' \
  "$tmp/uneven.json" || fail "80 layers over 3 stages should split unevenly"
for t in megatron nemo slurm; do export_ok uneven $t; done
# a torchtitan plan: FSDP (ZeRO-3), selective recompute, 1F1B pipeline
plan titan --model llama3-8b --gpus 64 --zero 3 --pp 2 --schedule 1f1b --recompute selective \
  --partition uniform --top 1
export_ok titan torchtitan
export_ok titan slurm
# a DeepSpeed plan: ZeRO-1, TP without SP
plan ds --model llama3-8b --gpus 64 --zero 1 --pp 2 --schedule 1f1b --cp 1 --sp off \
  --recompute none --partition uniform --top 1
export_ok ds deepspeed
export_ok ds megatron
# what torchtitan 0.2.2 and DeepSpeed 0.19.8 taught (tests/export_real runs
# them): hybrid sharding as HSDP, fp8 converters, the flavour found by the
# model's dimensions, DDP only in one dimension; DeepSpeed's fp16, AutoTP
# batch and PipelineModule stages
plan tt-hsdp --model 70b --gpus 256 --zero 3 --shard-group 64 --tp 1 --recompute full --framework torchtitan \
  --partition uniform --top 1
export_ok tt-hsdp torchtitan
refused tt-hsdp deepspeed "hybrid sharding"
plan tt-fp8row --model llama3-8b --gpus 64 --precision fp8-rowwise --framework torchtitan --top 1
export_ok tt-fp8row torchtitan
grep -q 'converters = \["quantize.linear.float8"\]' "$tmp/tt-fp8row.torchtitan" || fail "fp8 plan without the float8 converter"
# (planned under parallax: the torchtitan profile refuses it, ddp_1d_only)
plan tt-ddp2 --model llama3-8b --gpus 64 --hw b200 --zero 0 --tp 2 --pp 1 --cp 1 --top 1
refused tt-ddp2 torchtitan "ZeRO-0 (DDP) beside tensor, pipeline, context or expert parallelism"
plan ds-tppp --model llama3-8b --gpus 64 --zero 1 --tp 2 --pp 2 --sp off --schedule 1f1b \
  --partition uniform --top 1
refused ds-tppp deepspeed "tensor parallelism.*with pipeline parallelism"
plan tt-mixtral --model mixtral-8x7b --gpus 64 --zero 3 --framework torchtitan --top 1
refused tt-mixtral torchtitan "no torchtitan 0.2.2 flavour has its dimensions"
plan ds-fp16 --model llama3-8b --gpus 64 --precision fp16 --cp 1 --framework deepspeed --top 1
export_ok ds-fp16 deepspeed
# left free, the search runs Ulysses beside TP (a tensor-parallel model
# runs it: Megatron-DeepSpeed's --ds-sequence-parallel-size); DeepSpeed's
# config mesh is data x sequence parallel, so the export refuses it
plan ds-ulysses-tp --model llama3-8b --gpus 64 --precision fp16 --tp 2 --cp 2 --framework deepspeed --top 1
refused ds-ulysses-tp deepspeed "Ulysses sequence parallelism with tensor or pipeline parallelism"
# DeepSpeed-MoE runs expert parallelism (MoE(ep_size=...) in the model code),
# which a config cannot say
plan ds-moe-ep --model mixtral-8x7b --gpus 64 --ep 8 --framework deepspeed --top 1
refused ds-moe-ep deepspeed "expert parallelism"
plan ds-autotp --model llama3-8b --gpus 64 --tp 2 --pp 1 --cp 1 --zero 1 --framework deepspeed --top 1
export_ok ds-autotp deepspeed
plan ds-pp --model llama3-8b --gpus 64 --pp 4 --tp 1 --cp 1 --zero 1 --recompute full \
  --schedule 1f1b --partition uniform --framework deepspeed --top 1
export_ok ds-pp deepspeed
# fine-tuning: LoRA's peft section to NeMo, refused by the formats without
# adapters and by the executor; SFT with Megatron's --finetune
plan lora --model llama3-8b --gpus 8 --framework megatron --finetune lora --lora-rank 16 \
  --lora-alpha 24 --lora-targets qkv,fc1 --partition uniform --top 1
export_ok lora nemo
refused lora megatron 'LoRA fine-tuning'
refused lora torchtitan 'LoRA fine-tuning'
refused lora deepspeed 'LoRA fine-tuning'
refused lora slurm 'finetune = lora'
plan sft --model llama3-8b --gpus 8 --framework megatron --finetune full --partition uniform --top 1
export_ok sft megatron
export_ok sft nemo
# an MoE model to Megatron (experts, expert TP)
plan moe --model mixtral-8x7b --gpus 256 --schedule 1f1b --partition uniform --top 1
export_ok moe megatron
export_ok moe nemo
# what Megatron-LM's and Megatron-Bridge's own validation taught
# (tests/export_real): fp8 recipes, fp16, bf16 gradients, CP flavours,
# hybrid sharding under Megatron-FSDP, MTP in DeepSeek-V3's layout
plan fp8 --model llama3-8b --gpus 64 --framework megatron --precision fp8-cs --grad-dtype bf16 \
  --partition uniform --top 1
plan fp16 --model llama3-8b --gpus 16 --framework megatron --precision fp16 --hw a100-80g \
  --partition uniform --top 1
plan cpa2a --model llama3-8b --gpus 64 --framework megatron --seq 131072 --cp 8 --cp-comm a2a \
  --partition uniform --top 1
plan hsdp --model llama3-8b --gpus 128 --framework megatron --tp 1 --pp 1 --zero 3 \
  --shard-group 8 --partition uniform --top 1
plan dsv3 --model deepseek-v3 --gpus 1024 --framework megatron --pp 8 --top 1
for p in fp8 fp16 cpa2a hsdp dsv3; do export_ok $p megatron; export_ok $p nemo; done
plan fp8z0 --model llama3-8b --gpus 16 --framework megatron --precision fp8 --zero 0 \
  --partition uniform --top 1
refused fp8z0 megatron "quantized_params"
refused fp8z0 nemo "quantized_params"
grep -q -- "--fp8-recipe tensorwise" "$tmp/fp8.megatron" || fail "fp8-cs: no --fp8-recipe tensorwise"
grep -q "^env -u CUDA_DEVICE_MAX_CONNECTIONS\|^#   env -u CUDA_DEVICE_MAX_CONNECTIONS" \
  "$tmp/hsdp.megatron" || fail "Megatron-FSDP launch does not unset CUDA_DEVICE_MAX_CONNECTIONS"
# a CPU plan (fp32 profile) to slurm: the executor's CPU backend, 3 ranks
python3 - "$PARALLAX_SOURCE_ROOT/hw_profiles/h100-sxm.json" "$tmp/cpu.hw.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["name"], d["dtype_bytes"] = "cpu-fp32", 4
json.dump(d, open(sys.argv[2], "w"))
PY
plan cpu --model tiny-llama --gpus 3 --global-batch 6 --hw "$tmp/cpu.hw.json" --top 1
export_ok cpu slurm
grep -q -- '--backend cpu' "$tmp/cpu.slurm" || fail "a CPU plan's script runs the CUDA backend"

# a plan from each framework profile (plan --framework) exports to its targets
plan fw-megatron --model 70b --gpus 256 --framework megatron --top 1
for t in megatron nemo slurm; do export_ok fw-megatron $t; done
plan fw-deepspeed --model 70b --gpus 256 --framework deepspeed --top 1
export_ok fw-deepspeed deepspeed
plan fw-parallax --model 70b --gpus 256 --top 1
export_ok fw-parallax slurm
plan fw-titan --model 70b --gpus 256 --framework torchtitan --schedule interleaved \
  --zero 3 --partition uniform --top 1
export_ok fw-titan torchtitan
# whatever the search picks under torchtitan's profile, its job file says it
# or the export names what torchtitan 0.2.2 cannot run (ZeRO-0 beside CP...)
plan fw-titan-any --model 70b --gpus 256 --framework torchtitan --top 1
if "$build/export" --plan "$tmp/fw-titan-any.json" --to torchtitan -o "$tmp/fw-titan-any.torchtitan" \
    2>"$tmp/err"; then
  python3 "$check" torchtitan "$tmp/fw-titan-any.torchtitan" "$tmp/fw-titan-any.json" \
    || fail "fw-titan-any exported to torchtitan"
else
  grep -q "torchtitan cannot run this plan" "$tmp/err" || fail "fw-titan-any: $(cat "$tmp/err")"
fi

# refusals, each naming the feature
plan zb --model 70b --gpus 64 --tp 8 --pp 4 --cp 1 --zero 3 --schedule zb-h1 --partition uniform --top 1
refused zb megatron "pipeline schedule zb-h1"
refused zb nemo "pipeline schedule zb-h1"
refused zb deepspeed "sequence parallelism with tensor parallelism" # the first rule px_plan_check meets
refused zb torchtitan "pipeline schedule zb-h1"
refused inter torchtitan "ZeRO stage 1"
refused titan deepspeed "recompute selective"
plan ds3 --model llama3-8b --gpus 64 --zero 3 --pp 2 --schedule 1f1b --cp 1 --sp off \
  --recompute none --partition uniform --top 1
refused ds3 deepspeed "ZeRO stage 3 with pipeline parallelism"
plan moe1 --model mixtral-8x7b --gpus 64 --tp 1 --cp 1 --ep 8 --schedule 1f1b \
  --recompute none --partition uniform --top 1
refused moe1 deepspeed "expert parallelism"
plan gpt --model tiny-gpt --gpus 2 --zero 3 --top 1
refused gpt torchtitan "GPT block"
# a split Megatron names by a layout string (interleaved, unequal chunks)
# (the interleaved plan with one layer moved from the first chunk to the last)
python3 - "$tmp/inter.json" "$tmp/layout.json" <<'PY' || fail "making the uneven interleaved plan"
import json, sys
d = json.load(open(sys.argv[1])); p = d["parallel"]
n = p["pp"] * p["vpp"]; assert n > 2 and p["vpp"] > 1, p
lpc = [d["model"]["n_layers"] // n] * n
lpc[0] -= 1; lpc[-1] += 1
p["layers_per_chunk"] = lpc
# the per-stage prediction names each stage's layers (chunk c on stage c mod pp)
for st in d["prediction"]["stages"]:
    st["layers"] = sum(lpc[st["stage"]::p["pp"]])
json.dump(d, open(sys.argv[2], "w"))
PY
export_ok layout megatron
grep -q -- "--pipeline-model-parallel-layout E" "$tmp/layout.megatron" || fail "no layout string"
# optimizer offload: Megatron-Core's CPU optimizer with its fraction (megatron,
# nemo), ZeRO-Offload (deepspeed); torchtitan's job file has none and the
# executor offloads on its CPU backend only: both refuse it by name
plan off --model llama3-70b --gpus 16 --framework megatron --zero 1 --offload optimizer \
  --offload-fraction 0.5 --partition uniform --top 1
export_ok off megatron
export_ok off nemo
refused off torchtitan "ZeRO stage 1"
refused off slurm "does not offload the optimizer"
# a Gemma model: its GeGLU and extra norms are no target's model: refused by name
plan gemma --model "$here/../spec/hf/gemma-2-9b/config.json" --gpus 16 --framework megatron \
  --partition uniform --top 1
refused gemma megatron "mlp_act = gelu"
refused gemma nemo "mlp_act = gelu"
# a hybrid Mamba-2 stack (Nemotron-H): Megatron-LM's pretrain_hybrid.py with
# the pattern cut into the plan's pipeline chunks; Megatron-Bridge's Nemotron-H
# recipe, whose Mamba stack splits by first and last stage only; torchtitan
# and the slurm script's executor refuse it by name
plan hybrid --model nemotron-h-8b --gpus 16 --framework megatron --tp 2 --pp 2 --top 1
export_ok hybrid megatron
grep -q '^--hybrid-layer-pattern M-M-.*|.*M-$' "$tmp/hybrid.megatron" \
  || fail "hybrid to megatron: no two-segment --hybrid-layer-pattern"
grep -q 'pretrain_hybrid.py' "$tmp/hybrid.megatron" || fail "hybrid to megatron: not pretrain_hybrid.py"
export_ok hybrid nemo
grep -q '^  hybrid_override_pattern: "M-M-' "$tmp/hybrid.nemo" \
  || fail "hybrid to nemo: no hybrid_override_pattern"
refused hybrid torchtitan "Mamba-2 layers (a hybrid layer pattern)"
refused hybrid slurm "Mamba-2 layers (a hybrid layer pattern)"
plan hybrid-vpp --model nemotron-h-56b --gpus 512 --framework megatron --tp 8 --pp 4 --vpp 2 \
  --schedule interleaved --top 1
export_ok hybrid-vpp megatron
refused hybrid-vpp nemo "virtual pipeline"
# a squared-ReLU MLP (Nemotron-4): Megatron's squared_relu (--squared-relu);
# torchtitan's SwiGLU model refuses it
sed -e 's/"name": "llama3-8b"/"name": "relu2", "mlp_act": "relu2"/' \
  "$here/../../models/llama3-8b.json" >"$tmp/relu2-model.json"
plan relu2 --model "$tmp/relu2-model.json" --gpus 8 --framework megatron --partition uniform \
  --top 1
export_ok relu2 megatron
grep -q '^--squared-relu$' "$tmp/relu2.megatron" || fail "relu2 to megatron: no --squared-relu"
export_ok relu2 nemo
grep -q 'squared_relu' "$tmp/relu2.nemo" || fail "relu2 to nemo: no squared_relu"
plan offds --model llama3-70b --gpus 16 --framework deepspeed --zero 1 --offload optimizer \
  --partition uniform --top 1
export_ok offds deepspeed
# activation offload in each framework's form: Megatron's leading layers
# (megatron, nemo), DeepSpeed's checkpoints; the other's form is refused
plan act --model llama3-8b --gpus 8 --framework megatron --seq 8192 --tp 1 --dp 8 \
  --micro-batch 2 --recompute none --offload activations --partition uniform --top 1
export_ok act megatron
export_ok act nemo
refused act deepspeed "offloads every layer"
refused act torchtitan "does not offload activations"
plan actds --model llama3-8b --gpus 8 --framework deepspeed --seq 8192 --tp 1 --dp 8 \
  --micro-batch 2 --offload activations --partition uniform --top 1
export_ok actds deepspeed
refused actds megatron "expected 1 .. 31"
# parameter offload: ZeRO-Infinity's offload_param (deepspeed), FSDP2's
# CPUOffloadPolicy (torchtitan); Megatron has none
plan parm --model llama3-8b --gpus 8 --framework torchtitan --offload params --partition uniform \
  --top 1
export_ok parm torchtitan
export_ok parm deepspeed
refused parm megatron "does not offload parameters"
refused parm nemo "does not offload parameters"
export_ok layout nemo
for fw in llm-foundry maxtext; do
  "$build/export" --plan "$tmp/inter.json" --to "$fw" >/dev/null 2>"$tmp/err"
  [ $? = 2 ] || fail "--to $fw: expected exit 2"
  grep -q "$fw has no exporter" "$tmp/err" || fail "--to $fw not refused by name: $(cat "$tmp/err")"
done
"$build/export" --plan "$tmp/inter.json" >/dev/null 2>&1; [ $? = 2 ] || fail "missing --to: exit 2"
"$build/export" --plan "$tmp/inter.json" --to megatron --to nemo >/dev/null 2>&1
[ $? = 2 ] || fail "a repeated --to: exit 2"
"$build/export" --plan "$tmp/nope.json" --to megatron >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "nope.json" "$tmp/err" || fail "a missing plan file is not named"
# --flag=value and standard output
"$build/export" --plan="$tmp/inter.json" --to=megatron >"$tmp/stdout.megatron" 2>"$tmp/err" \
  || fail "--flag=value: $(cat "$tmp/err")"
cmp -s "$tmp/stdout.megatron" "$tmp/inter.megatron" || fail "stdout and -o differ"
echo "test_export: ok"
