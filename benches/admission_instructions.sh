#!/usr/bin/env bash
# The 1-block admission path counted, not timed (issue #35 item 3): for OLD and NEW,
# callgrind runs `poolc bench examples/vllm_blackbox.pool --blocks 1 --phase
# admission` collecting only inside the timed calls (`Pool::enqueue` and
# `Pool::admit_next`, the same names in every commit since 2b9c683) and prints, per
# admission, the instructions, the simulated misses of a 2 MiB last-level cache and
# the simulated mispredicted branches, then NEW over OLD. The counts are the same on
# every run and every machine of one architecture, so a regression of a few percent
# shows up where wall-time ratios on a shared machine move by more than that
# (docs/PERFORMANCE.md, "The 1-block admission path, counted"). What they do not
# see, the TLB and the prefetchers among them, only `benches/primitives.sh` can.
# The mispredictions row is callgrind's predictor (no history, indexed by address):
# code that moves can turn branches that always go one way into "mispredicted" ones,
# so read it as a sign to look, not as a cost (docs/PERFORMANCE.md).
# Usage: benches/admission_instructions.sh OLD NEW [OPS]   (from the repository root;
# OLD and NEW as for benches/primitives.sh; needs valgrind; OPS default 100000)
set -euo pipefail
ops="${3:-100000}"
root=$(git rev-parse --show-toplevel)
# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
old=$(binary "$1") || exit 1
new=$(binary "$2") || exit 1
command -v valgrind > /dev/null || { echo "valgrind is not installed" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Per admission: instructions, last-level misses (reads and writes), mispredicted
# conditional and indirect branches, in the timed calls of one process.
counts() {
  valgrind --tool=callgrind --cache-sim=yes --LL=2097152,16,64 --branch-sim=yes \
    --toggle-collect='*admit_next*' --toggle-collect='*Pool*enqueue*' \
    --callgrind-out-file="$out/cg.out" "$1" bench examples/vllm_blackbox.pool \
    --blocks 1 --ops "$ops" --phase admission --repeats 1 > /dev/null 2>&1
  callgrind_annotate --tree=caller "$out/cg.out" 2> /dev/null | python3 -c '
import re, sys
text = sys.stdin.read()
head = re.search(r"^Ir .*$", text, re.M).group(0).split()
totals = re.search(r"^(.*)PROGRAM TOTALS", text, re.M).group(1)
values = [int(v.replace(",", "")) for v in re.findall(r"([\d,]+) \(", totals)]
got = dict(zip(head, values))
# Admissions: the calls of admit_next from the bench driver.
calls = sum(int(n.replace(",", "")) for n in re.findall(
    r"< .*Driver.*round \(([\d,]+)x\).*\n.*\*\s+.*admit_next \[", text))
print(got["Ir"] / calls, (got["DLmr"] + got["DLmw"]) / calls,
      (got["Bcm"] + got["Bim"]) / calls, calls)
'
}
read -r oi om ob oc <<< "$(counts "$old")"
read -r ni nm nb nc <<< "$(counts "$new")"
echo "old: $1 ($old), $oc admissions   new: $2 ($new), $nc admissions"
printf '%-34s old %8.1f  new %8.1f  new/old %.3f\n' \
  "instructions per admission" "$oi" "$ni" "$(echo "$ni / $oi" | bc -l)" \
  "2 MiB LL misses per admission" "$om" "$nm" "$(echo "$nm / $om" | bc -l)" \
  "mispredicted branches per adm." "$ob" "$nb" "$(echo "$nb / $ob" | bc -l)"
