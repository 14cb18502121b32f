#!/usr/bin/env bash
# The engine's primitives, old binary against new in one run (issue #35 item 3): for
# each `poolc bench` configuration below, RUNS processes of each binary alternate and
# the compiled backend's ns per admission (or per eviction) is taken from --json;
# prints each side's median and the ratio new/old, so that a regression of the
# engine's hot path shows up as a ratio above 1 (docs/PERFORMANCE.md, "The 1-block
# admission path").
# Usage: benches/primitives.sh OLD NEW [RUNS]   (from the repository root)
# OLD and NEW are poolc binaries or commits, as for benches/old_vs_new.sh. The specs
# are named (examples/vllm_blackbox.pool: one H100's pool, fifo and lru), never the
# default: a binary compiles only the specs of its own day.
set -euo pipefail
runs="${3:-5}"
root=$(git rev-parse --show-toplevel)
# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
old=$(binary "$1") || exit 1
new=$(binary "$2") || exit 1
echo "old: $1 ($old)   new: $2 ($new)"
spec=examples/vllm_blackbox.pool
# label | bench arguments | the --json rate (per second, compiled backend)
# The second case is the first on a pool of 2,000 blocks, whose tables fit in the
# second-level cache: what it shows is the work itself (a stall or a division shows
# there first), where the 28,000-block pool adds the misses of a larger footprint
# (docs/PERFORMANCE.md, "Store-forwarding stalls").
cases=(
  "1-block holds, admission|--blocks 1 --ops 100000 --phase admission|admissions_per_s"
  "1-block, 2,000 blocks|--blocks 1 --ops 100000 --phase admission --set num_gpu_blocks=2000|admissions_per_s"
  "up to 8 blocks, admission|--blocks 8 --ops 100000 --phase admission|admissions_per_s"
  "default holds, admission|--ops 100000 --phase admission|admissions_per_s"
  "1-block holds, eviction|--blocks 1 --ops 100000 --phase eviction|evictions_per_s"
)
# Nanoseconds per operation of one process: 1e9 over its rate FIELD.
figure() {
  local bin=$1 field=$2; shift 2
  "$bin" bench "$spec" "$@" --repeats 3 --json |
    python3 -c "import json, sys; print(1e9 / json.load(sys.stdin)[sys.argv[1]])" "$field"
}
for c in "${cases[@]}"; do
  IFS='|' read -r label args field <<< "$c"
  o=(); n=()
  for _ in $(seq "$runs"); do
    # shellcheck disable=SC2086
    o+=("$(figure "$old" "$field" $args)")
    # shellcheck disable=SC2086
    n+=("$(figure "$new" "$field" $args)")
  done
  mo=$(printf '%s\n' "${o[@]}" | median); mn=$(printf '%s\n' "${n[@]}" | median)
  printf '%-28s old %7.1f ns  new %7.1f ns  new/old %.2f\n' "$label" "$mo" "$mn" "$(echo "$mn / $mo" | bc -l)"
done
