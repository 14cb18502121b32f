"""poolc.vllm in vLLM 0.33.0's real v1 scheduler, through the project's recorder
(``poolc.vllm.record``, which builds a ``--scheduler-cls`` class exactly as vLLM's engine
core does): every committed recording (tests/data/vllm-oracle, tests/data/vllm-plugin)
is re-recorded from the arguments in its config.json, the Mooncake slices converted
again from examples/traces by ``poolc.vllm.mooncake``, and all three files come out
byte for byte; with examples/vllm.pool the plugin-driven scheduler records exactly what
stock vLLM recorded on a–f, and with examples/vllm_priority.pool exactly what stock
vLLM's priority policy recorded on n–s; specs the plugin cannot honour are refused at
start-up. (cli/tests/conform.rs checks that ``poolc conform`` predicts every step of the
plugin recordings.)

Needs vLLM 0.33.0 in this interpreter; .ci/test runs this file with the vLLM
environment's Python and ``POOLC_REQUIRE_VLLM=1``, which turns a missing vLLM into a
failure instead of a skip. Importing vLLM takes most of a recording's time, so the
recordings run in two spawned worker processes that import it once each and take the
recordings from one queue (longest first), all submitted when the first test needs
one."""

import json
import multiprocessing
import os
import pathlib
from concurrent.futures import ProcessPoolExecutor

import pytest

if os.environ.get("POOLC_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM 0.33.0 is not installed in this interpreter")

import poolc  # noqa: E402
import poolc.vllm  # noqa: E402
from poolc.vllm import mooncake, record  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
ORACLE = ROOT / "tests" / "data" / "vllm-oracle"
PLUGIN = ROOT / "tests" / "data" / "vllm-plugin"
TRACE = ROOT / "examples" / "traces" / "mooncake_conversation_trace.jsonl"
COMMITTED = sorted(
    (p for base in (ORACLE, PLUGIN) for p in base.iterdir() if (p / "config.json").is_file()),
    key=lambda p: p.name,
)
FILES = ("config.json", "workload.jsonl", "steps.jsonl")
FIRST = [p.name for p in COMMITTED if p.name[0] in "abcdef" and p.parent == ORACLE]
PRIORITY = [p.name for p in COMMITTED if "_prio_" in p.name]
# The workload files the recordings name, as tests/data/vllm-oracle/make_scenarios.sh
# converts them from the Mooncake trace.
MOONCAKE_SLICES = {
    "mooncake_conversation_first250.jsonl": dict(first=250, step_ms="50", max_model_len=131072),
    "mooncake_conversation_first80.jsonl": dict(first=80, step_ms="50", max_output=256, max_model_len=65536),
}


def argv_of(scenario, workloads):
    """A recording's arguments, as its config.json records them; a workload file it
    names is converted again into ``workloads``."""
    argv = list(json.loads((scenario / "config.json").read_text())["argv"])
    if "--workload" in argv:
        i = argv.index("--workload") + 1
        name = argv[i]
        assert name in MOONCAKE_SLICES, f"{scenario.name}: add how {name} is made to MOONCAKE_SLICES"
        path = workloads / name
        if not path.exists():
            text, _ = mooncake.convert(str(TRACE), **MOONCAKE_SLICES[name])
            path.write_text(text)
        argv[i] = str(path)
    return argv


def plugin_argv(argv, spec, cls="poolc.vllm.Scheduler"):
    return [*argv, "--scheduler-cls", cls, "--additional-config", json.dumps({"poolc": {"spec": spec}})]


class Recordings:
    """The recordings of this module, by key, each in ``out/<key>``."""

    def __init__(self, out, pool):
        self.out = out
        self._pool = pool
        self._futures = {}

    def submit(self, key, argv, cost):
        self._futures[key] = (cost, [*argv, "--out-dir", str(self.out / key)])

    def start(self):
        # Longest first, so that neither worker is left with a long one at the end.
        jobs = sorted(self._futures.items(), key=lambda kv: -kv[1][0])
        self._futures = {key: self._pool.submit(record.record, argv) for key, (_, argv) in jobs}

    def files(self, key):
        """The recording's files (waiting for it), by name."""
        self._futures[key].result()
        return {name: (self.out / key / name).read_bytes() for name in FILES}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    out = tmp_path_factory.mktemp("recordings")
    workloads = out / "workloads"
    workloads.mkdir()

    def cost(name):  # a recording's time is about proportional to its steps
        return next(p for p in COMMITTED if p.name == name).joinpath("steps.jsonl").stat().st_size

    # Spawned, not forked: vLLM and torch are imported here already. Specs are named
    # relative to the repository, where the workers run.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context, initializer=os.chdir, initargs=(str(ROOT),)) as pool:
        runs = Recordings(out, pool)
        for scenario in COMMITTED:
            runs.submit(f"again-{scenario.name}", argv_of(scenario, workloads), cost(scenario.name))
        for name in FIRST:
            argv = plugin_argv(argv_of(ORACLE / name, workloads), "examples/vllm.pool")
            runs.submit(f"fcfs-{name}", argv, cost(name))
        for name in PRIORITY:
            argv = plugin_argv(argv_of(ORACLE / name, workloads), "examples/vllm_priority.pool")
            runs.submit(f"priority-{name}", argv, cost(name))
        # poolc.vllm.AsyncScheduler on vLLM's AsyncScheduler (--async-sched: finishes lag
        # a step), with vLLM's own FCFS policy as the spec.
        argv = [*argv_of(ORACLE / "e_fcfs_mixed", workloads), "--async-sched"]
        runs.submit("async-stock", argv, cost("e_fcfs_mixed"))
        plugin = plugin_argv(argv, "examples/vllm.pool", "poolc.vllm.AsyncScheduler")
        runs.submit("async-plugin", plugin, cost("e_fcfs_mixed"))
        runs.start()
        try:
            yield runs
        finally:
            pool.shutdown(cancel_futures=True)


@pytest.mark.parametrize("scenario", COMMITTED, ids=lambda p: p.name)
def test_every_committed_recording_is_re_recorded_byte_for_byte(recordings, scenario):
    got = recordings.files(f"again-{scenario.name}")
    for name in FILES:
        assert got[name] == (scenario / name).read_bytes(), f"{scenario.name}/{name} differs"


@pytest.mark.parametrize("name", FIRST)
def test_with_the_fcfs_spec_the_plugin_records_what_stock_vllm_recorded(recordings, name):
    got = recordings.files(f"fcfs-{name}")
    assert got["steps.jsonl"] == (ORACLE / name / "steps.jsonl").read_bytes()


@pytest.mark.parametrize("name", PRIORITY)
def test_with_the_priority_spec_the_plugin_records_what_stock_priority_recorded(recordings, name):
    got = recordings.files(f"priority-{name}")
    assert got["steps.jsonl"] == (ORACLE / name / "steps.jsonl").read_bytes()


def test_the_async_plugin_records_what_stock_async_scheduling_recorded(recordings):
    stock = recordings.files("async-stock")["steps.jsonl"]
    got = recordings.files("async-plugin")["steps.jsonl"]
    assert got == stock
    assert b'"preempted":["' in got, "the scenario preempts"


def test_the_recorder_names_a_bad_workload_line_before_building_a_scheduler(tmp_path):
    workload = tmp_path / "w.jsonl"
    good = '{"id":"r0","arrival_step":0,"prompt":4,"output":1,"runs":[[1,4]]}'
    workload.write_text(good + "\n" + good.replace("r0", "r1").replace("[1,4]", "[2,3]") + "\n")
    with pytest.raises(record.RecordError, match=r"w\.jsonl:2: prompt 4 != sum of run lengths 3"):
        record.record(["--workload", str(workload)])
    workload.write_text(good + "\n")
    with pytest.raises(record.RecordError, match="Pass --max-model-len 5"):
        record.record(["--workload", str(workload), "--max-model-len", "4"])
    workload.write_text(good.replace("}", ',"share":0}') + "\n")
    with pytest.raises(record.RecordError, match=r"w\.jsonl:1: share must be an integer >= 1"):
        record.record(["--workload", str(workload)])


def test_the_recorder_refuses_what_it_cannot_record(tmp_path):
    with pytest.raises(record.RecordError, match="--scheduler-cls wants MODULE.CLASS"):
        record.record(["--scheduler-cls", "Scheduler", "--num-requests", "1"])
    with pytest.raises(record.RecordError, match="--additional-config is not JSON"):
        record.record(["--additional-config", "{poolc"])
    with pytest.raises(record.RecordError, match="exclusive"):
        record.record(["--burst-size", "2", "--arrival-rate", "1"])
    with pytest.raises(record.RecordError, match="gives 2 shares for 3 tenant"):
        record.record(["--num-tenants", "3", "--tenant-shares", "4,2"])
    with pytest.raises(SystemExit):  # a share of 0 is no share
        record.record(["--num-tenants", "2", "--tenant-shares", "1,0"])
    with pytest.raises(SystemExit):  # config.json records arguments as spelled: no abbreviations
        record.record(["--num-req", "1"])


def test_the_converter_names_a_bad_trace_line(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1]}\n')
    with pytest.raises(mooncake.ConvertError, match=r"t\.jsonl:1: 1 hash_ids for input_length 600"):
        mooncake.convert(str(trace))


class _Config:
    def __init__(self, conf):
        self.additional_config = {"poolc": conf} if conf is not None else {}


def test_settings_come_from_additional_config_or_the_environment(monkeypatch):
    assert poolc.vllm.settings(_Config({"spec": "a.pool"})) == {"spec": "a.pool"}
    monkeypatch.setenv("POOLC_VLLM", '{"spec": "b.pool", "clock_step": 0.5}')
    assert poolc.vllm.settings(_Config(None))["spec"] == "b.pool"
    monkeypatch.delenv("POOLC_VLLM")
    with pytest.raises(poolc.vllm.ConfigError, match="needs its settings"):
        poolc.vllm.settings(_Config(None))
    with pytest.raises(poolc.vllm.ConfigError, match="unknown poolc setting"):
        poolc.vllm.settings(_Config({"spec": "a.pool", "speed": 2}))
    with pytest.raises(poolc.vllm.ConfigError, match="clock_step"):
        poolc.vllm.settings(_Config({"spec": "a.pool", "clock_step": 0}))


@pytest.mark.parametrize(
    "pool,why",
    [
        ("pool kv { preempt none; admit via e; }", "preempt none"),
        ("pool kv { preempt lifo; evict by (waiting); admit via e; }", "waiting"),
        ("pool kv[2] { preempt lifo; admit via e; }", "family"),
        ("pool kv[2] { preempt lifo; admit via e; route by (queued(kv)); }", "has no router"),
        (
            "stage d { step; } stage l { link; } pool kv { preempt lifo; admit via e; handoff dk via l (units); } "
            "pool dk { admit via d; }",
            "one vLLM engine cannot run both sides",
        ),
        ("pool t { } stage l { link; } pool kv { preempt lifo; spill t via l (1) when (1); admit via e; }", "spills"),
        ("pool kv { preempt lifo; queue by (budget_left(e)); admit via e; }", "budget_left"),
    ],
)
def test_specs_the_plugin_cannot_honour_are_refused_at_start_up(tmp_path, pool, why):
    spec = tmp_path / "s.pool"
    spec.write_text("stage e { step; } " + pool)
    with pytest.raises(poolc.vllm.ConfigError, match=why):
        poolc.vllm._Policy({"spec": str(spec)})


def test_a_spec_that_does_not_compile_is_refused(tmp_path):
    spec = tmp_path / "s.pool"
    spec.write_text("pool kv { cap nope; }")
    with pytest.raises(poolc.vllm.ConfigError, match="does not compile"):
        poolc.vllm._Policy({"spec": str(spec)})


def test_the_service_counters_of_fair_on_a_hand_worked_case():
    # R30's bookkeeping (poolc.vllm._Service) as the scheduler drives it, for
    # `fair tenant (1, 2) weight share`, without an engine: the hooks call charge (a
    # successful allocation, told whether the request decodes), give_back (a victim)
    # and arrive/entered/left (the waiting queues).
    fair = poolc.vllm._Service({"by": "tenant", "prefill": 1.0, "decode": 2.0, "weight": "share"})
    a1 = {"tenant": 1.0, "share": 1.0}
    b1 = {"tenant": 2.0, "share": 2.0}
    fair.arrive(a1)
    fair.arrive(b1)  # group 2 has nothing waiting; L = c[1] = 0 is not above c[2] = 0
    assert fair.counter == {} and fair.waiting == {1.0: 1, 2.0: 1}
    # Step 1: both admitted with their prompts (prefill: not caught up).
    fair.charged = {}
    fair.charge("a1", a1, 100, False)  # (1 * 100 + 2 * 0) / 1
    fair.left(a1)
    fair.charge("b1", b1, 50, False)  # (1 * 50 + 2 * 0) / 2
    fair.left(b1)
    assert (fair.service(1.0), fair.service(2.0), fair.waiting) == (100.0, 25.0, {})
    # Step 2: both decode one token; b1 is then the victim and gives its amount back.
    fair.charged = {}
    fair.charge("a1", a1, 1, True)  # + 2 / 1
    fair.charge("b1", b1, 1, True)  # + 2 / 2
    assert (fair.service(1.0), fair.service(2.0)) == (102.0, 26.0)
    fair.give_back("b1")
    fair.entered(b1)  # back in the queue: counted, never lifted
    assert (fair.service(2.0), fair.waiting) == (25.0, {2.0: 1})
    fair.give_back("b1")  # given back once only
    assert fair.service(2.0) == 25.0
    # Arrivals: group 1 has nothing waiting, but L = 25 < 102: no lift. A new group 3
    # is lifted to the least counter among the groups waiting (groups 1 and 2): 25.
    fair.arrive({"tenant": 1.0, "share": 1.0})
    assert fair.service(1.0) == 102.0
    fair.arrive({"tenant": 3.0, "share": 1.0})
    assert fair.service(3.0) == 25.0 and fair.waiting == {1.0: 1, 2.0: 1, 3.0: 1}
    # A group with a request waiting is not lifted; a recompute after the preemption
    # is charged as prefill again.
    fair.charged = {}
    fair.charge("b1", b1, 4, False)  # (1 * 4) / 2
    assert fair.service(2.0) == 27.0
    fair.arrive({"tenant": 3.0, "share": 1.0})
    assert fair.service(3.0) == 25.0 and fair.waiting[3.0] == 2
    # Groups: -0 is +0, every NaN is one group; a zero weight divides as IEEE does.
    assert fair.group(-0.0) == 0.0 and str(fair.group(-0.0)) == "0.0"
    assert fair.group(float("nan")) == fair.group(-float("nan"))
    fair.charge("z", {"tenant": float("nan"), "share": 0.0}, 3, False)
    assert fair.service(fair.group(float("nan"))) == float("inf")


def test_the_hit_counts_of_lfu_on_a_hand_worked_case():
    # R31 in the plugin's free-block queue (poolc.vllm._KeyedFreeQueue) with
    # examples/policies/lfu.pool's compiled `evict by (hits, last)`, without an engine:
    # the scheduler's frees (append_n, tail first) make entries, BlockPool.touch
    # (wrapped by _count_touches) counts hits, popleft evicts.
    class Block:
        def __init__(self, i):
            self.block_id, self.block_hash, self.is_null, self.ref_cnt = i, None, False, 0

    class Sched:
        _poolc = poolc.vllm._Policy({"spec": str(ROOT / "examples" / "policies" / "lfu.pool")})
        block_size = 16
        _poolc_releasing = ({}, None)
        _poolc_now = 0.0

        def _poolc_ctx(self, keys):
            return []

    class Old:
        def get_all_free_blocks(self):
            return []

    class BlockPool:
        def touch(self, blocks):  # vLLM's: a free block leaves the queue, ref_cnt + 1
            for b in blocks:
                if b.ref_cnt == 0:
                    self.free_block_queue.remove(b)
                b.ref_cnt += 1

    sched, pool = Sched(), BlockPool()
    free = pool.free_block_queue = poolc.vllm._KeyedFreeQueue(sched, Old())
    poolc.vllm._count_touches(pool, free)
    b = [Block(i) for i in range(5)]
    for x in b[1:]:
        x.block_hash = x.block_id

    def release(now, blocks):  # a request frees its blocks, tail first
        sched._poolc_now = now
        for x in blocks:
            x.ref_cnt = 0
        free.append_n(list(reversed(blocks)))

    release(1.0, [b[1], b[2]])  # entry E1 = [b1 b2], counts 0
    pool.touch([b[1], b[2]])  # a request's computed prefix: b1, b2 count 1 (E1 gone)
    release(1.5, [b[1]])  # E3 = [b1], count 1; b2 stays held (count 1)
    release(2.0, [b[3], b[4]])  # E2 = [b3 b4], counts 0
    pool.touch([b[2]])  # held: shared, count 2, still not in the queue
    assert free._hits == {1: 1, 2: 2}
    # Keys (hits, last) of the tails: E3 (1, 1.5), E2 (0, 2.0): E2 goes first, tail
    # first, although E3 is older (LRU would pop b1 first).
    assert [free.popleft().block_id for _ in range(3)] == [4, 3, 1]
    # Popped for new content: the count ends with it.
    assert free._hits == {2: 2} and free.num_free_blocks == 0


def test_a_spec_without_fair_keeps_no_service_counters(tmp_path):
    spec = tmp_path / "s.pool"
    spec.write_text("session { prompt; output; } stage e { step; } pool kv { preempt lifo; admit via e; }")
    policy = poolc.vllm._Policy({"spec": str(spec)})
    assert policy.fair is None and "fair" not in policy.describe()
