"""poolc.compile and Spec against the command line: every tests/ui case raises a
CompileError whose text is what ``poolc check`` prints for it, with its diagnostics
as data; a clean spec's names, IR and values are the CLI's."""

import pathlib

import pytest

import poolc

UI = sorted(pathlib.Path(__file__).resolve().parents[2].joinpath("tests", "ui").glob("*.pool"))


def case_set(pool):
    """The ``--set`` pairs of a case's ``.args`` file (the only flag cases use)."""
    args_file = pool.with_suffix(".args")
    if not args_file.exists():
        return [], {}
    words = args_file.read_text().split()
    pairs = {}
    for flag, value in zip(words[::2], words[1::2]):
        assert flag == "--set", f"{args_file}: only --set is used by ui cases"
        name, number = value.split("=", 1)
        pairs[name] = float(number)
    return words, pairs


def test_there_are_ui_cases():
    assert len(UI) > 40


@pytest.mark.parametrize("pool", UI, ids=lambda p: p.stem)
def test_compile_error_text_is_what_poolc_check_prints(pool, cli):
    relative = pool.relative_to(pool.parents[2])
    words, pairs = case_set(pool)
    out = cli("check", relative, *words)
    assert out.returncode == 1, out.stderr
    # The CLI ends with its count line; the diagnostics before it are the text.
    rendered, summary = out.stderr.rstrip("\n").rsplit("\n", 1)
    assert summary.startswith("poolc: "), summary
    with pytest.raises(poolc.CompileError) as info:
        poolc.compile(str(relative), set=pairs)
    assert str(info.value) == rendered + "\n"
    diags = info.value.diagnostics
    assert diags, "a CompileError lists its diagnostics"
    for d in diags:
        assert set(d) == {"code", "message", "file", "line", "column", "span"}
        assert d["file"] == str(relative)
        assert f"error[{d['code']}]: {d['message']}" in rendered
        if d["span"] is not None:
            # The rendered text points at the same place: `file:line:column`.
            assert f"{relative}:{d['line']}:{d['column']}" in rendered
            start, end = d["span"]
            assert 0 <= start <= end <= len(pool.read_bytes())


def test_source_text_is_named_source():
    with pytest.raises(poolc.CompileError) as info:
        poolc.compile("pool kv { cap 1; block 1; queue by (nosuch); }")
    assert info.value.diagnostics[0]["file"] == "<source>"
    assert "<source>:1:" in str(info.value)


def test_names_of_a_spec_in_declaration_order():
    spec = poolc.compile("examples/tiered.pool")
    assert spec.name == "examples/tiered.pool"
    # examples/tiered.pool declares `pool host` (line 35) before `pool kv` (line 41),
    # and the stages `engine` then `pcie`.
    assert spec.pools == ["host", "kv"]
    assert spec.stages == ["engine", "pcie"]
    assert spec.attrs[:2] == ["serial", "arrival"]


def test_ir_is_what_poolc_ir_prints(cli):
    for example in ("examples/vllm.pool", "examples/ascend.pool", "examples/tiered.pool"):
        out = cli("ir", example)
        assert out.returncode == 0, out.stderr
        assert poolc.compile(example).ir() == out.stdout


def test_set_overrides_a_param_as_the_cli_does(cli):
    out = cli("ir", "examples/vllm.pool", "--set", "num_gpu_blocks=100")
    assert poolc.compile("examples/vllm.pool", set={"num_gpu_blocks": 100}).ir() == out.stdout
    assert poolc.compile("examples/vllm.pool").ir() != out.stdout


@pytest.mark.parametrize(
    "example,pool,site,inputs,first",
    [
        # ascend's lane: immediate → 0; a long prompt that waited 3 or more → 1.
        ("examples/ascend.pool", "kv", "queue", {"immediate": 1, "waited": 4, "serial": 7, "prompt": 100}, 0.0),
        ("examples/ascend.pool", "kv", "queue", {"immediate": 0, "waited": 3.5, "serial": 3, "prompt": 500}, 1.0),
        # tiered spills every evicted block: its predicate is `1`.
        ("examples/tiered.pool", "kv", "pred", {"size": 16}, 1.0),
        ("examples/tiered.pool", "kv", "work", {"units": 16}, None),
        # trained physics' sums (R29), for an iteration of one session's 300-token chunk.
        (
            "examples/vllm.pool",
            "engine",
            "time",
            {"tokens": 300, "prefill": 300, "decode": 0, "residents": 1, "computed": 0, "context": 300, "prompt": 300},
            None,
        ),
        # BLIS's blackbox fit: 5752.7 µs + 17.25 µs · 300 + 6 µs · 8.
        (
            "examples/vllm_blackbox.pool",
            "engine",
            "time",
            {"prefill": 300, "decode": 8},
            0.0057527 + 0.00001725 * 300 + 0.000006 * 8,
        ),
        # vLLM's priority victim keys (R18): (-priority, -arrival).
        ("examples/vllm_priority.pool", "kv", "preempt", {"priority": 2, "arrival": 9}, -2.0),
        # a fleet's route keys (R22), one member's row: Dynamo's cost is
        # (300 − 64 − 0.75 · 32) / 16 + 1600 / 16 = 13.25 + 100.
        (
            "examples/fleet/dynamo.pool",
            "kv",
            "route",
            {"prompt": 300, "hit(kv)": 64, "tier_hit(kv)": 32, "used(kv)": 1600},
            113.25,
        ),
        # a handoff's work (R26): 100 units of Llama-3.1-8B's KV at 128 KiB each.
        ("examples/disagg/split.pool", "pkv", "handoff", {"units": 100}, 13107200.0),
    ],
)
def test_eval_is_what_poolc_eval_prints(cli, example, pool, site, inputs, first):
    args = [f"{k}={v}" for k, v in inputs.items()]
    out = cli("eval", example, "--pool", pool, "--site", site, *args)
    assert out.returncode == 0, out.stderr
    want = [float(x) for x in out.stdout.split()]
    spec = poolc.compile(example)
    assert spec.eval(pool, site, **inputs) == want
    assert want, "the site has values"
    if first is not None:
        assert want[0] == first
    assert spec.eval(pool, site, interp=True, **inputs) == want


def test_eval_misuse_raises_eval_error():
    spec = poolc.compile("examples/vllm.pool")
    with pytest.raises(poolc.EvalError):
        spec.eval("nosuch", "queue")
    with pytest.raises(poolc.EvalError):
        spec.eval("kv", "nosite")


def test_build_writes_a_library_the_cli_can_run(cli, tmp_path):
    spec = poolc.compile("examples/vllm.pool")
    lib, header = spec.build(tmp_path / "libvllm.so")
    assert pathlib.Path(lib).is_file() and pathlib.Path(header).is_file()
    out = cli("run", "examples/vllm.pool", "--synthetic", "200", "--policy", lib, "--json")
    assert out.returncode == 0, out.stderr


def test_keys_select_with_the_compiled_scan():
    # vLLM's priority victim, `preempt by (-priority, -arrival)`: rows (arrival,
    # priority); the least is the highest priority number, the latest among equals.
    keys = poolc.compile("examples/vllm_priority.pool").keys("kv", "preempt")
    assert (keys.row, keys.ctx, len(keys), keys.fixed) == (["arrival", "priority"], [], 2, True)
    rows = [0.0, 1.0, 1.0, 3.0, 2.0, 3.0, 3.0, 0.0]
    assert keys.select(rows, 4, []) == 2
    assert keys.values([2.0, 3.0], []) == [-3.0, -2.0]
    assert keys.select([], 0, []) is None
    with pytest.raises(poolc.PoolError, match="4 rows of 2 slots"):
        keys.select(rows[:-1], 4, [])
    # `waited` makes the Ascend lanes depend on the moment: not fixed, `now` in ctx.
    lanes = poolc.compile("examples/ascend.pool").keys("kv", "queue")
    assert lanes.ctx == ["now"] and not lanes.fixed
    with pytest.raises(poolc.PoolError, match="queues fifo"):
        poolc.compile("examples/vllm.pool").keys("kv", "queue")


def test_shape_gives_what_a_host_checks():
    shape = poolc.compile("examples/vllm_priority.pool").shape()
    (kv,) = shape["pools"]
    assert (kv["name"], kv["count"], kv["block"], kv["admit_via"]) == ("kv", 1, 16, "engine")
    assert (kv["queue"], kv["evict"], kv["preempt"], kv["requeue"], kv["spill"]) == ("by", "lru", "by", "keyed", False)
    # R21: its queue keys end in `id`, vLLM's last tie (request_id as text).
    assert kv["queue_tie"] == "id"
    assert poolc.compile("examples/vllm.pool").shape()["pools"][0]["queue_tie"] == "enqueue"
    (engine,) = shape["stages"]
    assert (engine["kind"], engine["budget"], engine["seats"], engine["chunk"]) == ("step", 8192, 256, None)
    assert dict(shape["defaults"])["priority"] == 0.0
    # R25: the pool a family hands off to, else None.
    pools = poolc.compile("examples/disagg/split.pool").shape()["pools"]
    assert [(p["name"], p["handoff"]) for p in pools] == [("pkv", "dkv"), ("dkv", None)]
    assert kv["handoff"] is None
