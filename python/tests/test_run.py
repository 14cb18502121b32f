"""poolc.run and poolc.read_trace against the command line: the same report, key for
key and value for value (wall time aside), on the bundled traces and a synthetic
workload; the same log bytes; bad input raises the package's exceptions."""

import json
import sys

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


@pytest.mark.parametrize("example", ["examples/tiered.pool", "examples/replicas.pool"])
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


def test_the_compare_policies_example_prints_one_column_per_spec(root):
    import subprocess

    out = subprocess.run(
        [sys.executable, "examples/python/compare_policies.py", "--synthetic", "400"],
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
