#!/usr/bin/env bash
# compare --html draws a run's plan as the plan file records it: each
# stage's memory bar and micro-batch time are the file's prediction.stages,
# written under the runtime traits of the framework the plan was made for
# (Megatron-LM pads the vocabulary to a multiple of 128, so its embedding and
# head hold more rows than the planner's defaults), not the cost model run
# again without them.  A plan
# naming a framework that cannot be loaded is an error naming the report
# and the framework.  No browser needed: the page's data- attributes are
# read back.
set -u
build=${PARALLAX_BUILD_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# a vocabulary of 300: Megatron pads it to 384 rows, the planner's own
# profile keeps 300, so the two frameworks' stages differ
cat >"$tmp/m300.json" <<'JSON'
{"model_type": "llama", "hidden_size": 64, "intermediate_size": 176, "num_hidden_layers": 4,
 "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
 "max_position_embeddings": 128, "hidden_act": "silu", "tie_word_embeddings": false}
JSON
fixed="--model $tmp/m300.json --gpus 2 --pp 2 --tp 1 --dp 1 --micro-batch 1 --global-batch 8
       --schedule 1f1b --recompute none --zero 0"
for fw in megatron parallax; do
  "$build/plan" $fixed --framework $fw -o "$tmp/$fw.plan.json" >"$tmp/$fw.txt" 2>"$tmp/err" \
    || fail "plan --framework $fw: $(cat "$tmp/err")"
done
report() { # file plan
  cat >"$1" <<JSON
{"plan": "$2", "world_size": 2,
 "predicted": {"step_time_s": 0.01, "tokens_per_s": 25600, "mfu": 0.1, "hfu": 0.1,
               "peak_memory_bytes": 1000000},
 "measured": {"step_time_s": 0.012, "tokens_per_s": 21000, "mfu": 0.08, "hfu": 0.08,
              "peak_memory_bytes": 1100000}}
JSON
}
report "$tmp/run.json" "$tmp/megatron.plan.json"
"$build/compare" --html "$tmp/cmp.html" "$tmp/run.json" >"$tmp/cmp.txt" 2>"$tmp/err" \
  || fail "compare --html: $(cat "$tmp/err")"
python3 - "$tmp/cmp.html" "$tmp/megatron.plan.json" "$tmp/parallax.plan.json" <<'PY' \
  || fail "compare page against the plan file"
import json, re, sys
page = open(sys.argv[1]).read()
plan = json.load(open(sys.argv[2]))
other = json.load(open(sys.argv[3]))
assert plan["framework"] == "megatron", plan.get("framework")
stages = plan["prediction"]["stages"]
# the case tests something: the framework's traits move a stage's numbers
assert [s["total_bytes"] for s in stages] != \
    [s["total_bytes"] for s in other["prediction"]["stages"]], "traits change nothing here"
bars = re.findall(r'<g class="mem-bar" data-stage="(\d+)" data-total-bytes="(\d+)">', page)
rows = re.findall(r'<g class="stage-row" data-stage="(\d+)" data-ops="\d+" [^>]*'
                  r'data-microbatch-s="([0-9.eE+-]+)">', page)
assert len(bars) == len(stages) == len(rows) == 2, (bars, rows)
for (i, total), (j, mb), s in zip(bars, rows, stages):
    assert int(total) == s["total_bytes"], ("stage", i, int(total), s["total_bytes"])
    assert abs(float(mb) - s["microbatch_s"]) <= 1e-8 * s["microbatch_s"], \
        ("stage", j, float(mb), s["microbatch_s"])
print("compare page: stages as the plan file records them:",
      [s["total_bytes"] for s in stages], [s["microbatch_s"] for s in stages])
PY

# a framework that cannot be loaded: an error naming the report and the framework
sed 's/"framework": "megatron"/"framework": "no-such-framework"/' "$tmp/megatron.plan.json" \
  >"$tmp/bad.plan.json"
grep -q no-such-framework "$tmp/bad.plan.json" || fail "the plan file names no framework"
report "$tmp/bad.json" "$tmp/bad.plan.json"
"$build/compare" --html "$tmp/bad.html" "$tmp/bad.json" >"$tmp/out" 2>"$tmp/err" \
  && fail "compare --html accepted an unknown framework"
grep -q 'bad.json' "$tmp/err" && grep -q 'no-such-framework' "$tmp/err" \
  || fail "the error names neither the report nor the framework: $(cat "$tmp/err")"
[ ! -e "$tmp/bad.html" ] || fail "a page was written after the error"
echo "test_compare_html_recorded: ok"
