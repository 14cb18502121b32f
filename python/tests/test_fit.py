"""``poolc.fit`` == ``poolc fit --json`` on the same step log, and its errors: an
expression not linear in its unknowns is a ``CompileError`` rendered as the command
renders it, a bad log a ``FitError`` naming the file and line."""

import json

import pytest

import poolc

# Three iterations worked by hand (docs/STEPS.md): seconds = 0.002 + 1e-5 * prefill
# + 2e-6 * decode exactly, so the fit recovers the three numbers.
STEPS = [
    {"step": 0, "seconds": 0.002 + 1e-5 * 300, "reqs": [[200, 0, 200, 0], [100, 0, 180, 0]]},
    {"step": 1, "seconds": 0.002 + 1e-5 * 80 + 2e-6 * 1, "reqs": [[1, 200, 200, 1], [80, 100, 180, 0]]},
    {"step": 2, "seconds": 0.002 + 2e-6 * 2, "reqs": [[1, 201, 200, 1], [1, 180, 180, 1]]},
    {"step": 3, "seconds": 0.002 + 1e-5 * 50 + 2e-6 * 2, "reqs": [[1, 202, 200, 1], [1, 181, 180, 1], [50, 0, 50, 0]]},
]
TIME = "b0 + b1 * prefill + b2 * decode"


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "steps.jsonl"
    header = {"format": "poolc-steps/1", "max_num_batched_tokens": 512, "max_num_seqs": 8}
    path.write_text("\n".join(json.dumps(x) for x in [header, *STEPS]) + "\n")
    return path


def test_fit_is_the_cli_fit(cli, log):
    got = poolc.fit(log, time=TIME)
    out = cli("fit", log, "--time", TIME, "--json")
    assert out.returncode == 0, out.stderr
    assert got == json.loads(out.stdout)
    values = {u["name"]: u["value"] for u in got["unknowns"]}
    for name, want in {"b0": 0.002, "b1": 1e-5, "b2": 2e-6}.items():
        assert values[name] == pytest.approx(want, rel=1e-9), (name, values)
    assert got["iterations"] == 4
    assert "budget 512;" in got["stage"] and "seats 8;" in got["stage"]
    assert poolc.fit(log, time=TIME, stage="gpu")["stage"].startswith("stage gpu {")


def test_a_time_not_linear_in_its_unknowns_is_a_compile_error_as_the_cli_renders_it(cli, log):
    bad = "b0 + b1 * b2 * prefill"
    with pytest.raises(poolc.CompileError) as e:
        poolc.fit(log, time=bad)
    out = cli("fit", log, "--time", bad)
    assert out.returncode == 1
    assert str(e.value) in out.stderr
    assert e.value.diagnostics and e.value.diagnostics[0]["file"] == "--time"


def test_a_bad_step_log_is_a_fit_error_naming_its_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(STEPS[0]) + "\n" + '{"step": 1, "seconds": -1, "reqs": [[1, 0, 1, 0]]}\n')
    with pytest.raises(poolc.FitError, match=r"bad\.jsonl:2"):
        poolc.fit(path, time=TIME)
    with pytest.raises(poolc.FitError):
        poolc.fit(tmp_path / "missing.jsonl", time=TIME)
