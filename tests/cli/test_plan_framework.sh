#!/usr/bin/env bash
# plan --framework: the profile in the table, the JSON and the plan file; a
# fixed dimension the framework cannot run is an error naming the capability;
# an unknown framework lists the known ones.
set -u
PLAN="$1"
READBACK="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect_error.sh"
expect_error "zb-h1 under megatron" 'schedule.*megatron.*zb-h1.*capability schedules' \
  --model tiny-llama --gpus 8 --framework megatron --schedule zb-h1
expect_error "pp under llm-foundry" 'llm-foundry.*capability max_pp' \
  --model tiny-llama --gpus 8 --framework llm-foundry --pp 2
expect_error "ZeRO-1 under torchtitan" 'torchtitan.*ZeRO stage 1.*capability zero' \
  --model tiny-llama --gpus 8 --framework torchtitan --zero 1
# two dimensions a framework runs apart but not together: both named
expect_error "ZeRO-0 with CP under torchtitan" \
  'torchtitan cannot run context parallelism \(ZeRO-0, DDP, with .*cp 2.*capability ddp_1d_only.*--framework .*megatron.* can' \
  --model tiny-llama --gpus 8 --framework torchtitan --zero 0 --cp 2
expect_error "ZeRO-0 with TP beside DDP under torchtitan" \
  '--dp: framework torchtitan cannot run .*ZeRO-0, DDP, with tp 2.*capability ddp_1d_only' \
  --model tiny-llama --gpus 8 --framework torchtitan --zero 0 --tp 2 --dp 4
# tp_with_pp, which no shipped profile sets: DeepSpeed's own profile with it
python3 - "$(dirname "$0")/../../frameworks/deepspeed.json" "$tmp/ds-tp-or-pp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["name"] = "ds-tp-or-pp"
d["capabilities"]["tp_with_pp"] = False
d["sources"]["tp_with_pp"] = "the test's own profile"
json.dump(d, open(sys.argv[2], "w"))
PY
expect_error "TP with PP under a profile without tp_with_pp" \
  'ds-tp-or-pp cannot run pipeline parallelism of 2 stages together with tensor parallelism \(tp 2, pp 2\).*capability tp_with_pp.*--framework .*megatron.* can' \
  --model tiny-llama --gpus 8 --framework "$tmp/ds-tp-or-pp.json" --tp 2 --pp 2
# left free, the search does not propose them: ZeRO-0 only without TP, PP,
# CP, EP under torchtitan; no TP with PP without tp_with_pp (every candidate)
for fw in torchtitan ds-tp-or-pp; do
  prof=$fw; [ $fw = torchtitan ] || prof="$tmp/$fw.json"
  "$PLAN" --model tiny-llama --gpus 64 --framework "$prof" --top 50 --json > "$tmp/$fw.plan.json" \
    || fail "plan under $fw"
  python3 - "$tmp/$fw.plan.json" $fw <<'PY' || fail "plan under $fw proposes what $fw refuses"
import json, sys
d, fw = json.load(open(sys.argv[1])), sys.argv[2]
rows = d["plans"]
assert len(rows) >= 10, len(rows)
for r in rows:
    p = r.get("parallel", r)
    if fw == "torchtitan" and p["zero"] == 0:
        assert p["cp"] == 1 and (p["dp"] == 1 or p["tp"] == p["pp"] == p["ep"] == 1), p
    if fw == "ds-tp-or-pp":
        assert p["tp"] == 1 or p["pp"] == 1, p
print(f"ok: {len(rows)} {fw} candidates")
PY
done
# a model feature the framework lacks: the feature and the capability named,
# and the shipped frameworks that have it
expect_error "MLA under deepspeed" \
  'deepspeed cannot run tiny-mla: multi-head latent attention.*capability model_features.*--framework .*megatron.* can' \
  --model tiny-mla --gpus 8 --framework deepspeed
expect_error "GPT blocks under torchtitan" \
  'torchtitan cannot run tiny-gpt: GPT blocks.*capability model_features.*--framework .*megatron.* can' \
  --model tiny-gpt --gpus 8 --framework torchtitan
expect_error "unknown framework" 'unknown; allowed values.*deepspeed.*llm-foundry.*maxtext.*megatron.*parallax.*torchtitan' \
  --model tiny-llama --gpus 8 --framework nosuch

"$PLAN" --model tiny-llama --gpus 8 --framework megatron --no-milp --top 20 -o "$tmp/p.json" \
  > "$tmp/t.txt" || fail "plan --framework megatron"
grep -q '^# framework: megatron' "$tmp/t.txt" || fail "table does not name the framework"
python3 - "$tmp/p.json" <<'PY' || fail "plan file"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["framework"] == "megatron", p.get("framework")
PY
"$READBACK" "$tmp/p.json" > /dev/null || fail "the plan with a framework does not read back"
awk '/^ +[0-9]+ /{print $13}' "$tmp/t.txt" | grep -vqE '^(1f1b|interleaved)$' \
  && fail "megatron plan with a schedule it does not run: $(cat "$tmp/t.txt")"
"$PLAN" --model tiny-llama --gpus 8 --framework llm-foundry --no-milp --json > "$tmp/j.json" \
  || fail "plan --framework llm-foundry --json"
python3 - "$tmp/j.json" <<'PY' || fail "llm-foundry JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["framework"] == "llm-foundry"
assert d["plan"]["framework"] == "llm-foundry"
for c in d["plans"]:
    assert c["parallel"]["pp"] == 1 and c["parallel"]["cp"] == 1, c["parallel"]
assert d["search"]["rejected"]["not run by the framework"] > 0
PY
# --overlap overrides the profile (torchtitan: no async TP by default)
"$PLAN" --model tiny-llama --gpus 8 --framework torchtitan --tp 2 --no-milp -o "$tmp/a.json" > /dev/null || fail "torchtitan"
"$PLAN" --model tiny-llama --gpus 8 --framework torchtitan --tp 2 --no-milp --overlap on -o "$tmp/b.json" > /dev/null || fail "torchtitan --overlap on"
python3 - "$tmp/a.json" "$tmp/b.json" <<'PY' || fail "--overlap override"
import json, sys
a = json.load(open(sys.argv[1]))["parallel"]; b = json.load(open(sys.argv[2]))["parallel"]
assert a["tp_overlap"] is False and b["tp_overlap"] is True, (a["tp_overlap"], b["tp_overlap"])
PY
# the breakdown is costed as its row: under torchtitan's runtime traits (no
# async TP, FlashAttention 2), for every ranked plan and the rule of thumb
"$PLAN" --model tiny-llama --gpus 8 --framework torchtitan --tp 2 --no-milp --top 10 --json \
  > "$tmp/tt.json" || fail "torchtitan --json"
python3 - "$tmp/tt.json" <<'PY' || fail "breakdown step time differs from its row"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["plans"] + ([d["rule_of_thumb"]] if "rule_of_thumb" in d else [])
assert len(rows) > 1, rows
for c in rows:
    assert c["breakdown"]["step_s"] == c["time"]["step_s"], (c["parallel"], c["breakdown"]["step_s"], c["time"]["step_s"])
PY
# a fixed layout and the default global batch it does not divide: the
# nearest batch it divides, said so
"$PLAN" --model llama3-70b --gpus 1000 --tp 8 --pp 5 --dp 25 --no-milp --json > "$tmp/nb.json" \
  || fail "TP8 PP5 DP25 on 1000 GPUs refused"
python3 - "$tmp/nb.json" <<'PY' || fail "nearest global batch"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["global_batch"] == 2050, d["global_batch"]
assert "nearest" in d["batch_note"] and "2048" in d["batch_note"], d["batch_note"]
PY
# a Hugging Face config without vocab_size: transformers' default for its
# type, said in the text and the JSON
printf '{"model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 4, "num_attention_heads": 8}' \
  > "$tmp/novocab.json"
"$PLAN" --model "$tmp/novocab.json" --gpus 8 --no-milp > "$tmp/nv.txt" || fail "a config without vocab_size refused"
grep -q "^# model: vocab_size not in the config: transformers' llama default 32000 assumed" "$tmp/nv.txt" \
  || fail "the assumed vocabulary is not said: $(head -3 "$tmp/nv.txt")"
"$PLAN" --model "$tmp/novocab.json" --gpus 8 --no-milp --json > "$tmp/nv.json" || fail "novocab --json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "32000" in d["model_note"], d.get("model_note")' \
  "$tmp/nv.json" || fail "model_note"
# with fixed virtual stages the micro-batches go in groups of pp: the
# nearest batch dp x pp divides (512 -> 516 on DP 3, PP 4), not one no
# micro-batch count of the schedule fits
"$PLAN" --model llama3-8b --gpus 12 --tp 1 --pp 4 --vpp 2 --dp 3 --no-milp --json > "$tmp/nbv.json" \
  || fail "PP 4 with 2 virtual stages and DP 3 refused the default batch"
python3 - "$tmp/nbv.json" <<'PY' || fail "nearest global batch under virtual stages"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["global_batch"] == 516, d["global_batch"]
assert "dp x pp" in d["batch_note"] and "512" in d["batch_note"], d["batch_note"]
assert all(p["num_microbatches"] % 4 == 0 for p in d["plans"]), [p["num_microbatches"] for p in d["plans"]]
PY
"$PLAN" --model llama3-70b --gpus 1000 --tp 8 --pp 5 --dp 25 --global-batch 2048 --no-milp \
  > /dev/null 2> "$tmp/gb.err" && fail "an explicit --global-batch 2048 on dp 25 was changed"
# --pp 1 with a schedule: no pipeline to probe, so DeepSpeed's ZeRO-3 (which
# it runs without a pipeline only) is accepted
"$PLAN" --model tiny-llama --gpus 8 --pp 1 --schedule 1f1b --zero 3 --framework deepspeed \
  --no-milp > "$tmp/z3.txt" 2> "$tmp/z3.err" || fail "deepspeed ZeRO-3 at --pp 1 --schedule 1f1b refused: $(cat "$tmp/z3.err")"
expect_error "deepspeed ZeRO-3 with a real pipeline" 'deepspeed' \
  --model tiny-llama --gpus 8 --pp 2 --schedule 1f1b --zero 3 --framework deepspeed
# DeepSpeed's PipelineModule partitions layers unevenly (its partition
# methods): 32 layers on a pipeline of 3 stages plan under deepspeed
"$PLAN" --model llama3-8b --gpus 3 --tp 1 --pp 3 --dp 1 --framework deepspeed --no-milp \
  > /dev/null 2> "$tmp/ds-uneven.err" || fail "deepspeed pp 3 over 32 layers refused: $(cat "$tmp/ds-uneven.err")"
# --framework-release: a name that is neither a listed release, a year nor a
# NeMo container names the allowed ones; a year or container the profile
# does not list is planned as the documented state nearest in time, which
# the JSON records beside the name asked; Megatron-LM's 2021 release (no
# FlashAttention, no DP or TP overlap) plans the same layout slower than the
# framework as it runs today
expect_error "unknown release" 'framework-release "r1999": unknown; allowed values: none, 2020, 2021, 2022, nemo-24.03, nemo-24.07, .*, or a year' \
  --model tiny-llama --gpus 8 --framework megatron --framework-release r1999
expect_error "a release of a profile without releases" 'framework-release "v2": unknown; allowed values: none, or a year' \
  --model tiny-llama --gpus 8 --framework parallax --framework-release v2
for case in megatron:1999:2020 megatron:2023:nemo-24.03 megatron:nemo-24.05:nemo-24.03 \
            megatron:nemo-24.09:nemo-24.07 megatron:2031:none parallax:2021:none \
            torchtitan:2023:2024; do
  fw=${case%%:*}; rest=${case#*:}; asked=${rest%%:*}; applied=${rest#*:}
  "$PLAN" --model tiny-llama --gpus 8 --framework $fw --framework-release $asked --no-milp --json \
    > "$tmp/near.json" 2> "$tmp/near.err" || fail "$fw --framework-release $asked: $(cat "$tmp/near.err")"
  python3 - "$tmp/near.json" "$asked" "$applied" <<'PY' || fail "$fw release $asked planned as $applied"
import json, sys
d, asked, applied = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
assert d["framework_release"] == applied and d["framework_release_asked"] == asked, d
PY
done
"$PLAN" --model tiny-llama --gpus 8 --framework megatron --framework-release 2023 --no-milp \
  2>&1 | grep -q "release 2023: planned as nemo-24.03, the documented state nearest in time" \
  || fail "the table does not say which release 2023 was planned as"
python3 - "$(dirname "$0")/../../frameworks/megatron.json" "$tmp/asof.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["as_of"] = "2026-13"
json.dump(d, open(sys.argv[2], "w"))
PY
expect_error "a malformed as_of" 'as_of: expected a month "YYYY-MM"' \
  --model tiny-llama --gpus 8 --framework "$tmp/asof.json"
python3 - "$(dirname "$0")/../../frameworks/megatron.json" "$tmp/relnum.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["releases"]["2021"] = 5
json.dump(d, open(sys.argv[2], "w"))
PY
expect_error "a release entry that is not an object" 'releases.2021: expected an object' \
  --model tiny-llama --gpus 8 --framework "$tmp/relnum.json" --framework-release 2021
python3 - "$(dirname "$0")/../../frameworks/megatron.json" "$tmp/norel.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["releases"]["2021"]["sources"].pop("dp_overlap")
json.dump(d, open(sys.argv[2], "w"))
PY
expect_error "release trait without a source" 'releases.2021.sources.dp_overlap: missing' \
  --model tiny-llama --gpus 8 --framework "$tmp/norel.json" --framework-release 2021
for rel in none 2021; do
  "$PLAN" --model llama3-8b --gpus 16 --tp 2 --pp 1 --dp 8 --micro-batch 1 --recompute full \
    --framework megatron --framework-release $rel --no-milp --json > "$tmp/rel-$rel.json" \
    || fail "--framework-release $rel"
done
python3 - "$tmp/rel-none.json" "$tmp/rel-2021.json" <<'PY' || fail "--framework-release in the JSON"
import json, sys
today, old = (json.load(open(f)) for f in sys.argv[1:3])
assert today["framework_release"] == "none" and old["framework_release"] == "2021"
t, o = today["plans"][0], old["plans"][0]
assert o["parallel"]["sp"] is False, o["parallel"]          # no sequence parallelism in 2021
assert o["step_time_s"] > t["step_time_s"], (o["step_time_s"], t["step_time_s"])
PY
# llm-foundry's 2023 tables ran Triton's FlashAttention: a slower attention
# core, the more so the longer the sequence
for rel in none 2023; do
  for seq in 2048 32768; do
    "$PLAN" --model llama3-8b --hw a100-80g --gpus 8 --seq $seq --global-batch 8 --micro-batch 1 --zero 3 \
      --framework llm-foundry --framework-release $rel --no-milp --json > "$tmp/fd-$rel-$seq.json" \
      || fail "llm-foundry --framework-release $rel --seq $seq"
  done
done
python3 - "$tmp" <<'PY' || fail "llm-foundry release 2023"
import json, os, sys
def attn(rel, seq):
    d = json.load(open(os.path.join(sys.argv[1], f"fd-{rel}-{seq}.json")))
    assert d["framework_release"] == rel, d["framework_release"]
    p = d["plans"][0]
    return p["breakdown"]["attn_s"], p["step_time_s"]
for seq in (2048, 32768):
    (a0, s0), (a1, s1) = attn("none", seq), attn("2023", seq)
    assert abs(a1 / a0 - 1.8) < 1e-6, (seq, a0, a1)   # the Triton port: 1/1.8 the rate
    assert s1 > s0, (seq, s0, s1)
r_short = attn("2023", 2048)[1] / attn("none", 2048)[1]
r_long = attn("2023", 32768)[1] / attn("none", 32768)[1]
assert r_long > r_short, (r_short, r_long)
print(f"ok: llm-foundry 2023 steps {r_short:.2f}x at 2 K, {r_long:.2f}x at 32 K")
PY
# Projections as the model code has them: DeepSpeed's Hugging Face models run
# q, k, v and the gate and up projections as separate linears, each a GEMM
# of its own width; a copy of the profile with one fused GEMM each differs
# in GEMM time by exactly the closed form (bf16 backward = twice the forward)
python3 - "$tmp" <<'PY' || fail "fused_qkv / fused_gate_up copy"
import json, os, sys
d = json.load(open(os.path.join(os.environ.get("PARALLAX_SOURCE_ROOT", "."), "frameworks/deepspeed.json")))
assert d["runtime"]["fused_qkv"] is False and d["runtime"]["fused_gate_up"] is False
d["runtime"]["fused_qkv"] = d["runtime"]["fused_gate_up"] = True
json.dump(d, open(os.path.join(sys.argv[1], "ds-fused.json"), "w"))
PY
for fw in deepspeed "$tmp/ds-fused.json"; do
  "$PLAN" --model llama3-8b --gpus 8 --tp 8 --pp 1 --dp 1 --zero 1 --recompute none --micro-batch 1 \
    --global-batch 4 --framework "$fw" --no-milp --json > "$tmp/proj-$(basename "$fw" .json).json" \
    || fail "projections under $fw"
done
python3 - "$tmp" "$PARALLAX_SOURCE_ROOT" <<'PY' || fail "separate projections' GEMM time"
import json, os, sys
t, root = sys.argv[1], sys.argv[2]
doc = json.load(open(os.path.join(t, "proj-deepspeed.json")))
sep, fus = doc["plans"][0], json.load(open(os.path.join(t, "proj-ds-fused.json")))["plans"][0]
hw = json.load(open(os.path.join(root, "hw_profiles/h100-sxm.json")))
m = json.load(open(os.path.join(root, "models/llama3-8b.json")))
half, rate = hw["gemm_eff_half_dim"], hw["peak_flops"] * hw["gemm_eff_max"]
def gemm(mm, n, k):  # seconds of C[mm,n] = A[mm,k] B[k,n] by the profile's shape model
    return 2 * mm * n * k / (rate * (mm / (mm + half)) * (n / (n + half)) * (k / (k + half)))
tp, T = 8, doc["seq_len"] * sep["micro_batch"]
h, f = m["hidden"], m["ffn"]
d = h // m["n_heads"]
q, kv = m["n_heads"] * d / tp, m["n_kv_heads"] * d / tp
fwd = (gemm(T, q, h) + 2 * gemm(T, kv, h) - gemm(T, q + 2 * kv, h)) + \
      (2 * gemm(T, f / tp, h) - gemm(T, 2 * f / tp, h))
want = 3 * fwd * m["n_layers"] * sep["num_microbatches"]
got = sep["breakdown"]["gemm_s"] - fus["breakdown"]["gemm_s"]
assert want > 0 and abs(got / want - 1) < 1e-9, (got, want)
print(f"ok: separate projections {got:.3f} s of GEMMs more a step at TP 8")
PY
# torchtitan's CP: PyTorch's all-gather by default; its 2024 release repeats
# K and V to the query heads before the attention, so Llama 3 8B (32 query,
# 8 K/V heads) moves four times the CP bytes
for rel in none 2024; do
  "$PLAN" --model llama3-8b --gpus 8 --seq 32768 --tp 1 --cp 2 --dp 4 --framework torchtitan \
    --framework-release "$rel" --partition uniform --top 1 --json > "$tmp/cp-$rel.json" \
    || fail "torchtitan CP, release $rel"
done
python3 - "$tmp" <<'PY' || fail "torchtitan CP"
import json, os, sys
now, old = (json.load(open(os.path.join(sys.argv[1], f"cp-{r}.json")))["plans"][0] for r in ("none", "2024"))
assert now["parallel"]["cp_comm"] == old["parallel"]["cp_comm"] == "all-gather", now["parallel"]
a, b = now["breakdown"]["comm"]["cp"]["bytes_per_step"], old["breakdown"]["comm"]["cp"]["bytes_per_step"]
assert a > 0 and b == 4 * a, (a, b)
print(f"ok: torchtitan CP all-gather, {a / 1e9:.0f} GB a step, {b / 1e9:.0f} GB with K and V repeated")
PY
echo "plan --framework: ok"
