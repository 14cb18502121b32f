"""TTFT and E2E percentiles per class of a workload column, from a replay's log.

`poolc run --json` reports one distribution for all sessions; a policy that treats
classes differently (tiers, SLOs, priorities) is judged per class. This reads the
iteration lines of `poolc run --log` (docs/TRACES.md, "The log") and the workload
(our JSONL, e.g. what examples/traces/add_columns.py writes), and prints, per value
of `--by`, the sessions, TTFT p50/p90/p99, E2E p50/p90 and, with `--slo`, the share
of sessions whose TTFT met their own target. Standard library only.

A session's first token is sampled at the end of the first iteration after which
its computed tokens reach its prompt (hit plus tokens taken when admitted, plus its
`cont` tokens; a preemption resets it, R15); it finishes at the end of the iteration
that lists it in `finished`. Percentiles are nearest-rank, as `poolc run --exact`
reports them: the script checks that its all-sessions figures equal the report's.

    poolc run examples/policies/sla_tiers.pool --trace /tmp/mooncake_classes.jsonl \\
        --exact --log /dev/stdout | python3 examples/policies/per_class.py \\
        /tmp/mooncake_classes.jsonl --by tier --slo slo
"""

import argparse
import json
import math
import sys


def nearest_rank(values, p):
    """The p-th percentile, nearest-rank: the value at 1-based rank ceil(p/100 * n)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


def sessions(path):
    """(arrival, prompt, row) of each session of our JSONL, in serial order."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                yield row["arrival"], row["prompt"], row


def replay(lines, prompts):
    """First-token and finish times by serial, from the log's iteration lines."""
    computed, first, done = {}, {}, {}
    report = None
    for line in lines:
        if line.startswith('{"step"'):
            it = json.loads(line)
            out = set(it["preempted"])
            for s in out:
                computed[s] = 0
            for s, _kind, hit, tokens in it["admitted"]:
                computed[s] = hit + tokens
            for s, tokens in it["cont"]:
                if s not in out:
                    computed[s] = computed.get(s, 0) + tokens
            for s, c in computed.items():
                if s not in first and c >= prompts[s]:
                    first[s] = it["end"]
            for s in it["finished"]:
                done[s] = it["end"]
        elif line.startswith("{") and '"ttft"' in line:
            report = json.loads(line)
    return first, done, report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload", help="the workload the log replayed (our JSONL)")
    parser.add_argument("--by", required=True, help="the column whose values are the classes")
    parser.add_argument("--slo", help="a column holding each session's TTFT target, seconds")
    parser.add_argument("--log", default="-", help="the log (default: standard input)")
    parser.add_argument("--rate-scale", type=float, default=1.0,
                        help="the run's --rate-scale (its arrivals were divided by it)")
    args = parser.parse_args()
    rows = [(a / args.rate_scale, p, row) for a, p, row in sessions(args.workload)]
    prompts = [p for _, p, _ in rows]
    log = sys.stdin if args.log == "-" else open(args.log, encoding="utf-8")
    first, done, report = replay(log, prompts)
    if len(first) != len(rows) or len(done) != len(rows):
        sys.exit(f"the log has {len(first)} first tokens and {len(done)} finishes "
                 f"for {len(rows)} sessions")
    ttft = [first[s] - a for s, (a, _, _) in enumerate(rows)]
    e2e = [done[s] - a for s, (a, _, _) in enumerate(rows)]
    if report is not None:  # the report, when it shares the stream (`--log /dev/stdout`)
        for name, mine in (("ttft", ttft), ("e2e", e2e)):
            for p in (50, 90, 99):
                want, got = report[name][f"p{p}"], nearest_rank(mine, p)
                if abs(want - got) > 1e-6:
                    sys.exit(f"{name} p{p}: the report says {want}, the log gives {got}")
    classes = sorted({row[args.by] for _, _, row in rows})
    head = f"{args.by:>8} {'sessions':>9} {'ttft p50':>9} {'p90':>8} {'p99':>8} {'e2e p50':>8} {'p90':>8}"
    print(head + (f" {'ttft<=slo':>9}" if args.slo else ""))
    for c in classes + ["all"]:
        members = [s for s, (_, _, row) in enumerate(rows) if c == "all" or row[args.by] == c]
        t = [ttft[s] for s in members]
        e = [e2e[s] for s in members]
        cells = [nearest_rank(t, 50), nearest_rank(t, 90), nearest_rank(t, 99),
                 nearest_rank(e, 50), nearest_rank(e, 90)]
        line = f"{c:>8} {len(members):>9} " + " ".join(f"{v:>7.2f}s" for v in cells)
        if args.slo:
            met = sum(ttft[s] <= rows[s][2][args.slo] for s in members)
            line += f" {100 * met / len(members):>8.1f}%"
        print(line)


if __name__ == "__main__":
    main()
