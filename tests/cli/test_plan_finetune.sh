#!/usr/bin/env bash
# plan --finetune full|lora, --lora-rank, --lora-alpha, --lora-targets: parse
# errors name the allowed values (exit 2); LoRA settings without
# --finetune lora are refused; a framework that does not run LoRA (the
# default, parallax: this project's executor) and LoRA on an MoE model are
# refused by name (exit 1).  A LoRA plan fits where pre-training does not
# (Llama 3 70B on 8 H100s), records its settings in the plan file, and the
# file reads back and rewrites byte for byte; SFT plans as pre-training
# with "finetune": {"mode": "full"}; without --finetune no key is written.
set -u
PLAN="$1"
READBACK="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
FW="--framework megatron"

want_usage() { # expected stderr pattern, then the plan arguments
    local pat="$1"; shift
    "$PLAN" "$@" > "$tmp/out" 2> "$tmp/err"
    [ $? -eq 2 ] || fail "$*: want exit 2"
    grep -q -- "$pat" "$tmp/err" || fail "$*: $(cat "$tmp/err")"
}
want_usage 'allowed values are none, full, lora' --model llama3-8b --gpus 8 --finetune qlora
want_usage 'expected an integer 1..65536' --model llama3-8b --gpus 8 --finetune lora --lora-rank 0
want_usage 'expected an integer 1..65536' --model llama3-8b --gpus 8 --finetune lora --lora-rank 3x
want_usage 'expected a positive number' --model llama3-8b --gpus 8 --finetune lora --lora-alpha -1
want_usage 'qkv, proj, fc1, fc2, or all' --model llama3-8b --gpus 8 --finetune lora --lora-targets qkv,gate
want_usage 'qkv, proj, fc1, fc2, or all' --model llama3-8b --gpus 8 --finetune lora --lora-targets qkv,,fc1
want_usage 'need --finetune lora' --model llama3-8b --gpus 8 --lora-rank 8
want_usage 'need --finetune lora' --model llama3-8b --gpus 8 --finetune full --lora-targets qkv
"$PLAN" --help | grep -q -- '--finetune none|full|lora' || fail "--help lists no --finetune"

"$PLAN" --model llama3-8b --gpus 8 --finetune lora > "$tmp/out" 2> "$tmp/err"
[ $? -eq 1 ] || fail "lora under parallax: want exit 1"
grep -q 'framework parallax cannot run fine-tuning lora (capability finetune' "$tmp/err" \
  || fail "lora / parallax: $(cat "$tmp/err")"
"$PLAN" --model mixtral-8x7b --gpus 64 --finetune lora $FW > "$tmp/out" 2> "$tmp/err"
[ $? -eq 1 ] || fail "lora on mixtral: want exit 1"
grep -q 'LoRA is priced on dense transformer blocks' "$tmp/err" || fail "lora / moe: $(cat "$tmp/err")"

# Llama 3 70B on 8 H100s: pre-training does not fit, LoRA does
"$PLAN" --model 70b --gpus 8 $FW --partition uniform --offload none > "$tmp/out" 2> "$tmp/err"
[ $? -ne 0 ] || fail "70b pre-training on 8 GPUs fits: the LoRA check below proves nothing"
"$PLAN" --model 70b --gpus 8 $FW --partition uniform --finetune lora --lora-rank 16 \
  --lora-alpha 8 --lora-targets fc2,qkv -o "$tmp/lora.json" > "$tmp/table" 2> "$tmp/err" \
  || fail "70b lora on 8 GPUs: $(cat "$tmp/err")"
"$READBACK" "$tmp/lora.json" "$tmp/lora2.json" > /dev/null || fail "lora plan does not read back"
cmp -s "$tmp/lora.json" "$tmp/lora2.json" || fail "lora plan rewritten differs"
"$PLAN" --model llama3-8b --gpus 8 $FW --partition uniform --finetune full --json \
  > "$tmp/full.json" 2> "$tmp/err" || fail "full: $(cat "$tmp/err")"
"$PLAN" --model llama3-8b --gpus 8 $FW --partition uniform --json \
  > "$tmp/pre.json" 2> "$tmp/err" || fail "pre-training: $(cat "$tmp/err")"
python3 - "$tmp" <<'PY' || exit 1
import json, sys
t = sys.argv[1]
lora = json.load(open(t + "/lora.json"))
ft = lora["parallel"]["finetune"]
assert ft == {"mode": "lora", "lora_rank": 16, "lora_alpha": 8.0,
              "lora_targets": ["qkv", "fc2"]}, ft
mem = lora["prediction"]["memory"]
assert mem["grads_bytes"] < mem["weights_bytes"] / 50, mem  # adapters' gradients only
full, pre = json.load(open(t + "/full.json")), json.load(open(t + "/pre.json"))
assert full["plan"]["parallel"]["finetune"] == {"mode": "full"}, full["plan"]["parallel"]
assert "finetune" not in pre["plan"]["parallel"], pre["plan"]["parallel"]
# SFT costs as pre-training: the same prediction
assert full["plan"]["prediction"]["time"]["step_s"] == pre["plan"]["prediction"]["time"]["step_s"]
assert full["plan"]["prediction"]["memory"] == pre["plan"]["prediction"]["memory"]
PY

# the LoRA and SFT plan files keep docs/plan.schema.json (where python3 has jsonschema)
"$PLAN" --model llama3-8b --gpus 8 $FW --partition uniform --finetune full -o "$tmp/full_plan.json" \
  > /dev/null 2> "$tmp/err" || fail "full -o: $(cat "$tmp/err")"
python3 - "$tmp" "${PARALLAX_SOURCE_ROOT:-.}/docs/plan.schema.json" <<'PY' || exit 1
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)
schema = json.load(open(sys.argv[2]))
v = jsonschema.validators.validator_for(schema)(schema)
for f in ("lora.json", "full_plan.json"):
    errs = [e.message for e in v.iter_errors(json.load(open(sys.argv[1] + "/" + f)))]
    assert not errs, (f, errs[:3])
PY

# a plan file's finetune object is checked field by field
python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
p = json.load(open(t + "/lora.json"))
for name, edit in (("mode", {"mode": "qlora"}), ("rank", {"lora_rank": 0}),
                   ("alpha", {"lora_alpha": -2}), ("targets", {"lora_targets": ["gate"]}),
                   ("extra", {"lora_dropout": 0.1})):
    q = json.loads(json.dumps(p))
    q["parallel"]["finetune"].update(edit)
    json.dump(q, open(t + "/bad_" + name + ".json", "w"))
q = json.loads(json.dumps(p))
q["parallel"]["finetune"] = {"mode": "full", "lora_rank": 8}
json.dump(q, open(t + "/bad_fullrank.json", "w"))
PY
for b in mode:'finetune.mode' rank:'finetune.lora_rank' alpha:'finetune.lora_alpha' \
         targets:'finetune.lora_targets' extra:'finetune.lora_dropout' \
         fullrank:'finetune.lora_rank'; do
    "$READBACK" "$tmp/bad_${b%%:*}.json" > /dev/null 2> "$tmp/err"
    [ $? -eq 1 ] || fail "bad ${b%%:*}: want exit 1"
    grep -q "${b#*:}" "$tmp/err" || fail "bad ${b%%:*}: $(cat "$tmp/err")"
done
echo "plan_finetune: ok"
