#!/usr/bin/env python3
"""Test helper: edits a plan in flatc's JSON form. `version` sets format_version to 99;
`buffer` points the first input of prefill's fourth step at buffer 99999; `page` sets
kv.page_size to 16 (kernels compiled for another page size must be refused); `param` turns the
first kernel launch parameter into a float. On a sharded plan: `rank` moves rank 1's decode to
rank 5, `norank` drops rank 1's decode, `box` makes the first weight box reach past its tensor.
Fields the runtime would index by: `noname` drops prefill's fourth step's name, `noinputs` its
input list, `layer` sets its layer to -5; `shape` gives the first buffer a dim of 0; `logits`
halves the logits row; `arena` moves the first buffer past prefill's arena; `weightattr` points
the first `weight.*` attribute past the weight table; `nokernel` drops a GPU step's kernel.
An op's operands: `arity` drops the first SparseMla step's last input, `noweight` the first
RmsNorm step's `weight.weight` attribute, `posinput` makes the first RopeCacheAppend step's latent
input the positions (-2). `ctxlen` sets config.context_length to -1, `topk` config.index_topk
to 70000."""
import json
import sys

src, what, dst = sys.argv[1:4]
plan = json.load(open(src))
if what == "version":
    plan["format_version"] = 99
elif what == "buffer":
    plan["entries"][0]["steps"][3]["inputs"][0] = 99999
elif what == "page":
    plan["kv"]["page_size"] = 16
elif what == "param":
    kernel = next(k for k in plan["kernels"] if k.get("params"))
    kernel["params"][0]["is_float"] = True
elif what in ("rank", "norank"):
    i = next(i for i, e in enumerate(plan["entries"]) if e.get("rank", 0) == 1 and e["name"] == "decode")
    if what == "rank":
        plan["entries"][i]["rank"] = 5
    else:
        del plan["entries"][i]
elif what == "box":
    w = next(w for w in plan["weights"] if w.get("view_offset"))
    d = max(range(len(w["view_shape"])), key=lambda d: w["view_shape"][d] < w["shape"][d])
    w["view_offset"][d] = w["shape"][d]
elif what in ("noname", "noinputs", "layer"):
    step = plan["entries"][0]["steps"][3]
    if what == "noname":
        del step["name"]
    elif what == "noinputs":
        del step["inputs"]
    else:
        step["layer"] = -5
elif what == "shape":
    plan["buffers"][0]["shape"][-1] = 0
elif what == "logits":
    b = plan["buffers"][plan["entries"][0]["output"]]
    b["elems_per_token"] //= 2
    b["shape"][-1] //= 2
elif what == "arena":
    plan["buffers"][0]["offset_per_token"] = plan["entries"][0]["arena_bytes_per_token"]
elif what == "weightattr":
    a = next(a for e in plan["entries"] for s in e["steps"] for a in s.get("attrs", [])
             if a["key"].startswith("weight."))
    a["i"] = len(plan["weights"])
elif what in ("arity", "noweight", "posinput"):
    op = {"arity": "SparseMla", "noweight": "RmsNorm", "posinput": "RopeCacheAppend"}[what]
    step = next(s for s in plan["entries"][0]["steps"] if s.get("op") == op)
    if what == "arity":
        step["inputs"].pop()
    elif what == "noweight":
        step["attrs"] = [a for a in step["attrs"] if a["key"] != "weight.weight"]
    else:
        step["inputs"][1] = -2
elif what == "ctxlen":
    plan["config"]["context_length"] = -1
elif what == "topk":
    plan["config"]["index_topk"] = 70000
elif what == "nokernel":
    del plan["entries"][0]["steps"][3]["kernel"]
json.dump(plan, open(dst, "w"))
