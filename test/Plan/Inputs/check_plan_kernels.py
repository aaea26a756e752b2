#!/usr/bin/env python3
"""Test helper: reads `glm5c inspect PLAN` and checks that every kernel's static plus dynamic
shared memory fits the plan target's per-block limit and that no kernel spills. Prints one line
per kernel and a summary; exits 1 on a violation."""
import re
import sys

text = open(sys.argv[1]).read()
limit = int(re.search(r"SMs, (\d+) B shared memory per block", text).group(1))
bad = 0
n = 0
for m in re.finditer(r"^  (\S+): (\d+) threads, (\d+) B static \+ (\d+) B dynamic shared memory, "
                     r"(\d+) B spills", text, re.M):
    name, static, dynamic, spills = m.group(1), int(m.group(3)), int(m.group(4)), int(m.group(5))
    ok = static + dynamic <= limit and spills == 0
    bad += not ok
    n += 1
    if not ok:
        print("VIOLATION %s: %d + %d B shared memory (limit %d), %d B spills" % (
            name, static, dynamic, limit, spills))
print("%d kernels, limit %d B: %s" % (n, limit, "ok" if n and not bad else "FAILED"))
sys.exit(1 if bad or not n else 0)
