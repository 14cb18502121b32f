"""The Python port of examples/embed.rs: a small host driving one pool member of a
spec with its own loop of enqueues, settles and releases, printing the pool's event
log. Run from the repository root after ``pip install ./python``:
``python examples/python/embed.py``. docs/PYTHON.md explains each call."""

import poolc

# A pool of four 16-unit blocks, admitting the lowest priority first (then arrival
# order) and evicting the least recently released prefix first.
SPEC = """
    session { prompt; priority = 0; }
    pool kv { cap 64; block 16; queue by (priority, serial); evict lru; }
"""

# The sessions' attributes (serial and arrival as examples/embed.rs gives them).
ATTRS = {
    0: {"serial": 0, "arrival": 0, "prompt": 32, "priority": 1},
    1: {"serial": 1, "arrival": 1, "prompt": 48, "priority": 0},
    2: {"serial": 2, "arrival": 1, "prompt": 48, "priority": 0},
}


def run():
    """Drives the pool; gives its log and its end state."""
    pool = poolc.compile(SPEC).pool("kv", attrs=ATTRS)
    pool.log(True)
    # s0 and s1 share their first 32 units of content (run 1); s2 shares nothing.
    pool.enqueue(0.0, 0, 32, chain=[(1, 32)])
    pool.settle(0.0)
    pool.enqueue(1.0, 1, 48, chain=[(1, 32), (2, 16)])
    pool.enqueue(1.0, 2, 48, chain=[(3, 48)])
    pool.settle(1.0)
    pool.set_computed(0, 32)
    pool.release(2.0, 0)
    pool.settle(2.0)
    pool.set_computed(1, 48)
    pool.release(3.0, 1)
    pool.settle(3.0)
    return pool.take_log(), pool.allocated, pool.cached


def main():
    log, allocated, cached = run()
    for event in log:
        fields = " ".join(f"{k} {v}" for k, v in event.items() if k not in ("ev", "allocated", "cached", "queued"))
        print(f"{event['ev']} {fields}  allocated {event['allocated']} cached {event['cached']} queued {event['queued']}")
    print(f"end: allocated {allocated} cached {cached}")


if __name__ == "__main__":
    main()
