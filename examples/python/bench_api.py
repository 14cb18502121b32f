"""Measures, in one run, what a Python host pays at the call boundary (docs/PERFORMANCE.md,
"Python"): (1) admissions per second of one pool member driven through ``poolc.Pool``
against the same stream through the Rust API (examples/admit_loop.rs), and (2)
``poolc.run`` against ``poolc run --json`` on the bundled trace (both wall times are
measured inside Rust). Run from the repository root after ``pip install ./python``
and ``cargo build --release -p poolc-cli -p poolc --bin poolc --example admit_loop``:
``python examples/python/bench_api.py [N]``. Prints ratios; absolute figures move between
machines."""

import json
import subprocess
import sys
import time

import poolc

SPEC = "session { prompt = 64; }\npool kv { cap 65536; block 16; }"


def python_admissions(n):
    pool = poolc.compile(SPEC).pool("kv")
    start = time.perf_counter()
    admitted = 0
    for i in range(n):
        t = i * 0.001
        pool.enqueue(t, i, 64, chain=[(i % 100, 32), (1_000_000 + i, 32)])
        pool.settle(t)
        admitted += sum(1 for x in pool.notices() if x["kind"] == "admitted")
        pool.set_computed(i, 64)
        pool.release(t, i)
    return admitted, time.perf_counter() - start


def rust_admissions(n):
    out = subprocess.run(
        ["target/release/examples/admit_loop", str(n)], capture_output=True, text=True, check=True
    )
    words = out.stdout.split()
    return int(words[1]), float(words[3])


def main(argv):
    n = int(argv[0]) if argv else 200_000
    py_n, py_s = python_admissions(n)
    rs_n, rs_s = rust_admissions(n)
    assert py_n == rs_n == n, (py_n, rs_n, n)
    print(f"admissions: Python {n / py_s:,.0f}/s, Rust {n / rs_s:,.0f}/s, Rust/Python {py_s / rs_s:.1f}x")
    cli = json.loads(
        subprocess.run(
            ["target/release/poolc", "run", "examples/vllm.pool", "--json"],
            capture_output=True, text=True, check=True,
        ).stdout
    )["wall_seconds"]
    ours = poolc.run(poolc.compile("examples/vllm.pool"))["wall_seconds"]
    print(f"run: poolc.run {ours:.3f} s, CLI {cli:.3f} s, ratio {ours / cli:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
