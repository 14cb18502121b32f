"""The project's own pytest plugin for vLLM's scheduler tests (loaded with ``-p swap``).

Owns, in both runs: the ``caplog_vllm`` fixture that vLLM's top-level conftest would
give (that conftest needs vLLM's whole test environment, so the suite runs with
``--noconftest``): ``caplog`` with vLLM's logger propagating to it.

Owns, when ``POOLC_UPSTREAM_SPECS`` names the two specs (the plugin run): the
substitution. After collection, every test module's ``create_scheduler`` and
``create_scheduler_with_priority`` (tests/v1/core/utils.py and test_scheduler.py, the
helpers that build a scheduler) are wrapped so that they build ``poolc.vllm.Scheduler``
(``AsyncScheduler`` when the test asks for async scheduling) with the FCFS spec, or the
priority spec when the test asks for vLLM's priority policy. A test that passes its own
``scheduler_cls`` keeps it. Each test that built a plugin scheduler is written, one node
id a line, to ``POOLC_UPSTREAM_BUILT``, so the runner counts them.

Must not: change what a test asserts, or touch a scheduler that a test builds without
the helpers.
"""

import contextlib
import json
import logging
import os
import sys

import pytest

_current = {"nodeid": None}


@pytest.fixture
def caplog_vllm(caplog):
    """``caplog`` receiving vLLM's records: vLLM's logger does not propagate to the
    root logger that ``caplog`` listens on, so it does while the test runs."""
    logger = logging.getLogger("vllm")
    was = logger.propagate
    logger.propagate = True
    try:
        yield caplog
    finally:
        logger.propagate = was


def _specs():
    got = os.environ.get("POOLC_UPSTREAM_SPECS")
    return json.loads(got) if got else None


def _built(cls):
    path = os.environ.get("POOLC_UPSTREAM_BUILT")
    if path and _current["nodeid"] is not None:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{_current['nodeid']}\t{cls.__module__}.{cls.__qualname__}\n")


@contextlib.contextmanager
def _settings(spec):
    """The plugin's settings for the scheduler built inside the block ($POOLC_VLLM,
    read by its constructor)."""
    old = os.environ.get("POOLC_VLLM")
    os.environ["POOLC_VLLM"] = json.dumps({"spec": spec})
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("POOLC_VLLM", None)
        else:
            os.environ["POOLC_VLLM"] = old


def _wrap_create_scheduler(original, specs):
    import poolc.vllm

    def create_scheduler(*args, **kwargs):
        if kwargs.get("scheduler_cls") is not None:
            return original(*args, **kwargs)
        asynchronous = kwargs.get("async_scheduling", False)
        cls = poolc.vllm.AsyncScheduler if asynchronous else poolc.vllm.Scheduler
        policy = kwargs.get("scheduling_policy", "fcfs")
        with _settings(specs["priority" if policy == "priority" else "fcfs"]):
            sched = original(*args, **{**kwargs, "scheduler_cls": cls})
        _built(type(sched))
        return sched

    create_scheduler.poolc_original = original
    return create_scheduler


def _wrap_priority(original, specs):
    """``create_scheduler_with_priority`` constructs ``Scheduler`` by the name its
    module imported; that name is the plugin's class while the helper runs."""
    import poolc.vllm

    home = sys.modules[original.__module__]

    def create_scheduler_with_priority(*args, **kwargs):
        stock = home.Scheduler
        home.Scheduler = poolc.vllm.Scheduler
        try:
            with _settings(specs["priority"]):
                sched = original(*args, **kwargs)
        finally:
            home.Scheduler = stock
        _built(type(sched))
        return sched

    create_scheduler_with_priority.poolc_original = original
    return create_scheduler_with_priority


def pytest_collection_finish(session):
    specs = _specs()
    if specs is None:
        return
    wrapped = {}
    for name, module in sorted(sys.modules.items()):
        if not name.startswith("tests.v1.core") or module is None:
            continue
        for attr, wrap in (
            ("create_scheduler", _wrap_create_scheduler),
            ("create_scheduler_with_priority", _wrap_priority),
        ):
            fn = getattr(module, attr, None)
            if fn is None or not callable(fn):
                continue
            original = getattr(fn, "poolc_original", fn)
            if original not in wrapped:
                wrapped[original] = wrap(original, specs)
            setattr(module, attr, wrapped[original])
    if not wrapped:
        raise pytest.UsageError("swap: no scheduler helper found to substitute (has vLLM's suite changed?)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _current["nodeid"] = item.nodeid


def pytest_runtest_teardown(item):
    _current["nodeid"] = None
