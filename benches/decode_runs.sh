#!/usr/bin/env bash
# How many iterations of a replay a decode-only fast-forward could advance in one
# step (issue #16, item 2), read off the replay's own log: `poolc run ARGS --log`
# into a pipe (no file is kept), each iteration line classed by what it did and by
# the pool events between it and the iteration before (its grows happen at its
# start; arrivals show as `enqueue`). Prints, of all iterations: the decode-only ones
# (no admission, continuation, preemption or finish); those also free of any pool
# event (what could be skipped outright); and those whose only events are grows
# inside the blocks already allocated, with nothing waiting (outcome known in
# advance, but every grow still a logged pool operation), with the runs they form.
#   benches/decode_runs.sh [poolc run arguments]    (default: the bundled default run)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
POOLC=${POOLC:-$ROOT/target/release/poolc}
[ -x "$POOLC" ] || (cd "$ROOT" && cargo build --release --locked --bin poolc)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkfifo "$scratch/log"
"$POOLC" run "$@" --log "$scratch/log" >/dev/null &
python3 - "$scratch/log" <<'PY'
import json, sys
its = decode = eventless = known = 0
runs, run, events = [], 0, []
for line in open(sys.argv[1]):
    if line.startswith('{"step"'):
        v = json.loads(line)
        its += 1
        d = not (v["admitted"] or v["cont"] or v["preempted"] or v["finished"])
        decode += d
        eventless += d and not events
        ok = (d and v["waiting"] == 0
              and all(kind == "grow" and alloc == v["allocated"][0] for kind, alloc in events))
        if ok:
            known += 1
            run += 1
        elif run:
            runs.append(run)
            run = 0
        events = []
    elif line.startswith('{"t"'):
        e = json.loads(line)
        events.append((e["ev"], e.get("allocated")))
if run:
    runs.append(run)
pct = lambda n: f"{n} ({n / max(its, 1):.1%})"
print(f"iterations {its}")
print(f"decode-only {pct(decode)}")
print(f"decode-only with no pool event {pct(eventless)}")
print(f"decode-only, grows inside allocated blocks only, none waiting {pct(known)}: "
      f"{len(runs)} runs, mean {known / max(len(runs), 1):.2f}, longest {max(runs, default=0)}")
PY
wait
