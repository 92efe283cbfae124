#!/bin/sh
# One number per stage: the --explain per-stage table, the --explain memory
# breakdown (the worst stage) and the plan file's prediction.stages[] must
# agree, for several presets, schedules, uneven splits and recompute choices.
set -eu
PLAN=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() {
    name=$1
    shift
    if ! "$PLAN" "$@" --explain --output "$T/plan.json" >"$T/out.txt" 2>&1; then
        echo "FAIL $name: plan exited non-zero"; cat "$T/out.txt"; fail=1; return
    fi
    python3 - "$name" "$T/out.txt" "$T/plan.json" <<'PY' || fail=1
import json, re, sys
name, out, plan = sys.argv[1:4]
lines = open(out).read().splitlines()
# the per-stage table: rows after its '# stage' header (memory_GB is column 5)
table = []
for i, l in enumerate(lines):
    if l.startswith('# stage') and 'memory_GB' in l:
        for row in lines[i + 1:]:
            f = row.split()
            if not f or not f[0].isdigit():
                break
            table.append(float(f[4]))
        break
total = [float(m.group(1)) for l in lines
         for m in [re.match(r'\s+total\s+([0-9.]+)\s+of', l)] if m]
stages = [s['total_bytes'] / 1e9 for s in json.load(open(plan))['prediction']['stages']]
ok = len(table) == len(stages) and len(total) == 1
# printed with 2 decimals: 0.005 GB rounding either side
ok = ok and all(abs(a - b) <= 0.0051 for a, b in zip(table, stages))
ok = ok and abs(max(stages) - total[0]) <= 0.0051
print(('ok  ' if ok else 'FAIL') + ' %s: table %s, breakdown %s, plan file %s GB'
      % (name, table, total, ['%.2f' % s for s in stages]))
sys.exit(0 if ok else 1)
PY
}
check 70b-64-zbh1 --model 70b --gpus 64 --schedule zb-h1
check 70b-1024-zbh1-pp4 --model 70b --gpus 1024 --schedule zb-h1 --pp 4
check 70b-64-interleaved --model 70b --gpus 64 --schedule interleaved --pp 4 --vpp 2
check 70b-64-1f1b-pp3 --model 70b --gpus 48 --schedule 1f1b --pp 3 --tp 8
check 70b-1024-gpipe-per-layer-recompute --model 70b --gpus 1024 --schedule gpipe --pp 8
check 70b-64-zbh2 --model 70b --gpus 64 --schedule zb-h2 --pp 4 --tp 8
check 8b-full-recompute --model llama3-8b --gpus 16 --pp 4 --recompute full --schedule 1f1b
check mixtral-zbh1 --model mixtral-8x7b --gpus 64 --schedule zb-h1 --pp 4
exit $fail
