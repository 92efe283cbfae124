#!/usr/bin/env bash
# Opt-in: every plan of matrix.txt exported to every target and handed to the
# framework's own code (check_<target>.py, run by the scratch venv of
# setup_venv.sh; with --batch where the checker has it: the framework
# imported once a target).  A
# cell is `ok`, `refused` (export exit 1, the message kept) or `FAIL` (the
# framework rejected the export, or built something other than the plan).
# Prints the table plan x target, the details and a summary line; fails on
# any FAIL.  Skipped (77) unless PX_EXPORT_REAL=1 and the venv exists.
# PX_EXPORT_REAL_TABLE=FILE also writes the table (markdown) there.
set -u
VENV="${PX_EXPORT_REAL_VENV:-$HOME/.cache/parallax/export_real}"
ROOT="${PARALLAX_SOURCE_ROOT:-.}"
BUILD="${PARALLAX_BUILD_ROOT:-build}"
TARGETS="megatron nemo torchtitan deepspeed"
if [ "${PX_EXPORT_REAL:-0}" != 1 ]; then
  echo "skipped: set PX_EXPORT_REAL=1 (and run tests/export_real/setup_venv.sh)"; exit 77
fi
if [ ! -x "$VENV/bin/python" ] || [ ! -f "$VENV/src/Megatron-LM/COMMIT" ]; then
  echo "skipped: no export_real venv at $VENV (tests/export_real/setup_venv.sh)"; exit 77
fi
cd "$ROOT" || exit 2 # plan reads hw_profiles/ and models/ relative to the root
ROOT=$(pwd)
here="$ROOT/tests/export_real"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. plans and exports; a cell's verdict goes to $tmp/<plan>.<target>.v
names=()
while IFS= read -r line; do
  case "$line" in '#'* | '') continue ;; esac
  name=${line%%:*} args=${line#*:}
  case "$args" in *--framework*) ;; *) args="$args --framework megatron" ;; esac
  names+=("$name")
  # shellcheck disable=SC2086 # the matrix line is a list of words
  if ! "$BUILD/plan" $args --top 1 -o "$tmp/$name.json" >"$tmp/$name.log" 2>&1; then
    for t in $TARGETS; do
      echo "FAIL plan: $(tail -1 "$tmp/$name.log")" >"$tmp/$name.$t.v"
    done
    continue
  fi
  for t in $TARGETS; do
    out="$tmp/$name.$t"
    if "$BUILD/export" --plan "$tmp/$name.json" --to "$t" -o "$out" 2>"$tmp/err"; then
      echo "$tmp/$name.json $out" >>"$tmp/batch.$t"
    elif [ $? = 1 ]; then
      echo "refused: $(head -1 "$tmp/err" | sed 's/^export: //')" >"$tmp/$name.$t.v"
    else
      echo "FAIL export: $(head -1 "$tmp/err")" >"$tmp/$name.$t.v"
    fi
  done
done <"$here/matrix.txt"

# 2. each target's checker over its exports
for t in $TARGETS; do
  [ -f "$tmp/batch.$t" ] || continue
  if [ ! -f "$here/check_$t.py" ]; then
    while read -r _ out; do echo "FAIL no check_$t.py" >"$out.v"; done <"$tmp/batch.$t"
    continue
  fi
  if grep -q -- '--batch' "$here/check_$t.py"; then
    "$VENV/bin/python" "$here/check_$t.py" --batch "$tmp/batch.$t" >"$tmp/out.$t" 2>"$tmp/stderr.$t"
  else # the agreed interface, a file at a time
    while read -r plan out; do
      v=$("$VENV/bin/python" "$here/check_$t.py" --plan "$plan" --export "$out" 2>>"$tmp/stderr.$t")
      echo "$out: $(echo "$v" | tail -1)"
    done <"$tmp/batch.$t" >"$tmp/out.$t"
  fi
  while read -r _ out; do
    v=$(grep -F "$out: " "$tmp/out.$t" | tail -1)
    echo "${v#"$out: "}" >"$out.v"
    [ -n "$v" ] || echo "FAIL no verdict: $(tail -1 "$tmp/stderr.$t")" >"$out.v"
  done <"$tmp/batch.$t"
done

# 3. the table, the details, the summary
table="$tmp/table.md" details="$tmp/details.txt"
: >"$details"
printf '| plan | %s |\n|---|%s\n' "$(echo $TARGETS | sed 's/ / | /g')" \
  "$(for t in $TARGETS; do printf -- '---|'; done)" >"$table"
ok=0 refused=0 failed=0
for name in "${names[@]}"; do
  row="| $name |"
  for t in $TARGETS; do
    v=$(cat "$tmp/$name.$t.v")
    case "$v" in
      ok) row="$row ok |" ok=$((ok + 1)) ;;
      refused:*) row="$row refused |" refused=$((refused + 1)); echo "$name $t: $v" >>"$details" ;;
      *) row="$row **FAIL** |" failed=$((failed + 1)); echo "$name $t: $v" >>"$details" ;;
    esac
  done
  echo "$row" >>"$table"
done
summary="export_real: ${#names[@]} plans x $(echo $TARGETS | wc -w) targets: $ok ok, $refused refused, $failed FAIL (Megatron-LM $(cut -c1-12 "$VENV/src/Megatron-LM/COMMIT"))"
cat "$table"
echo
cat "$details"
echo
echo "$summary"
if [ -n "${PX_EXPORT_REAL_TABLE:-}" ]; then
  { cat "$table"; echo; echo "$summary"; echo; echo '```'; cat "$details"; echo '```'; } \
    >"$PX_EXPORT_REAL_TABLE.tmp" && mv "$PX_EXPORT_REAL_TABLE.tmp" "$PX_EXPORT_REAL_TABLE"
fi
[ "$failed" = 0 ]
