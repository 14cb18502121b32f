"""poolc.Pool, the engine driven from Python: the Python port of examples/embed.rs
logs exactly the events the Rust example logs (and what tests/embed.rs works out by
hand); R1 (allocated + cached <= cap) holds after every call of random operation
sequences; every misuse raises PoolError and leaves the interpreter alive."""

import pathlib
import random
import re
import runpy
import subprocess

import pytest

import poolc

ROOT = pathlib.Path(__file__).resolve().parents[2]


def rust_example_log():
    """Runs the Rust example (built by ``cargo test``) and parses its printed log into
    the dicts ``Pool.take_log`` gives: Debug text such as ``Evict { entry: EntryId(0),
    session: SessionId(1), key: BlockKey { run: RunId(2), offset: 15 }, units:
    Units(16) }  allocated 0 cached 32 queued 0``."""
    binary = ROOT / "target" / "debug" / "examples" / "embed"
    if not binary.is_file():
        pytest.fail(f"{binary} is missing: cargo test (or cargo build --example embed) builds it")
    out = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60, check=True)
    events = []
    for line in out.stdout.splitlines():
        if line.startswith("end:"):
            continue
        debug, state = line.split("  ", 1)
        name = re.match(r"(\w+)", debug).group(1)
        ev = re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()
        event = {"ev": ev}
        key = re.search(r"key: BlockKey \{ run: RunId\((\d+)\), offset: (\d+) \}", debug)
        if key:
            event["key"] = (int(key.group(1)), int(key.group(2)))
            debug = debug.replace(key.group(0), "")
        for field, value in re.findall(r"(\w+): (?:\w+\()?([\d.]+)\)?", debug):
            # The log calls a release's or preemption's cached units `kept`.
            field = "kept" if field == "cached" else field
            event[field] = float(value) if "." in value else int(value)
        words = state.split()
        for k, v in zip(words[::2], words[1::2]):
            event[k] = int(v)
        events.append(event)
    return events


def test_the_python_port_of_embed_logs_what_the_rust_example_logs():
    port = runpy.run_path(str(ROOT / "examples" / "python" / "embed.py"))
    log, allocated, cached = port["run"]()
    assert log == rust_example_log()
    # And what tests/embed.rs works out by hand: s1 hits s0's 32 shared units, s2
    # evicts the tail blocks of s1's entry, run 2's then run 1's, and is admitted.
    assert log[1] == {"ev": "admit", "session": 0, "hit": 0, "units": 32, "allocated": 32, "cached": 0, "queued": 0}
    assert {"ev": "admit", "session": 1, "hit": 32, "units": 48} in [
        {k: e[k] for k in ("ev", "session", "hit", "units")} for e in log if e["ev"] == "admit"
    ]
    assert [e["key"] for e in log if e["ev"] == "evict"] == [(2, 15), (1, 31)]
    assert (allocated, cached) == (48, 16)


SPEC = """
    session { prompt; priority = 0; }
    pool kv { cap 256; block 16; queue by (priority, serial); evict by (priority, last); preempt none; }
"""


def check_r1(pool):
    assert pool.allocated + pool.cached <= pool.cap, (pool.allocated, pool.cached, pool.cap)
    assert pool.free == pool.cap - pool.allocated - pool.cached


@pytest.mark.parametrize("seed", range(40))
def test_r1_holds_after_every_call_of_a_random_sequence(seed):
    rng = random.Random(seed)
    attrs = lambda s: {"prompt": 16 * (1 + s % 5), "priority": s % 3}  # noqa: E731
    pool = poolc.compile(SPEC).pool("kv", attrs=attrs)
    check_r1(pool)
    now, next_session = 0.0, 0
    waiting, holding, growing = set(), {}, set()
    for _ in range(120):
        now += rng.choice([0.0, 0.5, 1.0])
        op = rng.random()
        if op < 0.35:
            s = next_session
            next_session += 1
            units = rng.choice([8, 16, 40, 64, 300])
            runs = [(rng.randrange(4), 16), (1000 + s, units)] if rng.random() < 0.6 else None
            total = units + (16 if runs else 0)
            outcome = pool.enqueue(now, s, total, chain=runs)
            assert outcome in ("queued", "rejected")
            assert (outcome == "rejected") == (total > pool.cap)
            if outcome == "queued":
                waiting.add(s)
        elif op < 0.6:
            pool.settle(now)
        elif op < 0.75 and holding.keys() - growing:
            s = rng.choice(sorted(holding.keys() - growing))
            by = rng.choice([1, 16, 50])
            grown = pool.grow(now, s, by)
            assert grown in ("grown", "waiting")
            if grown == "waiting":
                growing.add(s)
        elif holding:
            s = rng.choice(sorted(holding))
            pool.set_computed(s, holding[s])
            pool.release(now, s)
            del holding[s]
            growing.discard(s)
        for n in pool.notices():
            if n["kind"] == "admitted":
                waiting.discard(n["session"])
                holding[n["session"]] = n["units"]
            elif n["kind"] == "grown" and n["session"] in holding:
                holding[n["session"]] += n["by"]
                growing.discard(n["session"])
        check_r1(pool)
        assert pool.holders == len(holding)
        assert pool.queued == len(waiting)
    assert next_session > 10


def test_admissions_happen_in_the_random_sequences():
    # The R1 test is not vacuous: its operations admit, hit and evict.
    pool = poolc.compile(SPEC).pool("kv", attrs=lambda s: {"prompt": 64})
    pool.log()
    for s in range(12):
        pool.enqueue(float(s), s, 64, chain=[(7, 32), (100 + s, 32)])
        pool.settle(float(s))
        if s % 2:
            pool.set_computed(s - 1, 64)
            pool.release(float(s), s - 1)
    evs = [e["ev"] for e in pool.take_log()]
    assert evs.count("admit") >= 6 and "evict" in evs and "release" in evs
    hits = [e["hit"] for e in pool.take_log() if e["ev"] == "admit"]
    assert hits == []  # take_log drains


def test_misuse_raises_pool_error_and_changes_nothing():
    pool = poolc.compile(SPEC).pool("kv", attrs={0: {"prompt": 16}, 1: {"prompt": 16}})
    assert pool.enqueue(1.0, 0, 16) == "queued"
    pool.settle(1.0)
    state = (pool.allocated, pool.cached, pool.queued, pool.holders)
    with pytest.raises(poolc.PoolError, match="time"):
        pool.settle(0.5)
    with pytest.raises(poolc.PoolError):
        pool.release(2.0, 99)
    with pytest.raises(poolc.PoolError):
        pool.grow(2.0, 99, 16)
    with pytest.raises(poolc.PoolError):
        pool.enqueue(2.0, 0, 16)
    with pytest.raises(poolc.PoolError, match="prompt"):
        pool.enqueue(2.0, 5, 16)  # no attrs for session 5, and `prompt` has no default
    with pytest.raises(poolc.PoolError):
        pool.enqueue(2.0, 1, 16, chain=[(1, 0)])
    assert (pool.allocated, pool.cached, pool.queued, pool.holders) == state
    with pytest.raises(poolc.PoolError):
        poolc.compile(SPEC).pool("nosuch")
    with pytest.raises(poolc.PoolError):
        poolc.compile(SPEC).pool("kv", member=3)


def test_attrs_as_a_dict_or_a_callable_order_the_queue_alike():
    def drive(attrs):
        pool = poolc.compile(SPEC).pool("kv", attrs=attrs)
        for s in range(6):
            pool.enqueue(0.0, s, 250)
        order = []
        for t in range(1, 7):
            pool.settle(float(t))
            for n in pool.notices():
                if n["kind"] == "admitted":
                    order.append(n["session"])
                    pool.set_computed(n["session"], 250)
                    pool.release(float(t), n["session"])
        return order

    values = {s: {"prompt": 250, "priority": (5 - s) % 3} for s in range(6)}
    by_dict = drive(values)
    assert by_dict == drive(lambda s: values[s])
    # queue by (priority, serial): priority 0 first (sessions 2, 5), then 1, then 2.
    assert by_dict[0] == 2
    assert sorted(by_dict) == list(range(6))
