#!/bin/sh
# Validates a plan written by the library against docs/plan.schema.json, and
# checks that the schema is strict (an unknown key or a bad enum fails).
# Skips (77) without python3's jsonschema.
# usage: test_plan_schema.sh TEST_PLAN_IO_EXE SCHEMA
set -u
exe=$1
schema=$2
python3 -c 'import jsonschema' 2>/dev/null || { echo "python3 jsonschema not installed: skip"; exit 77; }
tmp=$(mktemp -d /tmp/px_schema_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$exe" "$tmp/plan.json" || { echo "writing the plan failed"; exit 1; }
python3 - "$schema" "$tmp/plan.json" <<'PY'
import copy, json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
plan = json.load(open(sys.argv[2]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
v = cls(schema)
errors = list(v.iter_errors(plan))
for e in errors:
    print("schema error at", "/".join(map(str, e.absolute_path)), ":", e.message)
if errors:
    sys.exit(1)
def must_fail(what, mutate):
    bad = copy.deepcopy(plan)
    mutate(bad)
    if v.is_valid(bad):
        print("schema accepted", what)
        sys.exit(1)
must_fail("an unknown root key", lambda p: p.update(comment="x"))
must_fail("an unknown prediction key", lambda p: p["prediction"].update(extra=1.0))
must_fail("a bad schedule", lambda p: p["parallel"].update(schedule="foo"))
must_fail("a real byte count", lambda p: p["prediction"]["memory"].update(total_bytes=1.5))
must_fail("a missing hw.dtype_bytes", lambda p: p["hw"].pop("dtype_bytes"))
must_fail("schema_version 1", lambda p: p.update(schema_version=1))
must_fail("the old spelling n_micro", lambda p: p["parallel"].update(n_micro=4))
must_fail("a real stage byte count",
          lambda p: p["prediction"]["stages"][0].update(total_bytes=1.5))
must_fail("a stage without its time", lambda p: p["prediction"]["stages"][0].pop("microbatch_s"))
print("plan validates against", sys.argv[1])
PY
