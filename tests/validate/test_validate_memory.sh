#!/bin/sh
# validate sets a row's published peak memory (measured.memory_gb) beside the
# predicted worst-stage peak: a "# peak memory per GPU" table in GiB and
# meas_memory_gb / pred_memory_bytes in the JSON; rows without it print none.
set -u
B="${PARALLAX_BUILD_ROOT:?}"
S="${PARALLAX_SOURCE_ROOT:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# one torchtitan row (pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, table 3)
cat > "$tmp/rows.json" <<'JSON'
[{"id": "torchtitan2412-llama3-8b-t3-fsdp", "group": "torchtitan-2412",
  "source": {"ref": "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md"},
  "framework": "torchtitan (FSDP2, DTensor TP/AsyncTP, PP, CP), torch nightly 2024-12-23",
  "precision": "bf16",
  "model": {"name": "Llama-3/3.1-8B", "layers": 32, "hidden": 4096, "ffn": 14336, "heads": 32,
            "kv_heads": 8, "vocab": 128256, "seq_len": 8192, "moe": null, "arch_notes": "SwiGLU, RoPE, GQA"},
  "hardware": {"gpu": "H100", "num_gpus": 128, "gpus_per_node": 8, "gpu_memory_gb": 96},
  "parallel": {"tp": 1, "pp": 1, "vpp": null, "cp": 1, "ep": null, "dp": 128, "zero_stage": 3,
               "fsdp": true, "recompute": "selective", "micro_batch": null, "global_batch": 256,
               "local_batch_size": 2},
  "measured": {"tflops_per_gpu": null, "mfu": null, "tokens_per_sec_per_gpu": 5605,
               "step_time_s": null, "memory_gb": 67.0,
               "memory_note": "max peak memory (GiB) across ranks"},
  "derived": {}, "confidence": "high", "notes": ""}]
JSON
fail=0
out=$("$B/validate" "$tmp/rows.json") || { echo "validate exited $?"; fail=1; }
line=$(printf '%s\n' "$out" | sed -n '/^# peak memory per GPU, GiB/,$p' | grep '^torchtitan2412-llama3-8b-t3-fsdp ')
[ -n "$line" ] || { echo "no peak-memory line: $out"; fail=1; }
"$B/validate" "$tmp/rows.json" --json > "$tmp/v.json" || { echo "--json exited $?"; fail=1; }
python3 - "$tmp/v.json" "$line" <<'PY' || fail=1
import json, sys
row = json.load(open(sys.argv[1]))["rows"][0]
assert row["meas_memory_gb"] == 67.0, row.get("meas_memory_gb")
pb = row["pred_memory_bytes"]
assert isinstance(pb, int) and pb > 0, pb
f = sys.argv[2].split()
pred_gib = pb / 2**30
assert abs(float(f[3]) - pred_gib) <= 0.05, (f, pred_gib)
assert abs(float(f[4]) - 100 * (pred_gib / 67.0 - 1)) <= 0.05, (f, pred_gib)
print("validate memory: published 67.0 GiB, predicted %.1f GiB" % pred_gib)
PY
# a file without memory_gb: no table, null in the JSON
DATA="$S/tests/validate/data/published-megatron.json"
"$B/validate" "$DATA" | grep -q '^# peak memory per GPU' && { echo "a table without published memory"; fail=1; }
"$B/validate" "$DATA" --json | python3 -c '
import json, sys
rows = [r for r in json.load(sys.stdin)["rows"] if "meas_memory_gb" in r]
assert rows and all(r["meas_memory_gb"] is None for r in rows), rows[:1]
' || { echo "published-megatron: meas_memory_gb not null"; fail=1; }
[ $fail -eq 0 ] && echo "validate_memory: ok"
exit $fail
