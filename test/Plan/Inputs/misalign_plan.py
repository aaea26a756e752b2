#!/usr/bin/env python3
"""Test helper: rewrites a plan so that the first buffer's `shape` ([long]) starts 4 bytes past an
8-byte boundary -- a well-formed flatbuffer that flatbuffers' own verifier (2.0) accepts, but
whose 8-byte elements would be read misaligned. The vector is copied to the end of the file and
the Buffer table's offset field is pointed at the copy (flatbuffers offsets point forward).
Field indices follow runtime/schema/plan.fbs: Plan.buffers is field 10, Buffer.shape field 5.
Usage: misalign_plan.py IN.plan OUT.plan"""
import struct
import sys

PLAN_BUFFERS, BUFFER_SHAPE = 10, 5
data = bytearray(open(sys.argv[1], "rb").read())
u32 = lambda at: struct.unpack_from("<I", data, at)[0]


def field(table, index):
    """Position of a table's field `index` (0-based), which must be present."""
    vtable = table - struct.unpack_from("<i", data, table)[0]
    vt_size = struct.unpack_from("<H", data, vtable)[0]
    assert 4 + 2 * index < vt_size, "field absent"
    off = struct.unpack_from("<H", data, vtable + 4 + 2 * index)[0]
    assert off, "field absent"
    return table + off


root = u32(0)
bufs_field = field(root, PLAN_BUFFERS)
bufs = bufs_field + u32(bufs_field)
buf0 = bufs + 4 + u32(bufs + 4)  # element 0: an offset from its own position
shape_field = field(buf0, BUFFER_SHAPE)
shape = shape_field + u32(shape_field)
n = u32(shape)
payload = data[shape:shape + 4 + 8 * n]
while len(data) % 8 != 0:  # the copy's length word on an 8-byte boundary: its elements are not
    data.append(0)
new = len(data)
data += payload
struct.pack_into("<I", data, shape_field, new - shape_field)
open(sys.argv[2], "wb").write(data)
