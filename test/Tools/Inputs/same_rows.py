#!/usr/bin/env python3
"""Test helper: two `glm5-gguf inspect --tensor` dumps hold the same values (headers may differ)."""
import sys

a, b = (open(p).read().splitlines()[1:] for p in sys.argv[1:3])
if a != b or not a:
    sys.exit("values differ between %s and %s" % (sys.argv[1], sys.argv[2]))
