#!/usr/bin/env bash
# Times two poolc binaries on the same commands, alternating, in one run, and prints
# each command's median wall time per binary and the ratio new/old (docs/PERFORMANCE.md).
# Usage: benches/old_vs_new.sh OLD_POOLC NEW_POOLC [RUNS]   (from the repository root)
set -euo pipefail
old="$1"; new="$2"; runs="${3:-5}"
oracle=../shared/data/vllm-oracle/e_fcfs_mixed
# The replays of issue #16 (its table: measured at 2b9c683): vLLM at 4,096 and at
# 28,000 blocks (one H100's KV), the tiered replay with every evicted block spilled
# to an unbounded host tier, a synthetic replay, and conform on scenario e.
commands=(
  "run examples/vllm.pool --set num_gpu_blocks=4096 --json"
  "run examples/vllm.pool --set num_gpu_blocks=28000 --json"
  "run benches/specs/tiered_h100.pool --json"
  "run examples/vllm.pool --synthetic 100000 --json"
  "conform $oracle"
)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
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
