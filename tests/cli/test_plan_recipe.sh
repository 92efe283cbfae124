#!/usr/bin/env bash
# plan --recipe NAME|FILE: the recipe's options plan exactly what the same
# options on the command line plan; an option given on the command line
# (under any spelling, or through --sweep, or the other spelling of the global
# batch) wins over the recipe's; a bad recipe is an error naming the file and
# the field (exit 1), an unknown recipe lists the known ones.
set -u
PLAN="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
recipe=llama3-70b-lora

# the recipe's options written out by hand: the same plan, byte for byte
explicit=(--model llama3-70b --gpus 8 --hw h100-sxm --framework megatron --precision bf16
          --finetune lora --lora-rank 32 --lora-alpha 32 --lora-targets qkv --seq 4096
          --global-batch 32 --micro-batch 1 --tp 1 --pp 4 --vpp 20 --cp 1 --zero 1
          --recompute full)
"$PLAN" --recipe "$recipe" --json > "$tmp/r.json" || fail "--recipe $recipe"
"$PLAN" "${explicit[@]}" --json > "$tmp/e.json" || fail "the recipe's options by hand"
# the same JSON but for the search's own timings
same_plan() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in ("elapsed_s", "configs_per_s")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
a, b = (strip(json.load(open(f))) for f in sys.argv[1:3])
sys.exit(0 if a == b else 1)
EOF
}
same_plan "$tmp/r.json" "$tmp/e.json" || fail "--recipe and its options plan differently"
python3 - "$tmp/r.json" <<'EOF' || fail "the recipe's plan"
import json, sys
d = json.load(open(sys.argv[1]))
ft = d["plan"]["parallel"]["finetune"]
assert ft["mode"] == "lora" and ft["lora_rank"] == 32 and ft["lora_targets"] == ["qkv"], ft
par = d["plan"]["parallel"]
assert (par["tp"], par["pp"], par["vpp"], par["dp"]) == (1, 4, 20, 2), par
assert d["gpus"] == 8 and d["seq_len"] == 4096 and d["global_batch"] == 32, d["gpus"]
EOF
"$PLAN" --recipe "$recipe" > "$tmp/r.txt" || fail "--recipe table"
grep -q "^# recipe: $recipe" "$tmp/r.txt" || fail "no recipe line: $(head -4 "$tmp/r.txt")"
grep -q "^# training: LoRA on a frozen base, rank 32, alpha 32, adapters on qkv" "$tmp/r.txt" \
  || fail "no training line: $(head -5 "$tmp/r.txt")"

# the command line wins, under other spellings too (no "given twice" error)
"$PLAN" --recipe "$recipe" --gpus=16 --mbs 1 --seq-len 4096 --pp 2 --vpp 40 --json \
  > "$tmp/o.json" 2> "$tmp/o.err" || fail "override: $(cat "$tmp/o.err")"
python3 -c "
import json, sys
d = json.load(open('$tmp/o.json'))
par = d['plan']['parallel']
assert d['gpus'] == 16 and (par['pp'], par['vpp'], par['dp']) == (2, 40, 8), par
" || fail "override not applied"
"$PLAN" --recipe "$recipe" --sweep gpus=8,16 > "$tmp/s.txt" 2>&1 || fail "sweep: $(cat "$tmp/s.txt")"
"$PLAN" --recipe "$recipe" --tokens-per-step 131072 > "$tmp/t.txt" 2>&1 \
  || fail "--tokens-per-step beside the recipe's global batch: $(cat "$tmp/t.txt")"
cp "$(dirname "$0")/../../recipes/$recipe.json" "$tmp/mine.json"
"$PLAN" --recipe "$tmp/mine.json" --json > "$tmp/p.json" || fail "--recipe by path"
same_plan "$tmp/p.json" "$tmp/r.json" || fail "the recipe by path plans differently"

# errors: exit 1 naming the file and the field, or the known recipes
want_error() { # stderr pattern, then the plan arguments
    local pat="$1"; shift
    "$PLAN" "$@" > "$tmp/out" 2> "$tmp/err"
    [ $? -eq 1 ] || fail "$*: want exit 1, got: $(cat "$tmp/err")"
    grep -q -- "$pat" "$tmp/err" || fail "$*: $(cat "$tmp/err")"
}
bad() { # name, python expression on d (the recipe) -> writes $tmp/NAME.json
    python3 -c "
import json
d = json.load(open('$tmp/mine.json'))
$2
json.dump(d, open('$tmp/$1.json', 'w'))"
}
want_error "no such recipe in .*; the recipes: .*$recipe" --recipe no-such-recipe
bad extra "d['author'] = 'x'"
want_error "recipe $tmp/extra.json: unknown field \"author\"; allowed: name, description, source, options" \
  --recipe "$tmp/extra.json"
bad noopt "del d['options']"
want_error "recipe $tmp/noopt.json: options: required, an object" --recipe "$tmp/noopt.json"
bad unknown "d['options']['tensor-parallel'] = 2"
want_error "recipe $tmp/unknown.json: options.tensor-parallel: not a plan option" \
  --recipe "$tmp/unknown.json"
bad output "d['options']['json'] = True"
want_error "recipe $tmp/output.json: options.json: a recipe sets how a run trains" \
  --recipe "$tmp/output.json"
bad switch "d['options']['no-sp'] = False"
want_error "recipe $tmp/switch.json: options.no-sp: a switch: allowed value true" \
  --recipe "$tmp/switch.json"
bad kind "d['options']['tp'] = [1, 2]"
want_error "recipe $tmp/kind.json: options.tp: allowed a string or a number" \
  --recipe "$tmp/kind.json"
bad value "d['options']['tp'] = 0"
want_error "recipe $tmp/value.json: options: --tp \"0\": expected an integer" \
  --recipe "$tmp/value.json"
bad nested "d['options']['recipe'] = 'x'"
want_error "recipe $tmp/nested.json: options.recipe: a recipe sets how a run trains" \
  --recipe "$tmp/nested.json"
printf '{"options": {"tp": 1,}}' > "$tmp/syntax.json"
want_error "recipe $tmp/syntax.json: line 1" --recipe "$tmp/syntax.json"
# a bad value the command line replaces is never read
"$PLAN" --recipe "$tmp/value.json" --tp 2 > /dev/null 2>&1 || fail "--tp over the recipe's bad tp"
"$PLAN" --recipe "$recipe" --recipe "$recipe" > "$tmp/out" 2> "$tmp/err"
[ $? -eq 2 ] || fail "--recipe twice: want exit 2"
"$PLAN" --help | grep -q -- '--recipe NAME|FILE' || fail "--help lists no --recipe"
"$PLAN" --list-recipes > "$tmp/list" || fail "--list-recipes"
grep -q "^# recipes (in .*recipes)" "$tmp/list" || fail "--list-recipes header: $(head -1 "$tmp/list")"
grep -q "^$recipe  *Llama 3 70B LoRA fine-tuning on 8 H100" "$tmp/list" || fail "--list-recipes: $(cat "$tmp/list")"
grep -q "^automodel-llama3-70b-lora  *Llama 3.3 70B LoRA fine-tuning on 8 H100 with NeMo AutoModel" \
  "$tmp/list" || fail "--list-recipes: no AutoModel recipe: $(cat "$tmp/list")"
# the AutoModel recipe plans what its benchmark config runs, on 2 nodes too
"$PLAN" --recipe automodel-llama3-70b-lora --gpus 16 --top 1 > "$tmp/am" 2>&1 \
  || fail "automodel recipe on 16 GPUs: $(tail -2 "$tmp/am")"
grep -q "^# chosen: #1, TP 2, CP 1, EP 1, ETP 1, PP 1, VPP 1, DP 8, micro-batch 2 x 2, ZeRO-3, recompute full" \
  "$tmp/am" || fail "automodel recipe on 16 GPUs: $(grep chosen "$tmp/am")"
grep -q "^# training: LoRA on a frozen base, rank 16, alpha 32, adapters on qkv,proj,fc1,fc2" \
  "$tmp/am" || fail "automodel recipe: $(grep training "$tmp/am")"
bad listing "d['options']['list-recipes'] = True"
want_error "recipe $tmp/listing.json: options.list-recipes: a recipe sets how a run trains" \
  --recipe "$tmp/listing.json"
echo "plan --recipe: ok"
