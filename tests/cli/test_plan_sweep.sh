#!/usr/bin/env bash
# plan --sweep KEY=LIST: the product of the lists, the first key varying
# slowest; each point's best plan is what `plan` with the point's options
# chooses (--json, and --csv's rows equal --json's); a point that cannot be
# planned is a row with its reason, not an abort; --explain prints each
# point's breakdown, the one `plan --explain` prints for the point, and a
# refused point's reason; a product over the documented limit, an unknown
# key, a key given twice, a swept key beside its own option, -o and --json
# with --explain are refused with a message naming them.
set -u
PLAN="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
common=(--model 70b --partition uniform --threads 1)

"$PLAN" "${common[@]}" --sweep gpus=256,512 --sweep seq=4096,8192 --json > "$tmp/gs.json" \
  || fail "--sweep gpus x seq exited $?"
"$PLAN" "${common[@]}" --sweep gpus=256,512 --sweep seq=4096,8192 --csv > "$tmp/gs.csv" \
  || fail "--sweep gpus x seq --csv exited $?"
for g in 256 512; do for s in 4096 8192; do
  "$PLAN" "${common[@]}" --gpus $g --seq $s --top 1 --json > "$tmp/one-$g-$s.json" \
    || fail "plan --gpus $g --seq $s exited $?"
done; done
"$PLAN" "${common[@]}" --gpus 64 --sweep framework=parallax,megatron --sweep precision=bf16,fp8 \
  --json > "$tmp/fp.json" || fail "--sweep framework x precision exited $? (a refused point aborted it?)"
"$PLAN" "${common[@]}" --gpus 64 --sweep framework=parallax,megatron --sweep precision=bf16,fp8 \
  --csv > "$tmp/fp.csv" || fail "--sweep framework x precision --csv exited $?"
"$PLAN" "${common[@]}" --gpus 512 --sweep hw=h100-sxm,h200 --sweep global-batch=512..1024 \
  --json > "$tmp/hb.json" || fail "--sweep hw x global-batch exited $?"
"$PLAN" "${common[@]}" --gpus 512 --hw h200 --global-batch 1024 --top 1 --json > "$tmp/h200.json" \
  || fail "plan --hw h200 exited $?"
"$PLAN" "${common[@]}" --sweep gpus=256,512 --sweep seq=4096,8192 > "$tmp/gs.txt" \
  || fail "--sweep table exited $?"
[ "$(grep -Ec '^ +(256|512) +(4096|8192) ' "$tmp/gs.txt")" -eq 4 ] || fail "table: $(cat "$tmp/gs.txt")"

# --explain: a point's breakdown is plain plan's, line for line from the
# memory heading to the rule of thumb's scores
"$PLAN" "${common[@]}" --sweep gpus=64,128 --explain > "$tmp/ex.txt" \
  || fail "--sweep --explain exited $?"
[ "$(grep -c '^# point [12] of 2: gpus=' "$tmp/ex.txt")" -eq 2 ] || fail "point headers: $(grep '^# point' "$tmp/ex.txt")"
for g in 64 128; do
  "$PLAN" "${common[@]}" --gpus $g --explain > "$tmp/ex-$g.txt" || fail "plan --gpus $g --explain exited $?"
  sed -n '/^# memory per GPU/,/^# scores:/p' "$tmp/ex-$g.txt" > "$tmp/want-$g.txt"
  sed -n "/^# point [12] of 2: gpus=$g /,/^# scores:/p" "$tmp/ex.txt" | sed 1,2d > "$tmp/got-$g.txt"
  [ "$(grep -c '^  step ' "$tmp/want-$g.txt")" -eq 1 ] || fail "plan --gpus $g --explain: no step line"
  cmp -s "$tmp/want-$g.txt" "$tmp/got-$g.txt" \
    || fail "gpus=$g: the sweep's breakdown differs from plan --explain's: $(diff "$tmp/want-$g.txt" "$tmp/got-$g.txt" | head -5)"
done
[ "$(grep '^  step ' "$tmp/ex-64.txt")" != "$(grep '^  step ' "$tmp/ex-128.txt")" ] \
  || fail "64 and 128 GPUs explain the same step"
"$PLAN" "${common[@]}" --gpus 64 --sweep framework=parallax,megatron --sweep precision=fp8 \
  --explain > "$tmp/exf.txt" || fail "--sweep framework --explain exited $?"
grep -A1 '^# point 1 of 2: framework=parallax, precision=fp8' "$tmp/exf.txt" | grep -q '^# no plan: .*fp8' \
  || fail "refused point: $(grep -A1 '^# point 1' "$tmp/exf.txt")"
[ "$(grep -c '^# memory per GPU' "$tmp/exf.txt")" -eq 1 ] || fail "framework sweep: not one breakdown"

python3 - "$tmp" <<'PY' || exit 1
import csv, json, sys
d = sys.argv[1]
def fail(msg):
    print("FAIL:", msg, file=sys.stderr); sys.exit(1)
KEYS = ("step_time_s", "mfu", "tokens_per_s", "global_batch", "micro_batch", "num_microbatches")
def same_plan(a, b, where):
    if a["parallel"] != b["parallel"] or any(a[k] != b[k] for k in KEYS) \
       or a["memory"]["total_bytes"] != b["memory"]["total_bytes"]:
        fail("%s: the sweep's best differs from plan's: %s vs %s" % (
            where, {k: a[k] for k in KEYS}, {k: b[k] for k in KEYS}))

gs = json.load(open(d + "/gs.json"))
if gs["swept"] != ["gpus", "seq"]:
    fail("swept %s" % gs["swept"])
pts = gs["sweep"]
order = [(p["point"]["gpus"], p["point"]["seq"]) for p in pts]
if order != [(256, 4096), (256, 8192), (512, 4096), (512, 8192)]:
    fail("product order %s" % order)
for p in pts:
    g, s = p["point"]["gpus"], p["point"]["seq"]
    if p["gpus"] != g or p["seq_len"] != s:
        fail("point %s resolved to %s GPUs, seq %s" % (p["point"], p["gpus"], p["seq_len"]))
    same_plan(p["best"], json.load(open("%s/one-%d-%d.json" % (d, g, s)))["plans"][0],
              "gpus %d seq %d" % (g, s))
rows = list(csv.DictReader(open(d + "/gs.csv", newline="")))
if [(int(r["gpus"]), int(r["seq_len"])) for r in rows] != order:
    fail("CSV points %s" % [(r["gpus"], r["seq_len"]) for r in rows])
for r, p in zip(rows, pts):
    if float(r["step_time_s"]) != p["best"]["step_time_s"] or \
       int(r["mem_total_bytes"]) != p["best"]["memory"]["total_bytes"]:
        fail("CSV row %s differs from --json" % r)

fp = json.load(open(d + "/fp.json"))["sweep"]
bad = [p for p in fp if "error" in p]
if len(fp) != 4 or [(p["point"]["framework"], p["point"]["precision"]) for p in bad] != \
        [("parallax", "fp8")]:
    fail("framework x precision: refused %s" % [p["point"] for p in bad])
if "fp8" not in bad[0]["error"] or "megatron" not in bad[0]["error"]:
    fail("the refusal does not name the precision and a framework that has it: %s"
         % bad[0]["error"])
mfp8 = [p for p in fp if p["point"] == {"framework": "megatron", "precision": "fp8"}][0]
if not mfp8["best"]["parallel"]["precision"].startswith("fp8"):
    fail("megatron fp8 planned as %s" % mfp8["best"]["parallel"]["precision"])
rows = list(csv.DictReader(open(d + "/fp.csv", newline="")))
r = [r for r in rows if r["framework"] == "parallax" and r["precision"] == "fp8"]
if len(r) != 1 or r[0]["error"] != bad[0]["error"] or r[0]["tp"] != "":
    fail("CSV refusal row %s" % r)

if gs["hw"] != "h100-sxm" or json.load(open(d + "/hb.json"))["hw"] is not None:
    fail("top-level hw: %r unswept, %r swept" % (gs["hw"], json.load(open(d + "/hb.json"))["hw"]))
hb = json.load(open(d + "/hb.json"))["sweep"]
if [(p["point"]["hw"], p["point"]["global-batch"]) for p in hb] != \
        [("h100-sxm", 512), ("h100-sxm", 1024), ("h200", 512), ("h200", 1024)]:
    fail("hw x global-batch points %s" % [p["point"] for p in hb])
for p in hb:
    if p["best"]["global_batch"] != p["point"]["global-batch"] or p["hw"] != p["point"]["hw"]:
        fail("point %s planned with global batch %s on %s" % (
            p["point"], p["best"]["global_batch"], p["hw"]))
same_plan(hb[3]["best"], json.load(open(d + "/h200.json"))["plans"][0], "h200, 1024")
PY

refused() { # want-in-message args...
  local want="$1"; shift
  "$PLAN" --model 70b "$@" > "$tmp/out" 2> "$tmp/err" && fail "accepted: $*"
  grep -q -- "$want" "$tmp/err" || fail "$*: message: $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "$*: wrote to stdout"
  return 0
}
refused "more than the 256" --sweep gpus=8,16,32,64,128,256,512,1024,2048 \
  --sweep seq=1024,2048,4096,8192 --sweep global-batch=64..8192
refused "KEY one of gpus, seq, global-batch, hw, framework, precision" --sweep tp=1,2 --gpus 8
refused "given twice" --sweep gpus=8 --sweep gpus=16
refused "given twice" --sweep gpus=8 --sweep-gpus 16
refused "--sweep seq and --seq" --gpus 64 --sweep seq=4096 --seq 8192
refused "--sweep gpus and --gpus" --gpus 64 --sweep gpus=8,16
refused "--sweep hw and --hw" --gpus 64 --sweep hw=h200 --hw h100-sxm
refused "--json and --explain" --sweep gpus=64,128 --explain --json
refused "leave -o out" --sweep gpus=64,128 -o "$tmp/p.json"
refused "unknown precision" --gpus 64 --sweep precision=bf16,fp7
refused "B is below A" --sweep seq=8192..4096 --gpus 64
refused "A..B is for numbers" --sweep hw=a..b --gpus 64
refused "--sweep hw=nope" --gpus 64 --sweep hw=h200,nope
[ -e "$tmp/p.json" ] && fail "-o written beside --sweep"
echo "plan --sweep: products, per-point plans equal plan's, refusals as rows: OK"
