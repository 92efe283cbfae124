#!/usr/bin/env bash
# plan --tokens: days, GPU-hours, energy and cost beside the goodput, in the
# table and in --json (time_to_train.run_cost), from the profile's power_w and
# price_per_gpu_hour; --price-per-gpu-hour overrides the price; a profile
# without them prints n/a (null in JSON); a bad price is a usage error.
set -u
PLAN="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
src=${PARALLAX_SOURCE_ROOT:?}
args="--model 70b --gpus 1024 --top 2 --tokens 15T --partition uniform"
"$PLAN" $args --json >"$tmp/a.json" || fail "plan --json exited $?"
"$PLAN" $args --price-per-gpu-hour 1.5 --json >"$tmp/b.json" || fail "--price-per-gpu-hour exited $?"
python3 - "$tmp/no-price.json" "$src/hw_profiles/h100-sxm.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[2])); d["name"] = "h100-unpriced"
del d["power_w"]; del d["price_per_gpu_hour"]
json.dump(d, open(sys.argv[1], "w"))
PY
"$PLAN" $args --hw "$tmp/no-price.json" --json >"$tmp/c.json" || fail "unpriced profile exited $?"
python3 - "$tmp/a.json" "$tmp/b.json" "$tmp/c.json" "$src/hw_profiles/h100-sxm.json" <<'PY' || exit 1
import json, sys
a, b, c, hw = (json.load(open(p)) for p in sys.argv[1:5])
def close(x, y):
    assert abs(x - y) <= 1e-9 * abs(y), (x, y)
for p in a["plans"]:
    t = p["time_to_train"]; rc = t["run_cost"]
    g = p["parallel"]["tp"] * p["parallel"]["cp"] * p["parallel"]["pp"] * p["parallel"]["dp"]
    close(rc["days"], t["goodput_days"])
    close(rc["gpu_hours"], t["goodput_days"] * 24 * g)
    close(rc["energy_mwh"], rc["gpu_hours"] * hw["power_w"] / 1e6)
    close(rc["cost_usd"], rc["gpu_hours"] * hw["price_per_gpu_hour"])
    assert rc["power_w"] == hw["power_w"] and rc["price_per_gpu_hour"] == hw["price_per_gpu_hour"]
    assert 100 < t["days_to_train"] < 1000, t["days_to_train"]
rb = b["plans"][0]["time_to_train"]["run_cost"]
close(rb["cost_usd"], rb["gpu_hours"] * 1.5)
assert rb["price_per_gpu_hour"] == 1.5
rc = c["plans"][0]["time_to_train"]["run_cost"]
assert rc["energy_mwh"] is None and rc["cost_usd"] is None and rc["gpu_hours"] > 0, rc
print("run cost ok: %.4g GPU-hours, %.4g MWh, %.4g USD" % (
    a["plans"][0]["time_to_train"]["run_cost"]["gpu_hours"],
    a["plans"][0]["time_to_train"]["run_cost"]["energy_mwh"],
    a["plans"][0]["time_to_train"]["run_cost"]["cost_usd"]))
PY
"$PLAN" $args >"$tmp/t.txt" || fail "table exited $?"
for k in "GPU-hours" "energy \[MWh\]" "cost \[USD\]" "goodput-adjusted days"; do
  grep -q "$k" "$tmp/t.txt" || fail "the table has no \"$k\" line"
done
"$PLAN" $args --hw "$tmp/no-price.json" >"$tmp/n.txt" || fail "unpriced table exited $?"
grep -q 'cost \[USD\] *n/a' "$tmp/n.txt" || fail "an unpriced profile's cost is not n/a"
"$PLAN" $args --price-per-gpu-hour -3 >/dev/null 2>&1; [ $? = 2 ] || fail "a negative price is not a usage error"
"$PLAN" $args --price-per-gpu-hour 2 --price-per-gpu-hour 3 >/dev/null 2>&1
[ $? = 2 ] || fail "a repeated --price-per-gpu-hour is not a usage error"
echo "test_plan_cost: ok"
