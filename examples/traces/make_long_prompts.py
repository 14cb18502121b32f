"""Writes synthetic_long_prompts.jsonl: a long-prompt workload for disaggregation
(docs/DISAGG.md). 1,200 sessions arriving as a Poisson process at 3 per second,
prompts uniform in [8,192, 32,768] tokens (long documents, RAG contexts), outputs
uniform in [64, 512] tokens, no shared prefixes. A 64-bit LCG (Knuth's MMIX
constants) seeded with 1 makes the file the same on every machine and Python.

    python3 examples/traces/make_long_prompts.py > examples/traces/synthetic_long_prompts.jsonl
"""

import math

STATE = 1


def uniform():
    """The next number in [0, 1) of the LCG, from its top 53 bits."""
    global STATE
    STATE = (STATE * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    return (STATE >> 11) / float(1 << 53)


def main():
    t = 0.0
    for _ in range(1200):
        t += -math.log(1.0 - uniform()) / 3.0
        prompt = 8192 + int(uniform() * (32768 - 8192 + 1))
        output = 64 + int(uniform() * (512 - 64 + 1))
        print(f'{{"arrival": {t:.3f}, "prompt": {prompt}, "output": {output}}}')


if __name__ == "__main__":
    main()
