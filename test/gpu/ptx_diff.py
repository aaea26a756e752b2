#!/usr/bin/env python3
"""Compares two `glm5c-gpu-tests --compile-only --dump-ptx DIR` dumps: for every PTX file of the
same name, the code with comments, register numbers, register-file sizes and branch-label
numbers normalized (a refactor that only renames them generates the same instructions). Prints each file that
differs, with the first differing line, and exits 1 if any does (2 if the file sets differ).

usage: ptx_diff.py BEFORE_DIR AFTER_DIR
"""
import os
import re
import sys

REG = re.compile(r"%[a-z]+[0-9]+")
DECL = re.compile(r"(\.reg \.[a-z0-9]+\s+%[a-z]+)<[0-9]+>")  # register-file sizes
LABEL = re.compile(r"\$L__BB[0-9]+_[0-9]+")


def normalized(path):
    lines = []
    with open(path) as f:
        for line in f:
            line = line.split("//", 1)[0].strip()
            if line:
                lines.append(LABEL.sub("L", REG.sub("R", DECL.sub(r"\1<N>", line))))
    return lines


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1])
        return 2
    a, b = sys.argv[1], sys.argv[2]
    fa, fb = sorted(os.listdir(a)), sorted(os.listdir(b))
    if fa != fb:
        print("the dumps hold different instantiations: only before %s, only after %s"
              % (sorted(set(fa) - set(fb))[:5], sorted(set(fb) - set(fa))[:5]))
        return 2
    differing = 0
    for name in fa:
        la, lb = normalized(os.path.join(a, name)), normalized(os.path.join(b, name))
        if la != lb:
            differing += 1
            i = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
            print("%s: differs at normalized line %d:\n  before: %s\n  after:  %s"
                  % (name, i, la[i] if i < len(la) else "<end>", lb[i] if i < len(lb) else "<end>"))
    print("%d of %d instantiations differ" % (differing, len(fa)))
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
