#!/usr/bin/env bash
# Records the vLLM-oracle scenarios beside this file (a-r) with vLLM 0.33.0's real v1
# Scheduler, CPU only, through the project's recorder, python -m poolc.vllm.record
# (docs/CONFORMANCE.md, "The scenario format"). $PY needs vLLM 0.33.0 and this
# repository's Python package (pip install ./python into vLLM's environment, as
# .ci/test does). The same arguments give byte-identical files
# (python/tests/test_vllm.py re-records every scenario and compares them).
#   PY=~/.cache/poolc/vllm-venv/bin/python tests/data/vllm-oracle/make_scenarios.sh OUT_DIR [name ...]
# OUT_DIR/<name>/{config.json,workload.jsonl,steps.jsonl}; with names, only those.
# Check them with: cargo run --release -- conform OUT_DIR/*/
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
PY=${PY:-${POOLC_VLLM_VENV:-$HOME/.cache/poolc/vllm-venv}/bin/python}
TRACE=$ROOT/examples/traces/mooncake_conversation_trace.jsonl
OUT=$(mkdir -p "${1:?usage: make_scenarios.sh OUT_DIR [name ...]}" && cd "$1" && pwd); shift
# The stand-in model is local: nothing needs the Hugging Face hub.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
ONLY=("$@")
want() { [ ${#ONLY[@]} -eq 0 ] || [[ " ${ONLY[*]} " =~ " $1 " ]]; }
run() {
  local name=$1; shift
  want "$name" || return 0
  echo "== $name" >&2
  "$PY" -m poolc.vllm.record --out-dir "$OUT/$name" --name "$name" "$@" \
    2> >(grep -v -e "^W[0-9]" -e "FlashInfer" -e "vllm._C" >&2)
}
# A Mooncake trace slice as a workload file: mooncake FILE [converter options].
mooncake() {
  local file=$1; shift
  "$PY" -m poolc.vllm.mooncake "$TRACE" "$@" -o "$file" \
    2> >(grep -v -e "^W[0-9]" -e "FlashInfer" -e "vllm._C" >&2)
}
# The replay supports watermark 0 only: vLLM 0.33.0's default, passed all the same so
# that no recording depends on a default.
COMMON="--policy fcfs --watermark 0"

# (a) no prefixes, ample blocks: token budget + seats only
run a_fcfs_budget_seats $COMMON --seed 11 --num-requests 400 --prompt-min 16 --prompt-max 1536 --output-min 1 --output-max 200 --initial-burst 100 --arrival-rate 2.0 --block-size 16 --num-blocks 8192 --max-num-seqs 32 --max-num-batched-tokens 1024 --max-model-len 4096
# (b) shared prefixes (2-level), ample blocks: hits, last-token rule, same-step sharing
run b_fcfs_prefix $COMMON --seed 12 --num-requests 500 --prompt-min 16 --prompt-max 768 --output-min 1 --output-max 128 --num-prefixes 40 --prefix-min 16 --prefix-max 600 --prefix-frac 0.8 --children-per-prefix 2 --child-min 1 --child-max 200 --child-frac 0.5 --sticky-frac 0.6 --aligned-frac 0.4 --exact-frac 0.15 --tail-min 1 --tail-max 400 --initial-burst 200 --burst-size 25 --burst-gap 20 --block-size 16 --num-blocks 16384 --max-num-seqs 64 --max-num-batched-tokens 4096 --max-model-len 4096
# (c) tight blocks: preemption, re-admission with hits on own blocks
run c_fcfs_preempt $COMMON --seed 13 --num-requests 300 --prompt-min 32 --prompt-max 768 --output-min 32 --output-max 384 --initial-burst 150 --arrival-rate 0.5 --block-size 16 --num-blocks 513 --max-num-seqs 64 --max-num-batched-tokens 2048 --max-model-len 4096
# (d) chunked prefill: long_prefill_token_threshold 256, budget 512
run d_fcfs_chunked $COMMON --seed 14 --num-requests 300 --prompt-min 16 --prompt-max 2048 --output-min 1 --output-max 48 --num-prefixes 6 --prefix-min 64 --prefix-max 1024 --prefix-frac 0.3 --aligned-frac 0.3 --tail-min 1 --tail-max 1024 --initial-burst 60 --arrival-rate 0.07 --block-size 16 --num-blocks 8192 --max-num-seqs 32 --max-num-batched-tokens 512 --long-prefill-token-threshold 256 --max-model-len 4096
# (e) everything: tight blocks + prefixes + Poisson arrivals
run e_fcfs_mixed $COMMON --seed 15 --num-requests 500 --prompt-min 16 --prompt-max 1024 --output-min 1 --output-max 256 --num-prefixes 8 --prefix-min 64 --prefix-max 1024 --prefix-frac 0.6 --children-per-prefix 2 --child-min 16 --child-max 256 --child-frac 0.4 --aligned-frac 0.3 --exact-frac 0.1 --tail-min 1 --tail-max 512 --arrival-rate 0.8 --block-size 16 --num-blocks 700 --max-num-seqs 48 --max-num-batched-tokens 2048 --max-model-len 4096
# (f) real trace: the first 250 rows of the Mooncake conversation trace, 50 ms per step,
#     512-token hash blocks as runs; none dropped at max_model_len 131072
if want f_mooncake_conversation; then
  TMPW=$(mktemp -d)
  mooncake "$TMPW/mooncake_conversation_first250.jsonl" --first 250 --step-ms 50 --max-model-len 131072
  run f_mooncake_conversation $COMMON --workload "$TMPW/mooncake_conversation_first250.jsonl" --block-size 16 --num-blocks 16000 --max-num-seqs 64 --max-num-batched-tokens 8192 --max-model-len 131072
  rm -r "$TMPW"
fi

# (g) block 32, tight blocks (256 usable = 8192 tokens): preemption with resumed hits,
#     two-level prefixes, Poisson arrivals after a burst
run g_bs32_tight_preempt $COMMON --seed 31 --num-requests 250 --prompt-min 32 --prompt-max 1024 --output-min 16 --output-max 256 --num-prefixes 6 --prefix-min 64 --prefix-max 512 --prefix-frac 0.5 --children-per-prefix 2 --child-min 16 --child-max 128 --child-frac 0.4 --aligned-frac 0.3 --exact-frac 0.1 --tail-min 1 --tail-max 384 --initial-burst 80 --arrival-rate 0.6 --block-size 32 --num-blocks 257 --max-num-seqs 48 --max-num-batched-tokens 2048 --max-model-len 4096
# (h) block 32, ample blocks, chunking on (threshold 128, budget 768): long prompts in
#     chunks, the lone-request exemption, idle gaps between sparse arrivals
run h_bs32_chunked_ample $COMMON --seed 32 --num-requests 250 --prompt-min 16 --prompt-max 2048 --output-min 1 --output-max 64 --num-prefixes 5 --prefix-min 128 --prefix-max 1536 --prefix-frac 0.5 --sticky-frac 0.5 --aligned-frac 0.5 --tail-min 1 --tail-max 768 --initial-burst 40 --arrival-rate 0.1 --block-size 32 --num-blocks 4096 --max-num-seqs 24 --max-num-batched-tokens 768 --long-prefill-token-threshold 128 --max-model-len 4096
# (i) block 16, tight blocks (400 usable) and chunking on (threshold 192): chunked
#     prefills and recomputes under preemption, bursts, three children per root
run i_bs16_chunked_tight $COMMON --seed 33 --num-requests 300 --prompt-min 64 --prompt-max 1536 --output-min 8 --output-max 200 --num-prefixes 8 --prefix-min 32 --prefix-max 768 --prefix-frac 0.6 --children-per-prefix 3 --child-min 16 --child-max 256 --child-frac 0.5 --aligned-frac 0.5 --exact-frac 0.2 --tail-min 1 --tail-max 256 --initial-burst 100 --burst-size 30 --burst-gap 40 --block-size 16 --num-blocks 401 --max-num-seqs 32 --max-num-batched-tokens 1024 --long-prefill-token-threshold 192 --max-model-len 4096
# (j) block 32, ample blocks, heavy exact sharing: block-aligned prompts made only of
#     shared runs (the last-token rule at 32), same-step hits, sticky roots, bursts
run j_bs32_exact_sharing $COMMON --seed 34 --num-requests 300 --prompt-min 32 --prompt-max 512 --output-min 1 --output-max 96 --num-prefixes 12 --prefix-min 32 --prefix-max 640 --prefix-frac 0.9 --children-per-prefix 2 --child-min 32 --child-max 256 --child-frac 0.6 --sticky-frac 0.7 --aligned-frac 0.6 --exact-frac 0.4 --tail-min 1 --tail-max 128 --initial-burst 120 --burst-size 20 --burst-gap 10 --block-size 32 --num-blocks 2048 --max-num-seqs 64 --max-num-batched-tokens 4096 --max-model-len 4096
# (k) real trace, block 32, tight: the Mooncake conversation trace's first 80 rows
#     (rows with prompt + output above 65536 dropped, outputs capped at 256), 2048
#     usable blocks (65536 tokens), so long conversations preempt each other
if want k_mooncake_bs32_tight; then
  TMPW=$(mktemp -d)
  mooncake "$TMPW/mooncake_conversation_first80.jsonl" --first 80 --step-ms 50 --max-output 256 --max-model-len 65536
  run k_mooncake_bs32_tight $COMMON --workload "$TMPW/mooncake_conversation_first80.jsonl" --block-size 32 --num-blocks 2049 --max-num-seqs 64 --max-num-batched-tokens 8192 --max-model-len 65536
  rm -r "$TMPW"
fi
# (l) block 16, a token budget (20) and threshold (5) below the block size, 59 usable
#     blocks, sparse arrivals (the first after idle steps), exact and aligned prompts
run l_bs16_tiny_budget $COMMON --seed 45 --num-requests 120 --prompt-min 1 --prompt-max 300 --output-min 1 --output-max 40 --num-prefixes 4 --prefix-min 16 --prefix-max 200 --prefix-frac 0.5 --exact-frac 0.5 --aligned-frac 0.5 --arrival-rate 0.05 --block-size 16 --num-blocks 60 --max-num-seqs 16 --max-num-batched-tokens 20 --long-prefill-token-threshold 5 --max-model-len 4096
# (m) block 8, tight (300 usable), a budget (333) and threshold (50) that are not
#     multiples of the block, two-level prefixes, Poisson 1.5/step: heavy preemption
run m_bs8_odd_budget $COMMON --seed 43 --num-requests 200 --prompt-min 8 --prompt-max 700 --output-min 1 --output-max 150 --num-prefixes 6 --prefix-min 8 --prefix-max 400 --prefix-frac 0.7 --children-per-prefix 2 --child-min 8 --child-max 100 --child-frac 0.5 --exact-frac 0.3 --aligned-frac 0.5 --arrival-rate 1.5 --block-size 8 --num-blocks 301 --max-num-seqs 24 --max-num-batched-tokens 333 --long-prefill-token-threshold 50 --max-model-len 4096

# Priority policy (vLLM's --policy priority): request priorities 0..K-1 drawn per request
# (--num-priorities K; smaller = more urgent; ties by arrival = feed order). The victim of
# a failed growth is max(running, key=(priority, arrival)), wherever it sits in the
# running list: an earlier victim that was already scheduled this step gives its tokens
# back; a grower that is itself the victim preempts itself and the loop continues.
PRIO="--policy priority --watermark 0"
# (n) block 16, 4 levels, long prompts (256-2048) in chunks of 128 (budget 1024), 400
#     usable blocks: chunk growth preempts lower-priority requests scheduled earlier in
#     the step (prefill chunks given back), self-preemption, Poisson 0.06/step
run n_prio_bs16_long_chunks $PRIO --num-priorities 4 --seed 101 --num-requests 250 --prompt-min 256 --prompt-max 2048 --output-min 16 --output-max 160 --num-prefixes 4 --prefix-min 128 --prefix-max 1024 --prefix-frac 0.3 --arrival-rate 0.06 --block-size 16 --num-blocks 401 --max-num-seqs 32 --max-num-batched-tokens 1024 --long-prefill-token-threshold 128 --max-model-len 4096
# (o) block 32, 5 levels, 256 usable blocks, chunks of 128: already-scheduled victims
#     (decodes and prefill chunks), up to 4 preemptions in a step, aligned shared roots
run o_prio_bs32_chunk_preempt $PRIO --num-priorities 5 --seed 52 --num-requests 250 --prompt-min 64 --prompt-max 1536 --output-min 16 --output-max 256 --num-prefixes 5 --prefix-min 128 --prefix-max 768 --prefix-frac 0.5 --aligned-frac 0.5 --arrival-rate 0.1 --block-size 32 --num-blocks 257 --max-num-seqs 32 --max-num-batched-tokens 1024 --long-prefill-token-threshold 128 --max-model-len 4096
# (p) block 16, 3 levels, prefix trees (8 roots, 3 children each, sticky, exact and
#     aligned runs) under preemption and chunking (threshold 128): hits on shared and own
#     blocks for resumed requests, already-scheduled victims
run p_prio_bs16_prefix_tree $PRIO --num-priorities 3 --seed 111 --num-requests 300 --prompt-min 32 --prompt-max 1024 --output-min 16 --output-max 256 --num-prefixes 8 --prefix-min 32 --prefix-max 512 --prefix-frac 0.7 --children-per-prefix 3 --child-min 16 --child-max 256 --child-frac 0.5 --sticky-frac 0.5 --aligned-frac 0.5 --exact-frac 0.2 --tail-min 1 --tail-max 256 --arrival-rate 0.1 --block-size 16 --num-blocks 401 --max-num-seqs 32 --max-num-batched-tokens 1024 --long-prefill-token-threshold 128 --max-model-len 4096
# (q) block 32, 8 levels, 160 usable blocks (5120 tokens), two-level prefixes, chunks of
#     128, Poisson 0.08/step with idle gaps: many levels, multi-victim steps
run q_prio_bs32_eight_levels $PRIO --num-priorities 8 --seed 64 --num-requests 250 --prompt-min 32 --prompt-max 1024 --output-min 32 --output-max 320 --num-prefixes 6 --prefix-min 64 --prefix-max 512 --prefix-frac 0.5 --children-per-prefix 2 --child-min 32 --child-max 128 --child-frac 0.4 --arrival-rate 0.08 --block-size 32 --num-blocks 161 --max-num-seqs 48 --max-num-batched-tokens 2048 --long-prefill-token-threshold 128 --max-model-len 4096
# (r) block 16, 6 levels, short prompts and long outputs (64-512) in 200 usable blocks,
#     threshold 64, budget 512: decode-growth thrash (~850 preemptions), self-preemptions
#     after which the running loop goes on scheduling higher-priority requests
run r_prio_bs16_decode_thrash $PRIO --num-priorities 6 --seed 65 --num-requests 250 --prompt-min 16 --prompt-max 256 --output-min 64 --output-max 512 --arrival-rate 0.05 --block-size 16 --num-blocks 201 --max-num-seqs 40 --max-num-batched-tokens 512 --long-prefill-token-threshold 64 --max-model-len 4096
# (s) block 16, 2 levels, bursts of 20-40 requests fed in one step (equal arrival_time)
#     and 8 seats: the waiting heap's last tie, request_id as text ("r10" before "r9"),
#     orders who is admitted from step 0 on (R21's `id`)
run s_prio_bs16_burst_ids $PRIO --num-priorities 2 --seed 71 --num-requests 120 --prompt-min 16 --prompt-max 512 --output-min 8 --output-max 96 --initial-burst 40 --burst-size 20 --burst-gap 30 --block-size 16 --num-blocks 201 --max-num-seqs 8 --max-num-batched-tokens 512 --long-prefill-token-threshold 128 --max-model-len 4096
