#!/usr/bin/env python3
"""Checks glm5c's tokenizer against Hugging Face `tokenizers` built from the same GGUF vocabulary,
merges, special tokens and GLM-4 pre-tokenizer regex (byte-level BPE).

usage: tokenizer_check.py --gguf MODEL.gguf --glm5-run path/to/glm5-run [--text-file F]

Needs the `tokenizers` package (on the GPU machine); exits 1 and prints the first differing text
when any case tokenizes differently, `TOKENIZER CHECK PASSED` otherwise.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fidelity import GgufFile  # noqa: E402  (the minimal GGUF reader of fidelity.py)

GLM4_PRETOKENIZER = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                     r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

CASES = [
    "Hello world",
    "The lighthouse keeper's log, 1987-2024: 12345 ships passed.",
    "naïve café, crème brûlée — São Paulo, Zoë & José; €42,50",
    "灯塔看守人每天晚上点亮灯。海浪拍打着岩石。",
    "emoji 🌊😊⭐ and ⭐⭐ mixed中文and English",
    "def f(x):\n    return x * 2  # doubled\n\n\tif (a && b) { c++; }\n",
    "  leading spaces, trailing spaces   \n\n\n multiple\r\nnewlines",
    "I'm, you're, he'll, we've, they'd, it's, DON'T",
    "numbers 1 12 123 1234 12345678 3.14159 0x1F",
    "[gMASK]<sop><|system|>You are helpful.<|user|>Hi!<|assistant|>",
    "<think>reasoning</think> answer <|endoftext|>",
    "mixed\u00a0nbsp\u2003em-space\u3000ideographic",
]


def ours(glm5_run, gguf, text, special):
    args = [glm5_run, "tokenize", "--weights", gguf, "-p", text] + (["--special"] if special else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()
    return [int(x) for x in out.split(",")] if out else []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--glm5-run", required=True)
    ap.add_argument("--text-file")
    args = ap.parse_args()
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    meta = GgufFile(args.gguf).metadata
    tokens = meta["tokenizer.ggml.tokens"]
    types = meta["tokenizer.ggml.token_type"]
    merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
    vocab = {t: i for i, t in enumerate(tokens) if types[i] == 1}

    def build(with_specials):
        tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=False))
        tk.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(GLM4_PRETOKENIZER), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ])
        tk.decoder = decoders.ByteLevel()
        if with_specials:
            tk.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False)
                                   for i in range(len(tokens)) if types[i] == 3])
        return tk

    plain, with_specials = build(False), build(True)
    # add_special_tokens gives the specials ids past the BPE vocabulary; the GGUF's ids are the
    # truth, so map them back by text.
    special_id = {tokens[i]: i for i in range(len(tokens)) if types[i] == 3}

    cases = list(CASES)
    if args.text_file:
        cases.append(open(args.text_file, encoding="utf-8").read())
    failures = 0
    for special in (False, True):
        for text in cases:
            if special:
                enc = with_specials.encode(text, add_special_tokens=False)
                ref = [special_id.get(t, i) for t, i in zip(enc.tokens, enc.ids)]
            else:
                ref = plain.encode(text, add_special_tokens=False).ids
            got = ours(args.glm5_run, args.gguf, text, special)
            ok = got == ref
            failures += not ok
            print("%s special=%d %4d tokens  %r" % ("ok  " if ok else "DIFF", special, len(ref),
                                                  text[:50]))
            if not ok:
                print("   ours:      ", got[:40])
                print("   tokenizers:", ref[:40])
    if failures:
        print("TOKENIZER CHECK FAILED: %d case(s) differ" % failures)
        return 1
    print("TOKENIZER CHECK PASSED: %d cases" % (2 * len(cases)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
