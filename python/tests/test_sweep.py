"""poolc.sweep (docs/SWEEP.md) against ``poolc sweep``: the package's local backend,
``python -m poolc.sweep`` and the Ray backend on a local Ray cluster that the test
starts itself (``ray start --head`` on 127.0.0.1 with 2 CPUs, stopped afterwards)
write the results.csv the CLI writes for the same grid, byte for byte but for the
wall_seconds column, and print the CLI's summary. Without Ray the Ray test is
skipped (it fails instead when POOLC_REQUIRE_RAY=1) and the Ray backend's error
says how to install it."""

import importlib.util
import os
import socket
import subprocess
import sys

import pytest

import poolc


def grid_file(tmp_path, root, *, search=False, name="grid.toml"):
    policies = root / "examples" / "policies"
    lines = [
        f'specs = ["{policies / "fifo.pool"}", '
        f'{{ path = "{policies / "sjf_aging.pool"}", params = {{ aging = [0, 3000] }} }}]',
        'metrics = ["finished", "ttft_p50", "ttft_p99", "e2e_p90", "tokens_per_second", "hit_rate"]',
        'slo = ["ttft_p99 <= 0.2"]',
    ]
    if not search:
        lines.append("rate_scale = [1, 2.5]")
    lines += ["[params]", "num_gpu_blocks = [1500, 28000]", "[[traces]]", "synthetic = 300", "seed = 4"]
    if search:
        lines += ["[search]", "from = 1", "to = 30", "tolerance = 0.5"]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def without_wall(csv_path):
    lines = csv_path.read_text().splitlines()
    assert lines[0].endswith(",wall_seconds")
    return [line.rsplit(",", 1)[0] for line in lines]


def cli_sweep(cli, grid, out):
    done = cli("sweep", grid, "--out", out)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_local_backend_writes_the_cli_results_and_summary(cli, root, tmp_path):
    grid = grid_file(tmp_path, root)
    stdout = cli_sweep(cli, grid, tmp_path / "cli")
    result = poolc.sweep(grid, out=tmp_path / "py", jobs=2)
    assert without_wall(tmp_path / "py" / "results.csv") == without_wall(tmp_path / "cli" / "results.csv")
    assert len(result["rows"]) == 6 * 2 == result["ran"]
    assert [r["point"] for r in result["rows"]] == list(range(12))
    # The summary is the CLI's, which goes on with the paths of the files.
    assert stdout.startswith(result["summary"])
    assert "best per metric" in result["summary"]


def test_python_m_poolc_sweep_searches_and_resumes_as_the_cli_does(cli, root, tmp_path):
    grid = grid_file(tmp_path, root, search=True)
    cli_sweep(cli, grid, tmp_path / "cli")
    run = [sys.executable, "-m", "poolc.sweep", str(grid), "--out", str(tmp_path / "py")]
    done = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "max_rate_scale" in done.stdout
    assert without_wall(tmp_path / "py" / "results.csv") == without_wall(tmp_path / "cli" / "results.csv")
    again = subprocess.run(run + ["--resume"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "0 run, 6 resumed" in again.stdout
    assert without_wall(tmp_path / "py" / "results.csv") == without_wall(tmp_path / "cli" / "results.csv")


def test_a_bad_grid_raises_sweep_error_with_line_and_column(tmp_path):
    grid = tmp_path / "bad.toml"
    grid.write_text('specs = ["x.pool"]\nmetrics = ["ttft_p999"]\n')
    with pytest.raises(poolc.SweepError) as e:
        poolc.sweep(grid, out=tmp_path / "out")
    assert "bad.toml:2:12" in str(e.value)
    assert "did you mean `ttft_p99`?" in str(e.value)
    done = subprocess.run(
        [sys.executable, "-m", "poolc.sweep", str(grid), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "bad.toml:2:12" in done.stderr and "Traceback" not in done.stderr


def test_without_ray_the_ray_backend_says_how_to_install_it(root, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails
    with pytest.raises(poolc.SweepError) as e:
        poolc.sweep(grid_file(tmp_path, root), backend="ray", out=tmp_path / "out")
    assert "pip install './python[ray]'" in str(e.value)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_ray_backend_on_a_local_cluster_gives_the_local_rows(cli, root, tmp_path):
    if importlib.util.find_spec("ray") is None:
        if os.environ.get("POOLC_REQUIRE_RAY") == "1":
            pytest.fail("POOLC_REQUIRE_RAY=1 but Ray is not installed (pip install './python[ray]')")
        pytest.skip("Ray is not installed (pip install './python[ray]')")
    ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
    port = free_port()
    # A home of its own: Ray reads ~/.ray/auth_token when it exists (an in-process
    # `ray.init()` of the user's writes one), and a head started with a token refuses
    # a client without it; the test must not depend on, or write to, the user's home.
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", HOME=str(home))
    start = [
        ray_cli, "start", "--head", "--node-ip-address", "127.0.0.1", "--num-cpus", "2",
        "--port", str(port), "--include-dashboard=false", "--disable-usage-stats",
    ]
    try:
        started = subprocess.run(start, capture_output=True, text=True, timeout=180, env=env)
        assert started.returncode == 0, started.stdout + started.stderr
        grid = grid_file(tmp_path, root, search=True)
        cli_sweep(cli, grid, tmp_path / "cli")
        want = without_wall(tmp_path / "cli" / "results.csv")
        # The command line, and the function, each in a process with a time limit.
        address = f"127.0.0.1:{port}"
        done = subprocess.run(
            [sys.executable, "-m", "poolc.sweep", str(grid), "--ray", address, "--out", str(tmp_path / "ray")],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert without_wall(tmp_path / "ray" / "results.csv") == want
        call = (
            "import poolc, sys\n"
            f"r = poolc.sweep({str(grid)!r}, backend='ray', address={address!r}, out={str(tmp_path / 'fn')!r})\n"
            "assert r['ran'] == 6 and [x['point'] for x in r['rows']] == list(range(6)), r\n"
        )
        done = subprocess.run([sys.executable, "-c", call], capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stderr
        assert without_wall(tmp_path / "fn" / "results.csv") == want
    finally:
        subprocess.run([ray_cli, "stop", "--force"], capture_output=True, timeout=120, env=env)
