"""Runs vLLM's real engine — ``vllm.LLM`` with a tiny randomly initialised Llama on the
CPU — on a seeded workload, stock or with ``poolc.vllm.Scheduler``, and records what its
scheduler decided, step by step, in the scenario format ``poolc conform`` replays
(docs/CONFORMANCE.md, "The scenario format"), with the tokens it generated.

Used by python/tests/test_vllm_engine.py, one subprocess per run (vLLM configures its
process globally: one engine per process keeps the runs independent):

    python python/tests/vllm_engine.py --out DIR --workload NAME [--spec PATH --clock-step S
        --step-log PATH] [--blocks N]

What it owns: the tiny model's config.json (no weights: ``load_format="dummy"``, no
tokenizer: prompts are token ids), the workloads (seeded, each request's prompt made of
shared runs and a unique tail, so that no prompt is a prefix of another and only the
runs can be hit), the loop that adds each request at its arrival step and calls
``LLMEngine.step()`` while any request is unfinished, and a thin observer: wrappers on
the live scheduler's ``add_request``, ``schedule``, ``_preempt_request`` and
``update_from_output`` that write one steps.jsonl line per step. It decides nothing:
every admission, hit, chunk, preemption and finish it writes is read back from the
scheduler.

What it must not do: let the wall clock or a hash seed reach steps.jsonl,
workload.jsonl or outputs.json (the same arguments give the same bytes; config.json
records the arguments as given, paths included, and the plugin's step log holds
measured durations), or run the engine in another process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``: the observer wraps the scheduler
object in this process, and every ``step()`` is exactly one ``schedule()`` and one
``update_from_output()``)."""

import argparse
import json
import os
import sys
import tempfile
import types

# Before vLLM is imported: the engine core runs in this process (the observer wraps its
# scheduler), and the CPU backend's KV cache space is 1 GiB (the cache is sized by
# `num_gpu_blocks_override` below).
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# The recorder's hash of two ints (tokens must not depend on Python's hash seed), and
# its steps.jsonl line.
from poolc.vllm.record import _mix64 as _mix  # noqa: E402
from poolc.vllm.record import step_record  # noqa: E402

#: The tiny model: a Llama of 2 layers, hidden 256, 4 heads of 64 (2 KV heads), vocabulary
#: 512, float32; randomly initialised by vLLM (`load_format="dummy"`, seeded).
MODEL = dict(
    architectures=["LlamaForCausalLM"],
    model_type="llama",
    hidden_size=256,
    intermediate_size=512,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=64,
    num_hidden_layers=2,
    vocab_size=512,
    max_position_embeddings=1024,
    rms_norm_eps=1e-5,
    rope_theta=10000.0,
    torch_dtype="float32",
    tie_word_embeddings=False,
    bos_token_id=1,
    eos_token_id=2,
    hidden_act="silu",
)
#: The engine's sizes: the CPU attention backend takes blocks of 32 tokens (not 16).
BLOCK = 32
BUDGET = 256
SEATS = 8
MAX_MODEL_LEN = 1024

_M64 = (1 << 64) - 1


def run_tokens(run_id, length):
    """A run's tokens, in [3, 512): token ids 0..2 are special."""
    return [3 + _mix(run_id, i) % 509 for i in range(length)]


class _Rng:
    """A seeded generator written here (not `random`), so the workloads never change."""

    def __init__(self, seed):
        self.s = seed

    def below(self, n):
        self.s = (self.s + 1) & _M64
        return _mix(self.s, 7) % n

    def between(self, lo, hi):
        return lo + self.below(hi - lo + 1)


def workload(name):
    """The named workload: a list of requests {id, arrival_step, prompt, output, runs}.

    ``mixed``: 28 requests, prompts 40–360 tokens, outputs 8–40, two or three arriving
    every other step, about half behind one of three shared prefixes (96–160 tokens): a
    cache of 32 blocks preempts. ``prefixes``: 32 requests, one every other step, most
    behind one of four shared prefixes of 1, 3, 6 and 10 blocks, short outputs: the
    cache holds few finished requests' blocks at a time, so which cached entry is
    evicted first decides later hits (LRU and `evict by (size, -last)` differ in 14
    steps and hit 3,136 against 3,520 tokens: `poolc conform --out` of both specs)."""
    rng = _Rng({"mixed": 11, "prefixes": 7}[name])
    n = {"mixed": 28, "prefixes": 32}[name]
    if name == "mixed":
        root_len = [rng.between(96, 160) for _ in range(3)]
    else:
        root_len = [32, 96, 192, 320]
    out = []
    step = 0
    for i in range(n):
        step += rng.below(2) if name == "mixed" else (2 if i else 0)
        runs = []
        if rng.below(100) < (50 if name == "mixed" else 85):
            r = rng.below(len(root_len))
            runs.append([1 + r, root_len[r]])
        tail = rng.between(8, 200) if name == "mixed" else rng.between(16, 96)
        # The unique tail: no prompt is a prefix of another, so no block holding a
        # generated token can be hit by another request (greedy decoding of equal
        # prompts would otherwise produce equal blocks the replay cannot know of).
        runs.append([1000 + i, tail])
        out.append(
            dict(
                id=f"r{i:02d}",
                arrival_step=step,
                prompt=sum(length for _, length in runs),
                output=rng.between(8, 40) if name == "mixed" else rng.between(4, 16),
                runs=runs,
            )
        )
    return out


def _prompt(w):
    return [t for run_id, length in w["runs"] for t in run_tokens(run_id, length)]


class _Observer:
    """Wraps the live scheduler's methods and writes steps.jsonl lines (the recorder's
    format: docs/CONFORMANCE.md)."""

    def __init__(self, sched, steps_file):
        self.sched = sched
        self.f = steps_file
        self.arrivals = []
        self.preempted = []
        self.seen = set()
        self.step = 0
        self.before = None
        for name in ("add_request", "schedule", "_preempt_request", "update_from_output"):
            setattr(sched, name, getattr(self, "wrap_" + name.lstrip("_"))(getattr(sched, name)))

    @staticmethod
    def ext(rid):
        # vLLM's engine makes each request id unique with a random suffix,
        # "<id>-<8 hex>" (v1/engine/input_processor.py): the workload's id is the rest.
        return rid.rsplit("-", 1)[0]

    def wrap_add_request(self, inner):
        def add_request(request, *a, **kw):
            self.arrivals.append(self.ext(request.request_id))
            return inner(request, *a, **kw)

        return add_request

    def wrap_preempt_request(self, inner):
        def preempt(request, *a, **kw):
            self.preempted.append(self.ext(request.request_id))
            return inner(request, *a, **kw)

        return preempt

    def wrap_schedule(self, inner):
        def schedule(*a, **kw):
            s = self.sched
            running = {r.request_id for r in s.running}
            prefilling = {r.request_id for r in s.running if r.is_prefill_chunk}
            self.preempted = []
            so = inner(*a, **kw)
            admitted, cont, n_decode = [], [], 0
            for rid, n in so.num_scheduled_tokens.items():
                r = s.requests[rid]
                if rid in running:
                    if rid in prefilling:
                        cont.append([self.ext(rid), n])
                    else:
                        assert n == 1, f"decode of {rid} scheduled {n} tokens"
                        n_decode += 1
                    continue
                kind = "resumed" if rid in self.seen else "new"
                self.seen.add(rid)
                admitted.append([self.ext(rid), kind, r.num_computed_tokens - n, n])
            self.before = (so, admitted, cont, n_decode)
            return so

        return schedule

    def wrap_update_from_output(self, inner):
        def update(so, *a, **kw):
            s = self.sched
            ids = list(so.num_scheduled_tokens)
            result = inner(so, *a, **kw)
            got, admitted, cont, n_decode = self.before
            assert got is so
            finished = [self.ext(rid) for rid in ids if rid not in s.requests]
            self.write(admitted, cont, finished, so.total_num_scheduled_tokens, n_decode)
            return result

        return update

    def write(self, admitted, cont, finished, n_sched, n_decode):
        rec = step_record(
            self.sched, self.step, self.arrivals, admitted, cont, self.preempted, finished, n_sched, n_decode
        )
        self.f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        self.arrivals, self.preempted = [], []
        self.step += 1

    def idle(self):
        """A step at which nothing is unfinished: vLLM's engine calls no schedule()."""
        self.write([], [], [], 0, 0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--workload", choices=["mixed", "prefixes"], required=True)
    ap.add_argument("--spec", help="run poolc.vllm.Scheduler with this spec (else stock vLLM)")
    ap.add_argument("--clock-step", type=float)
    ap.add_argument("--step-log")
    ap.add_argument("--blocks", type=int, default=33, help="KV blocks, the null block included")
    args = ap.parse_args(argv)

    import vllm
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    from poolc.vllm import record

    os.makedirs(args.out, exist_ok=True)
    work = workload(args.workload)
    extra = {}
    if args.spec:
        conf = {"spec": args.spec}
        if args.clock_step is not None:
            conf["clock_step"] = args.clock_step
        if args.step_log:
            conf["step_log"] = args.step_log
        extra = dict(scheduler_cls="poolc.vllm.Scheduler", additional_config={"poolc": conf})
    with tempfile.TemporaryDirectory(prefix="poolc-tiny-llama-") as model:
        with open(os.path.join(model, "config.json"), "w", encoding="utf-8") as f:
            json.dump(MODEL, f)
        llm = LLM(
            model=model,
            load_format="dummy",
            skip_tokenizer_init=True,
            dtype="float32",
            seed=0,
            block_size=BLOCK,
            num_gpu_blocks_override=args.blocks,
            max_num_seqs=SEATS,
            max_num_batched_tokens=BUDGET,
            max_model_len=MAX_MODEL_LEN,
            enforce_eager=True,
            async_scheduling=False,
            enable_prefix_caching=True,
            distributed_executor_backend="uni",
            **extra,
        )
    engine = llm.llm_engine
    sched = engine.engine_core.engine_core.scheduler
    config = dict(
        format=record.FORMAT,
        name=os.path.basename(os.path.normpath(args.out)),
        vllm_version=vllm.__version__,
        **record._config_record(types.SimpleNamespace(async_sched=False), sched, llm.llm_engine.vllm_config),
        workload=dict(generator=f"python/tests/vllm_engine.py --workload {args.workload}"),
        argv=[a for a in (argv if argv is not None else sys.argv[1:])],
    )
    if args.spec:
        config["scheduler_cls"] = "poolc.vllm.Scheduler"
        config["additional_config"] = extra["additional_config"]
    with open(os.path.join(args.out, "config.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(config, indent=1) + "\n")
    with open(os.path.join(args.out, "workload.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(w, separators=(",", ":")) + "\n" for w in work)

    tokens = {}
    with open(os.path.join(args.out, "steps.jsonl"), "w", encoding="utf-8") as steps:
        obs = _Observer(sched, steps)
        nxt, step = 0, 0
        while nxt < len(work) or engine.has_unfinished_requests():
            while nxt < len(work) and work[nxt]["arrival_step"] <= step:
                w = work[nxt]
                params = SamplingParams(max_tokens=w["output"], temperature=0.0, ignore_eos=True, detokenize=False)
                engine.add_request(w["id"], TokensPrompt(prompt_token_ids=_prompt(w)), params)
                nxt += 1
            if engine.has_unfinished_requests():
                for out in engine.step():
                    if out.finished:
                        tokens[out.request_id] = list(out.outputs[0].token_ids)
            else:
                obs.idle()
            step += 1
            assert step < 100_000, "the engine made no progress"
    with open(os.path.join(args.out, "outputs.json"), "w", encoding="utf-8") as f:
        json.dump({k: tokens[k] for k in sorted(tokens)}, f)
    llm.llm_engine.engine_core.shutdown()


if __name__ == "__main__":
    main()
