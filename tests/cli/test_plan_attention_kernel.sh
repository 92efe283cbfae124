#!/usr/bin/env bash
# plan --attention-kernel: the fused attention kernel a run trains with.  On
# one fixed layout the attention core's time follows the kernel by the
# factors of px_attn_eff.h (FlashAttention 1 twice FlashAttention-2's,
# the Triton port 1.8 times), the framework's kernel is the default, the
# GPU's own kernels are the fastest; unfused stores the scores; the plan file
# and the Megatron export carry the choice; kernels the GPU, the export
# target or the executor cannot run are errors naming them.
set -u
PLAN="$1"
EXPORT="$2"
EXECUTE="$3"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect_error.sh"
# llama3-8b at 16 K on one A100 node: attention is a large share of the step
base=(--model llama3-8b --gpus 8 --tp 1 --pp 1 --dp 8 --micro-batch 1 --zero 3
      --recompute full --no-milp)
layout=("${base[@]}" --seq 16384 --global-batch 64)
short=("${base[@]}" --seq 4096 --global-batch 256)

run() { # name, hw, framework, extra arguments
  local name="$1" hw="$2" fw="$3"; shift 3
  "$PLAN" "${args[@]}" --hw "$hw" --framework "$fw" "$@" --json > "$tmp/$name.json" ||
    fail "plan $name: $*"
}
args=("${layout[@]}")
run a_default a100-80g llm-foundry
run a_framework a100-80g llm-foundry --attention-kernel framework
run a_native a100-80g llm-foundry --attention-kernel native
run a_flash2 a100-80g llm-foundry --attention-kernel flash2
run a_flash1 a100-80g llm-foundry --attention-kernel flash1
run a_triton a100-80g llm-foundry --attention-kernel triton
run h_default h100-sxm megatron
run h_native h100-sxm megatron --attention-kernel native
run h_flash3 h100-sxm megatron --attention-kernel flash3
run h_flash2 h100-sxm megatron --attention-kernel flash2
run h_triton h100-sxm megatron --attention-kernel triton
args=("${short[@]}") # the scores of 16 K sequences fit nowhere
run a_unfused a100-80g megatron --attention-kernel unfused
run a_fused a100-80g megatron
python3 - "$tmp" <<'PY' || fail "the kernels' attention time"
import json, os, sys
d = sys.argv[1]
p = {n[:-5]: json.load(open(os.path.join(d, n)))["plans"][0]
     for n in os.listdir(d) if n.endswith(".json")}
attn = lambda n: p[n]["breakdown"]["attn_s"]
close = lambda a, b: abs(a - b) <= 1e-9 * max(abs(a), abs(b))
# llm-foundry's kernel is flash-attn 2, Ampere's own: one plan four ways
for n in ("a_framework", "a_native", "a_flash2"):
    assert p[n]["step_time_s"] == p["a_default"]["step_time_s"], n
assert "attention_kernel" not in p["a_default"]["parallel"]
assert p["a_triton"]["parallel"]["attention_kernel"] == "triton", p["a_triton"]["parallel"]
# the slower kernels by Dao 2023's factors, the rest of the step unchanged
assert close(attn("a_flash1"), 2.0 * attn("a_flash2")), (attn("a_flash1"), attn("a_flash2"))
assert close(attn("a_triton"), 1.8 * attn("a_flash2")), (attn("a_triton"), attn("a_flash2"))
assert close(p["a_triton"]["breakdown"]["gemm_s"], p["a_flash2"]["breakdown"]["gemm_s"])
assert p["a_flash2"]["step_time_s"] < p["a_triton"]["step_time_s"] < p["a_flash1"]["step_time_s"]
# Hopper: its own kernels (megatron's cuDNN, FlashAttention-3) beat flash-attn 2,
# which beats the Triton port
for n in ("h_native", "h_flash3"):
    assert close(attn(n), attn("h_default")), n
assert attn("h_default") < attn("h_flash2") < attn("h_triton")
assert close(attn("h_triton"), 1.8 * attn("h_flash2"))
# unfused attention stores the scores: more activation memory, slower core
assert p["a_unfused"]["parallel"].get("attention_kernel") is None
# (under full recompute, in the working set of the layer rerun)
assert p["a_unfused"]["breakdown"]["buf_recompute_bytes"] > \
       p["a_fused"]["breakdown"]["buf_recompute_bytes"]
assert attn("a_unfused") > attn("a_fused")
PY
echo "ok: each kernel's attention time"

# the header line names the choice
"$PLAN" "${layout[@]}" --hw a100-80g --framework llm-foundry --attention-kernel triton \
  > "$tmp/table" || fail "plan table"
grep -q "attention kernel triton" "$tmp/table" || fail "header: $(sed -n 4p "$tmp/table")"

# the plan file carries it; the Megatron export names Megatron-Core's backend
export_attn() { # kernel, hw, expected --attention-backend value or "error"
  "$PLAN" "${layout[@]}" --hw "$2" --framework megatron --attention-kernel "$1" \
    -o "$tmp/plan.json" > /dev/null || fail "plan -o with $1"
  grep -q '"attention_kernel": "'"${1/unfused/framework}"'"' "$tmp/plan.json" ||
    fail "plan file lacks attention_kernel $1"
  if [ "$3" = error ]; then
    "$EXPORT" --plan "$tmp/plan.json" --to megatron > /dev/null 2> "$tmp/err" &&
      fail "export of $1: exit 0"
    grep -q "the attention kernel $1 (parallel.attention_kernel)" "$tmp/err" ||
      fail "export of $1: $(cat "$tmp/err")"
  else
    "$EXPORT" --plan "$tmp/plan.json" --to megatron > "$tmp/args" || fail "export of $1"
    grep -qx -- "--attention-backend $3" "$tmp/args" ||
      fail "export of $1: $(grep attention-backend "$tmp/args")"
  fi
  echo "ok: export of --attention-kernel $1"
}
export_attn native h100-sxm fused
export_attn flash3 h100-sxm flash
export_attn flash2 a100-80g flash
export_attn unfused a100-80g unfused
export_attn triton a100-80g error
export_attn flash1 a100-80g error
# the other targets: what each can choose, the rest refused by name
other_export() { # kernel, target, ok|error
  "$PLAN" "${layout[@]}" --hw h100-sxm --framework megatron --attention-kernel "$1" \
    -o "$tmp/plan.json" > /dev/null || fail "plan -o with $1"
  if "$EXPORT" --plan "$tmp/plan.json" --to "$2" > /dev/null 2> "$tmp/err"; then
    [ "$3" = ok ] || fail "export of $1 to $2: exit 0"
  else
    [ "$3" = error ] && grep -q "the attention kernel $1" "$tmp/err" ||
      fail "export of $1 to $2: $(cat "$tmp/err")"
  fi
}
other_export native nemo ok
other_export flash2 nemo error
other_export flash2 torchtitan ok
other_export native torchtitan error
other_export triton deepspeed ok
other_export native slurm ok
other_export flash3 slurm error
echo "ok: the other export targets"

# the executor runs its own kernel: a plan costed for another is refused
"$PLAN" --model tiny-llama --gpus 2 --hw a100-80g --attention-kernel native \
  -o "$tmp/tiny.json" > /dev/null || fail "plan tiny native"
"$EXECUTE" --plan "$tmp/tiny.json" --check > /dev/null || fail "execute --check of native"
"$PLAN" --model tiny-llama --gpus 2 --hw a100-80g --attention-kernel flash2 \
  -o "$tmp/tiny.json" > /dev/null || fail "plan tiny flash2"
"$EXECUTE" --plan "$tmp/tiny.json" --check > /dev/null 2> "$tmp/err" &&
  fail "execute --check of flash2: exit 0"
grep -q "parallel.attention_kernel = flash2: the engine runs its own" "$tmp/err" ||
  fail "execute --check of flash2: $(cat "$tmp/err")"
echo "ok: the executor refuses a named kernel but native"

# kernels the GPU cannot run, and names that are none
expect_error "flash3 off Hopper" "flash3: FlashAttention-3 runs on Hopper GPUs only.*a100-80g" \
  "${layout[@]}" --hw a100-80g --attention-kernel flash3
expect_error "flash3 on Blackwell" "flash3: .*Hopper.*b200 is generation 4" \
  "${layout[@]}" --hw b200 --attention-kernel flash3
expect_error "flash2 on Volta" "flash2: it needs an Ampere or later GPU.*v100" \
  --model llama3-8b --gpus 16 --hw v100 --precision fp16 --attention-kernel flash2
expect_error "unfused under a framework that needs a fused kernel" \
  "--attention-kernel unfused: framework torchtitan cannot run attention that stores the s x s scores \(capability needs_flash_attention" \
  "${short[@]}" --hw h100-sxm --framework torchtitan --attention-kernel unfused
expect_error "an unknown kernel" \
  "--attention-kernel: .*allowed values are framework, native, flash3, flash2, flash1, triton, unfused" \
  "${layout[@]}" --attention-kernel flash4
echo "test_plan_attention_kernel: all passed"
