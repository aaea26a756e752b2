#!/usr/bin/env python3
"""Test helper: edits a plan in flatc's JSON form. `version` sets format_version to 99;
`buffer` points the first input of prefill's fourth step at buffer 99999."""
import json
import sys

src, what, dst = sys.argv[1:4]
plan = json.load(open(src))
if what == "version":
    plan["format_version"] = 99
elif what == "buffer":
    plan["entries"][0]["steps"][3]["inputs"][0] = 99999
json.dump(plan, open(dst, "w"))
