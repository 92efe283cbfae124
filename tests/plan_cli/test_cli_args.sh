#!/bin/sh
# Every tool reads its command line through the one parser (px_args):
# `--flag value` and `--flag=value` are the same, a repeated flag is refused
# (exit 2, naming it), and --version prints the project's version.
#   test_cli_args.sh VERSION
set -u
VERSION=$1
B="${PARALLAX_BUILD_ROOT:?}"
S="${PARALLAX_SOURCE_ROOT:?}"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for tool in plan validate compare calibrate execute export; do
  v=$("$B/$tool" --version 2>&1) || bad "$tool --version: exit $?"
  [ "$v" = "$tool (parallax) $VERSION" ] || bad "$tool --version: \"$v\", want \"$tool (parallax) $VERSION\""
done

# --flag=value and --flag value give the same plan (uniform split: no GLPK time limit
# that a loaded machine could reach)
"$B/plan" --model tiny-llama --gpus 4 --tp 2 --pp 2 --dp 1 --micro-batch 1 --partition uniform --json |
  grep -v elapsed_s | grep -v configs_per_s >"$tmp/a" || bad "plan --flag value failed"
"$B/plan" --model=tiny-llama --gpus=4 --tp=2 --pp=2 --dp=1 --micro-batch=1 --partition=uniform --json |
  grep -v elapsed_s | grep -v configs_per_s >"$tmp/b" || bad "plan --flag=value failed"
cmp -s "$tmp/a" "$tmp/b" || bad "plan: --flag=value and --flag value differ"
[ -s "$tmp/a" ] || bad "plan printed nothing"

# expect_usage TOOL REGEX ARGS...: exit 2 and stderr matching REGEX
expect_usage() {
  tool=$1 re=$2
  shift 2
  "$B/$tool" "$@" >/dev/null 2>"$tmp/err"
  rc=$?
  [ "$rc" -eq 2 ] || { bad "$tool $*: exit $rc, want 2"; return; }
  grep -qE -e "$re" "$tmp/err" || bad "$tool $*: stderr lacks /$re/: $(cat "$tmp/err")"
}
expect_usage plan '--gpus given more than once' --model 70b --gpus=8 --gpus 16
expect_usage plan '--no-sp given more than once \(--sp and --no-sp are one option\)' --model 70b --gpus 8 --sp on --no-sp
expect_usage plan 'unknown option "--mod" \(did you mean --model\?\)' --mod 70b --gpus 8
expect_usage plan '--json takes no value' --model 70b --gpus 8 --json=yes
expect_usage validate '--hw-dir given more than once' --hw-dir a --hw-dir=b
expect_usage compare '--max-time-err given more than once' --max-time-err 0.1 --max-time-err=0.2 x.json
expect_usage compare '--max-mem-err 10: a fraction' --max-mem-err=10 x.json
expect_usage calibrate '--threads given more than once' --threads 1 --threads=2
expect_usage calibrate '--threads "0": expected an integer in 1\.\.1024' --threads=0
expect_usage execute '--steps given more than once' --plan p.json --steps 2 --steps=3
expect_usage execute '--dtype "fp8": allowed values are bf16, fp32' --plan=p.json --dtype=fp8
expect_usage export '--to given more than once' --plan p.json --to megatron --to=nemo

# plan --list-models / --list-hw: one preset a line, every file listed
for kind in models:models hw:hw_profiles; do
  flag=${kind%%:*} dir=${kind#*:}
  "$B/plan" --list-$flag >"$tmp/list" || bad "plan --list-$flag: exit $?"
  for f in "$S/$dir"/*.json; do
    n=$(basename "$f" .json)
    grep -q "^$n\( \|$\)" "$tmp/list" || bad "plan --list-$flag lacks $n"
  done
done
"$B/plan" --list-models | grep -q '^llama3-70b (alias 70b)$' || bad "--list-models: no 'llama3-70b (alias 70b)' line"
[ $fail -eq 0 ] && echo "cli_args: ok"
exit $fail
