#!/usr/bin/env python3
"""CPU time of two commands, alternated N times in one run: each process's user +
system time from wait4 (steadier on a shared machine than wall time for runs of a
few milliseconds). Prints each command's median and minimum and the ratio of the
medians, A/B (docs/PERFORMANCE.md, issue #16 item 3).

    python3 benches/cpu_ab.py N "OLD_POOLC conform DIR" "NEW_POOLC conform DIR"
"""
import os
import shlex
import statistics
import subprocess
import sys


def cpu_seconds(argv):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{shlex.join(argv)} failed")
    return usage.ru_utime + usage.ru_stime


def main():
    n, a, b = int(sys.argv[1]), shlex.split(sys.argv[2]), shlex.split(sys.argv[3])
    ta, tb = [], []
    for _ in range(n):
        ta.append(cpu_seconds(a))
        tb.append(cpu_seconds(b))
    ma, mb = statistics.median(ta), statistics.median(tb)
    print(f"A median {ma * 1e3:.2f} ms (min {min(ta) * 1e3:.2f}); "
          f"B median {mb * 1e3:.2f} ms (min {min(tb) * 1e3:.2f}); A/B {ma / mb:.2f}")


if __name__ == "__main__":
    main()
