#!/usr/bin/env python3
"""Test helper: compares two float32 NPY files (version 1.0, C order) without numpy.
usage: npy_compare.py A.npy B.npy MAX_REL_ERR  -- per-row ||a-b||/||b||, prints the worst row;
       npy_compare.py --differ A.npy B.npy ROW_FROM MIN_REL_ERR -- rows >= ROW_FROM must differ."""
import array
import ast
import math
import sys


def load(path):
    data = open(path, "rb").read()
    assert data[:6] == b"\x93NUMPY", path + ": not an NPY file"
    hlen = int.from_bytes(data[8:10], "little")
    header = ast.literal_eval(data[10:10 + hlen].decode())
    assert header["descr"] == "<f4" and not header["fortran_order"], header
    rows, cols = header["shape"]
    values = array.array("f")
    values.frombytes(data[10 + hlen:])
    assert len(values) == rows * cols, (len(values), rows, cols)
    return rows, cols, values


def row_err(a, b, cols, r):
    num = den = 0.0
    for c in range(r * cols, (r + 1) * cols):
        if not math.isfinite(a[c]):
            return math.inf
        num += (a[c] - b[c]) ** 2
        den += b[c] ** 2
    return math.sqrt(num / den) if den else math.sqrt(num)


args = sys.argv[1:]
differ = args[0] == "--differ"
if differ:
    args = args[1:]
ra, ca, a = load(args[0])
rb, cb, b = load(args[1])
assert (ra, ca) == (rb, cb), ((ra, ca), (rb, cb))
if differ:
    start, bound = int(args[2]), float(args[3])
    errs = [row_err(a, b, ca, r) for r in range(start, ra)]
    print("rows %d..%d: smallest rel err %.3e" % (start, ra - 1, min(errs)))
    sys.exit(0 if min(errs) >= bound else 1)
bound = float(args[2])
errs = [row_err(a, b, ca, r) for r in range(ra)]
worst = max(range(ra), key=lambda r: errs[r])
print("%d rows x %d: worst rel err %.3e at row %d" % (ra, ca, errs[worst], worst))
sys.exit(0 if errs[worst] <= bound else 1)
