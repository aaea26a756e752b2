#!/usr/bin/env python3
"""Writes the tokenizer fuzzer's seed (test/fuzz/tokenizer-corpus/seed-0.gguf): a GGUF v3 with no
tensors and only a small GLM-style byte-level BPE tokenizer -- the 256 byte tokens (GPT-2's
byte-to-character map), a few merges and their tokens, and GLM-5's special tokens as CONTROL --
so that mutations start from a tokenizer the reader accepts. Usage: make_tokenizer_seed.py OUT"""
import struct
import sys

STRING, ARRAY, INT32, UINT32 = 8, 9, 5, 4


def byte_chars():
    """GPT-2's bytes_to_unicode: printable bytes stand for themselves, the rest for 256 + n."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + \
        list(range(0xAE, 0xFF + 1))
    chars, n = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    return [chars[b] for b in range(256)]


def gstr(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def kv_string(key, value):
    return gstr(key) + struct.pack("<I", STRING) + gstr(value)


def kv_array(key, elem_type, values):
    out = gstr(key) + struct.pack("<IIQ", ARRAY, elem_type, len(values))
    for v in values:
        out += gstr(v) if elem_type == STRING else struct.pack("<i", v)
    return out


def kv_u32(key, value):
    return gstr(key) + struct.pack("<II", UINT32, value)


bytes_ = byte_chars()
sp = bytes_[ord(" ")]
merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), (sp, "w"), ("o", "r"),
          (sp + "w", "or"), ("l", "d"), (sp + "wor", "ld"), ("1", "2")]
tokens = bytes_ + [a + b for a, b in merges]
types = [1] * len(tokens)
specials = ["<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>",
            "<|user|>", "<|assistant|>", "<|observation|>"]
tokens += specials
types += [3] * len(specials)
kvs = [
    kv_string("tokenizer.ggml.model", "gpt2"),
    kv_string("tokenizer.ggml.pre", "glm4"),
    kv_array("tokenizer.ggml.tokens", STRING, tokens),
    kv_array("tokenizer.ggml.token_type", INT32, types),
    kv_array("tokenizer.ggml.merges", STRING, [a + " " + b for a, b in merges]),
    kv_u32("tokenizer.ggml.eos_token_id", tokens.index("<|endoftext|>")),
    kv_u32("tokenizer.ggml.eot_token_id", tokens.index("<|user|>")),
]
data = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs)
open(sys.argv[1], "wb").write(data)
