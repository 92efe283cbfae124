#!/usr/bin/env bash
# Bad input: non-zero exits with messages that say what is wrong.
set -u
PLAN="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect_error.sh"
expect_error "unknown model lists the presets" 'unknown model.*llama3-70b.*seed-70b' --model nosuch --gpus 8
expect_error "unknown profile lists the profiles" 'unknown hardware profile.*h100-sxm.*tpu-v5p' --model 70b --gpus 8 --hw nosuch
expect_error "missing --gpus" '--gpus is required' --model 70b
expect_error "missing --model" '--model is required' --gpus 8
expect_error "bad --schedule" 'allowed values are gpipe, 1f1b, interleaved, zb-h1, zb-h2' --model 70b --gpus 8 --schedule foo
expect_error "bad --recompute" 'allowed values are none, selective, full' --model 70b --gpus 8 --recompute most
expect_error "bad --partition" 'allowed values are milp, uniform' --model 70b --gpus 8 --partition best
expect_error "bad --milp-time-limit" 'expected seconds' --model 70b --gpus 8 --milp-time-limit -1
expect_error "bad --grad-dtype" 'bf16, fp32' --model 70b --gpus 8 --grad-dtype fp8
expect_error "bad --zero" '--zero.*0\.\.3' --model 70b --gpus 8 --zero 4
expect_error "bad number" '--gpus "abc"' --model 70b --gpus abc
expect_error "unknown option" 'unknown option "--frobnicate"' --model 70b --gpus 8 --frobnicate 1
expect_error "GPUs nothing divides" '--gpus 7: no tp·cp·pp·dp factorisation.*nearest GPU counts that factor: 4 and 8' --model 70b --gpus 7 --pp 1
expect_error "model cannot fit: closest miss" 'fits in 84.9 GB.*closest miss.*with the runtime.*GB over' --model 70b --gpus 8
expect_error "fixed tp not dividing heads" "--tp 3: tp = 3 does not divide the 64 attention heads" --model 70b --gpus 48 --tp 3
# sizes that do not divide: the flag, the model size, and the closest miss
expect_error "--gpus 1000: the nearest counts" '--gpus 1000: no tp·cp·pp·dp factorisation.*tp <= 64 dividing the 64 heads, 8 kv heads.*nearest GPU counts that factor: [0-9]+ and [0-9]+' --model 70b --gpus 1000
expect_error "fixed product != --gpus" 'tp·cp·pp·dp = 8·8·8·8 = 4096 ≠ --gpus 64' --model 70b --tp 8 --cp 8 --pp 8 --dp 8 --gpus 64
expect_error "partial product does not divide" 'tp·pp = 8·16 = 128 does not divide --gpus 64' --model 70b --gpus 64 --tp 8 --pp 16
expect_error "--tp 16: the kv heads are the limit" '--tp 16: tp = 16 does not divide the 8 kv heads' --model 70b --gpus 64 --tp 16
expect_error "--vpp without pipeline parallelism" '--vpp 2: vpp = 2 without pipeline parallelism \(pp = 1\)' --model tiny-llama --gpus 4 --vpp 2 --pp 1
expect_error "--vpp with too few layers for pp 2" '--vpp 2: pp x vpp = 4 exceeds the 2 layers' --model tiny-llama --gpus 1 --vpp 2
expect_error "--etp on a dense model" '--etp 2: .*ep and etp .* need a mixture-of-experts model' --model 70b --gpus 64 --etp 2
expect_error "--ep on a dense model" '--ep 4: .*ep and etp .* need a mixture-of-experts model' --model 70b --gpus 64 --ep 4
expect_error "--ep not dividing the experts" '--ep 3: ep = 3 does not divide the 8 experts' --model mixtral-8x7b --gpus 48 --ep 3
expect_error "--ep folded over more GPUs than a stage has" 'tp 2, cp 1, dp 8, ep 8, etp 4: ep x etp = 8 x 4 must divide tp x cp x dp = 16' --model mixtral-8x7b --gpus 64 --tp 2 --pp 4 --dp 8 --ep 8 --etp 4
expect_error "--ep over the GPUs of a stage, cp implied" 'tp 1, cp 1, dp 4, ep 8, etp 1: ep x etp = 8 x 1 must divide tp x cp x dp = 4' --model mixtral-8x7b --gpus 16 --tp 1 --pp 4 --dp 4 --ep 8
# conflicting and repeated flags
expect_error "--tokens-per-step with --global-batch" '--global-batch and --tokens-per-step both set the global batch' --model 70b --gpus 64 --tokens-per-step 1M --global-batch 2048
expect_error "repeated --gpus" '--gpus given more than once' --model 70b --gpus 64 --gpus 128
expect_error "repeated through an alias" '--mbs given more than once \(--micro-batch and --mbs are one option\)' --model 70b --gpus 64 --micro-batch 1 --mbs 2
expect_error "unknown option as the last argument" 'unknown option "--bogus"' --model 70b --gpus 64 --bogus
expect_error "a value missing" '--gpus needs a value' --model 70b --gpus
# learned positions: no sequence beyond the table
expect_error "--seq past max_positions" '--seq 100000 exceeds max_positions 64 of tiny-gpt' --model tiny-gpt --gpus 2 --seq 100000
# -o to a place that cannot be written: the reason, before any table
"$PLAN" --model 70b --gpus 64 -o /nonexistent/dir/x.json > "$tmp/out" 2> "$tmp/err" && fail "-o /nonexistent: exit 0"
grep -q -- '-o /nonexistent/dir/x.json: the directory /nonexistent/dir does not exist' "$tmp/err" || fail "-o /nonexistent: no reason: $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] || fail "-o /nonexistent: printed a table before failing: $(head -3 "$tmp/out")"
echo "ok: -o /nonexistent: $(cat "$tmp/err")"
# Hugging Face configs that make no model
hf() { printf '{"model_type": "llama", "num_hidden_layers": 4, "intermediate_size": 256, "vocab_size": 512, %s}\n' "$1" > "$tmp/$2.json"; }
hf '"hidden_size": 4096, "num_attention_heads": 30' heads30
expect_error "HF: heads not dividing hidden" 'hidden_size 4096 is not divisible by num_attention_heads 30' --model "$tmp/heads30.json" --gpus 8
hf '"hidden_size": 4000, "num_attention_heads": 30, "num_key_value_heads": 6, "head_dim": 128' headdim
"$PLAN" --model "$tmp/headdim.json" --gpus 8 > /dev/null 2> "$tmp/err" || fail "HF: an explicit head_dim should allow 30 heads of 4000: $(cat "$tmp/err")"
hf '"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 5' kv5
expect_error "HF: kv heads not dividing heads" 'num_key_value_heads 5 does not divide num_attention_heads 32' --model "$tmp/kv5.json" --gpus 8
hf '"hidden_size": -4096, "num_attention_heads": 32' neg
expect_error "HF: negative size names the value" 'hidden_size: expected an integer >= 1, got -4096' --model "$tmp/neg.json" --gpus 8
hf '"hidden_size": 0, "num_attention_heads": 32' zero
expect_error "HF: zero size" 'hidden_size: expected an integer >= 1, got 0' --model "$tmp/zero.json" --gpus 8
printf '{\n  "name": "broken",\n  "block": "gpt",\n  "hidden": 64,,\n}\n' > "$tmp/bad.json"
expect_error "malformed model JSON: file:line:col" 'bad\.json:4:[0-9]+' --model "$tmp/bad.json" --gpus 8
echo PASS
