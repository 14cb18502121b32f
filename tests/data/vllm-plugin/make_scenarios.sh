#!/usr/bin/env bash
# Records vLLM 0.33.0's real v1 Scheduler driven by poolc's plugin
# (--scheduler-cls poolc.vllm.Scheduler, docs/VLLM.md) with non-FCFS specs, through the
# project's recorder, python -m poolc.vllm.record (docs/CONFORMANCE.md, "The scenario
# format"), which builds the plugin class as vLLM's engine core does. $PY needs vLLM
# 0.33.0 and this repository's Python package (pip install ./python into vLLM's
# environment, as .ci/test does). The same arguments give byte-identical files
# (python/tests/test_vllm.py re-records every scenario and compares them). Run from
# anywhere; specs are named relative to the repository root, which is where the
# recorder runs and where `poolc conform tests/data/vllm-plugin/*/` finds them.
#   PY=~/.cache/poolc/vllm-venv/bin/python tests/data/vllm-plugin/make_scenarios.sh OUT_DIR [name ...]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
PY=${PY:-${POOLC_VLLM_VENV:-$HOME/.cache/poolc/vllm-venv}/bin/python}
OUT=$(mkdir -p "${1:?usage: make_scenarios.sh OUT_DIR [name ...]}" && cd "$1" && pwd); shift
# The stand-in model is local: nothing needs the Hugging Face hub.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
ONLY=("$@")
want() { [ ${#ONLY[@]} -eq 0 ] || [[ " ${ONLY[*]} " =~ " $1 " ]]; }
run() {
  local name=$1 conf=$2; shift 2
  want "$name" || return 0
  echo "== $name" >&2
  (cd "$ROOT" && "$PY" -m poolc.vllm.record --out-dir "$OUT/$name" --name "$name" \
    --scheduler-cls poolc.vllm.Scheduler --additional-config "$conf" "$@" \
    2> >(grep -v -e "^W[0-9]" -e "FlashInfer" -e "vllm._C" -e "poolc\.vllm: " >&2))
}
# Tight blocks (699 usable), prefixes, Poisson arrivals: e_fcfs_mixed's workload.
MIXED="--watermark 0 --seed 15 --num-requests 400 --prompt-min 16 --prompt-max 1024 --output-min 1 --output-max 256 --num-prefixes 8 --prefix-min 64 --prefix-max 1024 --prefix-frac 0.6 --children-per-prefix 2 --child-min 16 --child-max 256 --child-frac 0.4 --aligned-frac 0.3 --exact-frac 0.1 --tail-min 1 --tail-max 512 --arrival-rate 0.8 --block-size 16 --num-blocks 700 --max-num-seqs 48 --max-num-batched-tokens 2048 --max-model-len 4096"
# Chunked prefill under tight blocks, bursts (i_bs16_chunked_tight's knobs).
CHUNKED="--watermark 0 --seed 33 --num-requests 300 --prompt-min 64 --prompt-max 1536 --output-min 8 --output-max 200 --num-prefixes 8 --prefix-min 32 --prefix-max 768 --prefix-frac 0.6 --children-per-prefix 3 --child-min 16 --child-max 256 --child-frac 0.5 --aligned-frac 0.5 --exact-frac 0.2 --tail-min 1 --tail-max 256 --initial-burst 100 --burst-size 30 --burst-gap 40 --block-size 16 --num-blocks 401 --max-num-seqs 32 --max-num-batched-tokens 1024 --long-prefill-token-threshold 192 --max-model-len 4096"

# (p1) SJF with aging, `queue by (prompt - 200 * waited, serial)`, clock 0.5 s per step.
run p1_sjf_aging '{"poolc": {"spec": "tests/data/vllm-plugin/specs/sjf_aging.pool", "clock_step": 0.5}}' --policy fcfs $MIXED
# (p2) the seed's Ascend lanes (examples/ascend.pool: waited >= 3 s), clock 0.25 s.
run p2_ascend_lanes '{"poolc": {"spec": "examples/ascend.pool", "clock_step": 0.25}}' --policy fcfs $CHUNKED
# (p3) longest prefix first, largest victim (`preempt by (-units, -admitted)`), requeue keyed.
run p3_largest_victim '{"poolc": {"spec": "tests/data/vllm-plugin/specs/largest_victim.pool", "clock_step": 1}}' --policy fcfs $CHUNKED
# (p4) queries in keys (`free(kv)`), least-computed victim, victims back at the head.
run p4_fits_first '{"poolc": {"spec": "tests/data/vllm-plugin/specs/fits_first.pool"}}' --policy fcfs $MIXED
# (p5) SJF with aging under sparse arrivals: idle steps (no schedule() call, so the
#      plugin's clock stands still) between bursts, clock 0.5 s per call.
run p5_sjf_idle_gaps '{"poolc": {"spec": "tests/data/vllm-plugin/specs/sjf_aging.pool", "clock_step": 0.5}}' --policy fcfs --watermark 0 --seed 71 --num-requests 200 --prompt-min 16 --prompt-max 1024 --output-min 1 --output-max 64 --num-prefixes 4 --prefix-min 64 --prefix-max 512 --prefix-frac 0.5 --tail-min 1 --tail-max 512 --burst-size 20 --burst-gap 120 --block-size 16 --num-blocks 600 --max-num-seqs 16 --max-num-batched-tokens 1024 --max-model-len 4096
# (p6) keyed eviction, `evict by (size, -last)` (the plugin's free-block queue), on the
#      mixed workload; clock 1 s per call (`last` is a release time).
run p6_small_first '{"poolc": {"spec": "tests/data/vllm-plugin/specs/small_first.pool", "clock_step": 1}}' --policy fcfs $MIXED

# (q1–q14) every spec of examples/policies/ the plugin accepts (docs/POLICIES.md;
# waiting_aware_lru and tiered are refused: `waiting` in an evict key, a spill), on
# e_fcfs_mixed's knobs with 200 requests, the clock 0.5 s per call, the KV pool sized
# as vLLM's (699 usable blocks) where the spec has the param. The recorder draws only
# `priority` (--num-priorities), so `tier`, `slo` and `pin` take their defaults here;
# ewsjf's bucket and slo_aware's short/long line are set to 256 so that both sides occur.
POLICIES="--watermark 0 --seed 15 --num-requests 200 --prompt-min 16 --prompt-max 1024 --output-min 1 --output-max 256 --num-prefixes 8 --prefix-min 64 --prefix-max 1024 --prefix-frac 0.6 --children-per-prefix 2 --child-min 16 --child-max 256 --child-frac 0.4 --aligned-frac 0.3 --exact-frac 0.1 --tail-min 1 --tail-max 512 --arrival-rate 0.8 --block-size 16 --num-blocks 700 --max-num-seqs 48 --max-num-batched-tokens 2048 --max-model-len 4096"
policy() { # name spec extra-set-json [recorder args]
  local name=$1 spec=$2 set=$3; shift 3
  run "$name" "{\"poolc\": {\"spec\": \"examples/policies/$spec.pool\", \"clock_step\": 0.5$set}}" --policy fcfs $POLICIES "$@"
}
BLOCKS=', "set": {"num_gpu_blocks": 699}'
policy q1_fifo fifo "$BLOCKS"
policy q2_sjf_aging sjf_aging "$BLOCKS"
policy q3_ewsjf ewsjf ', "set": {"num_gpu_blocks": 699, "bucket": 256}'
policy q4_residual_sjf residual_sjf "$BLOCKS"
policy q5_mlfq_lanes mlfq_lanes "$BLOCKS"
policy q6_slo_aware slo_aware ', "set": {"num_gpu_blocks": 699, "short_prompt": 256}'
policy q7_edf_slo edf_slo "$BLOCKS"
policy q8_sla_tiers sla_tiers "$BLOCKS" --num-priorities 3
policy q9_priority priority "" --num-priorities 3
policy q10_priority_readmit priority_readmit "$BLOCKS" --num-priorities 3
policy q11_lpm lpm "$BLOCKS"
policy q12_least_computed_preempt least_computed_preempt "$BLOCKS"
policy q13_pinned_prefix pinned_prefix "$BLOCKS"
policy q14_ascend_lanes ascend_lanes "$BLOCKS"
# (q15) VTC (R30): `service` counters per `tenant`, the recorder drawing 3 tenants that
#       the plugin reads from extra_args (poolc.tenant) and the replay from workload.jsonl.
policy q15_vtc vtc "$BLOCKS" --num-tenants 3
# (q16, q17) R31: `hits` in evict keys, the plugin counting the blocks BlockPool.touch
#       takes; LFU and the frequency-and-cost order.
policy q16_lfu lfu "$BLOCKS"
policy q17_freq_cost freq_cost "$BLOCKS"
# (q18) WFQ (R30 with `weight share`): 3 tenants with shares 4, 2, 1 (--tenant-shares),
#       each request given its tenant's share as extra_args poolc.share.
policy q18_wfq wfq "$BLOCKS" --num-tenants 3 --tenant-shares 4,2,1
