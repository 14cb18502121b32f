"""``python -m poolc.vllm.record``: records what vLLM 0.33.0's real v1 ``Scheduler``
decides, step by step, for a workload: the scenario folders that ``poolc conform``
replays (tests/data/vllm-oracle, tests/data/vllm-plugin). The files and the rules
their steps follow: docs/CONFORMANCE.md, "The scenario format".

What it owns:

- building the scheduler as vLLM's own unit tests build one: a ``VllmConfig`` on the
  CPU device, whose ``ModelConfig`` reads a stand-in model's config.json that this
  module writes to a temporary directory (no weights, no tokenizer; nothing is
  downloaded), and a hand-made ``KVCacheConfig`` with one full-attention group of
  ``--num-blocks`` blocks; or a plugin class named by ``--scheduler-cls``, constructed
  exactly as vLLM's engine core constructs its scheduler, with
  ``--additional-config`` as ``VllmConfig.additional_config``;
- the requests: generated from seeded knobs, or read from ``--workload FILE`` and
  checked (a Mooncake trace becomes such a file through ``poolc.vllm.mooncake``);
- the loop that stands in for the engine and the model runner: each step adds the
  arrivals, calls ``schedule()``, samples one token for every scheduled request whose
  prompt is now computed, and calls ``update_from_output()``;
- the three files: ``config.json`` (the configuration read back from the live
  scheduler), ``workload.jsonl`` (the requests as fed) and ``steps.jsonl``.

What it must not do: let anything but its arguments reach the files (no wall-clock
value, path or hash seed: the same arguments give the same bytes, and
python/tests/test_vllm.py re-records every committed scenario and compares them), or
decide anything in vLLM's place: every admission, chunk, preemption, finish and free
block it writes is read back from the scheduler. Timings go to stderr only.

``record(argv)`` does what the command line does with the same arguments, so that a
caller can record several scenarios in one process (importing vLLM takes most of a
run's time)."""

import argparse
import contextlib
import hashlib
import importlib
import json
import math
import os
import random
import sys
import tempfile
import time

import torch
import vllm
from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
from vllm.sampling_params import SamplingParams
from vllm.utils.hashing import get_hash_fn_by_name
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
from vllm.v1.core.sched.async_scheduler import AsyncScheduler
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.request import Request
from vllm.v1.structured_output import StructuredOutputManager

from ..errors import PoolcError

__all__ = ["FORMAT", "RecordError", "VLLM_VERSION", "main", "record", "step_record"]

#: The ``format`` every config.json this module writes carries.
FORMAT = "vllm-oracle/1"
#: The only vLLM release whose scheduler this module drives; the replay rules
#: (docs/CONFORMANCE.md) are this release's.
VLLM_VERSION = "0.33.0"

# Token ids 0..2 are special. Prompt tokens lie in [3, 16000) and output tokens in
# [16000, 32000) (the stand-in model's vocabulary), so no block that holds an output
# token can ever match another request's block.
PROMPT_LO, PROMPT_HI = 3, 16000
OUTPUT_LO, OUTPUT_HI = 16000, 32000
_M64 = (1 << 64) - 1

# The generator's knobs, recorded in config.json under "workload" in this order.
WORKLOAD_KEYS = (
    "seed",
    "num_requests",
    "prompt_min",
    "prompt_max",
    "output_min",
    "output_max",
    "num_prefixes",
    "prefix_min",
    "prefix_max",
    "prefix_frac",
    "children_per_prefix",
    "child_min",
    "child_max",
    "child_frac",
    "sticky_frac",
    "aligned_frac",
    "tail_min",
    "tail_max",
    "exact_frac",
    "arrival_rate",
    "initial_burst",
    "burst_size",
    "burst_gap",
    "num_priorities",
)
# Recorded after WORKLOAD_KEYS only when not 1, so that recordings made before the
# option existed keep their bytes.
TENANT_KEY = "num_tenants"
SHARES_KEY = "tenant_shares"

# The fields of a workload line; the first five are required.
WORKLOAD_FIELDS = ("id", "arrival_step", "prompt", "output", "runs", "priority", "tenant", "share")


class RecordError(PoolcError):
    """The arguments, the workload file, or vLLM's behaviour do not allow a recording;
    the message names the argument, or the file and line, at fault."""


def _mix64(a, b):
    """A splitmix64-style hash of two ints: tokens must not depend on Python's hash
    seed or version."""
    x = (a * 0x9E3779B97F4A7C15 + b * 0xC2B2AE3D27D4EB4F + 0x165667B19E3779F9) & _M64
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & _M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _M64
    x ^= x >> 31
    return x


def run_tokens(run_id, length):
    """The tokens of run ``run_id``: a pure function of (run id, offset). The first
    token, ``3 + run_id % 15997``, is unique among runs below 15997 (every generated
    workload); larger ids (a converted Mooncake trace) may share it, but their other
    tokens differ, and ``_verify_runs`` checks every full block against vLLM's hashes."""
    span = PROMPT_HI - PROMPT_LO
    return [PROMPT_LO + run_id % span] + [PROMPT_LO + _mix64(run_id, k) % span for k in range(1, length)]


def output_token(index, out_index):
    """Output token ``out_index`` (0-based) of request ``index`` (generated: its
    number; from a workload file: its line): the first is ``16000 + index``, unique to
    the request."""
    if out_index == 0:
        return OUTPUT_LO + index
    return OUTPUT_LO + _mix64(index + (1 << 40), out_index) % (OUTPUT_HI - OUTPUT_LO)


def _prompt_tokens(w):
    return [t for run_id, n in w["runs"] for t in run_tokens(run_id, n)]


def _generate(args):
    """The requests the generator knobs describe, in feed order, and what config.json
    records about them. A request: dict(id, index, arrival_step, prompt, output, runs,
    priority, tenant); ``index`` picks its output tokens."""
    rng = random.Random(args.seed)
    # Arrivals, priorities and tenants draw from streams of their own, so their knobs
    # do not change the prompts (nor each other).
    rng_arr = random.Random(args.seed * 1_000_003 + 1)
    rng_pri = random.Random(args.seed * 1_000_003 + 2)
    rng_ten = random.Random(args.seed * 1_000_003 + 3)

    def shared_len(lo, hi):
        n = rng.randint(lo, hi)
        if rng.random() < args.aligned_frac:
            n = max(args.block_size, n - n % args.block_size)
        return n

    # Shared runs: roots (first-level prefixes), each followed by its children's ids.
    roots = []
    next_id = 1
    for _ in range(args.num_prefixes):
        root_id, root_len = next_id, shared_len(args.prefix_min, args.prefix_max)
        next_id += 1
        children = []
        for _ in range(args.children_per_prefix):
            children.append((next_id, shared_len(args.child_min, args.child_max)))
            next_id += 1
        roots.append((root_id, root_len, children))
    # Unique tails get ids from a round thousand above the shared runs.
    uniq_base = max(1000, 1000 * math.ceil(next_id / 1000))
    if uniq_base + args.num_requests >= PROMPT_HI - PROMPT_LO:
        raise RecordError(
            f"--num-requests {args.num_requests}: run ids would reach {uniq_base + args.num_requests}, "
            f"past the {PROMPT_HI - PROMPT_LO - 1} whose first tokens are unique"
        )

    reqs = []
    clamped = 0
    last_root = None
    for i in range(args.num_requests):
        olen = rng.randint(args.output_min, args.output_max)
        runs = []
        if roots and rng.random() < args.prefix_frac:
            if last_root is not None and rng.random() < args.sticky_frac:
                root_id, root_len, children = last_root
            else:
                root_id, root_len, children = roots[rng.randrange(len(roots))]
            last_root = (root_id, root_len, children)
            runs.append([root_id, root_len])
            if children and rng.random() < args.child_frac:
                cid, clen = children[rng.randrange(len(children))]
                runs.append([cid, clen])
            tail = 0 if rng.random() < args.exact_frac else rng.randint(args.tail_min, args.tail_max)
        else:
            tail = rng.randint(args.prompt_min, args.prompt_max)
        shared = sum(n for _, n in runs)
        # prompt + output <= max_model_len, with at least one output token.
        if shared + tail > args.max_model_len - 1:
            tail = max(0, args.max_model_len - 1 - shared)
            clamped += 1
        if shared + tail > args.max_model_len - 1 or shared + tail == 0:
            raise RecordError(
                f"request {i}: a shared prefix of {shared} tokens leaves no room in "
                f"--max-model-len {args.max_model_len}"
            )
        if tail > 0:
            runs.append([uniq_base + i, tail])
        plen = shared + tail
        if plen + olen > args.max_model_len:
            olen = args.max_model_len - plen
            clamped += 1
        reqs.append(
            dict(id=f"r{i}", index=i, prompt=plen, output=olen, runs=runs, arrival_step=0, priority=0, tenant=0)
        )

    t = 0.0
    for i, w in enumerate(reqs):
        if i < args.initial_burst:
            w["arrival_step"] = 0
        elif args.burst_size > 0:
            j = i - args.initial_burst
            w["arrival_step"] = (j // args.burst_size + (1 if args.initial_burst else 0)) * args.burst_gap
        elif args.arrival_rate > 0:
            t += rng_arr.expovariate(args.arrival_rate)
            w["arrival_step"] = int(t)
    if args.num_priorities > 1:
        for w in reqs:
            w["priority"] = rng_pri.randint(0, args.num_priorities - 1)
    if args.num_tenants > 1:
        for w in reqs:
            w["tenant"] = rng_ten.randint(0, args.num_tenants - 1)
    if args.tenant_shares is not None:
        for w in reqs:
            w["share"] = args.tenant_shares[w["tenant"]]
    reqs.sort(key=lambda w: (w["arrival_step"], w["index"]))
    info = dict(num_shared_runs=next_id - 1, unique_run_id_base=uniq_base, clamped=clamped)
    return reqs, info


def _shares(text):
    """``--tenant-shares``: comma-separated integers >= 1."""
    try:
        shares = [int(x) for x in text.split(",")]
    except ValueError:
        shares = []
    if not shares or any(x < 1 for x in shares):
        raise argparse.ArgumentTypeError(f"{text!r}: want integers >= 1, comma-separated")
    return shares


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _read_workload(args):
    """The requests of ``--workload FILE`` (the workload.jsonl format), checked, and
    what config.json records about them. A request's ``index`` is its line in FILE."""
    path = args.workload
    try:
        with open(path, "rb") as f:
            raw = f.read()
        lines = raw.decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError(f"--workload {path}: {e}") from e

    def bad(lineno, msg):
        return RecordError(f"{path}:{lineno}: {msg}")

    reqs, seen_ids = [], set()
    # run id -> (start, length, previous run id): a run must mean the same tokens
    # everywhere, which is what makes (run, offset) a block's cache key.
    chain = {}
    prev_arrival = 0
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            raise bad(lineno, "empty line")
        try:
            w = json.loads(line)
        except ValueError as e:
            raise bad(lineno, f"not JSON: {e}") from e
        if not isinstance(w, dict):
            raise bad(lineno, "not a JSON object")
        extra = sorted(set(w) - set(WORKLOAD_FIELDS))
        if extra:
            raise bad(lineno, f"unknown field(s) {extra}; allowed: {list(WORKLOAD_FIELDS)}")
        for k in WORKLOAD_FIELDS[:5]:
            if k not in w:
                raise bad(lineno, f"missing field {k!r}")
        rid = w["id"]
        if not isinstance(rid, str) or not rid:
            raise bad(lineno, "id must be a non-empty string")
        if rid in seen_ids:
            raise bad(lineno, f"duplicate id {rid!r}")
        seen_ids.add(rid)
        if not _is_int(w["arrival_step"]) or w["arrival_step"] < 0:
            raise bad(lineno, "arrival_step must be an integer >= 0")
        if w["arrival_step"] < prev_arrival:
            raise bad(
                lineno,
                f"arrival_step {w['arrival_step']} < {prev_arrival} of the line before: "
                "lines must be in feed order (arrival_step ascending)",
            )
        prev_arrival = w["arrival_step"]
        if not _is_int(w["output"]) or w["output"] < 1:
            raise bad(lineno, "output must be an integer >= 1")
        priority = w.get("priority", 0)
        if not _is_int(priority):
            raise bad(lineno, "priority must be an integer")
        tenant = w.get("tenant", 0)
        if not _is_int(tenant):
            raise bad(lineno, "tenant must be an integer")
        share = w.get("share")
        if share is not None and (not _is_int(share) or share < 1):
            raise bad(lineno, "share must be an integer >= 1")
        runs = w["runs"]
        if not isinstance(runs, list) or not runs:
            raise bad(lineno, "runs must be a non-empty list of [run_id, len]")
        pos, prev = 0, None
        for run in runs:
            if not (isinstance(run, list) and len(run) == 2 and all(_is_int(x) for x in run)) or (
                run[0] < 0 or run[1] < 1
            ):
                raise bad(lineno, f"bad run {run!r}: want [run_id >= 0, len >= 1]")
            here = (pos, run[1], prev)
            have = chain.setdefault(run[0], here)
            if have != here:
                raise bad(
                    lineno,
                    f"run {run[0]} is not prefix-chained: here (start, len, previous run) = {here}, earlier {have}",
                )
            pos += run[1]
            prev = run[0]
        if not _is_int(w["prompt"]) or w["prompt"] != pos:
            raise bad(lineno, f"prompt {w['prompt']!r} != sum of run lengths {pos}")
        reqs.append(
            dict(
                id=rid,
                index=lineno - 1,
                prompt=pos,
                output=w["output"],
                runs=[list(r) for r in runs],
                arrival_step=w["arrival_step"],
                priority=priority,
                tenant=tenant,
                **({} if share is None else dict(share=share)),
            )
        )
    if not reqs:
        raise RecordError(f"{path}: no requests")
    if len(reqs) > OUTPUT_HI - OUTPUT_LO:
        raise RecordError(
            f"{path}: {len(reqs)} requests; the output-token encoding allows {OUTPUT_HI - OUTPUT_LO}"
        )

    too_long = [w for w in reqs if w["prompt"] + w["output"] > args.max_model_len]
    if too_long:
        need = max(w["prompt"] + w["output"] for w in reqs)
        ex = ", ".join(f"{w['id']} ({w['prompt']}+{w['output']})" for w in too_long[:5])
        raise RecordError(
            f"{path}: {len(too_long)} request(s) have prompt + output > --max-model-len "
            f"{args.max_model_len}, e.g. {ex}. Pass --max-model-len {need} (or more), or drop "
            "them from the workload (python -m poolc.vllm.mooncake --max-model-len)."
        )
    # A request that cannot fit the pool alone would be preempted and recomputed forever.
    usable = args.num_blocks - 1
    blocks = [-(-(w["prompt"] + w["output"] - 1) // args.block_size) for w in reqs]
    never = [w for w, b in zip(reqs, blocks) if b > usable]
    if never:
        ex = ", ".join(f"{w['id']} ({w['prompt']}+{w['output']})" for w in never[:5])
        raise RecordError(
            f"{path}: {len(never)} request(s) need more than the {usable} usable KV blocks even "
            f"alone (ceil((prompt + output - 1) / block_size)), e.g. {ex}. "
            f"Pass --num-blocks {max(blocks) + 1} (or more)."
        )

    canon = "".join(
        _workload_line(w, _with_priority(args, reqs), _with_tenant(reqs), _with_share(reqs)) for w in reqs
    )
    info = dict(
        source="file",
        file=os.path.basename(path),
        sha256=hashlib.sha256(raw).hexdigest(),
        written_verbatim=canon.encode("utf-8") == raw,
        num_requests=len(reqs),
        num_runs=len(chain),
        max_run_id=max(chain),
        prompt_tokens=sum(w["prompt"] for w in reqs),
        output_tokens=sum(w["output"] for w in reqs),
        prompt_range=[min(w["prompt"] for w in reqs), max(w["prompt"] for w in reqs)],
        output_range=[min(w["output"] for w in reqs), max(w["output"] for w in reqs)],
        arrival_steps=[reqs[0]["arrival_step"], reqs[-1]["arrival_step"]],
    )
    return reqs, info


def _with_priority(args, work):
    """Whether workload.jsonl carries priorities: always under --policy priority, and
    whenever a request has a non-zero one (a plugin scheduler may read it)."""
    return args.policy == "priority" or any(w["priority"] for w in work)


def _with_tenant(work):
    """Whether workload.jsonl carries tenants, and the requests are given theirs
    (``extra_args={"poolc.tenant": T}``): whenever a request has a non-zero one."""
    return any(w["tenant"] for w in work)


def _with_share(work):
    """Whether workload.jsonl carries shares, and the requests are given theirs
    (``extra_args={"poolc.share": S}``, a weight such as wfq.pool's): whenever a
    request has one; a request without one then gets 1."""
    return any("share" in w for w in work)


def _workload_line(w, with_priority, with_tenant, with_share):
    rec = dict(id=w["id"], arrival_step=w["arrival_step"], prompt=w["prompt"], output=w["output"], runs=w["runs"])
    if with_priority:
        rec["priority"] = w["priority"]
    if with_tenant:
        rec["tenant"] = w["tenant"]
    if with_share:
        rec["share"] = w.get("share", 1)
    return json.dumps(rec, separators=(",", ":")) + "\n"


def _verify_runs(work, vreqs, block_size):
    """Checks that the runs describe exactly the block sharing vLLM sees (two full
    prompt blocks have the same vLLM block hash iff the run covering the block's last
    token is the same run at the same offset), so that a replayer may key blocks by
    (run, offset); gives the counts config.json records."""
    key_of_hash, hash_of_key = {}, {}
    uses = {}
    for w in work:
        r = vreqs[w["id"]]
        nfull = w["prompt"] // block_size
        if len(r.block_hashes) != nfull:
            raise RecordError(f"{w['id']}: vLLM hashed {len(r.block_hashes)} prompt blocks, not {nfull}")
        starts, pos = [], 0
        for run_id, n in w["runs"]:
            starts.append((pos, run_id))
            pos += n
        ri = 0
        for b in range(nfull):
            last = (b + 1) * block_size - 1
            while ri + 1 < len(starts) and starts[ri + 1][0] <= last:
                ri += 1
            start, run_id = starts[ri]
            key = (run_id, last - start)
            h = bytes(r.block_hashes[b])
            if key_of_hash.setdefault(h, key) != key or hash_of_key.setdefault(key, h) != h:
                raise RecordError(
                    f"{w['id']} block {b}: its (run, offset) key {key} and vLLM's block hash disagree "
                    "on which blocks are equal"
                )
            uses[key] = uses.get(key, 0) + 1
    return dict(distinct_prompt_blocks=len(uses), shared_prompt_blocks=sum(1 for c in uses.values() if c > 1))


def _stand_in_model(directory, max_model_len):
    """Writes a tiny Llama config.json (no weights, no tokenizer) for ``ModelConfig``
    to read. Its positions are exactly ``max_model_len``, so that any --max-model-len
    is accepted; no model runs, so its sizes decide nothing that is recorded."""
    config = dict(
        model_type="llama",
        dtype="float16",
        vocab_size=OUTPUT_HI,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=max_model_len,
    )
    with open(os.path.join(directory, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)


def _scheduler_class(args):
    if args.scheduler_cls is None:
        return AsyncScheduler if args.async_sched else Scheduler
    # Resolved by qualified name, as vLLM's --scheduler-cls is.
    module, _, name = args.scheduler_cls.rpartition(".")
    if not module:
        raise RecordError(f"--scheduler-cls wants MODULE.CLASS, not {args.scheduler_cls!r}")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise RecordError(f"--scheduler-cls {args.scheduler_cls}: {e}") from e


def _make_scheduler(args, additional_config):
    """The scheduler and its ``VllmConfig``, built as vLLM's unit tests build them (and,
    for a plugin class, as vLLM's engine core constructs its scheduler)."""
    cls = _scheduler_class(args)
    scheduler_config = SchedulerConfig(
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        max_model_len=args.max_model_len,
        long_prefill_token_threshold=args.long_prefill_token_threshold,
        enable_chunked_prefill=not args.no_chunked_prefill,
        async_scheduling=args.async_sched,
        policy=args.policy,
        is_encoder_decoder=False,
        watermark=args.watermark,
        scheduler_reserve_full_isl=not args.no_reserve_full_isl,
    )
    cache_config = CacheConfig(
        block_size=args.block_size,
        gpu_memory_utilization=0.9,
        cache_dtype="auto",
        enable_prefix_caching=not args.no_prefix_caching,
    )
    extra = {} if additional_config is None else {"additional_config": additional_config}
    kv_cache_config = KVCacheConfig(
        num_blocks=args.num_blocks,
        kv_cache_tensors=[],
        kv_cache_groups=[
            KVCacheGroupSpec(
                ["layer"],
                FullAttentionSpec(block_size=args.block_size, num_kv_heads=1, head_size=1, dtype=torch.float32),
            )
        ],
    )
    cache_config.num_gpu_blocks = args.num_blocks
    # The model directory lives until the scheduler is built: vLLM reads it while
    # configuring, and only then.
    with tempfile.TemporaryDirectory(prefix="poolc-vllm-model-") as model_dir:
        _stand_in_model(model_dir, args.max_model_len)
        model_config = ModelConfig(
            model=model_dir, dtype="float16", seed=42, skip_tokenizer_init=True, max_model_len=args.max_model_len
        )
        # Without a GPU vLLM's platform is "unspecified": the device must be named.
        vllm_config = VllmConfig(
            scheduler_config=scheduler_config,
            model_config=model_config,
            cache_config=cache_config,
            device_config=DeviceConfig(device="cpu"),
            **extra,
        )
        sched = cls(
            vllm_config=vllm_config,
            kv_cache_config=kv_cache_config,
            block_size=args.block_size,
            log_stats=args.log_stats,
            structured_output_manager=StructuredOutputManager(vllm_config),
        )
    return sched, vllm_config


def _config_record(args, sched, vllm_config):
    """The configuration as the live scheduler sees it: read back, not echoed."""
    sc = vllm_config.scheduler_config
    cc = vllm_config.cache_config
    kvm = sched.kv_cache_manager
    pool = kvm.block_pool
    return dict(
        scheduler_class=type(sched).__name__,
        policy=sched.policy.value,
        block_size=cc.block_size,
        num_blocks=pool.num_gpu_blocks,
        usable_blocks=pool.get_num_free_blocks(),
        null_block_id=pool.null_block.block_id,
        max_num_seqs=sched.max_num_running_reqs,
        max_num_active_seqs=sched.max_num_active_reqs,
        max_num_batched_tokens=sc.max_num_batched_tokens,
        max_num_scheduled_tokens=sched.max_num_scheduled_tokens,
        max_model_len=sched.max_model_len,
        long_prefill_token_threshold=sc.long_prefill_token_threshold,
        long_prefill_token_threshold_adaptive=bool(sc.long_prefill_token_threshold_adaptive),
        watermark=sc.watermark,
        watermark_blocks=kvm.watermark_blocks,
        reserve_full_isl=bool(sched.scheduler_reserve_full_isl),
        async_scheduling=args.async_sched,
        enable_prefix_caching=bool(cc.enable_prefix_caching),
        enable_chunked_prefill=bool(sc.enable_chunked_prefill),
        prefill_schedule_interval=sc.prefill_schedule_interval,
        num_lookahead_tokens=sched.num_lookahead_tokens,
        num_spec_tokens=sched.num_spec_tokens,
    )


def _recorded_argv(argv):
    """``argv`` as config.json records it: without ``--out-dir`` (a path of this
    machine), the ``--workload`` path cut to its file name."""
    out, skip, workload_next = [], False, False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--out-dir":
            skip = True
            continue
        if a.startswith("--out-dir="):
            continue
        if workload_next:
            a = os.path.basename(a)
        elif a.startswith("--workload="):
            a = "--workload=" + os.path.basename(a[len("--workload=") :])
        workload_next = a == "--workload"
        out.append(a)
    return out


def _parser():
    ap = argparse.ArgumentParser(
        prog="python -m poolc.vllm.record",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        # config.json records the arguments as given: an abbreviation would record
        # another spelling of the same scenario.
        allow_abbrev=False,
    )
    ap.add_argument("--out-dir", help="write config.json, workload.jsonl, steps.jsonl here (default: no files)")
    ap.add_argument("--name", default="", help="scenario name recorded in config.json")
    w = ap.add_argument_group("workload")
    w.add_argument(
        "--workload",
        metavar="FILE",
        help="read the requests from FILE (the workload.jsonl format) instead of generating them; "
        "the generator options below are then ignored",
    )
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--num-requests", type=int, default=400)
    w.add_argument("--prompt-min", type=int, default=16, help="prompt length of requests without a shared prefix")
    w.add_argument("--prompt-max", type=int, default=2048)
    w.add_argument("--output-min", type=int, default=1)
    w.add_argument("--output-max", type=int, default=256)
    w.add_argument("--num-prefixes", type=int, default=0, help="shared first-level prefixes (roots)")
    w.add_argument("--prefix-min", type=int, default=64)
    w.add_argument("--prefix-max", type=int, default=1024)
    w.add_argument("--prefix-frac", type=float, default=0.0, help="fraction of requests using a root")
    w.add_argument("--children-per-prefix", type=int, default=0, help="second-level shared runs per root")
    w.add_argument("--child-min", type=int, default=16)
    w.add_argument("--child-max", type=int, default=512)
    w.add_argument("--child-frac", type=float, default=0.0, help="of prefixed requests, fraction using a child")
    w.add_argument(
        "--sticky-frac",
        type=float,
        default=0.0,
        help="of prefixed requests, fraction reusing the previous prefixed request's root",
    )
    w.add_argument(
        "--aligned-frac", type=float, default=0.0, help="fraction of shared runs cut down to whole blocks"
    )
    w.add_argument("--tail-min", type=int, default=1, help="unique tail length after a shared prefix")
    w.add_argument("--tail-max", type=int, default=512)
    w.add_argument(
        "--exact-frac",
        type=float,
        default=0.0,
        help="of prefixed requests, fraction with no unique tail (the prompt is the shared runs)",
    )
    w.add_argument(
        "--arrival-rate",
        type=float,
        default=0.0,
        help="mean arrivals per step (Poisson); 0 and no bursts: all at step 0",
    )
    w.add_argument("--initial-burst", type=int, default=0, help="the first N requests arrive at step 0")
    w.add_argument("--burst-size", type=int, default=0, help="then bursts of this many requests ...")
    w.add_argument("--burst-gap", type=int, default=1, help="... every this many steps")
    w.add_argument(
        "--num-priorities", type=int, default=1, help="priorities drawn uniformly from 0..K-1 (smaller: more urgent)"
    )
    w.add_argument(
        "--num-tenants",
        type=int,
        default=1,
        help="tenants drawn uniformly from 0..N-1, given to the scheduler as "
        'extra_args {"poolc.tenant": T} (1: none given)',
    )
    w.add_argument(
        "--tenant-shares",
        type=_shares,
        default=None,
        help="S0,S1,...: tenant T's requests carry share S_T (integers >= 1, one per "
        'tenant), given to the scheduler as extra_args {"poolc.share": S}',
    )
    s = ap.add_argument_group("scheduler")
    s.add_argument("--policy", choices=["fcfs", "priority"], default="fcfs")
    s.add_argument("--block-size", type=int, default=16)
    s.add_argument("--num-blocks", type=int, default=2048, help="KV blocks, the null block included")
    s.add_argument("--max-num-seqs", type=int, default=128)
    s.add_argument("--max-num-batched-tokens", type=int, default=2048)
    s.add_argument("--max-model-len", type=int, default=4096)
    s.add_argument("--long-prefill-token-threshold", type=int, default=0)
    s.add_argument("--watermark", type=float, default=0.0)
    s.add_argument(
        "--no-reserve-full-isl",
        action="store_true",
        help="scheduler_reserve_full_isl=False (only the first chunk must fit)",
    )
    s.add_argument("--no-prefix-caching", action="store_true")
    s.add_argument("--no-chunked-prefill", action="store_true")
    s.add_argument(
        "--scheduler-cls",
        metavar="MODULE.CLASS",
        help="drive this scheduler class instead of vLLM's own (as vLLM's --scheduler-cls); "
        "recorded in config.json as scheduler_cls",
    )
    s.add_argument(
        "--additional-config",
        metavar="JSON",
        help="VllmConfig.additional_config (as vLLM's --additional-config), e.g. a plugin's settings; "
        "recorded in config.json as additional_config",
    )
    s.add_argument(
        "--async-sched",
        action="store_true",
        help="vLLM's AsyncScheduler in the engine core's batch-queue order: schedule(N), then update_from_output(N-1)",
    )
    ap.add_argument("--log-stats", action="store_true", help="the scheduler's log_stats")
    ap.add_argument(
        "--record-tokens",
        action="store_true",
        help="also write each step's tokens per scheduled request (big)",
    )
    ap.add_argument("--max-steps", type=int, default=10_000_000)
    return ap


def record(argv):
    """Records the scenario that ``argv`` (the command line's arguments) describes;
    writes its files when ``--out-dir`` is given. Returns the summary (steps.jsonl's
    last line) and the timings in seconds (``import_s`` is not among them: vLLM is
    imported with this module). Raises ``RecordError``; an argument error exits as
    argparse does."""
    argv = list(argv)
    args = _parser().parse_args(argv)
    if args.burst_size > 0 and args.arrival_rate > 0:
        raise RecordError("--burst-size and --arrival-rate are exclusive")
    if args.num_tenants < 1:
        raise RecordError(f"--num-tenants {args.num_tenants}: want 1 or more")
    if args.tenant_shares is not None and len(args.tenant_shares) != args.num_tenants:
        raise RecordError(
            f"--tenant-shares gives {len(args.tenant_shares)} shares for {args.num_tenants} tenant(s): want one each"
        )
    if vllm.__version__ != VLLM_VERSION:
        raise RecordError(f"this recorder drives vLLM {VLLM_VERSION}; this environment has {vllm.__version__}")
    additional_config = None
    if args.additional_config is not None:
        try:
            additional_config = json.loads(args.additional_config)
        except ValueError as e:
            raise RecordError(f"--additional-config is not JSON: {e}") from e
        if not isinstance(additional_config, dict):
            raise RecordError("--additional-config must be a JSON object")
    # The file is checked before the scheduler is built (a bad line fails fast).
    work, winfo = _read_workload(args) if args.workload else _generate(args)

    t0 = time.perf_counter()
    sched, vllm_config = _make_scheduler(args, additional_config)
    t_build = time.perf_counter() - t0

    hash_fn = get_hash_fn_by_name(vllm_config.cache_config.prefix_caching_hash_algo)
    init_none_hash(hash_fn)
    block_hasher = get_request_block_hasher(args.block_size, hash_fn)
    index_of = {w["id"]: w["index"] for w in work}
    with_tenant, with_share = _with_tenant(work), _with_share(work)
    vreqs = {}
    for w in work:
        # A workload with tenants (shares) gives each request its own as the session
        # attribute `tenant` (`share`): the plugin reads extra_args; vLLM's own
        # scheduler ignores them.
        given = {}
        if with_tenant:
            given["poolc.tenant"] = w["tenant"]
        if with_share:
            given["poolc.share"] = w.get("share", 1)
        extra = {"extra_args": given} if given else {}
        # arrival_time, the priority policy's second key, is the step the request
        # arrives at (the clock `poolc conform` gives `arrival`): requests fed in one
        # step tie on it, and vLLM orders them by request_id, as text.
        vreqs[w["id"]] = Request(
            request_id=w["id"],
            prompt_token_ids=_prompt_tokens(w),
            sampling_params=SamplingParams(max_tokens=w["output"], ignore_eos=True, **extra),
            pooling_params=None,
            arrival_time=float(w["arrival_step"]),
            priority=w["priority"],
            block_hasher=block_hasher,
        )
    if not args.no_prefix_caching:
        winfo.update(_verify_runs(work, vreqs, args.block_size))

    # The scheduler's output lists the preempted ids as a set; their order is read here.
    preempt_log = []
    preempt = sched._preempt_request

    def _preempt_and_log(request, *a, **kw):
        preempt_log.append(request.request_id)
        return preempt(request, *a, **kw)

    sched._preempt_request = _preempt_and_log

    with contextlib.ExitStack() as files:
        steps_file = None
        if args.out_dir:
            _write_config_and_workload(args, argv, sched, vllm_config, additional_config, work, winfo)
            steps_file = files.enter_context(open(os.path.join(args.out_dir, "steps.jsonl"), "w", encoding="utf-8"))
        summary, timings = _run(args, sched, work, vreqs, index_of, preempt_log, steps_file)
    return summary, dict(build_s=round(t_build, 2), **timings)


def _write_config_and_workload(args, argv, sched, vllm_config, additional_config, work, winfo):
    tokens = dict(prompt_token_range=[PROMPT_LO, PROMPT_HI], output_token_range=[OUTPUT_LO, OUTPUT_HI])
    if args.workload:
        workload = dict(winfo, **tokens)
    else:
        keys = WORKLOAD_KEYS + ((TENANT_KEY,) if args.num_tenants != 1 else ())
        keys += (SHARES_KEY,) if args.tenant_shares is not None else ()
        workload = dict({k: getattr(args, k) for k in keys}, **tokens, **winfo)
    config = dict(
        format=FORMAT,
        name=args.name,
        vllm_version=vllm.__version__,
        **_config_record(args, sched, vllm_config),
        workload=workload,
        argv=_recorded_argv(argv),
    )
    # Only present when given, so that recordings of vLLM's own scheduler do not change.
    if args.scheduler_cls:
        config["scheduler_cls"] = args.scheduler_cls
    if additional_config is not None:
        config["additional_config"] = additional_config
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "config.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(config, indent=1) + "\n")
    flags = _with_priority(args, work), _with_tenant(work), _with_share(work)
    with open(os.path.join(args.out_dir, "workload.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(_workload_line(w, *flags) for w in work)


def step_record(sched, step, arrivals, admitted, cont, preempted, finished, n_sched, n_decode):
    """One steps.jsonl line (docs/CONFORMANCE.md, "The scenario format"), in its key
    order: the step's decisions as given, and the scheduler's counts after it, read
    from the live scheduler. Also what python/tests/vllm_engine.py's observer writes
    for a running engine."""
    return dict(
        step=step,
        arrivals=arrivals,
        admitted=admitted,
        cont=cont,
        preempted=preempted,
        finished=finished,
        n_sched_tokens=n_sched,
        n_decode=n_decode,
        running=len(sched.running),
        waiting=len(sched.waiting) + len(sched.kv_holding_waiting),
        free_blocks=sched.kv_cache_manager.block_pool.get_num_free_blocks(),
    )


def _run(args, sched, work, vreqs, index_of, preempt_log, steps_file):
    """The engine loop; writes one line per step, then the summary line."""
    counted = (
        "steps",
        "idle_steps",
        "admitted_new",
        "admitted_resumed",
        "preemptions",
        "finished",
        "hit_tokens_new",
        "hit_tokens_resumed",
        "prompt_tokens_admitted",
        "scheduled_tokens",
        "max_running",
    )
    stats = dict.fromkeys(counted, 0)  # in the summary line's order
    t_sched = t_update = 0.0
    seen = set()
    next_arrival = 0
    step = 0
    stalled = 0
    # --async-sched: the step whose update_from_output() waits for the next schedule().
    pending = None
    loop_start = time.perf_counter()
    while step < args.max_steps:
        arrivals = []
        while next_arrival < len(work) and work[next_arrival]["arrival_step"] <= step:
            w = work[next_arrival]
            sched.add_request(vreqs[w["id"]])
            arrivals.append(w["id"])
            next_arrival += 1
        # Not has_requests(): that stays true for one step after the last finish, only
        # to report the finished ids, and that step decides nothing.
        unfinished = sched.get_num_unfinished_requests()
        if next_arrival >= len(work) and unfinished == 0 and pending is None:
            break
        running_before = {r.request_id for r in sched.running}
        prefilling_before = {r.request_id for r in sched.running if r.is_prefill_chunk}
        preempt_log.clear()
        tb = time.perf_counter()
        # With nothing unfinished vLLM's engine does not call schedule(): an idle step.
        so = sched.schedule() if unfinished > 0 else None
        t_sched += time.perf_counter() - tb
        admitted, cont, req_ids, sampled = [], [], [], []
        preempted = list(preempt_log)
        n_decode = 0
        if so is not None:
            if set(preempted) != set(so.preempted_req_ids):
                raise RecordError(
                    f"step {step}: preempted {sorted(preempted)} seen, {sorted(so.preempted_req_ids)} reported"
                )
            nst = so.num_scheduled_tokens
            for rid, n in nst.items():
                r = sched.requests[rid]
                if rid in running_before:
                    if rid in prefilling_before:
                        cont.append([rid, n])
                    elif n != 1:
                        raise RecordError(f"step {step}: decode of {rid} scheduled {n} tokens, not 1")
                    else:
                        n_decode += 1
                    continue
                hit = r.num_computed_tokens - n  # computed before this step: the cache hit
                kind = "resumed" if rid in seen else "new"
                seen.add(rid)
                admitted.append([rid, kind, hit, n])
                if kind == "new":
                    stats["admitted_new"] += 1
                    stats["hit_tokens_new"] += hit
                    stats["prompt_tokens_admitted"] += r.num_prompt_tokens
                else:
                    stats["admitted_resumed"] += 1
                    stats["hit_tokens_resumed"] += hit
            stats["preemptions"] += len(preempted)
            stats["scheduled_tokens"] += so.total_num_scheduled_tokens
            # The stand-in model: one sampled token for every request whose prompt
            # (for a resumed one: prompt and earlier outputs) is now computed.
            req_ids = list(nst.keys())
            for rid in req_ids:
                r = sched.requests[rid]
                sampled.append([] if r.is_prefill_chunk else [output_token(index_of[rid], r.num_output_tokens)])
        this = (so, req_ids, sampled) if so is not None else None
        if args.async_sched:
            to_update, pending = pending, this
        else:
            to_update = this
        finished = []
        tu = time.perf_counter()
        if to_update is not None:
            uso, uids, usampled = to_update
            sched.update_from_output(
                uso,
                ModelRunnerOutput(
                    req_ids=uids,
                    req_id_to_index={rid: i for i, rid in enumerate(uids)},
                    sampled_token_ids=usampled,
                ),
            )
            finished = [rid for rid in uids if rid not in sched.requests]
        t_update += time.perf_counter() - tu
        stats["finished"] += len(finished)
        n_sched = so.total_num_scheduled_tokens if so is not None else 0
        if n_sched == 0:
            stats["idle_steps"] += 1
        stats["max_running"] = max(stats["max_running"], len(sched.running))
        stalled = stalled + 1 if (n_sched == 0 and next_arrival >= len(work)) else 0
        if stalled > 1000:
            raise RecordError(f"no progress for 1000 steps at step {step}: a request cannot be scheduled")
        if so is not None and n_sched != sum(a[3] for a in admitted) + sum(c[1] for c in cont) + n_decode:
            raise RecordError(f"step {step}: {n_sched} tokens scheduled, but admitted + cont + decodes differ")
        if steps_file is not None:
            rec = step_record(sched, step, arrivals, admitted, cont, preempted, finished, n_sched, n_decode)
            if args.record_tokens and so is not None:
                rec["sched"] = so.num_scheduled_tokens
            steps_file.write(json.dumps(rec, separators=(",", ":")) + "\n")
        step += 1
    loop = time.perf_counter() - loop_start
    stats["steps"] = step
    if stats["finished"] != len(work):
        raise RecordError(
            f"only {stats['finished']} of {len(work)} requests finished in {step} steps (--max-steps {args.max_steps})"
        )
    stats["hit_tokens_total"] = stats["hit_tokens_new"] + stats["hit_tokens_resumed"]
    stats["admissions"] = stats["admitted_new"] + stats["admitted_resumed"]
    summary = dict(
        summary=True,
        name=args.name,
        vllm_version=vllm.__version__,
        num_requests=len(work),
        **stats,
        prefix_hit_rate=round(stats["hit_tokens_new"] / max(1, stats["prompt_tokens_admitted"]), 6),
    )
    if steps_file is not None:
        steps_file.write(json.dumps(summary, separators=(",", ":")) + "\n")
    timings = dict(
        loop_s=round(loop, 2),
        schedule_s=round(t_sched, 2),
        update_s=round(t_update, 2),
        steps_per_s=round(step / loop, 1) if loop else None,
    )
    return summary, timings


def main(argv=None):
    """The command line: the summary on stdout, the timings on stderr, both as JSON."""
    try:
        summary, timings = record(sys.argv[1:] if argv is None else argv)
    except RecordError as e:
        sys.exit(f"poolc.vllm.record: {e}")
    print(json.dumps(summary))
    print(json.dumps(timings), file=sys.stderr)


if __name__ == "__main__":
    main()
