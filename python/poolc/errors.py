"""The exceptions of the poolc package. The native module raises these classes, so a
Python caller always gets one of them, never a crashed interpreter."""


class PoolcError(Exception):
    """Base class of every error the package raises on bad input."""


class CompileError(PoolcError):
    """A spec did not check. ``str(e)`` is the rendered diagnostics, as ``poolc check``
    prints them; ``e.diagnostics`` lists them as dicts with ``code``, ``message``,
    ``file``, ``line``, ``column`` and ``span`` (byte offsets ``(start, end)``)."""

    def __init__(self, text, diagnostics):
        super().__init__(text)
        self.diagnostics = list(diagnostics)


class TraceError(PoolcError):
    """A trace file could not be read; the message names the file and line."""


class RunError(PoolcError):
    """A replay could not run (a refused configuration, an unwritable log, ...)."""


class EvalError(PoolcError):
    """``Spec.eval`` was given an unknown pool, site or input."""


class FitError(PoolcError):
    """``poolc.fit`` could not read or fit the step log; the message names the file and
    line, or what the data cannot determine."""


class ModelError(PoolcError):
    """``poolc.model`` could not size the deployment: an unreadable or malformed
    config.json (the message names the file, and the line or key), an unknown GPU,
    dtype or time model, a tensor-parallel degree vLLM cannot split the model over, an
    option out of range, or a model that does not fit the GPU's memory."""


class BuildError(PoolcError):
    """``Spec.build`` could not write or link the shared object."""


class PoolError(PoolcError):
    """A ``poolc.Pool`` refused an operation (unknown session, time going backwards,
    a grow of a non-holder, ...); the message is the engine's."""


class SweepError(PoolcError):
    """A sweep could not run (docs/SWEEP.md): a grid with mistakes (``str(e)`` is the
    rendered diagnostics, with line and column), a spec that does not check with a
    point's params, an unreadable trace, an unwritable output folder, a
    results.jsonl that ``resume`` cannot keep, or a missing Ray."""
