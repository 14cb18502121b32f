#!/usr/bin/env bash
# The plugin's cost per schedule() call: vLLM 0.33's scheduler stock and driven by
# poolc.vllm.Scheduler with examples/vllm.pool (the same decisions, byte for byte),
# on the same scenarios, alternately, RUNS times each, in one run of this script.
# Prints each run's schedule() seconds (the recorder's `schedule_s`: time inside
# schedule() over the whole scenario, python -m poolc.vllm.record re-recording a
# scenario of tests/data/vllm-oracle from its config.json's argv) and the ratio of the
# medians. $PY needs vLLM 0.33.0 and this repository's Python package.
#   PY=~/.cache/poolc/vllm-venv/bin/python benches/vllm_overhead.sh [RUNS] [scenario ...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-${POOLC_VLLM_VENV:-$HOME/.cache/poolc/vllm-venv}/bin/python}
RUNS=${1:-3}; shift || true
SCENARIOS=("${@:-c_fcfs_preempt e_fcfs_mixed}")
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
one() {  # one recording; prints schedule_s
  local name=$1 how=$2; shift 2
  local argv; argv=$("$PY" -c "import json,sys; print(' '.join(json.load(open(sys.argv[1]))['argv']))" \
    "$ROOT/tests/data/vllm-oracle/$name/config.json")
  local extra=()
  [ "$how" = plugin ] && extra=(--scheduler-cls poolc.vllm.Scheduler \
    --additional-config '{"poolc": {"spec": "examples/vllm.pool"}}')
  (cd "$ROOT" && "$PY" -m poolc.vllm.record --out-dir "$OUT/$how" $argv "${extra[@]}" 2>&1) \
    | "$PY" -c "import json,sys; print([json.loads(l) for l in sys.stdin if l.startswith('{') and 'schedule_s' in l][-1]['schedule_s'])"
}
for name in ${SCENARIOS[@]}; do
  stock=(); plugin=()
  for _ in $(seq "$RUNS"); do
    stock+=("$(one "$name" stock)"); plugin+=("$(one "$name" plugin)")
  done
  "$PY" - "$name" "${stock[*]}" "${plugin[*]}" <<'PYEOF'
import statistics, sys
name, s, p = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
ms, mp = statistics.median(s), statistics.median(p)
print(f"{name}: schedule() seconds stock {s} plugin {p}; medians {ms:.3f} vs {mp:.3f}: plugin/stock {mp/ms:.2f}x")
PYEOF
done
