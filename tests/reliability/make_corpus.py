#!/usr/bin/env python3
"""Writes the malformed-input corpus under corpus/<kind>/: NAME.json (the
input) and NAME.expect (a regex its error message must match).  Kinds:
model (a preset), hf (a Hugging Face config.json), profile (a hardware
profile), plan (a plan file).  inputs.sh feeds each to the tool that reads
it; the fuzz targets start from the same files.  Run from this directory
with the repository's build/plan:  ./make_corpus.py ../../build/plan"""
import json, os, subprocess, sys, tempfile

root = os.path.dirname(os.path.abspath(__file__))
src = os.path.join(root, "..", "..")
plan_exe = sys.argv[1] if len(sys.argv) > 1 else os.path.join(src, "build", "plan")

def load(p):
    with open(os.path.join(src, p)) as f:
        return json.load(f)

def put(kind, name, doc, expect, raw=None):
    d = os.path.join(root, "corpus", kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ".json"), "w") as f:
        f.write(raw if raw is not None else json.dumps(doc, indent=1, sort_keys=True) + "\n")
    with open(os.path.join(d, name + ".expect"), "w") as f:
        f.write(expect + "\n")

def with_(doc, **kv):
    d = json.loads(json.dumps(doc))
    d.update(kv)
    return d

model = load("models/llama3-8b.json")
moe = load("models/mixtral-8x7b.json")
# the overflow defects: each out of its field's range, named with the range
put("model", "overflow_params", with_(model, hidden=1 << 24, n_layers=1024, ffn=1 << 26),
    r"hidden: 16777216 is out of range \(allowed: integer 1\.\.1048576\)")
put("model", "hidden_2e62", with_(model, hidden=1 << 62),
    r"hidden: 4611686018427387904 is out of range \(allowed: integer 1\.\.1048576\)")
put("model", "experts_int_max", with_(moe, n_experts=2**31 - 1),
    r"n_experts: 2147483647 is out of range \(allowed: integer 0\.\.65536\)")
put("model", "too_many_params", with_(model, hidden=1 << 20, ffn=1 << 20, n_layers=1024,
                                       n_heads=128, n_kv_heads=8),
    r"parameters; at most 1\.13e\+15 \(2\^50\) are supported")
put("model", "int64_overflow_literal", None, r"malformed JSON|out of range|too big",
    raw=json.dumps(model)[:-1] + ', "top_k": 99999999999999999999999}')
put("model", "negative_layers", with_(model, n_layers=-3),
    r"n_layers: -3 is out of range \(allowed: integer 1\.\.1024\)")
put("model", "zero_vocab", with_(model, vocab=0), r"vocab: 0 is out of range")
put("model", "seq_huge", with_(model, seq_len=1 << 40), r"seq_len: 1099511627776 is out of range")
put("model", "heads_string", with_(model, n_heads="32"), r"n_heads: expected an integer")
put("model", "hidden_real", with_(model, hidden=4096.5), r"hidden: expected an integer")
put("model", "real_overflow", None, r"malformed JSON",
    raw=json.dumps(model)[:-1] + ', "ffn": 1e400}')
put("model", "truncated", None, r"malformed JSON", raw=json.dumps(model)[:57])
put("model", "empty", None, r"malformed JSON", raw="")
put("model", "root_array", None, r"expected an object", raw="[1, 2, 3]\n")
put("model", "unknown_key", with_(model, hiddden=4096), r'unknown key "hiddden"')
put("model", "deep_nesting", None, r"malformed JSON|unknown key|expected",
    raw='{"name": "x", "block": "llama", "hidden": ' + "[" * 5000 + "]" * 5000 + "}")
put("model", "mtp_many", with_(model, n_mtp_modules=1000), r"n_mtp_modules: 1000 is out of range")

hf = load("tests/spec/hf/Mixtral-8x7B-v0.1/config.json")
put("hf", "hidden_2e40", with_(hf, hidden_size=1 << 40), r"hidden: 1099511627776 is out of range")
put("hf", "experts_int_max", with_(hf, num_local_experts=2**31 - 1),
    r"n_experts: 2147483647 is out of range")
put("hf", "negative_ffn", with_(hf, intermediate_size=-1), r"intermediate_size: expected an integer >= 1")
put("hf", "vocab_string", with_(hf, vocab_size="big"), r"vocab_size: expected an integer")
put("hf", "layers_huge", with_(hf, num_hidden_layers=1 << 31), r"n_layers: 2147483648 is out of range")
qwen = load("tests/spec/hf/Qwen3-235B-A22B/config.json")
put("hf", "mlp_only_layers_string", with_(qwen, mlp_only_layers="x"),
    r"mlp_only_layers: expected a list of layer indices, got a string \(allowed: \[\] or absent\)")
dsv3 = load("tests/spec/hf/DeepSeek-V3/config.json")
put("hf", "moe_layer_freq_1000", with_(dsv3, moe_layer_freq=1000),
    r"no layer has experts: moe_layer_freq 1000 with first_dense_layers 3 .*\(allowed: ")
gemma2 = load("tests/spec/hf/gemma-2-9b/config.json")
put("hf", "gemma2_layer_types_short", with_(gemma2, layer_types=["sliding_attention"] * 3),
    r"layer_types: expected an array of 42 strings")
put("hf", "gemma2_activation_relu", with_(gemma2, hidden_activation="relu"),
    r"hidden_activation: \"relu\" is not a gated MLP activation .*\(allowed: silu")
gemma3 = load("tests/spec/hf/gemma-3-1b-pt/config.json")
put("hf", "gemma3_pattern_string", with_(gemma3, sliding_window_pattern="6"),
    r"sliding_window_pattern: expected an integer")
put("hf", "gemma3_multimodal", {"model_type": "gemma3", "text_config": gemma3},
    r"text_config: model_type \"gemma3\" is a multimodal config")
phi3 = load("tests/spec/hf/Phi-3-mini-4k/config.json")
put("hf", "phi3_partial_rotary_2", with_(phi3, partial_rotary_factor=2),
    r"partial_rotary_factor: expected a number in \(0, 1\]")
put("hf", "phi3_window_negative", with_(phi3, sliding_window=-5),
    r"sliding_window: expected an integer >= 0")
put("model", "moe_layer_freq_1000", with_(load("models/deepseek-v3.json"), moe_layer_freq=1000),
    r"no layer has experts: moe_layer_freq 1000 .*\(allowed: ")

hw = load("hw_profiles/h100-sxm.json")
put("profile", "peak_flops_tiny", with_(hw, peak_flops=1e-300),
    r"peak_flops: 1e-300 is out of range \(allowed: number 1e\+06\.\.1e\+19\)")
put("profile", "peak_flops_zero", with_(hw, peak_flops=0), r"peak_flops: 0 is out of range")
put("profile", "peak_flops_negative", with_(hw, peak_flops=-1e15), r"peak_flops: -1e\+15 is out of range")
put("profile", "peak_flops_huge", with_(hw, peak_flops=1e300), r"peak_flops: 1e\+300 is out of range")
put("profile", "hbm_bw_tiny", with_(hw, hbm_bw=1e-9), r"hbm_bw: 1e-09 is out of range")
put("profile", "intra_bw_zero", with_(hw, intra_bw=0), r"intra_bw: 0 is out of range")
put("profile", "latency_huge", with_(hw, inter_lat_s=1e9), r"inter_lat_s: 1e\+09 is out of range")
put("profile", "class_bw_tiny", with_(hw, gelu_bw=1e-300),
    r"gelu_bw: 1e-300 is out of range \(allowed: 0 = not measured")
put("profile", "attn_eff_tiny", with_(hw, attn_eff=1e-12), r"attn_eff: 1e-12 is out of range")
put("profile", "exp_rate_tiny", with_(hw, exp_rate=1e-3), r"exp_rate: 0\.001 is out of range")
put("profile", "eff_above_one", with_(hw, gemm_eff_max=1.5), r"gemm_eff_max: 1\.5 is out of range")
put("profile", "gpus_per_node_zero", with_(hw, gpus_per_node=0), r"gpus_per_node: 0 is out of range")
put("profile", "hbm_bytes_huge", with_(hw, hbm_bytes=1 << 62), r"hbm_bytes: 4611686018427387904 is out of range")
# the runtime's memory: bounds of the fields that replace a fixed reserve
put("profile", "hbm_visible_ratio_high", with_(hw, hbm_visible_ratio=2.0),
    r"hbm_visible_ratio: 2 is out of range \(allowed: number 0\.5\.\.1\.2")
put("profile", "runtime_context_negative", with_(hw, runtime_context_bytes=-1),
    r"runtime_context_bytes: -1 is out of range")
put("profile", "nccl_comm_bytes_huge", with_(hw, nccl_comm_bytes=1 << 40),
    r"nccl_comm_bytes: 1099511627776 is out of range")
put("profile", "dtype_bytes_3", with_(hw, dtype_bytes=3), r"dtype_bytes 3: allowed values are 2 \(bf16\) and 4")
put("profile", "gemm_point_zero_flops",
    with_(hw, gemm_points=[{"m": 64, "n": 64, "k": 64, "flops": 0}]),
    r"gemm_points\[0\]\.flops: 0 is out of range")
put("profile", "coll_point_bad_ranks",
    with_(hw, allreduce_points=[{"n_ranks": 0, "lat_s": 1e-5, "bw": 1e9}]),
    r"allreduce_points\[0\]\.n_ranks: 0 is out of range")
for key in ("fp8_flops", "mxfp8_flops", "fp4_flops"):
    put("profile", key + "_tiny", with_(hw, **{key: 1e-300}),
        key + r": 1e-300 is out of range \(allowed: 0 = no such tensor-core path, or "
        r"1e\+06\.\.1e\+19 FLOP/s\)")
put("profile", "sustained_frac_tiny", with_(hw, sustained_frac=1e-300),
    r"sustained_frac: 1e-300 is out of range \(allowed: 0 = not measured, or 0\.001\.\.1\)")
put("profile", "sync_interval_tiny", with_(hw, sync_interval_s=1e-300),
    r"sync_interval_s: 1e-300 is out of range")
put("profile", "truncated", None, r"malformed JSON", raw=json.dumps(hw)[:40])

with tempfile.TemporaryDirectory() as t:
    p = os.path.join(t, "p.json")
    subprocess.run([plan_exe, "--model", "tiny-llama", "--gpus", "2", "-o", p], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(p) as f:
        plan = json.load(f)
def plan_with(section, **kv):
    d = json.loads(json.dumps(plan))
    d[section].update(kv)
    return d
put("plan", "degrees_overflow", plan_with("parallel", tp=1 << 24, cp=1 << 24, pp=1 << 24, dp=1 << 24),
    r"tp\*cp\*pp\*dp = .* is more than 16777216 GPUs")
put("plan", "tp_int_max", plan_with("parallel", tp=2**31 - 1), r"parallel\.tp: 2147483647 is out of range")
put("plan", "tokens_overflow", plan_with("parallel", micro_batch=1 << 24, num_microbatches=1 << 24),
    r"micro_batch\*num_microbatches\*dp\*seq_len = .* is more than 2\^50 tokens")
old = json.loads(json.dumps(plan))
old["version"] = old.pop("schema_version") - 1
put("plan", "schema_version_missing", old,
    r"schema_version: missing; the file is a plan of version 1 .* re-run `plan")
put("plan", "world_size_mismatch", plan_with("rank_order", world_size=3),
    r"rank_order\.world_size: 3, but tp\*cp\*pp\*dp = 2")
put("plan", "bytes_real", plan_with("batch", tokens_per_step=1.5), r"batch\.tokens_per_step: expected an integer")
put("plan", "model_hidden_2e62", json.loads(json.dumps(plan)) | {"model": with_(plan["model"], hidden=1 << 62)},
    r"model\.hidden: 4611686018427387904 is out of range")
put("plan", "hw_peak_tiny", json.loads(json.dumps(plan)) | {"hw": with_(plan["hw"], peak_flops=1e-300)},
    r"hw\.peak_flops: 1e-300 is out of range")
put("plan", "truncated", None, r"malformed JSON", raw=json.dumps(plan)[:100])
