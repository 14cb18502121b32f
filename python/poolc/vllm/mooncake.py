"""``python -m poolc.vllm.mooncake``: turns rows of a Mooncake trace (JSON Lines, as
examples/traces/mooncake_conversation_trace.jsonl) into a workload file that
``python -m poolc.vllm.record --workload`` feeds to vLLM (the workload.jsonl format,
docs/CONFORMANCE.md).

What it owns: the mapping from a row to a request, and the checks that make the
result a valid workload (a row's ``hash_ids`` cover its prompt; the runs are
prefix-chained). A Mooncake row

    {"timestamp": ms, "input_length": P, "output_length": O, "hash_ids": [h0, ..., hk]}

(one id per 512-token block, the last block partial, ids prefix-chained) becomes

    {"id": "r<i>", "arrival_step": s, "prompt": P, "output": O', "runs": [[h0+K, 512], ..., [hk+K, P-512k]]}

with ``i`` the row's 0-based line in the trace (kept when earlier rows are dropped),
``s = floor((timestamp - t0) / step_ms)`` (``t0`` the first row taken, or ``--t0``),
``O'`` the output capped at ``--max-output``, and ``K`` (``--id-offset``) by default
``1000 * (1 + ceil(N / 1000))`` for ``N`` requests written, clear of the ids
``[1000, 1000 + N)`` the recorder gives the unique tails of generated requests. Rows
whose prompt + output exceeds ``--max-model-len`` are dropped. Lines are in feed
order: by arrival step, then trace order.

What it must not do: read anything but the trace and its arguments, or write
anything but the workload (a summary goes to stderr as JSON), so that the same
arguments give the same bytes. It needs nothing but the standard library; it sits
beside the recorder, the reader of what it writes, so importing it imports vLLM too
(``poolc.vllm``).
"""

import argparse
import json
import math
import os
import sys
from fractions import Fraction

from ..errors import PoolcError

__all__ = ["ConvertError", "convert", "main"]


class ConvertError(PoolcError):
    """The trace or the arguments do not give a workload; the message names the
    trace line or the argument at fault."""


def convert(trace, first=0, step_ms="50", t0=None, max_output=0, max_model_len=0, id_offset=None, block=512):
    """The workload text for the first ``first`` rows of ``trace`` (0: all), and a
    summary of the conversion (rows dropped and capped, the id offset, counts).
    ``step_ms`` is a decimal string (or number), kept exact."""
    try:
        step = Fraction(step_ms)
    except (ValueError, TypeError) as e:
        raise ConvertError(f"--step-ms {step_ms!r} is not a number") from e
    if step <= 0:
        raise ConvertError(f"--step-ms must be > 0, not {step_ms}")
    rows = []
    with open(trace, encoding="utf-8") as f:
        for lineno, line in enumerate(f):
            if first and lineno >= first:
                break
            if not line.strip():
                continue
            where = f"{trace}:{lineno + 1}"
            try:
                r = json.loads(line)
            except ValueError as e:
                raise ConvertError(f"{where}: not JSON: {e}") from e
            for k in ("timestamp", "input_length", "output_length", "hash_ids"):
                if k not in r:
                    raise ConvertError(f"{where}: missing {k!r}")
            p, o, h = r["input_length"], r["output_length"], r["hash_ids"]
            if p < 1 or o < 1:
                raise ConvertError(f"{where}: input_length {p} / output_length {o} < 1")
            if len(h) != math.ceil(p / block):
                raise ConvertError(
                    f"{where}: {len(h)} hash_ids for input_length {p} (want ceil({p}/{block}) = {math.ceil(p / block)})"
                )
            rows.append((lineno, r))
    if not rows:
        raise ConvertError(f"{trace}: no rows")
    if t0 is None:
        t0 = rows[0][1]["timestamp"]

    stats = dict(
        trace=os.path.basename(trace),
        rows_read=len(rows),
        step_ms=str(step_ms),
        t0_ms=t0,
        max_output=max_output,
        max_model_len=max_model_len,
        outputs_capped=0,
        dropped_too_long=0,
        dropped_ids=[],
    )
    kept = []
    for lineno, r in rows:
        p, o = r["input_length"], r["output_length"]
        if max_output and o > max_output:
            o = max_output
            stats["outputs_capped"] += 1
        if max_model_len and p + o > max_model_len:
            stats["dropped_too_long"] += 1
            stats["dropped_ids"].append(f"r{lineno}")
            continue
        dt = r["timestamp"] - t0
        if dt < 0:
            raise ConvertError(f"{trace}:{lineno + 1}: timestamp {r['timestamp']} before t0 {t0}")
        kept.append(dict(lineno=lineno, step=math.floor(Fraction(dt) / step), p=p, o=o, h=r["hash_ids"]))
    if not kept:
        raise ConvertError(f"{trace}: every row was dropped (--max-model-len {max_model_len})")
    n = len(kept)
    k = 1000 * (1 + math.ceil(n / 1000)) if id_offset is None else id_offset
    if min(min(w["h"]) for w in kept) + k < 0:
        raise ConvertError(f"--id-offset {k} makes a run id negative")
    reordered = sum(1 for a, b in zip(kept, kept[1:]) if b["step"] < a["step"])
    kept.sort(key=lambda w: w["step"])  # stable: ties keep trace order

    chain = {}  # run id -> (start, length, previous run id)
    lines = []
    for w in kept:
        p, h = w["p"], w["h"]
        runs, pos, prev = [], 0, None
        for j, hid in enumerate(h):
            length = block if j < len(h) - 1 else p - block * (len(h) - 1)
            rid = hid + k
            have = chain.setdefault(rid, (pos, length, prev))
            if have != (pos, length, prev):
                raise ConvertError(
                    f"{trace}:{w['lineno'] + 1}: hash id {hid} is not prefix-chained: (start, len, previous run) "
                    f"= {(pos, length, prev)} here, {have} earlier"
                )
            runs.append([rid, length])
            pos += length
            prev = rid
        line = dict(id=f"r{w['lineno']}", arrival_step=w["step"], prompt=p, output=w["o"], runs=runs)
        lines.append(json.dumps(line, separators=(",", ":")) + "\n")

    uses = {}
    for w in kept:
        for hid in w["h"]:
            uses[hid] = uses.get(hid, 0) + 1
    stats.update(
        rows_written=n,
        reordered=reordered,
        id_offset=k,
        run_ids=[min(chain), max(chain)],
        distinct_runs=len(chain),
        runs_in_several_requests=sum(1 for c in uses.values() if c > 1),
        arrival_steps=[kept[0]["step"], kept[-1]["step"]],
        prompt_tokens=sum(w["p"] for w in kept),
        output_tokens=sum(w["o"] for w in kept),
        max_prompt=max(w["p"] for w in kept),
        max_prompt_plus_output=max(w["p"] + w["o"] for w in kept),
    )
    return "".join(lines), stats


def main(argv=None):
    """The command line: writes the workload, prints the summary on stderr."""
    ap = argparse.ArgumentParser(
        prog="python -m poolc.vllm.mooncake",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("trace", help="Mooncake JSONL trace")
    ap.add_argument("-o", "--out", default="-", help="workload file to write (default: stdout)")
    ap.add_argument("--first", type=int, default=0, metavar="N", help="only the first N rows (0: all)")
    ap.add_argument("--step-ms", default="50", help="milliseconds per scheduler step (default 50; decimals allowed)")
    ap.add_argument("--t0", type=int, default=None, help="timestamp (ms) of step 0 (default: the first row taken)")
    ap.add_argument("--max-output", type=int, default=0, metavar="CAP", help="cap output_length at CAP (0: none)")
    ap.add_argument(
        "--max-model-len", type=int, default=0, metavar="L", help="drop rows whose prompt + output > L (0: keep all)"
    )
    ap.add_argument(
        "--id-offset",
        type=int,
        default=None,
        metavar="K",
        help="run id = hash id + K (default 1000 * (1 + ceil(N / 1000)), N = rows written)",
    )
    ap.add_argument("--mooncake-block", type=int, default=512, help="tokens per hash id in the trace (default 512)")
    args = ap.parse_args(argv)
    try:
        text, stats = convert(
            args.trace,
            first=args.first,
            step_ms=args.step_ms,
            t0=args.t0,
            max_output=args.max_output,
            max_model_len=args.max_model_len,
            id_offset=args.id_offset,
            block=args.mooncake_block,
        )
    except (ConvertError, OSError) as e:
        sys.exit(f"poolc.vllm.mooncake: {e}")
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    print(json.dumps(stats), file=sys.stderr)


if __name__ == "__main__":
    main()
