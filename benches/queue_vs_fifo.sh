#!/usr/bin/env bash
# Times the fixed-key queue `queue by (priority, serial)` against fifo at the same queue
# length (100,000 waiting holds), alternating the two in one run, and prints each one's
# median ns per admission (compiled backend) over RUNS processes and the ratio
# keyed/fifo (docs/PERFORMANCE.md, "Keyed queue with fixed keys at 100,000").
# The fifo command is `poolc bench` without a spec, i.e. examples/vllm.pool (28,000
# blocks, priority_serial.pool has 4,096): the two commands of issue 16, as given.
# Alternating processes lets a burst of load from other jobs fall on both alike.
# Usage: benches/queue_vs_fifo.sh [POOLC] [RUNS]   (from the repository root)
set -euo pipefail
poolc="${1:-target/release/poolc}"; runs="${2:-3}"
args=(--queue 100000 --blocks 1 --ops 100000 --phase admission --json)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The compiled backend's ns per admission (the top-level figure of --json).
ns() {
  "$poolc" bench "$@" | python3 -c 'import json, sys; print(json.load(sys.stdin)["ns_per_admission"])'
}
k=(); f=()
for _ in $(seq "$runs"); do
  k+=("$(ns benches/specs/priority_serial.pool "${args[@]}")")
  f+=("$(ns "${args[@]}")")
done
mk=$(printf '%s\n' "${k[@]}" | median); mf=$(printf '%s\n' "${f[@]}" | median)
printf 'queue by (priority, serial): %7.1f ns/admission  (runs: %s)\n' "$mk" "${k[*]}"
printf 'queue fifo:                  %7.1f ns/admission  (runs: %s)\n' "$mf" "${f[*]}"
printf 'keyed/fifo: %.2f\n' "$(echo "$mk / $mf" | bc -l)"
