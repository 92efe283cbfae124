#!/usr/bin/env bash
# Checkpoints of `execute` on the CPU backend under mpirun:
# - resume is bit-exact: 2 steps saved + 2 resumed (--load, --steps 4 total)
#   equal 4 uninterrupted steps in every loss and every weight, for TP, PP
#   (interleaved and zero-bubble), DP with ZeRO-1/2/3, CP, EP and bf16
#   storage;
# - kill-and-resume: a job killed (SIGKILL of one rank) after a checkpoint
#   resumes from `latest` and matches the uninterrupted run;
# - a torn, mismatched (other plan, other rank count, other seed) or
#   corrupt (bad checksum) checkpoint is refused with a clear message.
#   ckpt.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-ckpt.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkplan="$build/tests/executor/px_mkplan"
exe="$build/execute"
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
run() { timeout 120 mpirun --oversubscribe -np "$@" </dev/null; }

# same_run A B: the losses of report A equal those of B (exactly) and the
# weight dumps match byte for byte.
losses() { python3 -c 'import json,sys; print(" ".join(repr(x) for x in json.load(open(sys.argv[1]))["losses"]))' "$1"; }

# resume NAME NP PLAN-ARGS...: uninterrupted 4 steps vs 2 + 2 resumed.
resume() {
  local name=$1 np=$2; shift 2
  local d="$work/$name" extra=()
  mkdir -p "$d"
  if [ "$1" = "--dtype" ]; then extra=(--dtype "$2"); shift 2; fi
  "$mkplan" --seq 32 --micro-batch 1 "$@" -o "$d/plan.json" 2>/dev/null ||
    { fail "$name: px_mkplan $*"; return; }
  run "$np" "$exe" --plan "$d/plan.json" "${extra[@]}" --warmup 0 --steps 4 \
    --report "$d/full.json" --dump-weights "$d/w_full" >"$d/full.out" 2>&1 ||
    { fail "$name: uninterrupted run"; cat "$d/full.out"; return; }
  run "$np" "$exe" --plan "$d/plan.json" "${extra[@]}" --warmup 0 --steps 2 \
    --save "$d/ck" --save-interval 2 --report "$d/a.json" >"$d/a.out" 2>&1 ||
    { fail "$name: first half"; cat "$d/a.out"; return; }
  run "$np" "$exe" --plan "$d/plan.json" "${extra[@]}" --warmup 0 --steps 4 \
    --load "$d/ck" --report "$d/b.json" --dump-weights "$d/w_res" >"$d/b.out" 2>&1 ||
    { fail "$name: resumed half"; cat "$d/b.out"; return; }
  local want got
  want=$(losses "$d/full.json")
  got="$(losses "$d/a.json") $(losses "$d/b.json")"
  [ "$want" = "$got" ] || { fail "$name: losses differ: uninterrupted [$want] resumed [$got]"; return; }
  for r in $(seq 0 $((np - 1))); do
    cmp -s "$d/w_full/rank$r.bin" "$d/w_res/rank$r.bin" ||
      { fail "$name: rank $r weights differ after resuming"; return; }
  done
  echo "ok   $name: 4 losses and $np ranks' weights bit-exact after resuming at step 2"
}

resume tp2 2 --model tiny-llama --tp 2 --n-micro 2
resume pp2_interleaved 2 --model tiny-llama --layers 4 --pp 2 --vpp 2 --schedule interleaved --n-micro 4
resume pp2_zb 2 --model tiny-llama --pp 2 --schedule zb-h1 --n-micro 4
resume dp2_zero1 2 --model tiny-llama --dp 2 --zero 1 --n-micro 2
resume dp2_zero2 2 --model tiny-llama --dp 2 --zero 2 --n-micro 2
resume dp2_zero3 2 --model tiny-llama --dp 2 --zero 3 --n-micro 2
resume cp2 2 --model tiny-llama --cp 2 --n-micro 2
resume ep2 2 --model tiny-moe --dp 2 --ep 2 --n-micro 2
resume bf16_dp2_zero1 2 --dtype bf16 --model tiny-llama --dp 2 --zero 1 --n-micro 2

# --- kill and resume: SIGKILL one rank after the checkpoint of step 2 ---
d="$work/kill"; mkdir -p "$d"
"$mkplan" --model tiny-llama --tp 2 --seq 32 --micro-batch 1 --n-micro 2 -o "$d/plan.json" 2>/dev/null
mpirun --oversubscribe -np 2 "$exe" --plan "$d/plan.json" --warmup 0 --steps 1000000 \
  --save "$d/ck" --save-interval 2 </dev/null >"$d/kill.out" 2>&1 &
mp=$!
for _ in $(seq 600); do [ -f "$d/ck/latest" ] && break; sleep 0.1; done
victim=""
for p in $(pgrep -P $mp); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
done
if [ -z "$victim" ] || [ ! -f "$d/ck/latest" ]; then
  fail "kill_resume: no checkpoint or no rank 1 to kill"; kill $mp 2>/dev/null
else
  kill -KILL "$victim"
  wait $mp; rc=$?
  at=$(sed -n 's/^iter_0*\([0-9][0-9]*\)$/\1/p' "$d/ck/latest")
  if [ $rc -eq 0 ] || [ -z "$at" ]; then
    fail "kill_resume: killed job exited $rc, latest '$(cat "$d/ck/latest")'"
  else
    n=$((at + 2))
    run 2 "$exe" --plan "$d/plan.json" --warmup 0 --steps $n --load "$d/ck" \
      --report "$d/b.json" --dump-weights "$d/w_res" >"$d/b.out" 2>&1 || fail "kill_resume: resume"
    run 2 "$exe" --plan "$d/plan.json" --warmup 0 --steps $n --report "$d/full.json" \
      --dump-weights "$d/w_full" >"$d/full.out" 2>&1 || fail "kill_resume: reference"
    tail_want=$(losses "$d/full.json" | tr ' ' '\n' | tail -2 | tr '\n' ' ')
    tail_got=$(losses "$d/b.json" | tr ' ' '\n' | tr '\n' ' ')
    if [ "$tail_want" = "$tail_got" ] && cmp -s "$d/w_full/rank0.bin" "$d/w_res/rank0.bin" &&
       cmp -s "$d/w_full/rank1.bin" "$d/w_res/rank1.bin"; then
      echo "ok   kill_resume: killed after the checkpoint of step $at (exit $rc); steps $((at + 1))-$n resumed bit-exact"
    else
      fail "kill_resume: losses [$tail_got] vs [$tail_want] or weights differ"
    fi
  fi
fi

# --- refusals: each a clear message and a non-zero exit, nothing loaded ---
refuse() {
  local name=$1 pattern=$2; shift 2
  run "$@" >"$work/$name.out" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
    fail "$name: exit $rc (want a refusal)"; cat "$work/$name.out"; return
  fi
  grep -Eq -e "$pattern" "$work/$name.out" ||
    { fail "$name: output lacks /$pattern/"; cat "$work/$name.out"; return; }
  echo "ok   $name: $(grep -E -e "$pattern" "$work/$name.out" | head -1)"
}
ck="$work/tp2/ck"
plan="$work/tp2/plan.json"
cp -r "$ck" "$work/torn"; rm "$work/torn/iter_0000002/manifest.json"
refuse torn "torn checkpoint: no manifest.json" 2 "$exe" --plan "$plan" --steps 4 --load "$work/torn"
cp -r "$ck" "$work/corrupt"
python3 - "$work/corrupt/iter_0000002/rank00001.bin" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 1
open(p, 'wb').write(bytes(b))
PY
refuse bad_checksum "rank00001.bin.*bad checksum" 2 "$exe" --plan "$plan" --steps 4 --load "$work/corrupt"
cp -r "$ck" "$work/short"; truncate -s -4 "$work/short/iter_0000002/rank00000.bin"
refuse truncated "rank00000.bin.*size differs from the manifest" 2 "$exe" --plan "$plan" --steps 4 --load "$work/short"
refuse other_plan "mismatched checkpoint.*plan_fingerprint" 2 "$exe" --plan "$work/pp2_zb/plan.json" --steps 4 --load "$ck"
"$mkplan" --model tiny-llama --tp 2 --dp 2 --seq 32 --micro-batch 1 --n-micro 2 -o "$work/tp4.json" 2>/dev/null
refuse other_world "mismatched checkpoint.*world_size: 2 ranks, this run has 4" 4 "$exe" --plan "$work/tp4.json" --steps 4 --load "$ck"
refuse other_seed "mismatched checkpoint.*seed" 2 "$exe" --plan "$plan" --steps 4 --seed 7 --load "$ck"
refuse nothing_there "no checkpoint here" 2 "$exe" --plan "$plan" --steps 4 --load "$work/none"
refuse nothing_left "at step 2: --steps 2 .* leaves no step to run" 2 "$exe" --plan "$plan" --steps 2 --load "$ck"
refuse other_adam_eps "mismatched checkpoint.*optimizer\.adam_eps: 1e-08, this run has --adam-eps 1e-06" \
  2 "$exe" --plan "$plan" --steps 4 --adam-eps 1e-6 --load "$ck"
# forged manifests and latest files: every field validated strictly
forge() { # NAME PYTHON-EXPR-ON-m: a copy of the checkpoint with its manifest edited
  rm -rf "$work/$1"; cp -r "$ck" "$work/$1"
  python3 - "$work/$1/iter_0000002/manifest.json" "$2" <<'PY'
import json, sys
p = sys.argv[1]; m = json.load(open(p)); exec(sys.argv[2])
open(p, "w").write(json.dumps(m))
PY
}
forge version_big 'm["version"] = 2**40 + 1'
refuse version_big "mismatched checkpoint.*kind/version: .* v1099511627777, expected" 2 \
  "$exe" --plan "$plan" --steps 4 --load "$work/version_big"
forge hash_tail 'm["shards"][0]["fnv1a64"] += "ff"'
refuse hash_tail "malformed manifest: shards\[0\].*fnv1a64: 16 lower-case hex" 2 \
  "$exe" --plan "$plan" --steps 4 --load "$work/hash_tail"
forge unknown_key 'm["extra"] = 1'
refuse unknown_key "malformed manifest" 2 "$exe" --plan "$plan" --steps 4 --load "$work/unknown_key"
forge no_optimizer 'del m["optimizer"]'
refuse no_optimizer "malformed manifest.*optimizer" 2 "$exe" --plan "$plan" --steps 4 --load "$work/no_optimizer"
# a forged but self-consistent checkpoint at step -5 (manifest, shard headers
# and checksums all agree): refused, never run from step -5
rm -rf "$work/neg"; cp -r "$ck" "$work/neg"
python3 - "$work/neg/iter_0000002" <<'PY'
import glob, json, os, struct, sys
d = sys.argv[1]; mp = os.path.join(d, "manifest.json"); m = json.load(open(mp))
def fnv(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
    return h
for e in m["shards"]:
    p = os.path.join(d, e["file"]); b = bytearray(open(p, "rb").read())
    struct.pack_into("<q", b, 24, -5)   # header: magic, endian, version, rank, STEP
    open(p, "wb").write(bytes(b)); e["fnv1a64"] = "%016x" % fnv(b)
m["step"] = -5; m["data_position_sequences"] = -5 * m["data_position_sequences"] // 2
open(mp, "w").write(json.dumps(m))
PY
refuse negative_step "mismatched checkpoint.*step: -5 is out of range \(allowed: 0\.\." 2 \
  "$exe" --plan "$plan" --steps 4 --load "$work/neg"
for latest in 'iter_  2' 'iter_0000002\0junk' 'iter_0000002\niter_0000002' 'iter_0000002 '; do
  rm -rf "$work/latest"; cp -r "$ck" "$work/latest"; printf "$latest\n" >"$work/latest/latest"
  refuse "latest '$latest'" "latest: expected one line \"iter_NNNNNNN\"" 2 \
    "$exe" --plan "$plan" --steps 4 --load "$work/latest"
done
refuse warmup_huge '--warmup "1000000000000": expected an integer in 0\.\.10000000' 1 \
  "$exe" --plan "$plan" --warmup 1000000000000
refuse save_needs_interval "--save DIR and --save-interval N go together" 1 "$exe" --plan "$plan" --save "$work/x"

[ $failed -eq 0 ] || { echo "$failed checkpoint check(s) failed"; exit 1; }
echo "all checkpoint checks passed"
