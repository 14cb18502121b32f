"""poolc.sweep: run every point of a sweep grid (docs/SWEEP.md) on the local backend
(threads of this process) or on a Ray cluster (one Ray task per point), and write
results.jsonl, results.csv and the summary exactly as ``poolc sweep`` does.

The grid is parsed, expanded and checked by the native module (the Rust code of
``poolc sweep``); a point is run by the native ``sweep_point`` (the replay in Rust,
with the GIL released), which gives its row as a JSON line; the native plan appends
each row to results.jsonl and writes results.csv and the summary. So the rows of
both backends, and of the CLI, are the same bytes but for wall seconds and the order
they finished in. This file only schedules points and waits for them: it never
parses a grid, expands points or formats a row.

    python -m poolc.sweep GRID.toml [--ray auto|ADDRESS|local] [--out DIR] [--resume]
                          [--search rate|none] [--jobs N]

or ``poolc.sweep(grid, backend="local" | "ray", ...)``. Ray is optional:
``pip install './python[ray]'``.
"""

import argparse
import concurrent.futures
import json
import os
import sys
import types

from . import _native
from .errors import SweepError

#: The Ray release the ``ray`` extra pins (python/pyproject.toml).
RAY_VERSION = "2.60.0"

_NO_RAY = (
    "poolc: the Ray backend needs Ray, which is not installed: "
    "pip install './python[ray]' (from a checkout) or pip install 'ray==" + RAY_VERSION + "'"
)


def _default_out(grid):
    stem = os.path.splitext(os.path.basename(grid))[0] or "grid"
    return "sweep-" + stem


def sweep(grid, *, backend="local", out=None, resume=False, search=None, jobs=None, address="auto"):
    """Runs every point of the grid file ``grid`` and gives a dict: ``summary`` (the
    text ``poolc sweep`` prints), ``rows`` (results.jsonl's rows as dicts, by point),
    ``csv`` and ``jsonl`` (the files' paths), ``ran`` and ``resumed`` (counts).

    ``backend`` is ``"local"`` (``jobs`` threads, default every core) or ``"ray"``
    (one task per point on the cluster at ``address``: ``"auto"`` for the one
    ``ray start`` runs, an address, or ``"local"`` to start one in this process).
    ``out`` is the output folder (default ``sweep-<grid name>``), ``resume`` keeps
    the rows an interrupted sweep of the same grid wrote there, ``search`` is
    ``"rate"`` or ``"none"`` to force the capacity search on or off. Raises
    ``SweepError``. On KeyboardInterrupt the finished rows stay in results.jsonl
    and results.csv, and the interrupt is raised again."""
    if backend == "local":
        runner = _run_local
        opts = {"jobs": jobs}
    elif backend == "ray":
        # Before anything is opened: a missing Ray must not empty results.jsonl.
        try:
            import ray  # noqa: F401
        except ImportError as e:
            raise SweepError(_NO_RAY) from e
        runner = _run_ray
        opts = {"address": address}
    else:
        raise ValueError(f"backend must be 'local' or 'ray', not {backend!r}")
    grid = os.path.abspath(os.fspath(grid))
    plan = _native.sweep_plan(grid, search)
    out = os.path.abspath(os.fspath(out) if out is not None else _default_out(grid))
    pending = plan.open(out, bool(resume))
    ran = 0
    try:
        ran = runner(plan, grid, search, pending, **opts)
    finally:
        # Interrupted or not, results.csv holds every row finished so far.
        summary = plan.finish(ran)
    jsonl = os.path.join(out, "results.jsonl")
    with open(jsonl, encoding="utf-8") as f:
        rows = sorted((json.loads(line) for line in f if line.strip()), key=lambda r: r["point"])
    return {
        "summary": summary,
        "rows": rows,
        "csv": os.path.join(out, "results.csv"),
        "jsonl": jsonl,
        "ran": ran,
        "resumed": plan.resumed(),
    }


def _run_local(plan, grid, search, pending, jobs):
    """Threads of this process, each running points through the native module (the
    GIL is released while a point runs). Ctrl-C waits for the points under way."""
    jobs = jobs or os.cpu_count() or 1
    ran = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, int(jobs))) as pool:
        futures = [pool.submit(_native.sweep_point, grid, i, search) for i in pending]
        try:
            for future in concurrent.futures.as_completed(futures):
                plan.append(future.result())
                ran += 1
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return ran


def _ray_point(grid, index, search):
    """One Ray task: the point's row, as the native module gives it."""
    from poolc import _native as native

    return native.sweep_point(grid, index, search)


def _run_ray(plan, grid, search, pending, address):
    """One Ray task per point (one CPU each), rows appended as tasks finish."""
    try:
        import ray
    except ImportError as e:
        raise SweepError(_NO_RAY) from e
    started = False
    if not ray.is_initialized():
        ray.init(
            address=None if address == "local" else address,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
        started = True
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(_ray_point)
        refs = {task.remote(grid, i, search): i for i in pending}
        ran = 0
        try:
            while refs:
                done, _ = ray.wait(list(refs), num_returns=1)
                for ref in done:
                    index = refs.pop(ref)
                    try:
                        line = ray.get(ref)
                    except SweepError:
                        raise
                    except Exception as e:
                        raise SweepError(f"poolc: point {index}: the Ray task failed: {e}") from e
                    plan.append(line)
                    ran += 1
        except BaseException:
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
        return ran
    finally:
        if started:
            ray.shutdown()


def main(argv=None):
    """``python -m poolc.sweep``: the exit codes of ``poolc sweep`` (0 done, 1 an
    error, 2 a usage error, 130 interrupted)."""
    p = argparse.ArgumentParser(
        prog="python -m poolc.sweep",
        description="Run every point of a sweep grid (docs/SWEEP.md) locally or on a Ray cluster.",
    )
    p.add_argument("grid", help="the grid file (TOML)")
    p.add_argument(
        "--ray",
        metavar="auto|ADDRESS|local",
        help="run each point as a Ray task on this cluster (default: threads of this process)",
    )
    p.add_argument("--out", metavar="DIR", help="the output folder (default: sweep-<grid name>)")
    p.add_argument("--resume", action="store_true", help="keep the rows an interrupted sweep wrote")
    p.add_argument("--search", choices=["rate", "none"], help="force the capacity search on or off")
    p.add_argument("--jobs", type=int, metavar="N", help="threads of the local backend")
    a = p.parse_args(argv)
    if a.jobs is not None and a.jobs < 1:
        p.error("--jobs must be at least 1")
    try:
        result = sweep(
            a.grid,
            backend="ray" if a.ray else "local",
            address=a.ray or "auto",
            out=a.out,
            resume=a.resume,
            search=a.search,
            jobs=a.jobs,
        )
    except SweepError as e:
        print(str(e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("poolc: interrupted; run again with --resume to finish", file=sys.stderr)
        return 130
    sys.stdout.write(f"{result['summary']}\nrows: {result['csv']} and {result['jsonl']}\n")
    return 0


class _CallableModule(types.ModuleType):
    """Lets ``poolc.sweep(grid, ...)`` call :func:`sweep` although ``poolc.sweep`` is
    this module (which ``python -m poolc.sweep`` runs)."""

    def __call__(self, grid, **options):
        return sweep(grid, **options)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
