"""poolc: compile Pool specs (KV-cache pool policies) and replay workloads through
them. The work is done by the same Rust code as the ``poolc`` command line, through
the native module ``poolc._native``; this file only shapes the Python API
(docs/PYTHON.md)."""

import json
import os

from . import _native
from .errors import (
    BuildError,
    CompileError,
    EvalError,
    FitError,
    ModelError,
    PoolcError,
    PoolError,
    RunError,
    SweepError,
    TraceError,
)

Pool = _native.Pool

__all__ = [
    "BuildError",
    "CompileError",
    "EvalError",
    "FitError",
    "ModelError",
    "Pool",
    "PoolError",
    "PoolcError",
    "RunError",
    "Spec",
    "SweepError",
    "TraceError",
    "compile",
    "fit",
    "model",
    "read_trace",
    "run",
    "sweep",
]


def __getattr__(name):
    # `poolc.sweep` is the module python/poolc/sweep.py, callable as
    # `poolc.sweep(grid, backend=...)`; it is imported on first use so that
    # `python -m poolc.sweep` does not find it imported already.
    if name == "sweep":
        import importlib

        return importlib.import_module(".sweep", __name__)
    raise AttributeError(f"module 'poolc' has no attribute {name!r}")


class Spec:
    """A checked and compiled spec (``poolc.compile`` makes one)."""

    def __init__(self, native):
        self._native = native

    @property
    def name(self):
        """How the spec was named: its path, or ``<source>`` for source text."""
        return self._native.name

    @property
    def pools(self):
        """Pool declarations' names, in declaration order."""
        return self._native.pools

    @property
    def stages(self):
        """Stage declarations' names, in declaration order."""
        return self._native.stages

    @property
    def attrs(self):
        """Session attributes' names, in slot order (``serial``, ``arrival`` first)."""
        return self._native.attrs

    def ir(self):
        """The checked IR, as ``poolc ir`` prints it."""
        return self._native.ir()

    def eval(self, pool, site, interp=False, **inputs):
        """One site's values on named inputs, as ``poolc eval`` gives them: ``site`` is
        ``queue``, ``evict``, ``preempt``, ``pred``, ``work`` or ``time`` (``pool`` then names a
        stage). Queries are written as the source writes them, so pass them with
        ``**{"free(kv)": 3}``."""
        values = [(k, float(v)) for k, v in inputs.items()]
        return self._native.eval(pool, site, values, interp)

    def pool(self, name, member=0, attrs=None):
        """A live ``poolc.Pool``: member ``member`` of pool ``name`` with the spec's
        compiled policies, driven by the caller (docs/EMBEDDING.md, docs/PYTHON.md).
        ``attrs`` gives a session's attribute values when it is enqueued: a dict
        ``session -> {name: value}`` or a callable ``session -> dict``; a missing
        attribute takes its default (``serial`` the session number, ``arrival`` the
        enqueue time)."""
        return self._native.pool(name, member, attrs)

    def keys(self, pool, site):
        """The compiled key list of ``site`` (``queue``, ``evict`` or ``preempt``) of
        ``pool``, for a host that fills its own rows: ``keys.row`` and ``keys.ctx`` name
        the inputs of each slot, ``keys.select(rows, n, ctx)`` gives the index of the
        least of ``n`` rows (flat, one after another) by the compiled scan, and
        ``keys.values(row, ctx)`` the keys' values. Raises ``PoolError``."""
        return self._native.keys(pool, site)

    def shape(self):
        """Pools (name, count, cap, block, spill, admit_via, queue, evict, preempt,
        requeue), stages (name, count, kind, budget, seats, chunk) and the session
        attributes' defaults, as a dict: what a host checks a spec against."""
        return self._native.shape()

    def build(self, path, *, target=None, header=None):
        """Writes a shared object of the spec's policies (as ``poolc build``) and its
        C header; gives the two paths."""
        out, h = self._native.build(os.fspath(path), target, None if header is None else os.fspath(header))
        return out, h

    def __repr__(self):
        return f"<poolc.Spec {self.name}: pools {self.pools}, stages {self.stages}>"


def _is_path(source):
    if isinstance(source, os.PathLike):
        return True
    return isinstance(source, str) and "\n" not in source and "{" not in source and os.path.isfile(source)


def compile(source, *, set=None):
    """Checks and compiles a spec: a path (``str`` naming a file, or ``os.PathLike``)
    or the source text. ``set`` overrides ``param`` declarations as ``--set`` does.
    Raises ``CompileError``."""
    overrides = [(str(k), float(v)) for k, v in (set or {}).items()]
    if _is_path(source):
        name = os.fspath(source)
        with open(name, encoding="utf-8") as f:
            text = f.read()
    else:
        name, text = "<source>", source
    return Spec(_native.compile_source(text, name, overrides))


def run(spec, *, trace=None, format=None, synthetic=None, seed=1, log=None, progress=False, workload=None, samples=False, exact=False):
    """Replays a workload through ``spec`` and gives the report ``poolc run --json``
    prints, as a dict (the same keys and values). The workload is ``trace`` (a file;
    ``format`` is ``mooncake``, ``azure`` or ``jsonl``, detected when omitted), or
    ``synthetic`` seeded sessions, or else the bundled Mooncake trace. ``log`` is a
    path for the JSON-lines log. ``workload`` replays rows instead: a list of dicts
    shaped as ``read_trace`` gives them (or a pandas DataFrame of such columns), so a
    notebook can filter or rescale a trace first. ``samples=True`` adds the latency
    samples (``report["samples"]``: ``ttft``, ``itl``, ``e2e`` lists of seconds), for
    CDFs. ``exact=True`` reports exact nearest-rank percentiles (``--exact``) instead
    of the bounded sketch's, within 2^-11 of them plus 1 ns. The GIL is released while the
    replay runs."""
    if not isinstance(spec, Spec):
        spec = compile(spec)
    if workload is not None and hasattr(workload, "to_dict"):
        workload = workload.to_dict("records")
    rows = None if workload is None else [dict(r) for r in workload]
    text = _native.run_json(
        spec._native,
        None if trace is None else os.fspath(trace),
        format,
        synthetic,
        int(seed),
        None if log is None else os.fspath(log),
        bool(progress),
        rows,
        bool(samples),
        bool(exact),
    )
    return json.loads(text)


def fit(steps, *, time, stage="engine"):
    """``poolc fit STEPS --time TIME --stage STAGE --json``: the unknowns of a stage
    ``time`` expression fitted to a step log (docs/STEPS.md, docs/LATENCY.md), as the
    same dict (``unknowns``, ``regimes``, ``notes``, ``fitted_time``, ``stage``, …).
    Raises ``CompileError`` for an expression that does not check or is not linear in
    its unknowns (rendered against ``--time``, as the command does), ``FitError`` for a
    log that cannot be read or fitted."""
    return json.loads(_native.fit_json(os.fspath(steps), time, stage))


def model(
    config,
    *,
    gpu,
    tp=1,
    dtype="bf16",
    time="trained-physics",
    gpu_memory_utilization=0.9,
    block_size=16,
    max_num_seqs=1024,
    max_num_batched_tokens=8192,
):
    """``poolc model CONFIG --gpu GPU [--tp …] …``: the deployment spec for a Hugging
    Face ``config.json`` served on a GPU (the KV capacity vLLM would derive, the
    iteration time as a Pool expression; docs/LATENCY.md), as the same text the
    command prints, ready for ``poolc.compile``'s ``text``. The defaults are the
    command's. Raises ``ModelError`` where the command exits 1."""
    return _native.model_text(
        os.fspath(config),
        gpu,
        tp,
        dtype,
        time,
        gpu_memory_utilization,
        block_size,
        max_num_seqs,
        max_num_batched_tokens,
    )


def read_trace(path, format=None, as_frame=False):
    """The sessions of a trace file as a list of dicts (``arrival``, ``prompt``,
    ``output``, ``runs`` as ``(run_id, length)``, ``id``, and any extra fields), or
    with ``as_frame=True`` a pandas DataFrame of the same columns."""
    rows = _native.read_trace(os.fspath(path), format)
    if not as_frame:
        return rows
    try:
        import pandas
    except ImportError as e:
        raise ImportError("read_trace(..., as_frame=True) needs pandas: pip install pandas") from e
    return pandas.DataFrame(rows)
