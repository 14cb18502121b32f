"""poolc.run and poolc.read_trace against the command line: the same report, key for
key and value for value (wall time aside), on the bundled traces and a synthetic
workload; the same log bytes; bad input raises the package's exceptions."""

import json
import sys
import time

import pytest

import poolc

TRACES = [
    "examples/traces/mooncake_conversation_trace.jsonl",
    "examples/traces/azure_llm_2023_code.csv",
]


def cli_report(cli, *args):
    out = cli("run", *args, "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    report.pop("wall_seconds")
    return report


def py_report(*args, **kwargs):
    report = poolc.run(*args, **kwargs)
    assert report.pop("wall_seconds") >= 0
    return report


@pytest.mark.parametrize("trace", TRACES)
def test_run_equals_the_cli_on_a_bundled_trace(cli, trace):
    want = cli_report(cli, "examples/vllm.pool", "--trace", trace)
    got = py_report(poolc.compile("examples/vllm.pool"), trace=trace)
    assert got == want
    assert got["finished"] > 0


@pytest.mark.parametrize(
    "example",
    [
        "examples/tiered.pool",
        "examples/replicas.pool",
        "examples/fleet/llm_d.pool",
        "examples/fleet/llm_d_approx.pool",
        "examples/disagg/least_queued.pool",
    ],
)
def test_run_equals_the_cli_on_a_synthetic_workload(cli, example):
    want = cli_report(cli, example, "--synthetic", "3000", "--seed", "7")
    got = py_report(poolc.compile(example), synthetic=3000, seed=7)
    assert got == want
    assert got != py_report(poolc.compile(example), synthetic=3000, seed=8)


def test_the_default_workload_is_the_cli_default(cli):
    want = cli_report(cli, "examples/vllm.pool")
    assert py_report(poolc.compile("examples/vllm.pool")) == want


def test_the_log_has_the_cli_log_bytes(cli, tmp_path):
    ours, theirs = tmp_path / "py.jsonl", tmp_path / "cli.jsonl"
    cli_report(cli, "examples/tiered.pool", "--synthetic", "300", "--log", theirs)
    py_report(poolc.compile("examples/tiered.pool"), synthetic=300, log=ours)
    assert ours.read_bytes() == theirs.read_bytes()
    assert len(ours.read_bytes()) > 10_000


def test_read_trace_gives_the_sessions(root):
    rows = poolc.read_trace(TRACES[0])
    lines = [json.loads(l) for l in (root / TRACES[0]).read_text().splitlines() if l.strip()]
    assert len(rows) == len(lines)
    first, line = rows[0], lines[0]
    assert first["prompt"] == line["input_length"]
    assert first["output"] == line["output_length"]
    assert first["arrival"] == line["timestamp"] / 1000.0
    assert sum(n for _, n in first["runs"]) == first["prompt"]
    azure = poolc.read_trace(TRACES[1], format="azure")
    assert len(azure) > 100 and all(r["runs"] == [] for r in azure[:10])


def test_bad_input_raises_the_packages_exceptions(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [1]}\n{"timestamp": oops}\n')
    with pytest.raises(poolc.TraceError, match=r"bad.jsonl:2"):
        poolc.read_trace(bad)
    spec = poolc.compile("examples/vllm.pool")
    with pytest.raises(poolc.TraceError, match=r"bad.jsonl:2"):
        poolc.run(spec, trace=bad)
    with pytest.raises(poolc.TraceError, match="format"):
        poolc.read_trace(bad, format="parquet")
    with pytest.raises(poolc.RunError, match="cannot write"):
        poolc.run(spec, synthetic=10, log=tmp_path / "no" / "such" / "dir" / "log.jsonl")
    with pytest.raises(poolc.RunError):
        poolc.run(spec, trace=bad, synthetic=3)
    assert issubclass(poolc.CompileError, poolc.PoolcError)


def test_the_compare_policies_example_prints_one_column_per_spec(root, tmp_path):
    import subprocess

    out = subprocess.run(
        [sys.executable, "examples/python/compare_policies.py", "--synthetic", "400", "--plot", str(tmp_path / "cdf.png")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["vllm.pool", "ascend.pool", "tiered.pool"]
    finished = lines[1].split()
    assert finished[0] == "finished" and len(finished) == 4
    # The table's numbers are the reports' own.
    want = poolc.run(poolc.compile("examples/ascend.pool"), synthetic=400)["finished"]
    assert finished[2] == str(want)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not (tmp_path / "cdf.png").exists()
    else:
        assert (tmp_path / "cdf.png").stat().st_size > 10_000


def test_workload_rows_from_read_trace_replay_as_the_trace_does():
    spec = poolc.compile("examples/vllm.pool")
    rows = poolc.read_trace(TRACES[0])
    want = py_report(spec, trace=TRACES[0])
    got = py_report(spec, workload=rows)
    # The report names its source; everything the replay decided is the same.
    assert got.pop("source") == "<workload rows>"
    want.pop("source")
    assert got == want


def test_filtered_and_rescaled_rows_change_the_replay_as_expected():
    spec = poolc.compile("examples/vllm.pool")
    rows = poolc.read_trace(TRACES[0])[:500]
    base = py_report(spec, workload=rows)
    assert base["sessions"] == 500
    # A thousand times slower arrivals: the replay lasts at least until the last one,
    # and the cache no longer overflows as it did.
    slower = [dict(r, arrival=r["arrival"] * 1000) for r in rows]
    rescaled = py_report(spec, workload=slower)
    assert rescaled["sessions"] == 500
    assert rescaled["sim_seconds"] >= slower[-1]["arrival"] > base["sim_seconds"]
    assert rescaled["ttft"]["p50"] < base["ttft"]["p50"]


def test_bad_workload_rows_raise():
    spec = poolc.compile("examples/vllm.pool")
    with pytest.raises(poolc.TraceError, match="row 1: has no `prompt`"):
        poolc.run(spec, workload=[{"arrival": 0, "prompt": 4, "output": 2}, {"arrival": 1, "output": 2}])
    with pytest.raises(poolc.RunError, match="arrival"):
        poolc.run(spec, workload=[{"arrival": 5, "prompt": 4, "output": 2}, {"arrival": 1, "prompt": 4, "output": 2}])
    with pytest.raises(poolc.RunError, match="not two"):
        poolc.run(spec, workload=[], synthetic=3)


def test_workload_rows_have_the_trace_limits():
    spec = poolc.compile("examples/vllm.pool")
    # A session of 2^53 tokens is within the limit (it is refused later, by the
    # replay, as more than the pool can hold); one more token is not.
    big = {"arrival": 0, "prompt": 2**53 - 1, "output": 1}
    try:
        poolc.run(spec, workload=[big])
    except poolc.PoolcError as e:
        assert "2^53" not in str(e)
    with pytest.raises(poolc.TraceError, match=r"row 0: prompt 9007199254740991 \+ output 2 tokens is more than 2\^53"):
        poolc.run(spec, workload=[dict(big, output=2)])
    # 2^24 + 1 rows (one dict, many references: the count is checked first).
    row = {"arrival": 0, "prompt": 4, "output": 1}
    with pytest.raises(poolc.TraceError, match="at most 16777216 sessions"):
        poolc.run(spec, workload=[row] * (2**24 + 1))


def test_as_frame_gives_a_dataframe_of_the_same_rows():
    pandas = pytest.importorskip("pandas")
    frame = poolc.read_trace(TRACES[1], as_frame=True)
    rows = poolc.read_trace(TRACES[1])
    assert isinstance(frame, pandas.DataFrame) and len(frame) == len(rows)
    assert list(frame["prompt"]) == [r["prompt"] for r in rows]


def nearest_rank(values, p):
    """The p-th percentile by nearest rank, as docs/HOST.md defines the report's."""
    ordered = sorted(values)
    rank = max(1, -(-p * len(ordered) // 100))
    return ordered[rank - 1]


def test_samples_are_the_values_the_percentiles_come_from():
    # exact=True: the report's percentiles are the nearest-rank values of the samples,
    # computed here independently. The default sketch is within its stated bound of
    # them (docs/HOST.md, "Percentiles": 2^-11 relative plus 1 ns).
    spec = poolc.compile("examples/vllm.pool")
    plain = py_report(spec, synthetic=2000, seed=5, exact=True)
    report = py_report(spec, synthetic=2000, seed=5, samples=True, exact=True)
    sketch = py_report(spec, synthetic=2000, seed=5)
    samples = report.pop("samples")
    assert report == plain
    for name in ("ttft", "itl", "e2e"):
        values, summary = samples[name], report[name]
        assert len(values) == summary["count"] == sketch[name]["count"] > 0
        for p in (50, 90, 99):
            exact = nearest_rank(values, p)
            assert exact == summary[f"p{p}"], (name, p)
            assert abs(sketch[name][f"p{p}"] - exact) <= exact * 2**-11 + 1e-9, (name, p)
        assert sum(sorted(values)) / len(values) == summary["mean"]


def test_the_gil_is_released_while_a_replay_runs():
    import threading

    spec = poolc.compile("examples/vllm.pool")
    started, done = threading.Event(), threading.Event()
    result = {}

    def replay():
        started.set()
        t0 = time.perf_counter()
        result["report"] = poolc.run(spec, synthetic=40000, seed=2)
        result["seconds"] = time.perf_counter() - t0
        done.set()

    worker = threading.Thread(target=replay)
    worker.start()
    started.wait()
    # This thread keeps running Python while the replay runs in Rust: it loops for
    # about as long as the replay lasts, never stalled. Were the GIL held, it could
    # not run until the replay returned (it would loop for no time at all).
    first = last = time.perf_counter()
    gap = 0.0
    while not done.is_set():
        now = time.perf_counter()
        gap, last = max(gap, now - last), now
    worker.join()
    seconds = result["seconds"]
    assert result["report"]["sessions"] == 40000
    assert seconds > 0.2, "the replay is too short to tell"
    assert last - first > seconds / 2, (last - first, seconds)
    assert gap < seconds / 4, (gap, seconds)


def test_a_deadlocked_replay_raises_run_error_naming_its_sessions(tmp_path, cli):
    # `preempt none` with two 6-token prompts in 10 units: both wait to grow forever
    # (tests/host_progress.rs walks it step by step). The CLI exits 1 with the same text.
    source = (
        "session { prompt; output; }\n"
        "stage engine { step; budget 100; seats 8; chunk 2; time (1); }\n"
        "pool kv { cap 10; block 1; evict lru; preempt none; admit via engine; }\n"
    )
    rows = [{"arrival": 0, "prompt": 6, "output": 3}] * 2
    with pytest.raises(poolc.RunError, match=r"deadlock since t=3 s.*sessions involved: 0, 1$") as e:
        poolc.run(poolc.compile(source), workload=rows)
    spec = tmp_path / "none.pool"
    spec.write_text(source)
    trace = tmp_path / "w.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = cli("run", spec, "--trace", trace)
    assert out.returncode == 1
    assert out.stderr.strip() == "poolc: " + str(e.value)


def test_a_bad_line_deep_in_a_trace_raises_trace_error_once_the_replay_reaches_it(tmp_path):
    # The file is read one session at a time: 300 good sessions replay (and log)
    # before line 301, out of arrival order, stops the run.
    trace, log = tmp_path / "late.jsonl", tmp_path / "late.log.jsonl"
    lines = [json.dumps({"arrival": i * 0.01, "prompt": 100, "output": 4}) for i in range(300)]
    lines.append(json.dumps({"arrival": 1.0, "prompt": 100, "output": 4}))
    trace.write_text("\n".join(lines) + "\n")
    spec = poolc.compile("examples/vllm.pool")
    with pytest.raises(poolc.TraceError, match=r"late.jsonl:301: arrival 1(\.0)? s is earlier"):
        poolc.run(spec, trace=trace, log=log)
    written = [json.loads(l) for l in log.read_text().splitlines()]
    # Every session before the bad line arrived (and was logged) first.
    assert {e["session"] for e in written if e.get("ev") == "enqueue"} == set(range(300))
    assert not any("complete" in e for e in written)
    # The good part alone replays: the same file cut before the bad line.
    trace.write_text("\n".join(lines[:300]) + "\n")
    assert poolc.run(spec, trace=trace)["finished"] == 300
