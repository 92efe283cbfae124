#!/usr/bin/env bash
# test_export_planned.sh — a plan made under a framework's profile is one
# that framework's exporter takes: for a sample of presets x GPU counts,
# `plan --framework X -o` then `export --to X` succeeds and the file reads
# back against the plan (export_check.py).  The sample is the presets that
# have a shape the target's release builds (torchtitan's flavours) and that
# fit the sampled GPU counts.  (DeepSpeed is not sampled: its profile runs
# TP with PP, as Megatron-style rows mapped to it did, while its export
# writes AutoTP, which does not run under a PipelineModule.)
set -u
build=${PARALLAX_BUILD_ROOT:?}
here=$(cd "$(dirname "$0")" && pwd)
check="$here/export_check.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 -c 'import yaml, tomllib' 2>/dev/null || fail "python3 with tomllib (3.11) and PyYAML (python3-yaml, scripts/setup) needed"

n=0
planned_exports() { # framework "models" "gpu counts"
  local fw=$1 m g
  for m in $2; do
    for g in $3; do
      local f="$tmp/$fw-$m-$g"
      "$build/plan" --model "$m" --gpus "$g" --framework "$fw" -o "$f.json" >"$f.txt" 2>&1 \
        || fail "plan --model $m --gpus $g --framework $fw: $(tail -1 "$f.txt")"
      "$build/export" --plan "$f.json" --to "$fw" -o "$f.out" 2>"$f.err" \
        || fail "$m on $g GPUs planned for $fw, refused by export --to $fw: $(cat "$f.err")"
      python3 "$check" "$fw" "$f.out" "$f.json" >/dev/null || fail "$m on $g GPUs exported to $fw"
      echo "ok: $fw $m $g GPUs: $(grep '^# chosen:' "$f.txt" | cut -c1-110)"
      n=$((n + 1))
    done
  done
}
planned_exports torchtitan "llama3-8b llama3-70b" "64 512 2048"
planned_exports torchtitan "llama3-405b" "512 2048"
echo "ok: $n plans exported to the framework they were planned for"
