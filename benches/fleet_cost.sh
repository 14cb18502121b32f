#!/usr/bin/env bash
# What routing costs (issue #30, item 8), as ratios in one run of this script: the
# bundled Mooncake trace replayed by one replica at 1× and by fleets of 4 and 16
# replicas at 4× and 16× the arrival rate (examples/fleet/llm_d.pool's deployment).
# Each fleet runs twice: without `route` (serial mod N), and with route keys that
# decide the same thing — round robin first — but read everything llm_d.pool's keys
# read (hit(kv) walks per member, queued/used/cap per member, min_of/max_of), so
# both replays are the same simulation and their difference is the routing alone.
# Runs alternate (A B A B …) RUNS times; medians are printed with the replay's work
# (iterations of all the engines, computed tokens) from the report.
#   benches/fleet_cost.sh [RUNS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
POOLC=${POOLC:-$ROOT/target/release/poolc}
RUNS=${1:-5}
[ -x "$POOLC" ] || (cd "$ROOT" && cargo build --release --locked --bin poolc)
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
SPEC=$ROOT/examples/fleet/llm_d.pool
# The same deployment without `route` (its route spans the lines from `route by` to
# the first line ending in `;`), and with round robin as the first key.
awk '/^  route by/{skip=1} !skip{print} skip&&/;$/{skip=0}' "$SPEC" > "$OUT/none.pool"
sed 's/route by (-(/route by (serial % replicas == member ? 0 : 1, -(/' "$SPEC" > "$OUT/rr_heavy.pool"
grep -q 'serial % replicas == member' "$OUT/rr_heavy.pool"
! grep -q '^  route by' "$OUT/none.pool"
python3 - "$POOLC" "$OUT" "$RUNS" <<'PYEOF'
import json, statistics, subprocess, sys, time
poolc, out, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
cases = [("1 replica, 1x", "none", 1, 1)]
for n in (4, 16):
    cases += [(f"{n} replicas, {n}x, no route", "none", n, n),
              (f"{n} replicas, {n}x, routed", "rr_heavy", n, n)]
def cmd(spec, n, scale):
    return [poolc, "run", f"{out}/{spec}.pool", "--set", f"replicas={n}",
            "--rate-scale", str(scale), "--json"]
work, times = {}, {c[0]: [] for c in cases}
for name, spec, n, scale in cases:
    r = json.loads(subprocess.run(cmd(spec, n, scale), check=True, capture_output=True).stdout)
    r.pop("wall_seconds")
    r.pop("spec")
    work[name] = r
for _ in range(runs):
    for name, spec, n, scale in cases:
        t = time.perf_counter()
        subprocess.run(cmd(spec, n, scale), check=True, stdout=subprocess.DEVNULL)
        times[name].append(time.perf_counter() - t)
base = statistics.median(times[cases[0][0]])
for name, *_ in cases:
    r = work[name]
    its = sum(s["iterations"] for s in r["stages"])
    t = statistics.median(times[name])
    print(f"{name:32s} {t:7.3f} s  x{t / base:5.2f}  iterations {its:8d}  computed {r['computed_tokens']}")
for n in (4, 16):
    a, b = work[f"{n} replicas, {n}x, no route"], work[f"{n} replicas, {n}x, routed"]
    assert a == b, f"{n} replicas: the routed replay must be the same simulation"
    ta = statistics.median(times[f"{n} replicas, {n}x, no route"])
    tb = statistics.median(times[f"{n} replicas, {n}x, routed"])
    print(f"{n} replicas: routing is {100 * (tb - ta) / tb:.1f} % of the routed replay (same reports)")
PYEOF
