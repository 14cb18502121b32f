#!/usr/bin/env bash
# Peak memory of `poolc run --synthetic N` against trace length, in one run of this
# script (issue #16, item 4): for each N, the peak RSS with the default bounded
# percentiles and with `--exact` (every latency kept), and the ratio of each N's
# default peak to the first N's. The issue's target: N = 2,000,000 at most 150 MB and
# within 1.5x of N = 200,000. Then the same for `poolc run --trace FILE` on a JSONL
# file of N seeded sessions without content runs (written to a temporary directory
# first; read line by line as the replay reaches it).
#   benches/memory_flat.sh [N ...]        (default: 200000 2000000)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
POOLC=${POOLC:-$ROOT/target/release/poolc}
SIZES=("${@:-200000 2000000}")
# shellcheck disable=SC2206 # one word per size
SIZES=(${SIZES[*]})
[ -x "$POOLC" ] || (cd "$ROOT" && cargo build --release --locked --bin poolc)
peak() { /usr/bin/time -f "%M %e" "$POOLC" run --synthetic "$@" 2>&1 >/dev/null | tail -1; }
first=""
printf "%10s  %12s %8s  %12s %8s  %s\n" sessions "default MB" "wall s" "--exact MB" "wall s" "default / first"
for n in "${SIZES[@]}"; do
  read -r d dw < <(peak "$n")
  read -r e ew < <(peak "$n" --exact)
  first=${first:-$d}
  awk -v n="$n" -v d="$d" -v dw="$dw" -v e="$e" -v ew="$ew" -v f="$first" \
    'BEGIN { printf "%10s  %12.1f %8s  %12.1f %8s  %.2f\n", n, d / 1024, dw, e / 1024, ew, d / f }'
done

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
first=""
printf "\n%10s  %12s %8s  %s\n" "trace lines" "peak MB" "wall s" "peak / first"
for n in "${SIZES[@]}"; do
  python3 - "$n" "$scratch/t.jsonl" <<'PY'
import random, sys
n, path = int(sys.argv[1]), sys.argv[2]
rng, t = random.Random(1), 0.0
with open(path, "w") as f:
    for _ in range(n):
        t += rng.expovariate(40)
        f.write('{"arrival": %.6f, "prompt": %d, "output": %d}\n' % (t, rng.randint(20, 800), rng.randint(1, 60)))
PY
  read -r d dw < <(/usr/bin/time -f "%M %e" "$POOLC" run --trace "$scratch/t.jsonl" 2>&1 >/dev/null | tail -1)
  first=${first:-$d}
  awk -v n="$n" -v d="$d" -v dw="$dw" -v f="$first" \
    'BEGIN { printf "%10s  %12.1f %8s  %.2f\n", n, d / 1024, dw, d / f }'
done
