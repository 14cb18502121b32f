"""Shared fixtures of the Python tests: the repository root (tests run from any
directory) and the ``poolc`` binary they compare the package with; and the rule that
under CI (``CI`` set) no test may be skipped: a skip there is a test that could not
run because CI failed to install what it needs, so it is reported as a failure with
its reason. Elsewhere a skip is listed with its reason (``pytest -rs``)."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def poolc_binary():
    """The CLI to compare with: $POOLC_BIN, else the release or debug build."""
    given = os.environ.get("POOLC_BIN")
    if given:
        return pathlib.Path(given)
    for profile in ("release", "debug"):
        path = ROOT / "target" / profile / "poolc"
        if path.is_file():
            return path
    pytest.fail("no poolc binary: build it (cargo build --release) or set POOLC_BIN")


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def cli():
    """Runs ``poolc ARGS...`` from the repository root; gives the completed process."""
    binary = poolc_binary()

    def run(*args):
        return subprocess.run(
            [str(binary), *map(str, args)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )

    return run


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    """Relative paths (examples/…) mean what they mean to the CLI run from the root."""
    monkeypatch.chdir(ROOT)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, where every test must run: {reason}"
