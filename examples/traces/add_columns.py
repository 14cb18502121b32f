"""Writes a copy of a bundled trace as our JSONL (docs/TRACES.md) with class columns
that the policies of examples/policies/ read as session attributes (docs/POLICIES.md):

    tier      0 interactive (20 %), 1 batch (60 %), 2 background (20 %)
    priority  0 or 1 (half each), drawn apart from the tier (vLLM's order: lower first)
    slo       the tier's TTFT target in seconds: 2, 10, 60
    pin       1 for tier 0 (its prompt is a pinned prefix), else 0
    tenant    the tier again, as the tenant vtc.pool and wfq.pool count service by (R30)
    share     the tier's weight for weighted fair queueing: 4, 2, 1 (wfq.pool, R30)

Each session draws two numbers, the tier's then the priority's, from a 64-bit LCG
(Knuth's MMIX constants) seeded with `--seed` (default 1), so the same input gives
the same bytes on every machine and Python.

Everything else is the trace's own: arrival (seconds from the first row, computed as
poolc's readers compute it), prompt, output, and for Mooncake the prefix runs of
`hash_ids` (512 tokens each, the last one the rest of the prompt). An Azure CSV has no
content information, so its rows get no runs. Standard library only.

    python3 examples/traces/add_columns.py examples/traces/mooncake_conversation_trace.jsonl > /tmp/mooncake_classes.jsonl
    python3 examples/traces/add_columns.py examples/traces/azure_llm_2023_conv.csv > /tmp/azure_conv_classes.jsonl
"""

import argparse
import csv
import datetime
import json
import sys

SHARES = (0.2, 0.8)  # cumulative: tier 0 below 0.2, tier 1 below 0.8, else tier 2
SLO = (2, 10, 60)  # TTFT target of each tier, seconds
SHARE = (4, 2, 1)  # WFQ weight of each tier (drawn from nothing: the tier decides)
BLOCK = 512  # Mooncake's tokens per hash id


class Lcg:
    """A 64-bit LCG whose top 53 bits make a number in [0, 1)."""

    def __init__(self, seed):
        self.state = seed % (1 << 64)

    def uniform(self):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return (self.state >> 11) / float(1 << 53)


def mooncake(path):
    """(arrival, prompt, output, runs) of each row, as poolc's Mooncake reader reads it."""
    t0 = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            ms = float(row["timestamp"])
            t0 = ms if t0 is None else t0
            prompt = row["input_length"]
            ids = row["hash_ids"]
            runs = [[h, min(BLOCK, prompt - i * BLOCK)] for i, h in enumerate(ids)]
            yield (ms - t0) / 1000.0, prompt, row["output_length"], runs


def nanos(text):
    """A `YYYY-MM-DD HH:MM:SS[.fraction]` timestamp as whole nanoseconds."""
    date, _, frac = text.replace("T", " ").partition(".")
    whole = datetime.datetime.strptime(date, "%Y-%m-%d %H:%M:%S")
    secs = (whole - datetime.datetime(1970, 1, 1)) // datetime.timedelta(seconds=1)
    return secs * 1_000_000_000 + int((frac + "000000000")[:9])


def azure(path):
    """(arrival, prompt, output, no runs) of each row, as poolc's Azure reader reads it."""
    t0 = None
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            t = nanos(row["TIMESTAMP"])
            t0 = t if t0 is None else t0
            yield float(t - t0) / 1e9, int(row["ContextTokens"]), int(row["GeneratedTokens"]), None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="a Mooncake JSONL or an Azure CSV")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rows = azure(args.trace) if args.trace.endswith(".csv") else mooncake(args.trace)
    rng = Lcg(args.seed)
    out = sys.stdout
    for arrival, prompt, output, runs in rows:
        u = rng.uniform()
        tier = 0 if u < SHARES[0] else 1 if u < SHARES[1] else 2
        priority = int(rng.uniform() >= 0.5)
        row = {"arrival": arrival, "prompt": prompt, "output": output}
        if runs is not None:
            row["runs"] = runs
        row.update(tier=tier, priority=priority, slo=SLO[tier], pin=int(tier == 0), tenant=tier, share=SHARE[tier])
        out.write(json.dumps(row, separators=(", ", ": ")) + "\n")


if __name__ == "__main__":
    main()
