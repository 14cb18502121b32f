"""Measures what a Ray task adds to a sweep point (docs/SWEEP.md, "Scale on paper"):
each point of a grid is run in this process through the native module (its row's
wall seconds) and as a Ray task, one task at a time (submit to result), each
`--repeat` times (medians kept),
and the ratio task time / point time is printed per point, with the median fixed
overhead (task time minus point time). It needs Ray and a running cluster:

    ray start --head --node-ip-address 127.0.0.1 --num-cpus 2 --port 6380
    python examples/python/sweep_overhead.py GRID.toml 127.0.0.1:6380 [--repeat N]
    ray stop

It measures only; it writes nothing but its table on stdout.
"""

import argparse
import json
import os
import statistics
import time

import ray

from poolc import _native
from poolc.sweep import _ray_point


def main():
    p = argparse.ArgumentParser()
    p.add_argument("grid")
    p.add_argument("address")
    p.add_argument("--repeat", type=int, default=3, help="runs per point and backend (medians are kept)")
    a = p.parse_args()
    grid = os.path.abspath(a.grid)
    plan = _native.sweep_plan(grid, None)
    ray.init(address=a.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    task = ray.remote(num_cpus=1, max_retries=0)(_ray_point)
    # Warm the workers (imports, trace caches) so the figures are per task.
    ray.get([task.remote(grid, i, None) for i in range(plan.points)])
    print(f"{'point':>5} {'point s':>9} {'task s':>9} {'ratio':>7} {'overhead ms':>12}")
    overheads = []
    for i in range(plan.points):
        local = statistics.median(
            json.loads(_native.sweep_point(grid, i, None))["wall_seconds"] for _ in range(a.repeat)
        )
        runs = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            ray.get(task.remote(grid, i, None))
            runs.append(time.perf_counter() - t)
        remote = statistics.median(runs)
        overheads.append(remote - local)
        print(f"{i:>5} {local:>9.4f} {remote:>9.4f} {remote / local:>7.3f} {1000 * (remote - local):>12.1f}")
    print(f"median overhead per task: {1000 * statistics.median(overheads):.1f} ms")
    ray.shutdown()


if __name__ == "__main__":
    main()
