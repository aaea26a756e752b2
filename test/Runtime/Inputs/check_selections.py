"""Checks the structure of a `glm5-run score --dump-selections` file and prints a summary.

Usage: check_selections.py SEL.json NUM_TOKENS. Exits 1 naming the first violated invariant.
"""
import json
import sys


def fail(msg):
    print("check_selections: " + msg)
    sys.exit(1)


def main():
    sel = json.load(open(sys.argv[1]))
    n = int(sys.argv[2])
    k = sel["index_topk"]
    rows_per_layer = set()
    for layer, rows in sel["layers"].items():
        if sorted(int(p) for p in rows) != list(range(k, n)):
            fail("indexer layer %s: rows %s, want positions %d..%d" % (layer, sorted(rows), k, n - 1))
        for pos, ids in rows.items():
            if len(ids) != k or ids != sorted(set(ids)) or ids[0] < 0 or ids[-1] > int(pos):
                fail("indexer layer %s position %s: %s is not %d distinct causal positions" % (layer, pos, ids, k))
        rows_per_layer.add(len(rows))
    widths = set()
    for layer, rows in sel["experts"].items():
        if sorted(int(p) for p in rows) != list(range(n)):
            fail("expert layer %s: positions %s, want 0..%d" % (layer, sorted(rows), n - 1))
        for pos, ids in rows.items():
            if ids != sorted(set(ids)) or ids[0] < 0:
                fail("expert layer %s position %s: %s are not distinct expert ids" % (layer, pos, ids))
            widths.add(len(ids))
    if len(widths) != 1 or len(rows_per_layer) != 1:
        fail("uneven rows: experts per token %s, indexer rows per layer %s" % (widths, rows_per_layer))
    def names(layers):
        return " ".join(str(i) for i in sorted(int(layer) for layer in layers))

    print("index_topk %d, indexer layers %s, rows per layer %d, expert layers %s, experts per token %d, "
          "positions per layer %d" % (k, names(sel["layers"]), rows_per_layer.pop(), names(sel["experts"]),
                                       widths.pop(), n))


main()
