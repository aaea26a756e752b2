#!/usr/bin/env python3
"""Test helper: parse a GGUF with the byte offset of every field, then derive broken files from a
valid one (a tensor removed, a shape changed, a key rewritten) and hostile ones (bytes patched,
truncated), and write small seed files for the fuzzer. Standard library only.

  gguf_tool.py mutate IN OUT [--drop-tensor N] [--set-shape N d0,d1,..] [--set-type N TYPE_ID]
                             [--set-str KEY VALUE] [--set-num KEY VALUE] [--drop-key KEY]
  gguf_tool.py hostile CASE IN OUT      (CASE: see HOSTILE below)
  gguf_tool.py seeds DIR FROM.gguf      (writes the fuzzer's seed corpus; glm-dsa keys from FROM)
"""
import struct
import sys

FIXED = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B", 10: "<Q",
         11: "<q", 12: "<d"}
BLOCK = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
         10: (256, 84), 11: (256, 110), 16: (256, 66), 12: (256, 144), 13: (256, 176), 14: (256, 210),
         20: (32, 18), 23: (256, 136), 30: (1, 2)}


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def get(self, fmt):
        v = struct.unpack_from(fmt, self.d, self.p)[0]
        self.p += struct.calcsize(fmt)
        return v

    def string(self):
        at = self.p
        n = self.get("<Q")
        s = self.d[self.p:self.p + n]
        self.p += n
        return s, at

    def value(self, t):
        if t in FIXED:
            return self.get(FIXED[t])
        if t == 8:
            return self.string()[0]
        et, n = self.get("<I"), self.get("<Q")
        return (et, [self.value(et) for _ in range(n)])


def parse(data):
    """Returns (kvs, tensors, data_start); each entry records the byte offsets of its fields."""
    r = Reader(data)
    magic, version, nt, nkv = r.get("<I"), r.get("<I"), r.get("<Q"), r.get("<Q")
    assert magic == 0x46554747 and version in (2, 3)
    kvs = []
    for _ in range(nkv):
        at = r.p
        key, _ = r.string()
        type_at = r.p
        t = r.get("<I")
        val_at = r.p
        v = r.value(t)
        kvs.append(dict(key=key.decode(), type=t, value=v, at=at, type_at=type_at, val_at=val_at,
                        end=r.p))
    tensors = []
    align = next((kv["value"] for kv in kvs if kv["key"] == "general.alignment"), 32)
    for _ in range(nt):
        at = r.p
        name, _ = r.string()
        nd_at = r.p
        nd = r.get("<I")
        dims_at = r.p
        dims = [r.get("<Q") for _ in range(nd)]
        type_at = r.p
        t = r.get("<I")
        off_at = r.p
        off = r.get("<Q")
        tensors.append(dict(name=name.decode(), dims=dims, type=t, offset=off, at=at, nd_at=nd_at,
                            dims_at=dims_at, type_at=type_at, off_at=off_at))
    data_start = (r.p + align - 1) // align * align
    return kvs, tensors, data_start, align


def nbytes(t):
    be, bb = BLOCK[t["type"]]
    n = t["dims"][0] // be * bb
    for d in t["dims"][1:]:
        n *= d
    return n


def write(path, kvs, tensors, blobs, align=32):
    """Writes a GGUF v3 from parsed kvs (values re-encoded) and tensors with their bytes."""
    out = bytearray(struct.pack("<IIQQ", 0x46554747, 3, len(tensors), len(kvs)))

    def enc_str(s):
        s = s.encode() if isinstance(s, str) else s
        return struct.pack("<Q", len(s)) + s

    def enc(t, v):
        if t in FIXED:
            return struct.pack(FIXED[t], v)
        if t == 8:
            return enc_str(v)
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(enc(et, x) for x in items)

    for kv in kvs:
        out += enc_str(kv["key"]) + struct.pack("<I", kv["type"]) + enc(kv["type"], kv["value"])
    off = 0
    offsets = []
    for t, blob in zip(tensors, blobs):
        offsets.append(off)
        off = (off + len(blob) + align - 1) // align * align
    for t, o in zip(tensors, offsets):
        out += enc_str(t["name"]) + struct.pack("<I", len(t["dims"]))
        out += b"".join(struct.pack("<Q", d) for d in t["dims"])
        out += struct.pack("<IQ", t["type"], o)
    out += b"\0" * (-len(out) % align)
    start = len(out)
    for blob, o in zip(blobs, offsets):
        out += b"\0" * (start + o - len(out)) + blob
    out += b"\0" * (-len(out) % align)
    with open(path, "wb") as f:
        f.write(out)


def mutate(args):
    src, dst, ops = args[0], args[1], args[2:]
    data = open(src, "rb").read()
    kvs, tensors, start, align = parse(data)
    blobs = {t["name"]: data[start + t["offset"]:start + t["offset"] + nbytes(t)] for t in tensors}
    i = 0
    while i < len(ops):
        op = ops[i]
        if op == "--drop-tensor":
            tensors = [t for t in tensors if t["name"] != ops[i + 1]]
            i += 2
        elif op == "--set-shape":
            dims = [int(x) for x in ops[i + 2].split(",")]
            for t in tensors:
                if t["name"] == ops[i + 1]:
                    t["dims"] = dims
                    blobs[t["name"]] = b"\0" * nbytes(t)
            i += 3
        elif op == "--set-type":
            for t in tensors:
                if t["name"] == ops[i + 1]:
                    t["type"] = int(ops[i + 2])
                    blobs[t["name"]] = b"\0" * nbytes(t)
            i += 3
        elif op == "--set-str":
            for kv in kvs:
                if kv["key"] == ops[i + 1]:
                    kv["value"] = ops[i + 2]
            i += 3
        elif op == "--set-num":
            for kv in kvs:
                if kv["key"] == ops[i + 1]:
                    kv["value"] = float(ops[i + 2]) if kv["type"] in (6, 12) else int(ops[i + 2])
            i += 3
        elif op == "--drop-key":
            kvs = [kv for kv in kvs if kv["key"] != ops[i + 1]]
            i += 2
        else:
            sys.exit("unknown op " + op)
    write(dst, kvs, tensors, [blobs[t["name"]] for t in tensors], align)


def patch(data, at, fmt, value):
    data[at:at + struct.calcsize(fmt)] = struct.pack(fmt, value)


def hostile(args):
    case, src, dst = args
    data = bytearray(open(src, "rb").read())
    kvs, tensors, start, align = parse(bytes(data))
    kv_by = {kv["key"]: kv for kv in kvs}
    t0, t1 = tensors[0], tensors[1]
    if case == "bad-magic":
        data[0:4] = b"GGML"
    elif case == "version":
        patch(data, 4, "<I", 7)
    elif case == "truncated-header":
        data = data[:20]
    elif case == "truncated-data":
        data = data[:len(data) - 1000]
    elif case == "kv-count":
        patch(data, 16, "<Q", 1 << 50)
    elif case == "tensor-count":
        patch(data, 8, "<Q", 1 << 50)
    elif case == "string-length":
        patch(data, kv_by["general.name"]["val_at"], "<Q", 1 << 40)
    elif case == "array-count":
        patch(data, kv_by["tokenizer.ggml.tokens"]["val_at"] + 4, "<Q", 1 << 58)
    elif case == "value-type":
        patch(data, kv_by["general.name"]["type_at"], "<I", 77)
    elif case == "dims-overflow":
        assert len(t0["dims"]) == 2
        patch(data, t0["dims_at"], "<Q", 1 << 40)
        patch(data, t0["dims_at"] + 8, "<Q", 1 << 40)
    elif case == "n-dims":
        patch(data, t1["nd_at"], "<I", 9)
    elif case == "ggml-type":
        patch(data, t1["type_at"], "<I", 99)
    elif case == "misaligned":
        patch(data, t1["off_at"], "<Q", t1["offset"] + 4)
    elif case == "outside-data":
        patch(data, t1["off_at"], "<Q", 1 << 40)
    elif case == "overlap":
        patch(data, t1["off_at"], "<Q", t0["offset"])
    elif case == "alignment":
        kv = kv_by.get("general.alignment")
        assert kv, "the input must carry general.alignment"
        patch(data, kv["val_at"], "<I", 48)
    else:
        sys.exit("unknown case " + case)
    with open(dst, "wb") as f:
        f.write(data)


def seeds(args):
    """Small valid GGUFs: a glm-dsa header with a few tensors of every dequantizable layout."""
    import os
    import random
    rnd = random.Random(5)
    d = args[0]
    os.makedirs(d, exist_ok=True)
    src_kvs = parse(open(args[1], "rb").read())[0]
    base = [kv for kv in src_kvs if kv["key"].startswith(("general.architecture", "glm-dsa."))]
    base += [dict(key="general.alignment", type=4, value=32),
            dict(key="tokenizer.ggml.tokens", type=9, value=(8, ["a", "b", "Ġc"])),
            dict(key="nested", type=9, value=(9, [(4, [1, 2]), (8, ["x"])]))]
    for i, types in enumerate([[0, 1, 30], [8, 2, 3], [6, 7, 20], [12, 13, 14], [10, 11, 23]]):
        tensors, blobs = [], []
        for j, t in enumerate(types):
            be, bb = BLOCK[t]
            ne0 = max(be, 32)
            tensors.append(dict(name="t%d" % j, dims=[ne0, 2], type=t))
            blobs.append(bytes(rnd.getrandbits(8) for _ in range(ne0 // be * bb * 2)))
        write(os.path.join(d, "seed-%d.gguf" % i), base, tensors, blobs)


if __name__ == "__main__":
    {"mutate": mutate, "hostile": hostile, "seeds": seeds}[sys.argv[1]](sys.argv[2:])
