"""``poolc.model`` == ``poolc model`` on the shipped configs (the same bytes, options
passed through), the spec it returns compiles, and what the command refuses with exit
1 is a ``ModelError`` carrying the command's message."""

import pathlib

import pytest

import poolc

ROOT = pathlib.Path(__file__).resolve().parents[2]
LLAMA = ROOT / "examples" / "models" / "llama-3.1-8b" / "config.json"
MIXTRAL = ROOT / "examples" / "models" / "mixtral-8x7b" / "config.json"


def test_model_is_the_cli_model(cli):
    got = poolc.model(LLAMA, gpu="h100")
    out = cli("model", LLAMA, "--gpu", "h100")
    assert out.returncode == 0, out.stderr
    assert got == out.stdout
    assert "param num_gpu_blocks = 28114;" in got
    spec = poolc.compile(got)
    assert spec.shape()["stages"][0]["name"] == "engine"


def test_every_option_reaches_the_command(cli):
    got = poolc.model(
        MIXTRAL,
        gpu="a100-80gb",
        tp=4,
        dtype="fp8",
        time="roofline",
        gpu_memory_utilization=0.85,
        block_size=32,
        max_num_seqs=256,
        max_num_batched_tokens=4096,
    )
    out = cli(
        "model", MIXTRAL, "--gpu", "a100-80gb", "--tp", "4", "--dtype", "fp8",
        "--time", "roofline", "--gpu-memory-utilization", "0.85", "--block-size", "32",
        "--max-num-seqs", "256", "--max-num-batched-tokens", "4096",
    )
    assert out.returncode == 0, out.stderr
    assert got == out.stdout
    assert "param block_size = 32;" in got and "max(" in got


@pytest.mark.parametrize(
    "kwargs, args",
    [
        ({"gpu": "h900"}, ["--gpu", "h900"]),
        ({"gpu": "h100", "tp": 3}, ["--gpu", "h100", "--tp", "3"]),
    ],
)
def test_what_the_command_refuses_is_a_model_error_with_its_message(cli, kwargs, args):
    with pytest.raises(poolc.ModelError) as e:
        poolc.model(LLAMA, **kwargs)
    out = cli("model", LLAMA, *args)
    assert out.returncode == 1
    assert str(e.value) in out.stderr


def test_an_unknown_dtype_or_time_model_names_the_known_ones(tmp_path):
    with pytest.raises(poolc.ModelError, match="bf16, fp16, fp8"):
        poolc.model(LLAMA, gpu="h100", dtype="int4")
    with pytest.raises(poolc.ModelError, match="trained-physics, roofline"):
        poolc.model(LLAMA, gpu="h100", time="guess")
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(poolc.ModelError, match="config.json"):
        poolc.model(bad, gpu="h100")
