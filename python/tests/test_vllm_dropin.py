"""A drop-in: stock vLLM == poolc.vllm, side by side, on the smallest case of each
behaviour vLLM's own tests caught (requests skipped in a step keep their order;
pooling requests are scheduled; the priority policy's order to its last tie; the
waiting queue's interface), and under random traffic.

Random traffic: the same seeded request stream is fed
to vLLM 0.33.0's own scheduler and to the plugin with the spec equivalent to it
(examples/vllm.pool for FCFS, examples/vllm_priority.pool for the priority policy),
and after every step the whole ``SchedulerOutput``, the waiting queues in iteration
order and the free-block queue's order must be equal.

The streams mix prompt and output lengths, shared prefixes (so prefix-cache hits and
evictions), priorities and arrival times drawn from a few values (so ties), aborts,
requests set aside for a few steps (waiting for a structured-output grammar, which
vLLM skips and puts back in front, in order), and a KV cache small enough to preempt;
each runs on the synchronous and the async scheduler. A differing case is shrunk
(fewer requests, then fewer events) and printed as a replayable description.

Needs vLLM 0.33.0 in this interpreter (.ci/test runs it with the vLLM environment and
``POOLC_REQUIRE_VLLM=1``)."""

import argparse
import dataclasses
import os
import pathlib
import random
from types import SimpleNamespace

import pytest

if os.environ.get("POOLC_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 is not installed in this interpreter")

import numpy as np  # noqa: E402
from vllm.pooling_params import PoolingParams  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.utils.hashing import sha256  # noqa: E402
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash  # noqa: E402
from vllm.v1.outputs import ModelRunnerOutput  # noqa: E402
from vllm.v1.request import Request, RequestStatus  # noqa: E402

from poolc.vllm import record  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPECS = {"fcfs": ROOT / "examples" / "vllm.pool", "priority": ROOT / "examples" / "vllm_priority.pool"}
#: Seeds per (policy, sync/async) case; each case runs until its stream drains.
SEEDS = range(int(os.environ.get("POOLC_DIFF_SEEDS", "16")))


def _traffic(seed, policy):
    """A random case: scheduler sizes and a list of events by step."""
    rng = random.Random(f"{seed}-{policy}")
    block = rng.choice([16, 32])
    case = dict(
        block_size=block,
        num_blocks=rng.choice([20, 28, 40]),
        max_num_seqs=rng.choice([4, 8, 16]),
        max_num_batched_tokens=rng.choice([256, 512, 1024]),
        long_prefill_token_threshold=rng.choice([0, 0, 96]),
    )
    prefixes = [[rng.randrange(1, 30000) for _ in range(rng.choice([block, 2 * block, 3 * block]))] for _ in range(3)]
    events = []
    n = rng.randrange(12, 40)
    step = 0
    for i in range(n):
        step += rng.choice([0, 0, 1, 2])
        prompt = list(rng.choice(prefixes)) if rng.random() < 0.6 else []
        prompt += [rng.randrange(1, 30000) for _ in range(rng.randrange(1, 3 * block))]
        events.append(
            dict(
                step=step,
                kind="add",
                # Zero-padded: vLLM's last priority tie is the id as text (docs/VLLM.md).
                id=f"r{i:04d}",
                prompt=prompt,
                output=rng.randrange(1, 48),
                priority=rng.choice([0, 1, 2]) if policy == "priority" else 0,
                # A few values: equal arrival times are common.
                arrival=float(rng.choice([0, 1, 2, 3])) + step,
            )
        )
        if rng.random() < 0.12:
            events.append(dict(step=step, kind="set_aside", id=f"r{i:04d}", steps=rng.randrange(1, 4)))
        if rng.random() < 0.08:
            events.append(dict(step=step + rng.randrange(0, 20), kind="abort", id=f"r{i:04d}"))
    events.sort(key=lambda e: e["step"])
    return case, events


def _scheduler(case, policy, asynchronous, plugin):
    args = argparse.Namespace(
        scheduler_cls=(f"poolc.vllm.{'AsyncScheduler' if asynchronous else 'Scheduler'}" if plugin else None),
        async_sched=asynchronous,
        max_num_seqs=case["max_num_seqs"],
        max_num_batched_tokens=case["max_num_batched_tokens"],
        max_model_len=8192,
        long_prefill_token_threshold=case["long_prefill_token_threshold"],
        no_chunked_prefill=False,
        policy=policy,
        watermark=0.0,
        no_reserve_full_isl=False,
        block_size=case["block_size"],
        no_prefix_caching=False,
        num_blocks=case["num_blocks"],
        log_stats=False,
    )
    extra = {"poolc": {"spec": str(SPECS[policy])}} if plugin else None
    sched, _ = record._make_scheduler(args, extra)
    return sched


def _canon(x, depth=0):
    """A comparable picture of a scheduler output: dataclasses and plain objects by
    their fields, sets sorted, arrays as lists; requests by their id."""
    if depth > 8:
        return repr(type(x))
    if isinstance(x, Request):
        return ("Request", x.request_id)
    if isinstance(x, (str, int, float, bool, type(None))):
        return x
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, dict):
        return {str(k): _canon(v, depth + 1) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, (set, frozenset)):
        return sorted((_canon(v, depth + 1) for v in x), key=repr)
    if isinstance(x, (list, tuple)):
        return [_canon(v, depth + 1) for v in x]
    if dataclasses.is_dataclass(x):
        return {f.name: _canon(getattr(x, f.name), depth + 1) for f in dataclasses.fields(x)}
    if hasattr(x, "__dict__"):
        return {k: _canon(v, depth + 1) for k, v in sorted(vars(x).items()) if not k.startswith("_")}
    return repr(x)


def _picture(sched, so):
    pool = sched.kv_cache_manager.block_pool
    return dict(
        output=_canon(so),
        waiting=[r.request_id for r in sched.waiting],
        kv_holding_waiting=[r.request_id for r in sched.kv_holding_waiting],
        running=[r.request_id for r in sched.running],
        free_blocks=[b.block_id for b in pool.free_block_queue.get_all_free_blocks()],
    )


def _run(case, events, policy, asynchronous, plugin):
    """Feeds the events to one scheduler; returns its picture after every step."""
    sched = _scheduler(case, policy, asynchronous, plugin)
    init_none_hash(sha256)
    hasher = get_request_block_hasher(case["block_size"], sha256)
    requests = {}
    aside = {}
    pictures = []
    pending = None
    at = 0
    step = 0
    while step < 2000:
        while at < len(events) and events[at]["step"] <= step:
            e = events[at]
            at += 1
            if e["kind"] == "add":
                r = Request(
                    request_id=e["id"],
                    prompt_token_ids=list(e["prompt"]),
                    sampling_params=SamplingParams(max_tokens=e["output"], ignore_eos=True),
                    pooling_params=None,
                    arrival_time=e["arrival"],
                    priority=e["priority"],
                    block_hasher=hasher,
                )
                requests[e["id"]] = r
                sched.add_request(r)
            elif e["kind"] == "set_aside":
                r = requests[e["id"]]
                if r.status == RequestStatus.WAITING and r.num_computed_tokens == 0:
                    # As a structured-output request whose grammar is still compiling.
                    r.status = RequestStatus.WAITING_FOR_STRUCTURED_OUTPUT_GRAMMAR
                    r.structured_output_request = SimpleNamespace(grammar=None)
                    aside[e["id"]] = step + e["steps"]
            elif e["kind"] == "abort" and e["id"] in sched.requests:
                sched.finish_requests([e["id"]], RequestStatus.FINISHED_ABORTED)
        for rid, until in list(aside.items()):
            if step >= until:
                # The grammar is ready: vLLM promotes the request at its next peek;
                # the stand-in drops the grammar so that no bitmask is asked for.
                r = requests[rid]
                if r.status == RequestStatus.WAITING_FOR_STRUCTURED_OUTPUT_GRAMMAR:
                    r.status = RequestStatus.WAITING
                r.structured_output_request = None
                del aside[rid]
        # Done when every event is in, nothing is unfinished and no output of the
        # async scheduler's last step still waits for its update.
        if at >= len(events) and sched.get_num_unfinished_requests() == 0 and (pending is None or not pending[1]):
            break
        so = sched.schedule()
        pictures.append(_picture(sched, so))
        ids = list(so.num_scheduled_tokens)
        sampled = []
        for rid in ids:
            r = sched.requests[rid]
            sampled.append([] if r.is_prefill_chunk else [7 + r.num_output_tokens % 50])
        this = (so, ids, sampled)
        if asynchronous:
            this, pending = pending, this
        if this is not None:
            uso, uids, usampled = this
            sched.update_from_output(
                uso,
                ModelRunnerOutput(
                    req_ids=uids, req_id_to_index={rid: i for i, rid in enumerate(uids)}, sampled_token_ids=usampled
                ),
            )
        step += 1
    return pictures


def _first_difference(case, events, policy, asynchronous):
    stock = _run(case, events, policy, asynchronous, plugin=False)
    plugin = _run(case, events, policy, asynchronous, plugin=True)
    for i, (a, b) in enumerate(zip(stock, plugin)):
        if a != b:
            keys = [k for k in a if a[k] != b.get(k)]
            return f"step {i} differs in {keys}:\n  stock:  {a}\n  plugin: {b}"
    if len(stock) != len(plugin):
        return f"stock took {len(stock)} steps, the plugin {len(plugin)}"
    return None


def _shrink(case, events, policy, asynchronous):
    """The smallest event list found that still differs: drop each request (with its
    other events) while a difference remains, then each remaining event."""
    ids = [e["id"] for e in events if e["kind"] == "add"]
    for rid in ids:
        fewer = [e for e in events if e["id"] != rid]
        if _first_difference(case, fewer, policy, asynchronous):
            events = fewer
    i = 0
    while i < len(events):
        fewer = events[:i] + events[i + 1 :]
        if events[i]["kind"] != "add" and _first_difference(case, fewer, policy, asynchronous):
            events = fewer
        else:
            i += 1
    return events


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("policy", ["fcfs", "priority"])
@pytest.mark.parametrize("seed", SEEDS)
def test_stock_and_plugin_schedule_the_same(seed, policy, asynchronous):
    case, events = _traffic(seed, policy)
    diff = _first_difference(case, events, policy, asynchronous)
    if diff is not None:
        small = _shrink(case, events, policy, asynchronous)
        pytest.fail(
            f"seed {seed}, {policy}, {'async' if asynchronous else 'sync'}: {diff}\n"
            f"shrunk case: {case}\nevents: {small}\nfirst difference: {_first_difference(case, small, policy, asynchronous)}"
        )


def test_the_streams_exercise_what_they_claim():
    """The generated streams do contain ties, set-asides, aborts and preemptions (a
    differential test over dull traffic would prove little)."""
    seen = dict(preempted=0, tied_arrivals=0, set_aside=0, aborted=0, hits=0)
    for seed in SEEDS:
        case, events = _traffic(seed, "priority")
        arrivals = [e["arrival"] for e in events if e["kind"] == "add"]
        seen["tied_arrivals"] += len(arrivals) - len(set(arrivals))
        seen["set_aside"] += sum(e["kind"] == "set_aside" for e in events)
        seen["aborted"] += sum(e["kind"] == "abort" for e in events)
        for p in _run(case, events, "priority", False, plugin=False):
            seen["preempted"] += len(p["output"]["preempted_req_ids"] or [])
            seen["hits"] += sum(r["num_computed_tokens"] > 0 for r in p["output"]["scheduled_new_reqs"])
    assert all(v > 0 for v in seen.values()), seen


# ----- the four behaviours, each on its smallest case, stock and plugin side by side --

SMALL = dict(block_size=16, num_blocks=64, max_num_seqs=16, max_num_batched_tokens=512, long_prefill_token_threshold=0)


def _both(policy, **case):
    """A stock scheduler and a plugin one with the same sizes."""
    sizes = {**SMALL, **case}
    return [_scheduler(sizes, policy, False, plugin) for plugin in (False, True)]


def _request(rid, tokens, priority=0, arrival=0.0, pooling=False):
    init_none_hash(sha256)
    return Request(
        request_id=rid,
        prompt_token_ids=[sum(map(ord, rid)) + 1] * tokens,
        sampling_params=None if pooling else SamplingParams(max_tokens=4, ignore_eos=True),
        pooling_params=PoolingParams(task="embed") if pooling else None,
        arrival_time=arrival,
        priority=priority,
        block_hasher=get_request_block_hasher(16, sha256),
    )


def test_requests_skipped_in_a_step_go_back_in_their_own_order():
    # One seat: r0 and r1 wait for a grammar, so the step skips them, admits r2 and
    # puts r0, r1 back in front of r3 — in that order (vLLM's prepend_requests).
    for sched in _both("fcfs", max_num_seqs=1):
        reqs = [_request(f"r{i}", 8) for i in range(4)]
        for r in reqs:
            sched.add_request(r)
        for r in reqs[:2]:
            r.status = RequestStatus.WAITING_FOR_STRUCTURED_OUTPUT_GRAMMAR
            r.structured_output_request = SimpleNamespace(grammar=None)
        out = sched.schedule()
        assert [r.req_id for r in out.scheduled_new_reqs] == ["r2"], type(sched)
        assert [r.request_id for r in sched.waiting] == ["r0", "r1", "r3"], type(sched)


def test_pooling_requests_are_scheduled_as_stock_schedules_them():
    # An embedding request has no sampling parameters; the plugin reads `output` as
    # vLLM's max_tokens, 1, and schedules it with the generation request beside it.
    outs = []
    for sched in _both("fcfs"):
        sched.add_request(_request("emb", 40, pooling=True))
        sched.add_request(_request("gen", 24))
        out = sched.schedule()
        outs.append((sorted(out.num_scheduled_tokens.items()), [r.req_id for r in out.scheduled_new_reqs]))
    assert outs[0] == outs[1] == ([("emb", 40), ("gen", 24)], ["emb", "gen"])


def test_the_priority_spec_orders_as_request_lt_to_the_last_tie():
    # Request.__lt__: priority, then arrival_time, then request_id as text. "10" and
    # "9" tie on both and go "10" first; "a" has a later arrival; "b" a higher
    # priority number. One seat, so each step admits one and the rest wait in order.
    got = []
    for sched in _both("priority", max_num_seqs=1):
        for rid, prio, arrival in [("b", 1, 0.0), ("9", 0, 5.0), ("a", 0, 6.0), ("10", 0, 5.0)]:
            sched.add_request(_request(rid, 8, priority=prio, arrival=arrival))
        out = sched.schedule()
        got.append(([r.req_id for r in out.scheduled_new_reqs], [r.request_id for r in sched.waiting]))
    assert got[0] == got[1] == (["10"], ["9", "a", "b"])


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
def test_the_queues_offer_what_vllms_queues_offer(policy):
    # Length, truth, membership, iteration in vLLM's order, indexing, peek/pop,
    # prepend (the last given ends up first under FCFS), remove and its error.
    for stock, plugin in [_both(policy)]:
        seen = []
        for sched in (stock, plugin):
            q = sched.waiting
            reqs = [_request(f"q{i}", 8, priority=i % 2, arrival=float(i)) for i in range(5)]
            for r in reqs:
                sched.add_request(r)
            picture = [len(q), bool(q), reqs[2] in q, [r.request_id for r in q], q.peek_request().request_id]
            if policy == "fcfs":
                picture.append((q[0].request_id, q[-1].request_id))
            picture.append(q.pop_request().request_id)
            q.prepend_requests([reqs[0], reqs[3]] if policy == "priority" else [reqs[0]])
            picture.append([r.request_id for r in q])
            q.remove_request(reqs[4])
            with pytest.raises(ValueError):
                q.remove_request(reqs[4])
            q.remove_requests([reqs[1], reqs[2]])
            picture.append([r.request_id for r in q])
            seen.append(picture)
        assert seen[0] == seen[1]
