"""Type stubs of the public API (docs/PYTHON.md)."""

import os
from typing import Any, Optional, Union

from .errors import BuildError as BuildError
from .errors import CompileError as CompileError
from .errors import EvalError as EvalError
from .errors import PoolcError as PoolcError
from .errors import RunError as RunError
from .errors import TraceError as TraceError

_Path = Union[str, "os.PathLike[str]"]

class Spec:
    @property
    def name(self) -> str: ...
    @property
    def pools(self) -> list[str]: ...
    @property
    def stages(self) -> list[str]: ...
    @property
    def attrs(self) -> list[str]: ...
    def ir(self) -> str: ...
    def eval(self, pool: str, site: str, interp: bool = False, **inputs: float) -> list[float]: ...
    def build(self, path: _Path, *, target: Optional[str] = None, header: Optional[_Path] = None) -> tuple[str, str]: ...

def compile(source: Union[str, "os.PathLike[str]"], *, set: Optional[dict[str, float]] = None) -> Spec: ...
def run(
    spec: Union[Spec, _Path],
    *,
    trace: Optional[_Path] = None,
    format: Optional[str] = None,
    synthetic: Optional[int] = None,
    seed: int = 1,
    log: Optional[_Path] = None,
    progress: bool = False,
) -> dict[str, Any]: ...
def read_trace(path: _Path, format: Optional[str] = None) -> list[dict[str, Any]]: ...
