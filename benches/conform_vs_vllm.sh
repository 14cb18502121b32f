#!/usr/bin/env bash
# `poolc conform` against vLLM 0.33's own scheduler loop on the same recorded
# scenarios, in one run of this script (issue #16, item 3). vLLM's side is the
# recorder's `loop_s` (python -m poolc.vllm.record re-recording a scenario of
# tests/data/vllm-oracle from its config.json's argv): its schedule() +
# update_from_output() loop over the whole scenario, model load and engine
# construction excluded. poolc's side is the whole `poolc conform` process (spec
# compiled by the JIT, recording read, every step replayed and compared). Prints both
# medians of RUNS runs and their ratio. $PY needs vLLM 0.33.0 and this repository's
# Python package; scenarios are those generated from knobs (not f or k, which read a
# workload file).
#   PY=~/.cache/poolc/vllm-venv/bin/python benches/conform_vs_vllm.sh [RUNS] [scenario ...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-${POOLC_VLLM_VENV:-$HOME/.cache/poolc/vllm-venv}/bin/python}
DATA=$ROOT/tests/data/vllm-oracle
POOLC=${POOLC:-$ROOT/target/release/poolc}
RUNS=${1:-3}; shift || true
SCENARIOS=("${@:-e_fcfs_mixed}")
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
[ -x "$POOLC" ] || (cd "$ROOT" && cargo build --release --locked --bin poolc)
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
for name in "${SCENARIOS[@]}"; do
  argv=$("$PY" -c "import json,sys; print(' '.join(json.load(open(sys.argv[1]))['argv']))" \
    "$DATA/$name/config.json")
  vllm=()
  for _ in $(seq "$RUNS"); do
    # shellcheck disable=SC2086 # argv is the recording's own argument list
    vllm+=("$("$PY" -m poolc.vllm.record --out-dir "$OUT/$name" $argv 2>&1 \
      | "$PY" -c "import json,sys; print([json.loads(l) for l in sys.stdin if l.startswith('{') and 'loop_s' in l][-1]['loop_s'])")")
  done
  "$PY" - "$name" "$POOLC" "$DATA/$name" "$RUNS" "${vllm[*]}" <<'PYEOF'
import statistics, subprocess, sys, time
name, poolc, scenario, runs, vllm = sys.argv[1:6]
vllm = [float(x) for x in vllm.split()]
times = []
for _ in range(int(runs) * 5):
    t = time.perf_counter()
    subprocess.run([poolc, "conform", scenario], check=True, stdout=subprocess.DEVNULL)
    times.append(time.perf_counter() - t)
mv, mp = statistics.median(vllm), statistics.median(times)
print(f"{name}: vLLM loop seconds {vllm}; poolc conform (whole process, {len(times)} runs) "
      f"median {mp*1000:.1f} ms; vLLM/poolc {mv/mp:.0f}x")
PYEOF
done
