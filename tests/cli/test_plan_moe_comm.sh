#!/usr/bin/env bash
# plan --moe-dispatcher and --moe-a2a-overlap, the expert communication a
# Megatron-Core run chooses.  The overlap: every plan it lists keeps
# Megatron-Core's rules for it and is faster than the same layout without
# it.  DeepEP / HybridEP: cheaper than the all-to-all across nodes, the same
# inside one.  The requests the rules refuse are errors naming them; the
# plan file and the exports carry both, the executor refuses both; a
# framework whose overlap trait is on takes it where the rules allow.
set -u
PLAN="$1"
EXPORT="$2"
EXECUTE="$3"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect_error.sh"
common=(--model mixtral-8x7b --gpus 64 --hw h100-sxm --framework megatron --no-milp)

# on: the listed plans keep the rules, and the chosen one is faster than its
# own layout with the overlap off
"$PLAN" "${common[@]}" --moe-a2a-overlap on --top 10 --json > "$tmp/on.json" \
  || fail "plan --moe-a2a-overlap on"
python3 - "$tmp/on.json" > "$tmp/fixed" <<'PY' || fail "plans under --moe-a2a-overlap on"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["plans"], "no plans"
for p in d["plans"]:
    q = p["parallel"]
    assert q["moe_a2a_overlap"] is True, q
    assert q["ep"] > 1, q
    assert q["pp"] == 1 or q["vpp"] > 1, q
    assert q["recompute"] != "full", q
c = d["plans"][0]
q = c["parallel"]
t = c["time"]
assert t["ep_comm_s"] > 0, t
print(" ".join(["--tp", str(q["tp"]), "--cp", str(q["cp"]), "--ep", str(q["ep"]),
                "--etp", str(q["etp"]), "--pp", str(q["pp"]), "--vpp", str(q["vpp"]),
                "--dp", str(q["dp"]), "--zero", str(q["zero"]), "--recompute", q["recompute"],
                "--schedule", q["schedule"], "--micro-batch", str(c["micro_batch"]),
                "--sp", "on" if q["sp"] else "off"]))
PY
read -r -a fixed < "$tmp/fixed"
"$PLAN" "${common[@]}" "${fixed[@]}" --moe-a2a-overlap on --json > "$tmp/on1.json" \
  || fail "the chosen layout, on"
"$PLAN" "${common[@]}" "${fixed[@]}" --moe-a2a-overlap off --json > "$tmp/off1.json" \
  || fail "the chosen layout, off"
python3 - "$tmp/on1.json" "$tmp/off1.json" <<'PY' || fail "overlap against none"
import json, sys
on, off = (json.load(open(f))["plans"][0] for f in sys.argv[1:3])
assert on["parallel"]["moe_a2a_overlap"] and "moe_a2a_overlap" not in off["parallel"]
# the all-to-all itself is the same; the overlap hides part of it
ce, fe = on["breakdown"]["comm"]["ep"], off["breakdown"]["comm"]["ep"]
assert ce["total_s"] == fe["total_s"] and fe["exposed_s"] == fe["total_s"], (ce, fe)
assert ce["exposed_s"] < ce["total_s"], ce
assert on["time"]["ep_comm_s"] < off["time"]["ep_comm_s"], (on["time"], off["time"])
assert on["step_time_s"] < off["step_time_s"], (on["step_time_s"], off["step_time_s"])
# everything but the all-to-all is the same plan
for k in ("compute_s", "tp_comm_s", "dp_comm_s"):
    assert abs(on["time"][k] - off["time"][k]) <= 1e-9 * max(1.0, off["time"][k]), k
PY
echo "ok: the chosen layout is faster with the overlap, by its all-to-all only"

# the default under megatron: off, and the plan file says so
"$PLAN" "${common[@]}" -o "$tmp/default.plan.json" > /dev/null || fail "plan, default"
"$PLAN" "${common[@]}" --moe-a2a-overlap on -o "$tmp/on.plan.json" > /dev/null \
  || fail "plan -o, on"
python3 - "$tmp/default.plan.json" "$tmp/on.plan.json" <<'PY' || fail "plan files"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["parallel"]["moe_a2a_overlap"] is False, a["parallel"]
assert b["parallel"]["moe_a2a_overlap"] is True, b["parallel"]
PY
echo "ok: the plan file records the choice"

# the CPU executor runs each all-to-all where it is issued: it refuses the plan
"$EXECUTE" --check --plan "$tmp/on.plan.json" > "$tmp/out" 2>&1 && fail "execute --check: exit 0"
grep -q 'moe_a2a_overlap = true: cpu-executor runs each layer' "$tmp/out" \
  || fail "execute --check: $(cat "$tmp/out")"
"$EXECUTE" --check --plan "$tmp/default.plan.json" > "$tmp/out" 2>&1 \
  || fail "execute --check, default: $(cat "$tmp/out")"
echo "ok: the executor refuses the overlap and takes the plan without it"

# the exports write the framework's own switch, only when it is on
"$EXPORT" --plan "$tmp/on.plan.json" --to megatron -o "$tmp/on.sh" > /dev/null \
  || fail "export megatron, on"
grep -q -- '--overlap-moe-expert-parallel-comm' "$tmp/on.sh" || fail "megatron export lacks the flag"
"$EXPORT" --plan "$tmp/default.plan.json" --to megatron -o "$tmp/off.sh" > /dev/null \
  || fail "export megatron, off"
! grep -q -- '--overlap-moe-expert-parallel-comm' "$tmp/off.sh" || fail "megatron export: flag when off"
"$EXPORT" --plan "$tmp/on.plan.json" --to nemo -o "$tmp/on.yaml" > /dev/null \
  || fail "export nemo, on"
grep -qE 'overlap_moe_expert_parallel_comm: *true' "$tmp/on.yaml" || fail "nemo export lacks the key"
echo "ok: megatron and nemo exports carry the overlap"

# requests the rules refuse: each an error naming the rule
expect_error "a dense model" 'moe-a2a-overlap on: .*llama3-8b has no experts' \
  --model llama3-8b --gpus 8 --framework megatron --moe-a2a-overlap on
expect_error "ep 1" 'moe-a2a-overlap on: .*ep = 1.*allowed: ep > 1' \
  "${common[@]}" --moe-a2a-overlap on --ep 1
expect_error "full recompute" 'moe-a2a-overlap on: .*full recompute.*allowed: recompute none or selective' \
  "${common[@]}" --moe-a2a-overlap on --recompute full
expect_error "a pipeline without virtual chunks" 'moe-a2a-overlap on: .*pp = 2, vpp = 1.*allowed: vpp > 1' \
  "${common[@]}" --moe-a2a-overlap on --pp 2 --schedule 1f1b
expect_error "a framework without it" 'torchtitan cannot run the expert all-to-all.*capability moe_a2a_overlap.*--framework .*megatron.* can' \
  --model mixtral-8x7b --gpus 64 --framework torchtitan --moe-a2a-overlap on
expect_error "a release before it" 'megatron cannot run the expert all-to-all.*capability moe_a2a_overlap.*its current release can' \
  "${common[@]}" --framework-release nemo-24.07 --moe-a2a-overlap on
expect_error "a bad value" 'moe-a2a-overlap.*allowed values are on, off' \
  "${common[@]}" --moe-a2a-overlap yes

# DeepEP and HybridEP: gpt-oss-20b's 32 experts over 16 ranks cross 8-GPU
# nodes; deduplicated, the all-to-all costs less there, and the same within
# a node
for ep in 16 8; do
  for d in alltoall deepep hybridep; do
    "$PLAN" --model gpt-oss-20b --gpus 64 --hw h100-sxm --framework megatron --no-milp \
      --tp 1 --pp 1 --cp 1 --ep $ep --dp 64 --micro-batch 1 --zero 1 \
      --recompute none --moe-dispatcher $d --json > "$tmp/$d-$ep.json" || fail "--moe-dispatcher $d, ep $ep"
  done
done
python3 - "$tmp" <<'PY' || fail "dispatchers"
import json, os, sys
def plan(name):
    return json.load(open(os.path.join(sys.argv[1], name)))["plans"][0]
for ep in (16, 8):
    a, d, h = (plan(f"{x}-{ep}.json") for x in ("alltoall", "deepep", "hybridep"))
    assert "moe_dispatcher" not in a["parallel"], a["parallel"]
    assert d["parallel"]["moe_dispatcher"] == "deepep", d["parallel"]
    assert h["parallel"]["moe_dispatcher"] == "hybridep", h["parallel"]
    ea, ed, eh = (p["breakdown"]["comm"]["ep"] for p in (a, d, h))
    assert ea["crosses_node"] == (ep > 8), ea
    if ep > 8:
        assert ed["total_s"] < ea["total_s"] and d["step_time_s"] < a["step_time_s"], (ea, ed)
    else:
        assert ed["total_s"] == ea["total_s"] and d["step_time_s"] == a["step_time_s"], (ea, ed)
    assert eh["total_s"] == ed["total_s"], (ed, eh)  # one design, one cost
    for k in ("compute_s", "tp_comm_s", "dp_comm_s"):
        assert a["time"][k] == d["time"][k], k
PY
echo "ok: DeepEP and HybridEP cost less across nodes and the same inside one"
"$PLAN" "${common[@]}" --moe-dispatcher hybridep --moe-a2a-overlap on -o "$tmp/flex.plan.json" \
  > /dev/null || fail "plan -o, hybridep"
python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["parallel"]; assert p["moe_dispatcher"] == "hybridep" and p["moe_a2a_overlap"], p' \
  "$tmp/flex.plan.json" || fail "plan file: dispatcher"
"$EXPORT" --plan "$tmp/flex.plan.json" --to megatron -o "$tmp/flex.sh" > /dev/null || fail "export megatron, flex"
grep -q -- '--moe-token-dispatcher-type flex' "$tmp/flex.sh" && grep -q -- '--moe-flex-dispatcher-backend hybridep' "$tmp/flex.sh" \
  || fail "megatron export lacks the flex dispatcher: $(grep -i dispatcher "$tmp/flex.sh")"
"$EXPORT" --plan "$tmp/flex.plan.json" --to nemo -o "$tmp/flex.yaml" > /dev/null || fail "export nemo, flex"
grep -qE 'moe_token_dispatcher_type: *flex' "$tmp/flex.yaml" && grep -qE 'moe_flex_dispatcher_backend: *hybridep' "$tmp/flex.yaml" \
  || fail "nemo export lacks the flex dispatcher"
grep -qE 'moe_token_dispatcher_type: *alltoall' "$tmp/on.yaml" || fail "nemo export: all-to-all by default"
"$EXECUTE" --check --plan "$tmp/flex.plan.json" > "$tmp/out" 2>&1 && fail "execute --check flex: exit 0"
grep -q 'moe_dispatcher = hybridep: cpu-executor does not run it' "$tmp/out" || fail "execute --check flex: $(cat "$tmp/out")"
echo "ok: the plan file and the exports carry the dispatcher; the executor refuses it"
expect_error "deepep on a dense model" 'moe-dispatcher deepep: .*llama3-8b has no experts' \
  --model llama3-8b --gpus 8 --framework megatron --moe-dispatcher deepep
expect_error "deepep on one expert rank" 'moe-dispatcher deepep: .*ep = 1, etp = 1.*allowed: ep x etp > 1' \
  "${common[@]}" --moe-dispatcher deepep --ep 1 --etp 1
expect_error "deepep under llm-foundry" 'llm-foundry cannot run the deepep token dispatcher.*capability moe_deepep.*--framework .*megatron.* can' \
  --model mixtral-8x7b --gpus 64 --framework llm-foundry --moe-dispatcher deepep
expect_error "deepep under torchtitan's 2025 release" 'torchtitan cannot run the deepep token dispatcher.*its current release can' \
  --model mixtral-8x7b --gpus 64 --framework torchtitan --framework-release 2025 --moe-dispatcher deepep
# torchtitan runs DeepEP; its 0.2.2 TOML names it, and has no HybridEP
"$PLAN" --model qwen3-235b-a22b --gpus 256 --hw h100-sxm --framework torchtitan --no-milp \
  --moe-dispatcher deepep --ep 8 --pp 1 --zero 3 -o "$tmp/tt.plan.json" > /dev/null || fail "torchtitan deepep"
"$EXPORT" --plan "$tmp/tt.plan.json" --to torchtitan -o "$tmp/tt.toml" > /dev/null || fail "export torchtitan deepep"
grep -q '^expert_parallel_comm_backend = "deepep"' "$tmp/tt.toml" || fail "torchtitan export lacks deepep"
"$PLAN" --model qwen3-235b-a22b --gpus 256 --hw h100-sxm --framework torchtitan --no-milp \
  --moe-dispatcher hybridep --ep 8 --zero 3 -o "$tmp/tth.plan.json" > /dev/null || fail "torchtitan hybridep"
"$EXPORT" --plan "$tmp/tth.plan.json" --to torchtitan -o "$tmp/tth.toml" > "$tmp/out" 2>&1 \
  && fail "export torchtitan hybridep: exit 0"
grep -q 'hybridep dispatcher' "$tmp/out" || fail "export torchtitan hybridep: $(cat "$tmp/out")"
echo "ok: torchtitan plans DeepEP and HybridEP; its export writes DeepEP and refuses HybridEP"
expect_error "hybridep before Megatron-Core 0.15" 'megatron cannot run the hybridep token dispatcher.*capability moe_hybridep.*its current release can' \
  "${common[@]}" --framework-release nemo-25.09 --moe-dispatcher hybridep
"$PLAN" "${common[@]}" --framework-release nemo-25.09 --moe-dispatcher deepep > /dev/null \
  || fail "deepep under nemo-25.09"
expect_error "a bad dispatcher" 'moe-dispatcher.*allowed values are alltoall, deepep, hybridep' \
  "${common[@]}" --moe-dispatcher nccl

# a profile whose trait is on: every listed plan takes the overlap exactly
# where the rules allow it
python3 - "$(dirname "$0")/../../frameworks/megatron.json" "$tmp/meg-overlap.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["name"] = "meg-overlap"
d["runtime"]["moe_a2a_overlap"] = True
json.dump(d, open(sys.argv[2], "w"))
PY
"$PLAN" --model mixtral-8x7b --gpus 64 --hw h100-sxm --framework "$tmp/meg-overlap.json" \
  --no-milp --top 40 --json > "$tmp/trait.json" || fail "plan under the trait"
python3 - "$tmp/trait.json" <<'PY' || fail "the trait's default"
import json, sys
plans = json.load(open(sys.argv[1]))["plans"]
seen = set()
for p in plans:
    q = p["parallel"]
    allowed = q["ep"] > 1 and (q["pp"] == 1 or q["vpp"] > 1) and q["recompute"] != "full"
    assert q.get("moe_a2a_overlap", False) == allowed, q
    seen.add(allowed)
print("plans with and without the overlap:", sorted(seen))
PY
echo "ok: the trait applies where the rules allow it"
echo "PASS"
