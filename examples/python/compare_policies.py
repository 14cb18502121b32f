"""Replays one workload through three specs and prints their reports side by side,
the way a notebook would: ``python examples/python/compare_policies.py [TRACE]``
(default: the bundled Mooncake trace), or ``--synthetic N`` for a seeded workload.
When matplotlib is importable it also saves the TTFT CDF of each spec to
``ttft_cdf.png`` (``--plot FILE`` to choose). Run it from the repository root after
``pip install ./python``."""

import sys

import poolc

SPECS = ["examples/vllm.pool", "examples/ascend.pool", "examples/tiered.pool"]
ROWS = [
    ("finished", lambda r: r["finished"]),
    ("rejected", lambda r: r["rejected"]),
    ("TTFT p50 (s)", lambda r: r["ttft"]["p50"]),
    ("TTFT p99 (s)", lambda r: r["ttft"]["p99"]),
    ("E2E p50 (s)", lambda r: r["e2e"]["p50"]),
    ("hit rate", lambda r: r["hit_rate"]),
    ("tier hit rate", lambda r: r["tier_hit_rate"]),
    ("preemptions", lambda r: r["preemptions"]),
]


def cell(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def plot(reports, names, path):
    """The TTFT CDF of each spec, from the report's samples; skipped without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    for report, name in zip(reports, names):
        values = sorted(report["samples"]["ttft"])
        n = len(values)
        ax.step(values, [(i + 1) / n for i in range(n)], where="post", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("TTFT (s)")
    ax.set_ylabel("fraction of sessions")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    return True


def main(argv):
    plot_path = "ttft_cdf.png"
    if "--plot" in argv:
        i = argv.index("--plot")
        plot_path = argv[i + 1]
        argv = argv[:i] + argv[i + 2 :]
    if argv[:1] == ["--synthetic"]:
        workload = {"synthetic": int(argv[1])}
    elif argv:
        workload = {"trace": argv[0]}
    else:
        workload = {}
    reports = [poolc.run(poolc.compile(path), samples=True, **workload) for path in SPECS]
    names = [path.rsplit("/", 1)[-1] for path in SPECS]
    width = max(len(n) for n in names) + 2
    print("".ljust(16) + "".join(n.rjust(width) for n in names))
    for label, get in ROWS:
        print(label.ljust(16) + "".join(cell(get(r)).rjust(width) for r in reports))
    if plot(reports, names, plot_path):
        print(f"TTFT CDF: {plot_path}")


if __name__ == "__main__":
    main(sys.argv[1:])
