#!/usr/bin/env bash
# Times two poolc binaries on the same commands, alternating, in one run, and prints
# each command's median wall time per binary and the ratio new/old (docs/PERFORMANCE.md).
# Usage: benches/old_vs_new.sh OLD NEW [RUNS]   (from the repository root)
# OLD and NEW are each a poolc binary or a commit (`2b9c683`, `HEAD`): a commit is
# built first, in a worktree beside this one (target/bench-worktrees/COMMIT, its own
# target directory), so `benches/old_vs_new.sh 2b9c683 HEAD 3` is the whole
# measurement of issue #16's item 1.
set -euo pipefail
runs="${3:-5}"
root=$(git rev-parse --show-toplevel)
# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
# `set -e` does not reach into $(...): each call is checked here.
old=$(binary "$1") || exit 1
new=$(binary "$2") || exit 1
echo "old: $1 ($old)   new: $2 ($new)"
oracle=tests/data/vllm-oracle/e_fcfs_mixed
# The replays of issue #16 (its table: measured at 2b9c683): vLLM at 4,096 and at
# 28,000 blocks (one H100's KV), the tiered replay with every evicted block spilled
# to an unbounded host tier, a synthetic replay, and conform on scenario e. The vLLM
# spec is examples/vllm_blackbox.pool, what examples/vllm.pool was until 2026-12-04:
# its time reads no `sum` (R29), which binaries before that cannot compile.
commands=(
  "run examples/vllm_blackbox.pool --set num_gpu_blocks=4096 --json"
  "run examples/vllm_blackbox.pool --set num_gpu_blocks=28000 --json"
  "run benches/specs/tiered_h100.pool --json"
  "run examples/vllm_blackbox.pool --synthetic 100000 --json"
  "conform $oracle"
)
for c in "${commands[@]}"; do
  o=(); n=()
  for _ in $(seq "$runs"); do
    for which in old new; do
      bin="$old"; [ "$which" = new ] && bin="$new"
      s=$(date +%s.%N); $bin $c > /dev/null; e=$(date +%s.%N)
      t=$(echo "$e - $s" | bc -l)
      if [ "$which" = old ]; then o+=("$t"); else n+=("$t"); fi
    done
  done
  mo=$(printf '%s\n' "${o[@]}" | median); mn=$(printf '%s\n' "${n[@]}" | median)
  printf '%-55s old %6.3f s  new %6.3f s  new/old %.2f\n' "poolc $c" "$mo" "$mn" "$(echo "$mn / $mo" | bc -l)"
done
