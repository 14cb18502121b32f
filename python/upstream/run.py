"""vLLM's own scheduler tests, stock and with poolc.vllm in place: the drop-in check.

Usage (with the Python of an environment holding vLLM and the poolc wheel):

    python python/upstream/run.py [--vllm 0.33.0] [--cache DIR] [--out DIR]

For the installed vLLM version (it must be one this file knows): downloads that
version's source distribution from the package index (checked against its sha256;
kept in ``--cache``), takes its ``tests/`` tree, writes the stand-in model cache
(models.py), and runs the test files whose tests build a scheduler through the suite's
helpers twice, at once, in two processes: stock, and with swap.py substituting
``poolc.vllm.Scheduler``/``AsyncScheduler`` with examples/vllm.pool (FCFS) and
examples/vllm_priority.pool (priority). Then it compares the two JUnit reports: every
test that passes stock must pass with the plugin, except the differences listed below
on purpose (with their reason, also in docs/VLLM.md). Prints the counts and the time;
exits 1 on a test that passes stock and not with the plugin, or if the plugin run built
no plugin scheduler at all (the substitution did not take).

Owns: the version table (where each source distribution is, its digest, which test
files), the two runs and their comparison. Must not: copy vLLM's tests into the
repository, or read anything over the network but the one pinned download.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

#: Each supported vLLM version: its source distribution on the package index, the
#: sdist's sha256, and the files of tests/v1/core whose tests build a scheduler
#: through ``create_scheduler`` / ``create_scheduler_with_priority``.
VERSIONS = {
    "0.33.0": {
        "url": "https://files.pythonhosted.org/packages/f7/25/aa5684e9c59d6fc75f78926b7f15e8d9"
        "adc7de2d9e6e7575b80776ad8169/vllm-0.33.0.tar.gz",
        "sha256": "f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112",
        "files": [
            "test_async_scheduler.py",
            "test_deferred_block_free.py",
            "test_prefix_caching.py",
            "test_prefix_replay.py",
            "test_priority_scheduler_random.py",
            "test_scheduler.py",
            "test_swa_inflight_window_free.py",
            "test_worker_slot_overflow.py",
        ],
        # Tests that pass stock and may fail with the plugin, each with its reason
        # (docs/VLLM.md, "vLLM's own tests"). Expected: none.
        "differences": {},
    },
}


def fetch(version, cache):
    """The extracted source tree of ``version`` under ``cache``, downloading and
    checking the sdist first if it is not there yet."""
    info = VERSIONS[version]
    os.makedirs(cache, exist_ok=True)
    sdist = os.path.join(cache, f"vllm-{version}.tar.gz")
    tree = os.path.join(cache, f"vllm-{version}")

    def digest():
        h = hashlib.sha256()
        with open(sdist, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()

    if not os.path.exists(sdist) or digest() != info["sha256"]:
        part = sdist + ".part"
        with urllib.request.urlopen(info["url"], timeout=120) as r, open(part, "wb") as f:
            shutil.copyfileobj(r, f)
        os.replace(part, sdist)
        if digest() != info["sha256"]:
            raise SystemExit(f"{sdist}: sha256 is not {info['sha256']}")
    if not os.path.isdir(os.path.join(tree, "tests", "v1", "core")):
        shutil.rmtree(tree, ignore_errors=True)
        prefix = f"vllm-{version}/"
        with tarfile.open(sdist) as tar:
            members = [
                m
                for m in tar.getmembers()
                if m.name.startswith(prefix + "tests/") or m.name == prefix + "pyproject.toml"
            ]
            tar.extractall(cache, members=members, filter="data")
    return tree


def outcomes(junit):
    """{node id: "passed" | "failed" | "skipped"} from a JUnit report."""
    got = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/")
        nodeid = f"{path}.py::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            got[nodeid] = "failed"
        elif case.find("skipped") is not None:
            got[nodeid] = "skipped"
        else:
            got[nodeid] = "passed"
    return got


def main(argv=None):
    import vllm

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vllm", default=vllm.__version__, help="the vLLM version (the installed one)")
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/poolc/upstream"))
    ap.add_argument("--out", help="keep the two JUnit reports and logs here (default: a scratch folder)")
    ap.add_argument("-k", dest="select", help="only tests matching this pytest -k expression")
    args = ap.parse_args(argv)
    if args.vllm not in VERSIONS:
        raise SystemExit(f"no entry for vLLM {args.vllm}: supported {sorted(VERSIONS)}")
    if args.vllm != vllm.__version__:
        raise SystemExit(f"vLLM {args.vllm} asked for; this environment has {vllm.__version__}")
    info = VERSIONS[args.vllm]
    tree = fetch(args.vllm, args.cache)
    out = args.out or os.path.join(args.cache, f"run-{args.vllm}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    hf = os.path.join(out, "hf")
    sys.path.insert(0, HERE)
    import models

    models.make(hf)

    files = [os.path.join("tests", "v1", "core", f) for f in info["files"]]
    specs = {
        "fcfs": os.path.join(ROOT, "examples", "vllm.pool"),
        "priority": os.path.join(ROOT, "examples", "vllm_priority.pool"),
    }
    base = dict(os.environ)
    base.update(
        HF_HOME=hf,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        # The CUDA wheel on a machine without a GPU: name the platform.
        VLLM_TARGET_DEVICE="cpu",
        # The logs fill as the tests run (a reader of a slow run sees where it is).
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join([tree, HERE, base.get("PYTHONPATH", "")]),
    )
    base.pop("POOLC_VLLM", None)
    runs = {}
    started = time.monotonic()
    for mode in ("stock", "plugin"):
        env = dict(base)
        if mode == "plugin":
            env["POOLC_UPSTREAM_SPECS"] = json.dumps(specs)
            env["POOLC_UPSTREAM_BUILT"] = os.path.join(out, "built.tsv")
        cmd = [sys.executable, "-m", "pytest", "--noconftest", "-p", "swap", "-p", "no:cacheprovider", "-q"]
        cmd += ["--junitxml", os.path.join(out, f"{mode}.xml")]
        if args.select:
            cmd += ["-k", args.select]
        log = open(os.path.join(out, f"{mode}.log"), "w", encoding="utf-8")
        runs[mode] = (subprocess.Popen(cmd + files, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT), log)
    for mode, (proc, log) in runs.items():
        proc.wait()
        log.close()
    took = time.monotonic() - started

    stock = outcomes(os.path.join(out, "stock.xml"))
    plugin = outcomes(os.path.join(out, "plugin.xml"))
    built = {}
    if os.path.exists(os.path.join(out, "built.tsv")):
        with open(os.path.join(out, "built.tsv"), encoding="utf-8") as f:
            for line in f:
                nodeid, cls = line.rstrip("\n").split("\t")
                built.setdefault(nodeid, set()).add(cls)

    def count(got, what):
        return sum(1 for v in got.values() if v == what)

    print(f"vLLM {args.vllm}: tests/v1/core, {len(files)} files, {len(stock)} tests, {took:.0f} s (both runs at once)")
    for mode, got in (("stock", stock), ("plugin", plugin)):
        print(f"  {mode:6}: {count(got, 'passed')} passed, {count(got, 'failed')} failed, {count(got, 'skipped')} skipped")
    swapped = {n for n, classes in built.items() if any(c.startswith("poolc.vllm.") for c in classes)}
    print(f"  {len(swapped)} tests built a poolc.vllm scheduler through the helpers")
    bad = []
    for nodeid, result in sorted(stock.items()):
        if result == "passed" and plugin.get(nodeid) != "passed" and nodeid not in info["differences"]:
            bad.append(nodeid)
    for nodeid, why in sorted(info["differences"].items()):
        print(f"  kept difference: {nodeid}: {why} (plugin: {plugin.get(nodeid)})")
    stock_failed = sorted(n for n, r in stock.items() if r == "failed")
    for nodeid in stock_failed:
        print(f"  fails stock too: {nodeid} (plugin: {plugin.get(nodeid)})")
    if not swapped:
        print("FAIL: the plugin run built no poolc.vllm scheduler: the substitution did not take")
        return 1
    if bad:
        print(f"FAIL: {len(bad)} tests pass stock and not with the plugin (logs in {out}):")
        for nodeid in bad:
            print(f"  {nodeid}: {plugin.get(nodeid, 'not run')}")
        return 1
    print("every test that passes stock passes with the plugin")
    return 0


if __name__ == "__main__":
    sys.exit(main())
