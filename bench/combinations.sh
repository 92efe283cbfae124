#!/usr/bin/env bash
# The whole combination product through every output path
# (tests/reliability/combinations.py: every model preset and Hugging Face
# test config x framework x precision x hardware profile x GPU count
# {1, 8, 64, 1024, 16384}; table, --json, --explain, --html, -o + export to
# every target + execute --check; one option set each, cycled: none, each
# offload, fine-tuning), every output checked.  The CI test
# (reliability_combinations) runs a fixed-seed sample of the same product.
#   bench/combinations.sh [BUILD_DIR] [--sample N] [--seed N] [--jobs N] [--budget-s S]
#                         [--every-path] [--no-options]
# BUILD_DIR defaults to build/; --sample 0 (the default) runs every
# combination (docs/reliability.md gives the product's size), each through
# --json and one more output path, cycled (49 min for 72 000 on 2 cores with
# --jobs 2 in a sanitizer build such as build-san/);
# --every-path takes each through every output path (356 350 tool runs, 2 h 27
# min on 2 cores in the sanitizer build, with --no-options);
# --no-options plans each combination with no option set;
# --budget-s S stops after S seconds with a uniform sample, the order being
# the seed's.  Exit 1 on any finding.
set -u
cd "$(dirname "$0")/.."
build=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build=$1; shift; fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec python3 tests/reliability/combinations.py "$build" --sample 0 --progress 2000 "$@"
