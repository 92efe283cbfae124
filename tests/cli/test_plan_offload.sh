#!/usr/bin/env bash
# plan --offload auto|none|optimizer and --offload-fraction: parse errors name
# the allowed values (exit 2); parameter and activation offload are refused
# as not modelled; a framework that does not offload (the default, parallax:
# this project's executor), a share where the framework offloads all of it
# (deepspeed), and a profile without the host (tpu-v5p) are refused by name
# (exit 1).  Llama 3 70B on 8 H100s fits only with the optimizer on the
# host: the default (auto) finds that plan and says why, --offload none
# refuses; the plan file records the offload, reads back and rewrites byte
# for byte; a plan that fits without offload writes no offload key.
set -u
PLAN="$1"
READBACK="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

want() { # exit status, stderr pattern, then the plan arguments
    local rc="$1" pat="$2"; shift 2
    "$PLAN" "$@" > "$tmp/out" 2> "$tmp/err"
    local got=$?
    [ $got -eq "$rc" ] || fail "$*: exit $got, want $rc: $(cat "$tmp/err")"
    grep -q -- "$pat" "$tmp/err" || fail "$*: $(cat "$tmp/err")"
}
want 2 'allowed values are auto, none, optimizer' --model 70b --gpus 8 --offload cpu
want 1 'not modelled' --model 70b --gpus 8 --offload params
want 2 'needs --offload optimizer' --model 70b --gpus 8 --offload-fraction 0.5
want 2 'a share in (0, 1]' --model 70b --gpus 8 --offload optimizer --offload-fraction 1.5
want 1 'framework parallax cannot run optimizer offload' --model 70b --gpus 8 --offload optimizer
grep -q 'megatron' "$tmp/err" || fail "the refusal names no framework that offloads: $(cat "$tmp/err")"
want 1 'cannot run optimizer offload of a fraction (capability offload_fraction' --model 70b --gpus 8 --framework deepspeed \
  --offload optimizer --offload-fraction 0.5
want 1 'does not describe the host' --model llama3-8b --gpus 8 --hw tpu-v5p --framework megatron \
  --offload optimizer
"$PLAN" --help | grep -q -- '--offload auto|none|optimizer' || fail "--help lists no --offload"

FW="--framework megatron --partition uniform"
want 1 'no configuration of llama3-70b on 8 GPUs fits' --model 70b --gpus 8 $FW --offload none
"$PLAN" --model 70b --gpus 8 $FW -o "$tmp/p.json" > "$tmp/table" 2> "$tmp/err" \
  || fail "70b on 8 GPUs with auto offload: $(cat "$tmp/err")"
grep -q '^# offload: optimizer state on the host (fraction 1.00; nothing fits on the GPUs alone)' \
  "$tmp/table" || fail "no offload line: $(grep '^#' "$tmp/table")"
"$READBACK" "$tmp/p.json" "$tmp/p2.json" > /dev/null || fail "offload plan does not read back"
cmp -s "$tmp/p.json" "$tmp/p2.json" || fail "offload plan rewritten differs"
python3 - "$tmp/p.json" <<'PY' || fail "offload plan file"
import json, sys
p = json.load(open(sys.argv[1]))
o = p["parallel"]["offload"]
assert o == {"kind": "optimizer", "fraction": 1.0}, o
mem, t, hw = p["prediction"]["memory"], p["prediction"]["time"], p["hw"]
assert 0 < mem["host_bytes"] <= hw["host_mem_bytes"], mem
assert mem["optimizer_bytes"] == 0, mem
assert 0 < t["offload_s"] <= t["optimizer_s"] < t["step_s"], t
PY
# a share: Megatron keeps the rest on the device
"$PLAN" --model 70b --gpus 16 $FW --offload optimizer --offload-fraction 0.5 --json \
  > "$tmp/half.json" 2> "$tmp/err" || fail "fraction 0.5: $(cat "$tmp/err")"
python3 - "$tmp/half.json" <<'PY' || fail "fraction 0.5 plan"
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["plans"]:
    assert p["parallel"]["offload"] == {"kind": "optimizer", "fraction": 0.5}, p["parallel"]
    assert p["memory"]["optimizer_bytes"] > 0 and p["memory"]["host_bytes"] > 0, p["memory"]
assert "offload_auto" not in d
PY
"$PLAN" --model llama3-8b --gpus 8 $FW -o "$tmp/none.json" > /dev/null 2>&1 || fail "8b plan"
! grep -q '"offload"\|host_bytes\|offload_s' "$tmp/none.json" || fail "a plan without offload writes it"
echo "plan --offload: ok"
