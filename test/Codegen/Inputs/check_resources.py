#!/usr/bin/env python3
"""Test helper: reads `glm5c kernel --emit log` output and checks, for every entry ptxas reports,
that static shared memory + the registry's dynamic shared memory fits the target's limit and
that nothing spills. Prints one line per entry; exits 1 on a violation."""
import re
import sys

text = open(sys.argv[1]).read()
head = re.search(r"dynamic_smem (\d+) max_smem (\d+)", text)
dynamic, limit = int(head.group(1)), int(head.group(2))
bad = False
entries = re.split(r"Compiling entry function '", text)[1:]
if not entries:
    sys.exit("no ptxas entries in " + sys.argv[1])
for e in entries:
    name = e.split("'")[0]
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", e)
    used = re.search(r"Used (\d+) registers", e)
    smem = re.search(r"(\d+) bytes smem", e)
    static = int(smem.group(1)) if smem else 0
    # Only the decode kernel takes the dynamic shared memory; the combine kernel takes none.
    total = static + (dynamic if name == "sparse_mla_decode" else 0)
    ok = spills and spills.group(1) == "0" and spills.group(2) == "0" and total <= limit
    bad |= not ok
    print("%s: %s registers, %d B shared memory (limit %d), spills %s/%s: %s" % (
        name, used.group(1) if used else "?", total, limit,
        spills.group(1) if spills else "?", spills.group(2) if spills else "?",
        "ok" if ok else "VIOLATION"))
sys.exit(1 if bad else 0)
