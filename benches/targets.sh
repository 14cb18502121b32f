#!/usr/bin/env bash
# Issue #35's targets, old binary against new in one run (docs/PERFORMANCE.md,
# "Replay targets against fb7e2b0"): for each replay below, RUNS processes of each
# binary alternate; prints each side's median wall time and peak resident memory
# (GNU time's %M) and the ratios new/old. Then the fleet target, on NEW alone: a
# 16-replica fleet at 16 times the bundled trace's rate (each replica about as loaded
# as one engine at the trace's own rate) against one single-engine replay of the whole
# trace, the same sessions and tokens: 16 single-replica replays of a sixteenth of the
# traffic each. The ratio is the fleet's time over the single replay's.
# Usage: benches/targets.sh OLD NEW [RUNS]   (from the repository root)
# OLD and NEW are poolc binaries or commits, as for benches/old_vs_new.sh
# (`benches/targets.sh fb7e2b0 HEAD 3` is the issue's measurement). The vLLM spec is
# examples/vllm_blackbox.pool (its time reads no `sum`, R29, so binaries before that
# compile it) and the tiered one benches/specs/tiered_h100.pool; both are read by
# both binaries, and the default trace is the bundled Mooncake one.
set -euo pipefail
runs="${3:-3}"
root=$(git rev-parse --show-toplevel)
# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
old=$(binary "$1") || exit 1
new=$(binary "$2") || exit 1
echo "old: $1 ($old)   new: $2 ($new)"
commands=(
  "run examples/vllm_blackbox.pool --json"
  "run benches/specs/tiered_h100.pool --json"
  "run examples/vllm_blackbox.pool --synthetic 2000000 --json"
)
# Wall seconds and peak KiB of one process, as "SECONDS KIB".
measure() {
  local out
  out=$(mktemp)
  /usr/bin/time -f '%e %M' -o "$out" "$@" > /dev/null
  cat "$out"
  rm -f "$out"
}
for c in "${commands[@]}"; do
  ot=(); om=(); nt=(); nm=()
  for _ in $(seq "$runs"); do
    # shellcheck disable=SC2086
    read -r t m <<< "$(measure "$old" $c)"; ot+=("$t"); om+=("$m")
    # shellcheck disable=SC2086
    read -r t m <<< "$(measure "$new" $c)"; nt+=("$t"); nm+=("$m")
  done
  mot=$(printf '%s\n' "${ot[@]}" | median); mnt=$(printf '%s\n' "${nt[@]}" | median)
  mom=$(printf '%s\n' "${om[@]}" | median); mnm=$(printf '%s\n' "${nm[@]}" | median)
  printf '%-60s old %7.2f s %6d MiB  new %7.2f s %6d MiB  time new/old %.2f  memory new/old %.2f\n' \
    "poolc $c" "$mot" "$((mom / 1024))" "$mnt" "$((mnm / 1024))" \
    "$(echo "$mnt / $mot" | bc -l)" "$(echo "$mnm / $mom" | bc -l)"
done
fleet="run examples/fleet/least_queued.pool --set replicas=16 --rate-scale 16 --json"
# The fleet's replicas are this spec's deployment (and a route needs two members).
single="run examples/vllm_blackbox.pool --json"
ft=(); st=()
for _ in $(seq "$runs"); do
  # shellcheck disable=SC2086
  read -r t _ <<< "$(measure "$new" $fleet)"; ft+=("$t")
  # shellcheck disable=SC2086
  read -r t _ <<< "$(measure "$new" $single)"; st+=("$t")
done
mf=$(printf '%s\n' "${ft[@]}" | median); ms=$(printf '%s\n' "${st[@]}" | median)
printf 'fleet (new): poolc %s  %.2f s against poolc %s  %.2f s: ratio %.2f (target <= 1.2)\n' \
  "$fleet" "$mf" "$single" "$ms" "$(echo "$mf / $ms" | bc -l)"
