#!/usr/bin/env python3
"""Test helper: edits a plan in flatc's JSON form. `version` sets format_version to 99;
`buffer` points the first input of prefill's fourth step at buffer 99999; `page` sets
kv.page_size to 16 (kernels compiled for another page size must be refused); `param` turns the
first kernel launch parameter into a float."""
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
json.dump(plan, open(dst, "w"))
