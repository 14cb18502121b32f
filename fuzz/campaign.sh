#!/usr/bin/env bash
# A coverage-guided campaign of one fuzz target (docs/RELIABILITY.md, "Fuzzing"),
# never run by CI. `fuzz/campaign.sh build` builds libFuzzer's drivers with cargo
# fuzz on stable Rust (no sanitizer, debug assertions on); `fuzz/campaign.sh run
# TARGET SECONDS [SEEDS...]` runs one at the lowest priority on a working corpus
# in $WORK/TARGET (default /tmp/poolc-fuzz), started from fuzz/corpus/TARGET and
# any SEEDS folders, and keeps only the last 64 KiB of libFuzzer's output in
# $WORK/TARGET.log (the final statistics are at its end); a failing input goes to
# $WORK/TARGET-artifacts/. `fuzz/campaign.sh merge TARGET` minimises the working
# corpus, with what fuzz/corpus/TARGET holds, into fuzz/corpus/TARGET (what the
# repository keeps).
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-/tmp/poolc-fuzz}
BIN=fuzz/libfuzzer/target/x86_64-unknown-linux-gnu/release

max_len() {
  case $1 in
    spec) echo 8192 ;;
    traces) echo 16384 ;;
    *) echo 1024 ;;
  esac
}

# The committed corpus keeps inputs of at most this many bytes (longer ones are
# cut to it), so it stays within the budget of fuzz/tests/corpus.rs.
merge_len() {
  case $1 in
    library) echo 64 ;;
    engine | traces) echo 256 ;;
    *) echo 384 ;;
  esac
}

dict() {
  case $1 in
    spec | traces) echo "-dict=fuzz/dict/$1.dict" ;;
  esac
}

case ${1:-} in
  build)
    # Without a sanitizer cargo fuzz passes no `-Z` flag: stable Rust builds it.
    cargo fuzz build --fuzz-dir fuzz/libfuzzer -s none -a
    ;;
  run)
    target=$2 seconds=$3
    shift 3
    mkdir -p "$WORK/$target" "$WORK/$target-artifacts"
    # shellcheck disable=SC2046 # dict is one word or none
    nice -n 19 "$BIN/$target" "$WORK/$target" "fuzz/corpus/$target" "$@" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
      -max_len="$(max_len "$target")" $(dict "$target") \
      -artifact_prefix="$WORK/$target-artifacts/" -print_final_stats=1 2>&1 |
      tail -c 65536 >"$WORK/$target.log"
    ;;
  merge)
    target=$2
    mkdir -p "$WORK/$target-merged"
    # One input per coverage edge (not per hit count or comparison): the same edges
    # in a third of the bytes.
    "$BIN/$target" -merge=1 -use_counters=0 -use_cmp=0 -max_len="$(merge_len "$target")" \
      "$WORK/$target-merged" \
      "fuzz/corpus/$target" "$WORK/$target" 2>&1 | tail -c 4096 >"$WORK/$target-merge.log"
    rm -rf "fuzz/corpus/$target"
    mv "$WORK/$target-merged" "fuzz/corpus/$target"
    ;;
  *)
    echo "usage: fuzz/campaign.sh build | run TARGET SECONDS [SEEDS...] | merge TARGET" >&2
    exit 2
    ;;
esac
