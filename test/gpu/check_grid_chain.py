#!/usr/bin/env python3
"""Checks a `glm5c-gpu-tests --compile-only --dump-ptx DIR` dump: every kernel entry executes
`griddepcontrol.wait` (common.cuh glm_grid_chain) before its first memory access, the invariant
that lets the cuda backend launch kernels overlapped (programmatic dependent launch). The
exceptions are qlinear_decode, qlinear_decode_gate_up and qlinear_decode_multi, which first copy
their weights (never written by a kernel of the step) into their own shared memory with cp.async
and initialize their shared memory: before the wait they may touch shared memory and issue
cp.async, nothing else; and indexer_score, which before its wait loads the positions and the
block table (uploaded by the host before a call) and copies the key rows that earlier calls
wrote (indexer.cuh): it may load global memory and issue cp.async, and store nothing. Prints
each entry that breaks the rule, and exits 1 if any; prints the number of entries checked.

usage: check_grid_chain.py DUMP_DIR
"""
import os
import re
import sys

ENTRY = re.compile(r"^\.visible \.entry ([A-Za-z_0-9]+)\(")
# A memory access: a load, store, atomic, reduction or asynchronous copy of any state space but
# the kernel's parameters.
ACCESS = re.compile(r"^(@!?%p[0-9]+\s+)?(ld|ldu|st|atom|red|cp\.async|prefetch)\.(?!param)")
# What qlinear_decode, qlinear_decode_gate_up and qlinear_decode_multi may do before their wait:
# shared-memory loads and stores, cp.async (global to shared) and its group bookkeeping.
_WEIGHTS_FIRST = re.compile(r"^(@!?%p[0-9]+\s+)?((ld|st)\.shared|cp\.async)\.")
EARLY = {name: _WEIGHTS_FIRST
         for name in ("qlinear_decode", "qlinear_decode_gate_up", "qlinear_decode_multi")}
# What indexer_score may do before its wait: global loads (positions, block table) and cp.async.
EARLY["indexer_score"] = re.compile(r"^(@!?%p[0-9]+\s+)?(ld\.global|cp\.async)\.")


def check(path):
    bad, entries = [], 0
    name, state = None, None
    with open(path) as f:
        for line in f:
            line = line.split("//", 1)[0].strip()
            m = ENTRY.match(line)
            if m:
                if state == "before":
                    bad.append("%s: %s never executes griddepcontrol.wait" %
                               (os.path.basename(path), name))
                name, state = m.group(1), "before"
                entries += 1
                continue
            if name is None or state != "before":
                continue
            if line.startswith("griddepcontrol.wait"):
                state = "waited"
            elif ACCESS.match(line) and not (name in EARLY and EARLY[name].match(line)):
                bad.append("%s: %s accesses memory before griddepcontrol.wait: %s" %
                           (os.path.basename(path), name, line))
                state = "bad"
    if state == "before":
        bad.append("%s: %s never executes griddepcontrol.wait" % (os.path.basename(path), name))
    return bad, entries


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1])
        return 2
    bad, total = [], 0
    for fn in sorted(os.listdir(sys.argv[1])):
        if fn.endswith(".ptx"):
            b, n = check(os.path.join(sys.argv[1], fn))
            bad += b
            total += n
    for b in bad:
        print(b)
    print("%d entries checked, %d without the wait first" % (total, len(bad)))
    return 1 if bad or total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
