#!/usr/bin/env bash
# Times the fixed-key queue `queue by (priority, serial)` against fifo at the same queue
# length (100,000 waiting holds), alternating the two in one run, and prints each one's
# median ns per admission (compiled backend) over RUNS processes and the ratio
# keyed/fifo (docs/PERFORMANCE.md, "Keyed queue with fixed keys at 100,000").
# Both on the same pool (4,096 blocks of 16, lru): fifo is benches/specs/fifo.pool.
# The issue's own fifo command, `poolc bench` without a spec, benchmarks
# examples/vllm.pool (28,000 blocks since issue 15), a different pool; it is printed
# too, for the record.
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
k=(); f=(); d=()
for _ in $(seq "$runs"); do
  k+=("$(ns benches/specs/priority_serial.pool "${args[@]}")")
  f+=("$(ns benches/specs/fifo.pool "${args[@]}")")
  d+=("$(ns "${args[@]}")")
done
mk=$(printf '%s\n' "${k[@]}" | median); mf=$(printf '%s\n' "${f[@]}" | median)
md=$(printf '%s\n' "${d[@]}" | median)
printf 'queue by (priority, serial): %7.1f ns/admission  (runs: %s)\n' "$mk" "${k[*]}"
printf 'queue fifo, same pool:       %7.1f ns/admission  (runs: %s)\n' "$mf" "${f[*]}"
printf 'queue fifo, examples/vllm.pool (28,000 blocks): %7.1f ns/admission\n' "$md"
awk -v k="$mk" -v f="$mf" -v d="$md" \
  'BEGIN { printf "keyed/fifo: %.2f (same pool), %.2f (against vllm.pool)\n", k / f, k / d }'
