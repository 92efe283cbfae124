#!/usr/bin/env python3
"""The cost model's component tables, each value beside its source.

Hardware (hw_profiles/*.json): the rates the cost model prices kernels and
collectives with, read from each profile with the source its `sources`
object gives; the derived columns show what the model computes from them
(the large-GEMM rate gemm_eff_max x peak, the memory-bound rate
mem_bound_eff x hbm_bw, and gemm_eff_half_dim against the ridge point
peak / hbm_bw it is set to).  Frameworks (frameworks/*.json): every runtime
trait (what the framework overlaps, fuses, which kernels it runs) with the
code or document its `sources` cites.

Run from the project root:  python3 bench/component_tables.py [--hw|--frameworks]
A value without a source is printed as "(no source)" and makes the script
exit 1, so a profile that gains an unsourced constant shows up here.
"""
import glob
import json
import sys

HW_FIELDS = ("peak_flops", "fp8_flops", "mxfp8_flops", "fp4_flops", "gemm_eff_max",
             "gemm_eff_half_dim", "hbm_bw", "mem_bound_eff", "intra_bw", "inter_bw",
             "intra_bw_eff", "inter_bw_eff", "intra_lat_s", "inter_lat_s", "gpus_per_node",
             "exp_rate", "attn_native_version", "comm_overlap_cost")
# fields whose absence or zero means "no such path", not a constant to source
OPTIONAL_ZERO = {"fp8_flops", "mxfp8_flops", "fp4_flops", "exp_rate"}


def fmt(v):
    if isinstance(v, float) and (abs(v) >= 1e4 or (v != 0 and abs(v) < 1e-3)):
        return f"{v:.4g}"
    return str(v)


def hw_tables():
    missing = 0
    for path in sorted(glob.glob("hw_profiles/*.json")):
        d = json.load(open(path))
        src = d.get("sources", {})
        print(f"## {d['name']} ({path})")
        peak, bw = d.get("peak_flops", 0.0), d.get("hbm_bw", 0.0)
        if peak and bw:
            eff = d.get("gemm_eff_max", 0.8)
            print(f"   derived: large-GEMM rate {eff * peak / 1e12:.0f} TFLOP/s bf16, "
                  f"ridge point {peak / bw:.0f} FLOP/byte (gemm_eff_half_dim "
                  f"{d.get('gemm_eff_half_dim', '-')}), memory-bound rate "
                  f"{d.get('mem_bound_eff', 0.75) * bw / 1e12:.2f} TB/s")
        for k in HW_FIELDS:
            if k not in d or (k in OPTIONAL_ZERO and not d[k]):
                continue
            s = src.get(k)
            if not s:
                missing += 1
                s = "(no source)"
            print(f"   {k:20} {fmt(d[k]):>10}  {s}")
        print()
    return missing


def framework_tables():
    missing = 0
    for path in sorted(glob.glob("frameworks/*.json")):
        d = json.load(open(path))
        src = d.get("sources", {})
        print(f"## {d['name']} ({path})")
        for sec in ("runtime", "capabilities"):
            for k, v in d.get(sec, {}).items():
                s = src.get(k)
                if not s:
                    missing += 1
                    s = "(no source)"
                val = ",".join(map(str, v)) if isinstance(v, list) else str(v)
                print(f"   {sec[:3]} {k:28} {val[:24]:>24}  {s}")
        print()
    return missing


def main():
    a = sys.argv[1:]
    missing = 0
    if not a or "--hw" in a:
        missing += hw_tables()
    if not a or "--frameworks" in a:
        missing += framework_tables()
    if missing:
        print(f"{missing} values without a source", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
