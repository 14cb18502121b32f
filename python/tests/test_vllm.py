"""poolc.vllm in vLLM 0.33.0's real v1 scheduler, through the workplace's oracle
(../shared/oracle/vllm/oracle.py, which builds a ``--scheduler-cls`` class exactly as
vLLM's engine core does): with examples/vllm.pool the plugin-driven scheduler records
exactly what stock vLLM recorded on every shared scenario, with
examples/vllm_priority.pool exactly what stock vLLM's priority policy recorded on ours,
and a plugin recording with a non-FCFS spec is re-recorded byte for byte; specs the
plugin cannot honour are refused at start-up. (tests/conform.rs checks that
``poolc conform`` predicts every step of the plugin recordings.)

Needs vLLM 0.33.0 in this interpreter; .ci/test runs this file with the vLLM
environment's Python and ``POOLC_REQUIRE_VLLM=1``, which turns a missing vLLM into a
failure instead of a skip. The oracle runs in this process (runpy), so vLLM is
imported once for all of them."""

import contextlib
import io
import json
import os
import pathlib
import runpy
import shutil
import sys

import pytest

if os.environ.get("POOLC_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 is not installed in this interpreter")

import poolc  # noqa: E402
import poolc.vllm  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
ORACLE = SHARED / "oracle" / "vllm" / "oracle.py"
STOCK = SHARED / "data" / "vllm-oracle"
OURS = ROOT / "tests" / "data" / "vllm-oracle"
PLUGIN = ROOT / "tests" / "data" / "vllm-plugin"
SHARED_SCENARIOS = [
    "a_fcfs_budget_seats",
    "b_fcfs_prefix",
    "c_fcfs_preempt",
    "d_fcfs_chunked",
    "e_fcfs_mixed",
    "f_mooncake_conversation",
]
PRIORITY_SCENARIOS = sorted(p.name for p in OURS.iterdir() if (p / "config.json").is_file() and "_prio_" in p.name)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("fake-model")
    old = sys.argv
    sys.argv = ["make_fake_model.py", str(d)]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(str(ORACLE.parent / "make_fake_model.py"), run_name="__main__")
    finally:
        sys.argv = old
    return d


def record(model_dir, out, argv, conf, cls="poolc.vllm.Scheduler"):
    """Runs the oracle on ``argv`` with the plugin class ``cls`` and ``conf`` (with
    ``conf`` None: stock vLLM); gives steps.jsonl."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    old, cwd = sys.argv, os.getcwd()
    sys.argv = [
        str(ORACLE),
        "--model-dir",
        str(model_dir),
        "--out-dir",
        str(out),
        *argv,
    ]
    if conf is not None:
        sys.argv += ["--scheduler-cls", cls, "--additional-config", json.dumps({"poolc": conf})]
    os.chdir(ROOT)  # specs are named relative to the repository
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(str(ORACLE), run_name="__main__")
    finally:
        sys.argv = old
        os.chdir(cwd)
    return (pathlib.Path(out) / "steps.jsonl").read_bytes()


def argv_of(scenario_dir, tmp_path):
    """A recorded scenario's oracle arguments, its workload file copied under the
    name it was recorded with."""
    config = json.loads((scenario_dir / "config.json").read_text())
    argv = list(config["argv"])
    if "--workload" in argv:
        i = argv.index("--workload") + 1
        copy = tmp_path / argv[i]
        shutil.copy(scenario_dir / "workload.jsonl", copy)
        argv[i] = str(copy)
    return argv


@pytest.mark.parametrize("name", SHARED_SCENARIOS)
def test_with_the_fcfs_spec_the_plugin_records_what_stock_vllm_recorded(model_dir, tmp_path, name):
    got = record(model_dir, tmp_path / name, argv_of(STOCK / name, tmp_path), {"spec": "examples/vllm.pool"})
    assert got == (STOCK / name / "steps.jsonl").read_bytes()


@pytest.mark.parametrize("name", PRIORITY_SCENARIOS)
def test_with_the_priority_spec_the_plugin_records_what_stock_priority_recorded(model_dir, tmp_path, name):
    got = record(model_dir, tmp_path / name, argv_of(OURS / name, tmp_path), {"spec": "examples/vllm_priority.pool"})
    assert got == (OURS / name / "steps.jsonl").read_bytes()


def test_the_async_plugin_records_what_stock_async_scheduling_recorded(model_dir, tmp_path):
    # poolc.vllm.AsyncScheduler on vLLM's AsyncScheduler (--async-sched: finishes lag
    # a step), with vLLM's own FCFS policy as the spec: the same steps as stock.
    argv = argv_of(STOCK / "e_fcfs_mixed", tmp_path) + ["--async-sched"]
    stock = record(model_dir, tmp_path / "stock", argv, None)
    got = record(model_dir, tmp_path / "plugin", argv, {"spec": "examples/vllm.pool"}, "poolc.vllm.AsyncScheduler")
    assert got == stock
    assert b'"preempted":["' in got, "the scenario preempts"


def test_a_plugin_recording_is_re_recorded_byte_for_byte(model_dir, tmp_path):
    name = "p1_sjf_aging"
    config = json.loads((PLUGIN / name / "config.json").read_text())
    conf = config["additional_config"]["poolc"]
    got = record(model_dir, tmp_path / name, argv_of(PLUGIN / name, tmp_path), conf)
    assert got == (PLUGIN / name / "steps.jsonl").read_bytes()


class _Config:
    def __init__(self, conf):
        self.additional_config = {"poolc": conf} if conf is not None else {}


def test_settings_come_from_additional_config_or_the_environment(monkeypatch):
    assert poolc.vllm.settings(_Config({"spec": "a.pool"})) == {"spec": "a.pool"}
    monkeypatch.setenv("POOLC_VLLM", '{"spec": "b.pool", "clock_step": 0.5}')
    assert poolc.vllm.settings(_Config(None))["spec"] == "b.pool"
    monkeypatch.delenv("POOLC_VLLM")
    with pytest.raises(poolc.vllm.ConfigError, match="needs its settings"):
        poolc.vllm.settings(_Config(None))
    with pytest.raises(poolc.vllm.ConfigError, match="unknown poolc setting"):
        poolc.vllm.settings(_Config({"spec": "a.pool", "speed": 2}))
    with pytest.raises(poolc.vllm.ConfigError, match="clock_step"):
        poolc.vllm.settings(_Config({"spec": "a.pool", "clock_step": 0}))


@pytest.mark.parametrize(
    "pool,why",
    [
        ("pool kv { preempt none; admit via e; }", "preempt none"),
        ("pool kv { preempt lifo; evict by (waiting); admit via e; }", "waiting"),
        ("pool kv[2] { preempt lifo; admit via e; }", "family"),
        ("pool t { } stage l { link; } pool kv { preempt lifo; spill t via l (1) when (1); admit via e; }", "spills"),
        ("pool kv { preempt lifo; queue by (budget_left(e)); admit via e; }", "budget_left"),
    ],
)
def test_specs_the_plugin_cannot_honour_are_refused_at_start_up(tmp_path, pool, why):
    spec = tmp_path / "s.pool"
    spec.write_text("stage e { step; } " + pool)
    with pytest.raises(poolc.vllm.ConfigError, match=why):
        poolc.vllm._Policy({"spec": str(spec)})


def test_a_spec_that_does_not_compile_is_refused(tmp_path):
    spec = tmp_path / "s.pool"
    spec.write_text("pool kv { cap nope; }")
    with pytest.raises(poolc.vllm.ConfigError, match="does not compile"):
        poolc.vllm._Policy({"spec": str(spec)})
