#!/usr/bin/env bash
# run_fuzzer.sh TARGET SEED_DIR...: runs a libFuzzer target for
# PX_FUZZ_SECONDS (default 15) from copies of the seed directories (new
# inputs stay in a temporary directory, never in the repository).  A crash,
# a sanitizer report or a leak fails the test; the input that caused it is
# kept in $PX_FUZZ_ARTIFACTS (default build-fuzz/artifacts) and printed, to
# be added to tests/reliability/corpus/ as a regression case.
set -u
target=$1; shift
secs=${PX_FUZZ_SECONDS:-15}
art=${PX_FUZZ_ARTIFACTS:-$(dirname "$target")/../artifacts}
mkdir -p "$art"
work=$(mktemp -d "${TMPDIR:-/tmp}/px-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
n=0 # numbered copies: tests/spec/hf/*/config.json share one name
for d in "$@"; do
  while IFS= read -r f; do
    n=$((n + 1)); cp "$f" "$work/$n-$(basename "$f")"
  done < <(find "$d" -name '*.json' -size -64k 2>/dev/null)
done
echo "$(basename "$target"): $(ls "$work" | wc -l) seed inputs, $secs s"
"$target" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=16384 \
  -print_final_stats=1 -artifact_prefix="$art/$(basename "$target")-" "$work" 2>&1 |
  grep -Ev '^#[0-9]+\s+(NEW|REDUCE|pulse)' | tail -40
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo "FAIL: $(basename "$target") found a failing input (exit $rc); see $art"
  for f in "$art/$(basename "$target")"-*; do [ -f "$f" ] && { echo "== $f"; head -c 2000 "$f"; echo; }; done
fi
exit "$rc"
